// The enclave's health (issue 11, points 9 and 14): the public `GET /health` tells a load balancer
// or an outsider whether this instance serves, which instance it is and how far behind its chain
// listener is — and nothing else; payer balances, the listener's last error, memory, the sandbox,
// the cache and the channel are in the internal report, which only the attested channel reaches.
// A listener that has stalled makes the instance answer 503 even though it answers at all.
import { afterAll, describe, expect, inject, it } from "vitest";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { startOwnEnclave } from "./ownEnclave.ts";

type PublicHealth = {
  status: string;
  instance_id: string;
  account_event_listener_lag_seconds: number | null;
  listener: { last_block: string | null; chain_head: string | null; stalled: boolean; stalled_after_seconds: number };
  chain: { chain_id: number; contract_address: string };
  payers: string[];
};

describe("GET /health (public)", () => {
  it("says only whether it serves, which instance it is, the listener's lag, blocks and stall, the chain and the payer addresses", async () => {
    const res = await fetch(`${inject("enclaveUrl")}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as PublicHealth;
    expect(Object.keys(body).sort()).toEqual([
      "account_event_listener_lag_seconds",
      "chain",
      "instance_id",
      "listener",
      "payers",
      "status",
    ]);
    expect(Object.keys(body.listener).sort()).toEqual(["chain_head", "last_block", "stalled", "stalled_after_seconds"]);
    expect(Object.keys(body.chain).sort()).toEqual(["chain_id", "contract_address"]);
    expect(body.status).toBe("ok");
    expect(body.listener.stalled).toBe(false);
    expect(body.payers.length).toBeGreaterThan(0);
    for (const p of body.payers) expect(p).toMatch(/^0x[0-9a-f]{40}$/);
    // The instance it names is the one /info attests, and every answer says it in a header too.
    const info = (await (await fetch(`${inject("enclaveUrl")}/info`)).json()) as { instance_id: string };
    expect(body.instance_id).toBe(info.instance_id);
    expect(res.headers.get("x-sigil-instance")).toBe(info.instance_id);
    const text = JSON.stringify(body);
    for (const secret of ["balance", "last_error", "memory", "rss", "heap", "sandbox", "worker", "cache", "sessions"])
      expect(text).not.toContain(secret);
  });

  it("keeps the rest for the internal report, which the channel reaches: payer balances, the listener's last error, sandbox, cache, channel and memory", async () => {
    const health = await internalHealthOf<{
      instance_id: string;
      payers: Array<{ address: string; balance_wei: string; low: boolean }>;
      listener: { last_error: string | null; stalled: boolean };
      chain: { reachable: boolean };
      sandbox: { worker_restarts: number; active_runs: number };
      channel: { sessions: number };
      memory: { heap_used_mb: number };
    }>(inject("enclaveUrl"));
    expect(health.payers.every((p) => BigInt(p.balance_wei) > 0n && p.low === false)).toBe(true);
    expect(health.listener).toMatchObject({ last_error: null, stalled: false });
    expect(health.chain.reachable).toBe(true);
    expect(health.sandbox.worker_restarts).toBeGreaterThanOrEqual(0);
    expect(health.channel.sessions).toBeGreaterThan(0);
    expect(health.memory.heap_used_mb).toBeGreaterThan(0);
  });
});

describe("an enclave whose chain listener has stalled", () => {
  let enclave: EnclaveProcess | undefined;
  afterAll(async () => {
    await enclave?.stop();
  });

  it("answers GET /health with 503 degraded and listener.stalled, although it answers: its lag is past the threshold", async () => {
    // One poll at start, the next in ten minutes: the listener goes quiet at once, as a stuck one
    // would, and its threshold of one second is crossed within a second of that poll.
    enclave = await startOwnEnclave({
      instanceIndex: 31,
      env: { SIGIL_LISTENER_POLL_MS: "600000", SIGIL_LISTENER_STALLED_AFTER_MS: "1000" },
    });
    let res: Response | undefined;
    let body: PublicHealth | undefined;
    // Bounded: it turns within a second or two; 30 s is only for a loaded machine.
    for (let i = 0; i < 150; i++) {
      res = await fetch(`${enclave.url}/health`);
      body = (await res.json()) as PublicHealth;
      if (res.status === 503) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(res?.status).toBe(503);
    expect(res?.headers.get("retry-after")).toBe("5");
    expect(body?.status).toBe("degraded");
    expect(body?.listener).toMatchObject({ stalled: true, stalled_after_seconds: 1 });
    // Past the one-second threshold (the report rounds to a tenth: 1.04 s reads 1).
    expect(body?.account_event_listener_lag_seconds).toBeGreaterThanOrEqual(1);
    // The internal report agrees, so the edge sees the same.
    expect(await internalHealthOf(enclave.url)).toMatchObject({ status: "degraded", listener: { stalled: true } });
  });
});
