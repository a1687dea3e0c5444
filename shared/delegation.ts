// Delegated keys (issue 33; docs/design/delegation.md): the schemas the API states — a block of
// caveats, a token, an enclave's count of a run's use at the edge — and the token algebra itself
// (delegationToken.ts, free of zod so that the SDK's offline narrowing stays small), re-exported.
import { z } from "zod";
import { type DelegationToken, MAX_BLOCK_BUDGET_WINDOW_SECONDS, MAX_DEPTH, MAX_LIST } from "./delegationToken.ts";

export * from "./delegationToken.ts";

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/, "must be 0x + 64 lowercase hex");
const decimal = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "must be a decimal integer string");

/** One block of caveats: each present field narrows; an absent one leaves the chain's as it is. */
export const delegationBlockSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/, "must be 16 bytes of lowercase hex"),
  expires_at: z.number().int().positive().optional().describe("unix seconds: refused from then on"),
  max_uses: z.number().int().min(1).max(1_000_000_000).optional().describe("runs this block allows, counted by its id"),
  groups: z
    .array(
      z
        .string()
        .regex(/^(0|[1-9][0-9]{0,19})$/, "must be a decimal group id")
        .refine((v) => BigInt(v) <= 0xffff_ffff_ffff_ffffn, "must fit in 64 bits"),
    )
    .max(MAX_LIST)
    .optional()
    .describe("runs only what these groups list, with their wallets (ids)"),
  actions: z.array(z.string().min(1).max(128)).max(MAX_LIST).optional().describe("runs only these actions (CIDv0)"),
  wallets: z
    .array(z.string().regex(/^0x[0-9a-f]{40}$/, "must be a lowercase address"))
    .max(MAX_LIST)
    .optional()
    .describe("uses only these wallets"),
  budget: z
    .strictObject({
      window_seconds: z.number().int().min(1).max(MAX_BLOCK_BUDGET_WINDOW_SECONDS),
      max_value_wei: decimal.optional(),
      max_signatures: z.number().int().min(1).optional(),
    })
    .refine((b) => b.max_value_wei !== undefined || b.max_signatures !== undefined, {
      message: "a budget names max_value_wei, max_signatures or both",
    })
    .optional()
    .describe("what the runs through this block may sign in each window, counted by its id"),
  delegate: z.literal(false).optional().describe("false: no block may follow (the key cannot be narrowed further)"),
});

export const delegationTokenSchema = z.strictObject({
  v: z.literal(1),
  root: hex32.describe("the hash of the usage key the chain starts from"),
  blocks: z.array(delegationBlockSchema).min(1).max(MAX_DEPTH),
  tag: z.string().regex(/^[0-9a-f]{64}$/),
});

/** The path under the edge's URL where an enclave counts a delegated key's use (workers/routes/delegations.ts). */
export const DELEGATIONS_PATH = "/internal/v1/delegations";

/**
 * What an enclave asks the edge's Delegations store before a run through a delegated key: whether any
 * block of the chain is revoked and, op "use", to count one use against each block with `max_uses`
 * (all or nothing); op "peek" (a dry run) counts nothing.
 */
export const delegationUseRequestSchema = z.strictObject({
  op: z.enum(["use", "peek"]),
  /** The run's billing ref, as its token names it. */
  ref: z.string().min(1).max(128),
  /** The account's master hash: whose store. */
  account: hex32,
  blocks: z
    .array(
      z.strictObject({
        id: z.string().regex(/^[0-9a-f]{32}$/),
        /** The name of the block's use counter (delegationToken.ts checkedCounters): revocations are by id, uses by this. */
        counter: z.string().regex(/^[0-9a-f]{32}$/),
        max_uses: z.number().int().min(1).optional(),
        /** The block's own expiry (the earliest of it and the blocks before it), when it has one: past it (and a day), the store forgets its uses. */
        expires_at: z.number().int().positive().optional(),
      }),
    )
    .min(1)
    .max(MAX_DEPTH),
});
export type DelegationUseRequest = z.infer<typeof delegationUseRequestSchema>;

/** The store's answer: granted, or which block refused and why. */
export type DelegationUseAnswer =
  | { granted: true }
  | { granted: false; id: string; reason: "revoked" | "used_up"; max_uses?: number };

/**
 * Each block of `token` as the Delegations store counts it: its id (revocations), its counter (uses;
 * `counters`, from the enclave's check), its `max_uses`, and its own expiry — the earliest of its and
 * its ancestors', the same in every chain the block is part of — past which the store may forget it.
 */
export function useBlocks(token: DelegationToken, counters: readonly string[]): DelegationUseRequest["blocks"] {
  let expiresAt: number | undefined;
  return token.blocks.map((b, i) => {
    if (b.expires_at !== undefined) expiresAt = Math.min(expiresAt ?? b.expires_at, b.expires_at);
    return {
      id: b.id,
      counter: counters[i] as string,
      ...(b.max_uses === undefined ? {} : { max_uses: b.max_uses }),
      ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    };
  });
}
