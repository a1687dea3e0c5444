// Budgets (docs/design/guardrails.md, Budgets): what a signature adds to a wallet's rolling-window
// counters, and the messages between the enclave, which decides that a signature needs room in a
// budget, and the store that keeps the counters (the edge's Budgets Durable Object, one per wallet),
// which reserves that room atomically before the enclave releases the signature.
//
// A signature is counted by its signer and its payload's digest (countedDigest): the same payload
// signed again by the same wallet is the same signature (the enclave's ECDSA is deterministic, RFC 6979), so a retried run, or a run
// that signs what an earlier one signed, adds nothing; a new payload always adds, however small.
import {
  concat,
  hashMessage,
  hashTypedData,
  keccak256,
  serializeTransaction,
  sha256,
  type Hex,
  type TransactionSerializable,
} from "viem";
import { z } from "zod";
import type { SignRequest } from "./evaluate.ts";
import type { Budget } from "./schema.ts";
import { solanaSpend } from "./solana.ts";
import { showLamports, showWei } from "./wei.ts";

export { showLamports, showWei };

/** The most a transaction may send and still be counted in a value budget: 2^128 wei (more than all ether there is). */
export const MAX_COUNTED_WEI = 1n << 128n;

/**
 * What a signature adds to a budget: one signature of its payload's digest, sending `valueWei` (an
 * EVM transaction's value) or spending `valueLamports` (a Solana transaction's).
 */
export type BudgetCharge = { digest: Hex; valueWei: bigint; valueLamports: bigint };

/** What a request sends: an EVM transaction's value in wei, a Solana transaction's spend in lamports, else nothing. */
export function budgetValue(request: SignRequest): { valueWei: bigint; valueLamports: bigint } {
  if (request.kind === "transaction") return { valueWei: request.transaction.value ?? 0n, valueLamports: 0n };
  if (request.kind === "solana_transaction") return { valueWei: 0n, valueLamports: solanaLamports(request) };
  return { valueWei: 0n, valueLamports: 0n };
}

/**
 * The lamports a Solana transaction spends from its wallet: what its System transfers send from the
 * wallet's address and its fee when the wallet pays it. A request that does not say the wallet's
 * address (a check without one) counts every transfer and the fee.
 */
function solanaLamports(request: { message: Uint8Array; signer?: string }): bigint {
  const spend = solanaSpend(request.message, request.signer);
  if ("unreadable" in spend) return 0n;
  return spend.lamports + (request.signer === undefined || spend.feePayer === request.signer ? spend.feeLamports : 0n);
}

/** The quantity `limit` counts of a charge: lamports for a budget of lamports, else wei. */
export function countedValue(limit: Pick<BudgetLimit, "max_lamports">, charge: Omit<BudgetCharge, "digest">): bigint {
  return limit.max_lamports !== undefined ? charge.valueLamports : charge.valueWei;
}

/** The charge of a request the guardrail allowed (a key export is never budgeted: evaluate.ts refuses the document). */
export function budgetCharge(request: SignRequest): BudgetCharge {
  switch (request.kind) {
    case "transaction":
      return { digest: transactionDigest(request.transaction), ...budgetValue(request) };
    case "typed_data":
      return { digest: hashTypedData(request.typedData), ...budgetValue(request) };
    case "message":
      return { digest: hashMessage(request.message), ...budgetValue(request) };
    case "hash":
      return { digest: request.digest, ...budgetValue(request) };
    case "export":
      return { digest: keccak256(new TextEncoder().encode("sigil:key-export")), ...budgetValue(request) };
    case "solana_message":
    case "solana_transaction":
      return { digest: sha256(request.message), ...budgetValue(request) };
  }
}

/**
 * What a budget counts a signature under: the signer and the payload's digest together. The same
 * payload is the same signature only for the same key — a key's own budgets count what it signs with
 * every wallet, where two wallets signing one payload are two signatures.
 */
export function countedDigest(signer: string, digest: Hex): Hex {
  return keccak256(concat([signer.toLowerCase() as Hex, digest]));
}

/**
 * A transaction's signing hash; for one too incomplete to serialize (check_guardrail takes partial
 * payloads: no fee fields, say), a hash of its fields, which names it as well for counting. A run's
 * transactions always serialize: the sandbox made the digest it signs from the same fields.
 */
function transactionDigest(tx: TransactionSerializable): Hex {
  try {
    return keccak256(serializeTransaction(tx));
  } catch {
    return keccak256(
      new TextEncoder().encode(JSON.stringify(tx, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))),
    );
  }
}

