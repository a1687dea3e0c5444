// The edge in workerd against the real chain and enclave: the endpoints that reach them.
import { SELF } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";

describe("the edge with a live enclave", () => {
  it("/health aggregates the enclave's state: 200, the listener's lag, the chain", async () => {
    const res = await SELF.fetch("http://edge/core/v1/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; enclaves: Array<{ status: string }>; account_event_listener_lag_seconds: number | null };
    expect(body.status).toBe("ok");
    expect(body.enclaves).toHaveLength(1);
    expect(body.enclaves[0]?.status).toBe("ok");
  });

  it("get_sigil_action_client_config reports the enclave's limits", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_client_config");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ timeout_ms: 60_000, memory_limit_mb: 64, max_code_bytes: 4 << 20, max_fetch_count: 50, max_wallet_operations: 200 });
  });
});

describe("the attestation endpoints", () => {
  it("pass /attestation, /info, the simulated collateral and /evidences/… through from an enclave unchanged: status, type, body, the simulated mark", async () => {
    for (const path of ["/attestation", "/info", "/attestation/simulated-collateral", "/evidences/", "/evidences/sha256sum.txt", "/evidences/quote.json"]) {
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
