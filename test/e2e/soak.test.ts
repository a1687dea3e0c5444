// The soak's short variant (test/soak/, docs/operations/soak.md): the same stack, traffic, faults and rules as
// `npm run soak`, for 75 s of load with each fault once — the channel's sessions dropped, Stripe's
// webhooks held, reordered and re-sent, the enclave killed with SIGKILL and started again, the edge
// killed with SIGKILL (with runs and writes in flight, credit in its leases and charges not yet
// committed) and started again on its port and storage, the chain's RPC stopped for 10 s — and every
// acceptance rule asserted: no 5xx but documented 503s with Retry-After (and no request unanswered
// but those the edge kill cut), the ledger audit (no credit lost or counted twice, every charge once
// and as answered; what the killed edge's leases still hold reported apart), no run answered twice,
// no write made twice, every payment told to the account's webhook once, and the edge serving again
// within 5 s of the enclave's restart. (The share of 503s outside the kills is reported, not
// asserted.) Rules, not timings: the load is half of the capacity measured at the start, whatever
// this machine gives.
import { expect, it } from "vitest";
import { runSoak } from "../soak/soak.ts";

it("a short soak with each fault once keeps every rule", async () => {
  const lines: string[] = [];
  const report = await runSoak({
    minutes: 1.25,
    load: 0.5,
    accounts: 2,
    capacitySeconds: 8,
    capacityClients: 16,
    // Each once (the next time is past the end), spread over the 75 s.
    faults: [
      { name: "session_drop", firstAtMs: 8_000, everyMs: 3_600_000 },
      { name: "stripe_chaos", firstAtMs: 14_000, everyMs: 3_600_000 },
      { name: "enclave_kill", firstAtMs: 22_000, everyMs: 3_600_000 },
      // After the enclave's restart and its 10 s (faults.ts: the kills and the outage take turns).
      { name: "edge_kill", firstAtMs: 38_000, everyMs: 3_600_000 },
      { name: "rpc_stop", firstAtMs: 52_000, everyMs: 3_600_000 },
    ],
    maxInFlight: 1_000,
    log: (line) => lines.push(line),
  });
  const failed = report.rules.filter((r) => !r.ok);
  expect(
    failed.map((r) => `${r.name}:\n  ${r.detail.join("\n  ")}`),
    [...lines, ...report.lines].join("\n"),
  ).toEqual([]);
  // Each fault happened, and the run did something worth judging.
  const faults = report.json.faults as Array<{ name: string }>;
  expect(new Set(faults.map((f) => f.name))).toEqual(
    new Set(["session_drop", "stripe_chaos", "enclave_kill", "edge_kill", "rpc_stop"]),
  );
  expect(report.json.calls_started as number).toBeGreaterThan(100);
}, 600_000);