/** Who a run is, for the budgets counted per key or per action. */
export type BudgetRunner = { keyHash: Hex; cid: string };

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/, "must be 0x + 64 lowercase hex");
const decimal = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "must be a decimal integer string");

/** A budget as the store counts it: the document's limits and the scope its counters are kept under. */
export const budgetLimitSchema = z.strictObject({
  name: z.string().min(1).max(64),
  per: z.enum(["wallet", "key", "action"]),
  /** "wallet", or the usage key's hash ("key:0x…"), or the action's CID ("action:Qm…"). */
  scope: z.string().min(1).max(160),
  window_seconds: z.number().int().positive(),
  max_value_wei: decimal.optional(),
  max_lamports: decimal.optional(),
  max_signatures: z.number().int().positive().optional(),
});
export type BudgetLimit = z.infer<typeof budgetLimitSchema>;

/** The limits a signature by `runner` must fit in. */
export function budgetLimits(budgets: readonly Budget[], runner: BudgetRunner): BudgetLimit[] {
  return budgets.map((b) => {
    const per = b.per ?? "wallet";
    return {
      name: b.name,
      per,
      scope: per === "wallet" ? "wallet" : per === "key" ? `key:${runner.keyHash}` : `action:${runner.cid}`,
      window_seconds: b.window_seconds,
      ...(b.max_value_wei === undefined ? {} : { max_value_wei: b.max_value_wei }),
      ...(b.max_lamports === undefined ? {} : { max_lamports: b.max_lamports }),
      ...(b.max_signatures === undefined ? {} : { max_signatures: b.max_signatures }),
    };
  });
}

/** The enclave's request to the store: reserve room for one signature, or (`peek`) only say what is used. */
export const budgetRequestSchema = z.strictObject({
  op: z.enum(["reserve", "peek"]),
  /** The account's master hash. */
  account: hex32,
  /** Whose counters: the wallet's address, "key:0x…" for a usage key's own guardrail, "delegation:<block id>" for a delegated key's block. */
  wallet: z.string().regex(/^(0x[0-9a-f]{40}|key:0x[0-9a-f]{64}|delegation:[0-9a-f]{32})$/),
  /** The run's billing ref, which the edge's token names: the record of who reserved. */
  ref: z.string().min(1).max(128),
  digest: hex32,
  value_wei: decimal,
  /** What a Solana transaction spends, in lamports (budgets of lamports count it); absent: 0. */
  value_lamports: decimal.optional(),
  budgets: z.array(budgetLimitSchema).min(1).max(8),
});
export type BudgetRequest = z.infer<typeof budgetRequestSchema>;

/** One budget's counters in one scope, as a person reads them. */
export const budgetStateSchema = z.object({
  name: z.string(),
  per: z.enum(["wallet", "key", "action"]),
  scope: z.string(),
  window_seconds: z.number().int(),
  max_value_wei: z.string().optional(),
  max_lamports: z.string().optional(),
  max_signatures: z.number().int().optional(),
  used_value_wei: z.string().describe("native value counted in the window now (0 for a budget of lamports)"),
  used_lamports: z.string().optional().describe("lamports counted in the window now (max_lamports only)"),
  left_lamports: z.string().optional().describe("what may still be spent in the window (max_lamports only)"),
  used_signatures: z.number().int().describe("signatures counted in the window now"),
  left_value_wei: z.string().optional().describe("what may still be sent in the window (max_value_wei only)"),
  left_signatures: z
    .number()
    .int()
    .optional()
    .describe("how many more may be signed in the window (max_signatures only)"),
  frees_at: z
    .string()
    .nullable()
    .describe("when the oldest entry counted now leaves the window (ISO 8601); null when nothing is counted"),
});
export type BudgetState = z.infer<typeof budgetStateSchema>;

/**
 * The store's answer. `granted`: room was reserved in every budget (`repeated`: the digest was counted
 * already, nothing was added), with the counters before and after. Refused: `budget` had no room, with
 * what it holds and what the signature would have added (`notify`: the first refusal of that budget in
 * its window, which the edge tells the account's webhooks as budget.exhausted). A peek answers
 * `granted` as a reservation would, and changes nothing.
 */
export type BudgetAnswer =
  | { granted: true; repeated: boolean; before: BudgetState[]; after: BudgetState[] }
  | {
      granted: false;
      budget: string;
      reason: string;
      observed: string;
      before: BudgetState[];
      notify: boolean;
    };

