// A run's charge as the enclave that ran it settles it (docs/design/billing.md, Leases): the edge
// answers a run before its charge reaches the account's Ledger, so the enclave, which signed the
// charge into the run's receipt, sends it to the edge too, a few seconds later, under the run's token
// (workers/budgets/token.ts, whose claim says whose account and at most how many cents). The Ledger
// charges each billing ref once: almost always the edge's commit came first and this changes
// nothing; if the edge died before its commit, this is the charge.
import { z } from "zod";

/** The path under the edge's URL (the run's budget URL) where the enclave settles runs. */
export const SETTLEMENT_PATH = "/internal/v1/settlements";

/** At most this many runs in one request. */
export const SETTLEMENT_BATCH = 200;

/** What the usage history keeps of a run, as the edge records it (workers/billing/meter.ts runDetail). */
export const settledRunDetailSchema = z.strictObject({
  cid: z.string().min(1).max(128),
  duration_ms: z.number().int().nonnegative(),
  error_code: z.string().min(1).max(64).optional(),
  /** The run's signed receipt, as its JSON text. */
  receipt: z.string().min(2).max(256_000),
});
export type SettledRunDetail = z.infer<typeof settledRunDetailSchema>;

export const settlementRequestSchema = z.strictObject({
  runs: z
    .array(
      z.strictObject({
        token: z.string().min(1).max(1024),
        cents: z.number().int().nonnegative().max(100_000_000),
        /** Without it, the edge only says whether the run is charged yet (`missing` if not). */
        detail: settledRunDetailSchema.optional(),
      }),
    )
    .min(1)
    .max(SETTLEMENT_BATCH),
});
export type SettlementRequest = z.infer<typeof settlementRequestSchema>;

/**
 * The edge's answer: the runs (by their index in the request) whose token it refused (expired, not
 * its own, or not one that may settle), and those not charged yet that came without their detail.
 */
export type SettlementAnswer = { refused: number[]; missing: number[] };
