// Transactions the service sends and follows (docs/design/transactions.md): what a record says, and
// the messages between an enclave — which numbers, signs and broadcasts a script's transaction — and
// the account's Transactions object at the edge, which hands out nonces per (wallet, chain) for every
// enclave instance at once and keeps the records.
import { z } from "zod";
import { TRANSACTION_STATUSES } from "./transactionStatus.ts";

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/, "must be 0x + 64 lowercase hex");
const wallet = z.string().regex(/^0x[0-9a-f]{40}$/, "must be a lowercase 0x address");
const chainId = z
  .number()
  .int()
  .positive()
  .max(2 ** 53 - 1);

export { TERMINAL_STATUSES, TRANSACTION_STATUSES, type TransactionStatus } from "./transactionStatus.ts";

/** A transaction as the API shows it. */
export const transactionRecordSchema = z.object({
  id: z.string().describe("the transaction's id in Sigil (tx_…)"),
  wallet_address: wallet,
  chain_id: chainId,
  nonce: z.number().int().nonnegative(),
  hash: hex32.nullable().describe("its hash once signed; null while only its nonce is held"),
  status: z.enum(TRANSACTION_STATUSES),
  created_at: z.string().describe("when its nonce was reserved (ISO 8601)"),
  updated_at: z.string().describe("when its status last changed (ISO 8601)"),
  block_number: z.string().nullable().describe("the block it was mined in (confirmed, reverted)"),
  gas_used: z.string().nullable(),
  fee_wei: z.string().nullable().describe("what it cost: gas used × effective gas price"),
  last_error: z.string().nullable().describe("why it was released, or what the follower last met"),
  replaces: z
    .string()
    .nullable()
    .describe("the pending transaction this one speeds up (speedUpTransaction: the same nonce, higher fees)"),
  replaced_by: z
    .string()
    .nullable()
    .describe("replaced: the transaction of the service's that took its nonce; null when it came from elsewhere"),
});
export type TransactionRecord = z.infer<typeof transactionRecordSchema>;

/**
 * An enclave's request to the account's Transactions object, over the edge with the run's token:
 * - `reserve`: a nonce for the `index`-th send of the run `ref` (the same run retried under its
 *   Idempotency-Key has the same ref, so its sends find their records again), at least
 *   `chain_pending` (the wallet's pending count the enclave read from the chain). `payload` is the
 *   keccak256 of what is sent apart from nonce and fees: a retried run that sends something else at
 *   the same place is refused, never numbered twice.
 * - `sent`: the transaction went to the chain's RPC: its signed bytes (`raw`), whose hash is `hash`.
 * - `release`: it was not sent (the RPC refused it, or the run failed before): its nonce is free.
 * - `get`: a transaction of the account with its signed bytes, for a speed-up (any run of the account).
 * - `replace`: a nonce for the `index`-th send of the run `ref` that speeds up the pending transaction
 *   `id`: its own nonce, held by both until one of them is mined.
 */
export const transactionRequestSchema = z.discriminatedUnion("op", [
  z.strictObject({
    op: z.literal("reserve"),
    account: hex32,
    ref: z.string().min(1).max(128),
    index: z.number().int().nonnegative().max(10_000),
    wallet,
    chain_id: chainId,
    chain_pending: z.number().int().nonnegative(),
    payload: hex32,
  }),
  z.strictObject({
    op: z.literal("sent"),
    account: hex32,
    ref: z.string().min(1).max(128),
    id: z.string(),
    hash: hex32,
    raw: z
      .string()
      .regex(/^0x([0-9a-f]{2})+$/)
      .max(262_146)
      .optional()
      .describe(
        "absent from enclaves older than speed-ups and re-broadcasts: the record then has no bytes to send again",
      ),
  }),
  z.strictObject({
    op: z.literal("get"),
    account: hex32,
    ref: z.string().min(1).max(128),
    id: z.string(),
  }),
  z.strictObject({
    op: z.literal("replace"),
    account: hex32,
    ref: z.string().min(1).max(128),
    index: z.number().int().nonnegative().max(10_000),
    id: z.string(),
    payload: hex32,
  }),
  z.strictObject({
    op: z.literal("release"),
    account: hex32,
    ref: z.string().min(1).max(128),
    id: z.string(),
    reason: z.string().max(512),
  }),
]);
export type TransactionRequest = z.infer<typeof transactionRequestSchema>;

/**
 * The object's answer: the record as it stands now (a retried run's reservation gets its first one),
 * with its signed bytes for `get`, or why the request was refused — `conflict` (a retried run
 * sending something else at the same place, a sent transaction released, a mined one sent again, a
 * speed-up of one no longer pending), `not_found` (no such transaction of this run, or account).
 */
export type TransactionAnswer =
  | { ok: true; record: TransactionRecord; raw?: string | undefined }
  | { ok: false; code: "conflict" | "not_found"; reason: string };

/** The path under the edge's URL where an enclave reaches the Transactions object. */
export const TRANSACTIONS_PATH = "/internal/v1/transactions";
