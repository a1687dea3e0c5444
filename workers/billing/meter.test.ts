// A metered run (Meter) against the receipt the enclave signed (issue 14, point 4): what the ledger settles is
// the run's fee (shared/fees.ts), the figure the receipt carries; when the two differ the edge says
// so at error level, naming both, and still answers the run with the receipt the enclave signed.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../shared/log.ts";
import type { SigilActionResponse } from "../../shared/operations.ts";
import type { LeaseCommit } from "./ledgerTypes.ts";
import { Meter, runTimeoutMs, type Payer } from "./meter.ts";

/** A run metered as the route's pipeline meters it: held, given the seconds granted, settled with its answer. */
async function meteredRun(
  payer: Payer | undefined,
  timeoutMs: number,
  ref: string,
  cid: string | undefined,
  run: (grantedMs: number | undefined) => Promise<SigilActionResponse>,
  log: ReturnType<typeof createLogger>,
): Promise<{ result: SigilActionResponse; chargedCents: number }> {
  const meter = new Meter(payer, ref, log);
  await meter.holdRun(timeoutMs, cid);
  const result = await meter.settleRun(await run(meter.grantedMs));
  // The answer does not wait for the charge's commit; the test does.
  await meter.settlement?.committed();
  return { result, chargedCents: meter.chargedCents };
}

/** A ledger that leases `granted` seconds to a fresh account's lease and charges what it is committed, at most what it held. */
function fakePayer(granted: number): { payer: Payer; settled: number[] } {
  const settled: number[] = [];
  const ledger = {
    lease: async (_id: string, need: number) => ({
      granted: Math.min(need, granted),
      leaseCents: Math.min(need, granted),
      freeCents: 100,
      webhooks: false,
    }),
    commit: async (_id: string, commit: LeaseCommit) => {
      const charged = commit.charges.map((c) => c.cents);
      settled.push(...charged);
      return { charged, leaseCents: 0, freeCents: 100 - charged.reduce((a, b) => a + b, 0), webhooks: false };
    },
  };
  return {
    payer: {
      ledger: ledger as unknown as Payer["ledger"],
      via: ledger as unknown as Payer["via"],
      account: crypto.randomUUID(),
      key: undefined,
    },
    settled,
  };
}

const answer = (durationMs: number, receiptCents: number) =>
  ({
    response: null,
    logs: "",
    has_error: false,
    cid: "Qm",
    duration_ms: durationMs,
    receipt: { charged_cents: receiptCents },
  }) as unknown as SigilActionResponse;

function recordingLog() {
  const lines: Array<{ level: string; msg: string; receiptCents?: number; chargedCents?: number }> = [];
  return { log: createLogger("debug", {}, (line) => lines.push(JSON.parse(line) as (typeof lines)[number])), lines };
}

describe("meteredRun and the run's receipt", () => {
  it("settles the fee the receipt carries, and logs nothing when they agree", async () => {
    const { payer, settled } = fakePayer(30);
    const { log, lines } = recordingLog();
    const r = await meteredRun(payer, 30_000, "ref", undefined, async () => answer(2500, 3), log);
    expect(settled).toEqual([3]);
    expect(r.chargedCents).toBe(3);
    expect(lines.filter((l) => l.level === "error")).toEqual([]);
  });

  it("logs an error naming both figures when the ledger charged something else, and keeps the signed receipt", async () => {
    const { payer } = fakePayer(30);
    const { log, lines } = recordingLog();
    const r = await meteredRun(payer, 30_000, "ref", undefined, async () => answer(2500, 1), log);
    expect(r.chargedCents).toBe(3);
    expect(r.result.receipt.charged_cents).toBe(1);
    expect(lines.filter((l) => l.level === "error")).toEqual([
      expect.objectContaining({ msg: "run receipt disagrees with the ledger", receiptCents: 1, chargedCents: 3 }),
    ]);
  });

  it("with billing off expects a receipt of 0 cents, and logs an answer that has no receipt instead of failing", async () => {
    const { log, lines } = recordingLog();
    expect((await meteredRun(undefined, 30_000, "ref", undefined, async () => answer(10, 0), log)).chargedCents).toBe(
      0,
    );
    expect(lines).toEqual([]);
    const bare = { ...answer(10, 0), receipt: undefined } as unknown as SigilActionResponse;
    expect((await meteredRun(undefined, 30_000, "ref", undefined, async () => bare, log)).chargedCents).toBe(0);
    expect(lines.filter((l) => l.level === "error")).toHaveLength(1);
  });
});

describe("a managed write's charge", () => {
  it("is committed before the write is answered (no enclave settles a write should the edge die after answering)", async () => {
    const { payer, settled } = fakePayer(30);
    const meter = new Meter(payer, `write-${crypto.randomUUID()}`, recordingLog().log);
    await meter.holdWrite("add_group");
    await meter.settleWrite("add_group", { result: { success: true, transaction_hash: `0x${"ab".repeat(32)}` } });
    expect(settled).toEqual([1]);
    expect(meter.chargedCents).toBe(1);
  });

  it("a run's is not: its answer goes out, and the charge with the next commit", async () => {
    const { payer, settled } = fakePayer(30);
    const meter = new Meter(payer, `run-${crypto.randomUUID()}`, recordingLog().log);
    await meter.holdRun(30_000, undefined);
    await meter.settleRun(answer(10, 1));
    expect(settled).toEqual([]);
    await meter.settlement?.committed();
    expect(settled).toEqual([1]);
  });
});

describe("runTimeoutMs", () => {
  const limits = { timeoutMs: 60_000, maxTimeoutMs: 120_000 };
  it("is the caller's timeout_ms up to the configured maximum, the default without one, and a 400 past the maximum", () => {
    expect(runTimeoutMs(undefined, limits)).toBe(60_000);
    expect(runTimeoutMs(1500, limits)).toBe(1500);
    expect(runTimeoutMs(120_000, limits)).toBe(120_000);
    expect(() => runTimeoutMs(120_001, limits)).toThrow(
      expect.objectContaining({
        code: "invalid_request",
        message: "timeout_ms must be at most 120000 (max_timeout_ms)",
      }),
    );
  });
});
