// The edge in workerd against the real chain and enclave: the endpoints that reach them.
import { env, SELF } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createApp } from "../../workers/app.ts";

type Health = {
  status: string;
  account_event_listener_lag_seconds: number | null;
  enclaves: Array<{
    index: number;
    instance_id: string | null;
    status: string;
    account_event_listener_lag_seconds: number | null;
    last_block: string | null;
    chain_head: string | null;
  }>;
};

/** The edge under test with another list of enclaves (its other bindings as configured). */
const edgeWith = (enclaveUrls: string[]) => (path: string) =>
  createApp().request(`http://edge${path}`, {}, { ...env, SIGIL_ENCLAVE_URLS: enclaveUrls.join(",") });
const instanceOf = async (base: string) =>
  ((await (await fetch(`${base}/health`)).json()) as { instance_id: string }).instance_id;

describe("the edge with a live enclave", () => {
  it("/health aggregates the enclave's state: 200, the listener's lag, the chain", async () => {
    const res = await SELF.fetch("http://edge/core/v1/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      status: string;
      enclaves: Array<{ status: string }>;
      account_event_listener_lag_seconds: number | null;
    };
    expect(body.status).toBe("ok");
    expect(body.enclaves).toHaveLength(1);
    expect(body.enclaves[0]?.status).toBe("ok");
  });

  it("/health lists every enclave with its instance, lag and status, puts the worst lag at the top, and answers 503 degraded while one that answers has a stalled listener (issue 11, point 14)", async () => {
    const live = inject("enclaveUrl");
    const stalled = inject("stalledEnclaveUrl");
    const res = await edgeWith([live, stalled, "http://127.0.0.1:1"])("/core/v1/health");
    const body = (await res.json()) as Health;
    expect(body.enclaves.map((e) => [e.index, e.status])).toEqual([
      [0, "ok"],
      [1, "stalled"],
      [2, "unreachable"],
    ]);
    expect(body.enclaves[0]?.instance_id).toBe(await instanceOf(live));
    expect(body.enclaves[1]?.instance_id).toBe(await instanceOf(stalled));
    expect(body.enclaves[2]).toMatchObject({ instance_id: null, account_event_listener_lag_seconds: null });
    const [healthy, stuck] = body.enclaves.map((e) => e.account_event_listener_lag_seconds) as [number, number];
    expect(stuck).toBeGreaterThan(1);
    expect(stuck).toBeGreaterThan(healthy);
    // The worst, not the best: the minimum would hide the stalled instance.
    expect(body.account_event_listener_lag_seconds).toBe(stuck);
    expect(body.status).toBe("degraded");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    // Nothing the enclaves keep to their internal report reaches a client.
    expect(JSON.stringify(body)).not.toMatch(/balance|last_error|memory|sandbox|payers/);
  });

  it("/health is 200 ok over enclaves that are all healthy, an unreachable one routed around", async () => {
    const res = await edgeWith([inject("enclaveUrl"), "http://127.0.0.1:1"])("/core/v1/health");
    const body = (await res.json()) as Health;
    expect(res.status).toBe(200);
    expect(body.status).toBe("ok");
    expect(body.enclaves.map((e) => e.status)).toEqual(["ok", "unreachable"]);
    expect(body.account_event_listener_lag_seconds).toBe(body.enclaves[0]?.account_event_listener_lag_seconds);
  });

  it("get_sigil_action_client_config reports the run limits the edge shares with the enclave", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_client_config");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      timeout_ms: 60_000,
      memory_limit_mb: 64,
      max_code_bytes: 4 << 20,
      max_fetch_count: 50,
      max_wallet_operations: 200,
    });
  });
});

describe("the attestation endpoints", () => {
  it("pass /attestation, /info, the simulated collateral and /evidences/… through from an enclave unchanged: status, type, body, the simulated mark", async () => {
    for (const path of [
      "/attestation",
      "/info",
      "/attestation/simulated-collateral",
      "/evidences/",
      "/evidences/sha256sum.txt",
      "/evidences/quote.json",
    ]) {
      const res = await SELF.fetch(`http://edge${path}`);
      const direct = await fetch(`${inject("enclaveUrl")}${path}`);
      expect(res.status, path).toBe(200);
      expect(direct.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe(direct.headers.get("content-type"));
      // The test enclave runs the simulated TEE, and says so through the edge too.
      expect(res.headers.get("x-attestation-simulated"), path).toBe("1");
      // /attestation is cached for 60 s, so both see the same quote; the rest never changes.
      expect(await res.text(), path).toBe(await direct.text());
    }
  });

  it("an enclave's error passes through with the edge's request id", async () => {
    const res = await SELF.fetch("http://edge/attestation?nonce=not-hex");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { request_id: string } };
    expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  });
});
