// Transactions the service sends for a wallet, from outside a script: `sendSigilTransaction` and
// `speedUpSigilTransaction` run the SDK's signing action (SIGNER_CODE, the one toSigilAccount runs,
// so the same grant lets a key do both) with Sigil.Actions.sendTransaction / speedUpTransaction, so
// nonce, gas and fees are the service's and the transaction is followed to its end.
//
// Waiting for a transaction the service sent (docs/design/transactions.md, Following): the service's
// follower takes each to a terminal state — confirmed, reverted, replaced, dropped (or released,
// never sent) — and `waitForTransaction` reads its record until it gets there or its own timeout
// runs out. It always ends: a terminal record, or a `SigilTransactionTimeoutError` carrying the last
// record it read (pending, with the follower's `last_error` when the chain's RPC is not answering).
import { getAddress, type Address, type TransactionRequest } from "viem";
import { signer } from "./account.ts";
import { sleep, type CallOptions, type SigilClient } from "./client.ts";
import { SigilError, SigilNetworkError } from "./errors.ts";
import { TERMINAL_STATUSES } from "../../shared/transactionStatus.ts";
import type { Transaction } from "./generated/api.ts";

/** The states a transaction does not leave (the service's own list, shared/transactions.ts). */
export const TERMINAL_TRANSACTION_STATUSES: readonly Transaction["status"][] = [...TERMINAL_STATUSES];

/** waitForTransaction ran out of time: `transaction` is the last record it read (undefined if none came). */
export class SigilTransactionTimeoutError extends SigilError {
  override name = "SigilTransactionTimeoutError";
  readonly transaction: Transaction | undefined;
  constructor(id: string, timeoutMs: number, transaction: Transaction | undefined) {
    super({
      code: "timeout",
      status: 0,
      message: `transaction ${id} was still ${transaction?.status ?? "unread"} after ${timeoutMs} ms${
        transaction?.last_error ? ` (${transaction.last_error})` : ""
      }`,
      details: transaction,
    });
    this.transaction = transaction;
  }
}

export type WaitForTransactionOptions = {
  /** How long to wait in all (default 120 000 ms). */
  timeoutMs?: number;
  /** How often to read the record (default 1 000 ms). */
  pollMs?: number;
  /** Aborts the wait: it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each record read, while it is not terminal. */
  onPending?: (transaction: Transaction) => void;
};

/**
 * Reads the transaction `id` (tx_…, what `Sigil.Actions.sendTransaction` answered) until it is in a
 * terminal state, and answers that record; the wait ends at `timeoutMs` with
 * `SigilTransactionTimeoutError`. An id the account has no transaction of is `not_found` at once. An error of the service other than a
 * busy one (429/503, which the client retries) ends it at once.
 */
export async function waitForTransaction(
  client: SigilClient,
  id: string,
  options: WaitForTransactionOptions = {},
): Promise<Transaction> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const pollMs = options.pollMs ?? 1_000;
  const deadline = Date.now() + timeoutMs;
  let last: Transaction | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const left = deadline - Date.now();
    if (left <= 0) throw new SigilTransactionTimeoutError(id, timeoutMs, last);
    const call: CallOptions = { timeoutMs: Math.max(1, Math.min(left, 30_000)) };
    if (options.signal) call.signal = options.signal;
    try {
      const [record] = (await client.listTransactions({ id }, call)).transactions;
      // A transaction exists from the moment sendTransaction answers its id: none is a wrong id (or account), not a wait.
      if (!record)
        throw new SigilError({ code: "not_found", status: 404, message: `no transaction ${id} in this account` });
      last = record;
      if (TERMINAL_TRANSACTION_STATUSES.includes(record.status)) return record;
      options.onPending?.(record);
    } catch (err) {
      // No answer to one read (the network, a slow call) is read again while time is left — the wait
      // ends at its own deadline with SigilTransactionTimeoutError; an answer the service refused is
      // the caller's to see at once.
      if (options.signal?.aborted) throw options.signal.reason;
      if (!(err instanceof SigilNetworkError)) throw err;
    }
    const pause = Math.min(pollMs, deadline - Date.now());
    if (pause > 0) await sleep(pause, options.signal);
  }
}

/** A transaction the service sent: its id (tx_…), hash, chain, nonce and status when it was sent. */
export type SentSigilTransaction = Pick<Transaction, "id" | "hash" | "chain_id" | "nonce" | "status">;

/**
 * Sends `transaction` from the Sigil wallet `wallet` through the service: it fills gas and fees,
 * numbers it, signs it (the wallet's guardrail and budgets decide) and sends it to the deployment's
 * RPC for `transaction.chainId`, then follows it (waitForTransaction). Give no nonce. `grant: true`
 * makes the signing action's group on a first refusal for want of one, as toSigilAccount does.
 */
export async function sendSigilTransaction(
  client: SigilClient,
  args: {
    wallet: Address | string;
    transaction: Omit<TransactionRequest, "nonce" | "from"> & { chainId: number };
    grant?: boolean;
  },
  options?: CallOptions,
): Promise<SentSigilTransaction> {
  const wallet = getAddress(args.wallet);
  const send = signer(client, wallet, options, args.grant === true);
  return (await send({ op: "sendTransaction", wallet, transaction: args.transaction })) as SentSigilTransaction;
}

/**
 * Sends the wallet's pending transaction `id` again with its nonce and fees at least an eighth higher
 * (and at least the chain's estimate, and at least `fees`); answers the new transaction. Whichever of
 * the two is mined, the other ends `replaced`.
 */
export async function speedUpSigilTransaction(
  client: SigilClient,
  args: {
    wallet: Address | string;
    id: string;
    fees?: { maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint; gasPrice?: bigint };
    grant?: boolean;
  },
  options?: CallOptions,
): Promise<SentSigilTransaction> {
  const wallet = getAddress(args.wallet);
  const fees = Object.fromEntries(
    Object.entries(args.fees ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, v.toString()]),
  );
  const send = signer(client, wallet, options, args.grant === true);
  return (await send({ op: "speedUpTransaction", wallet, id: args.id, fees })) as SentSigilTransaction;
}