/** How the enclave reaches the store for one run: the edge's URL and its token for the run (only the edge makes these). */
export const budgetAccessSchema = z.strictObject({
  url: z.string().url().max(512),
  token: z.string().min(1).max(512),
});
export type BudgetAccess = z.infer<typeof budgetAccessSchema>;

/** The path under the edge's URL where the enclave asks the store. */
export const BUDGET_PATH = "/internal/v1/budgets";

/** What a budget's scope holds in its window now: how many signatures, how much value, since when. */
export type BudgetUse = { count: number; value: bigint; oldest: number | null };

/** The use a budget's state describes (what a dry run adds its own signatures to). */
export function useOf(state: BudgetState): BudgetUse {
  return {
    count: state.used_signatures,
    value: BigInt(state.max_lamports !== undefined ? (state.used_lamports ?? "0") : state.used_value_wei),
    oldest: state.frees_at === null ? null : Date.parse(state.frees_at) - state.window_seconds * 1000,
  };
}

/** Why a signature adding `value` (what the budget counts: countedValue) does not fit in `limit` as `use` stands, if it does not. */
export function budgetRefusal(
  limit: BudgetLimit,
  use: BudgetUse,
  value: bigint,
): { reason: string; observed: string } | undefined {
  const window = windowWords(limit.window_seconds);
  // No budget counts a value its store cannot keep exactly (store.ts keeps values below 2^128).
  const lamports = limit.max_lamports !== undefined;
  const show = lamports ? showLamports : showWei;
  const unit = lamports ? "lamports" : "wei";
  if (value >= MAX_COUNTED_WEI)
    return {
      reason: `budget "${limit.name}" counts less than ${show(MAX_COUNTED_WEI)} in one signature, and this sends ${show(value)}`,
      observed: `${value} ${unit} asked`,
    };
  if (limit.max_signatures !== undefined && use.count + 1 > limit.max_signatures) {
    return {
      reason: `budget "${limit.name}" allows ${limit.max_signatures} signatures ${window}${scopeWords(limit)}, and ${use.count} are counted`,
      observed: `${use.count} of ${limit.max_signatures} signatures used`,
    };
  }
  const most = limit.max_lamports ?? limit.max_value_wei;
  if (most !== undefined) {
    const max = BigInt(most);
    if (use.value + value > max) {
      return {
        reason: `budget "${limit.name}" allows ${show(max)} ${window}${scopeWords(limit)}; ${show(use.value)} is counted and this ${lamports ? "spends" : "sends"} ${show(value)}`,
        observed: `${value} ${unit} asked, ${max - use.value > 0n ? max - use.value : 0n} ${unit} left`,
      };
    }
  }
  return undefined;
}

export function budgetState(limit: BudgetLimit, use: BudgetUse): BudgetState {
  return {
    name: limit.name,
    per: limit.per,
    scope: limit.scope,
    window_seconds: limit.window_seconds,
    ...(limit.max_value_wei === undefined ? {} : { max_value_wei: limit.max_value_wei }),
    ...(limit.max_lamports === undefined ? {} : { max_lamports: limit.max_lamports }),
    ...(limit.max_signatures === undefined ? {} : { max_signatures: limit.max_signatures }),
    used_value_wei: limit.max_lamports === undefined ? use.value.toString() : "0",
    ...(limit.max_lamports === undefined
      ? {}
      : {
          used_lamports: use.value.toString(),
          left_lamports: maxZero(BigInt(limit.max_lamports) - use.value).toString(),
        }),
    used_signatures: use.count,
    ...(limit.max_value_wei === undefined
      ? {}
      : { left_value_wei: maxZero(BigInt(limit.max_value_wei) - use.value).toString() }),
    ...(limit.max_signatures === undefined ? {} : { left_signatures: Math.max(0, limit.max_signatures - use.count) }),
    frees_at: use.oldest === null ? null : new Date(use.oldest + limit.window_seconds * 1000).toISOString(),
  };
}

const maxZero = (v: bigint) => (v > 0n ? v : 0n);

function windowWords(seconds: number): string {
  if (seconds % 86_400 === 0) return seconds === 86_400 ? "a day" : `in ${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return seconds === 3600 ? "an hour" : `in ${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? "a minute" : `in ${seconds / 60} minutes`;
  return `in ${seconds} s`;
}

function scopeWords(limit: BudgetLimit): string {
  return limit.per === "key" ? " per usage key" : limit.per === "action" ? " per action" : "";
}
