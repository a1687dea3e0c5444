// Metering (billing.md, Fees): what a managed write and a run cost, held before the work and
// settled after it, in the caller's account's Ledger, under the request's billing ref — its
// request id, or under an Idempotency-Key the first attempt's, so that every attempt of one
// request holds and settles the same ledger row and is charged once. A managed write holds 1 cent,
// settles 1 once the enclave has sent the transaction — also when it then reverted on chain or its
// receipt did not come (the enclave's error names the transaction) — and releases the hold when
// the enclave refused it before sending. Every metered answer, error or not, says what it cost
// (X-Sigil-Charged-Cents, which the route sets from what these functions return). A run holds min(free balance, key's remaining cap, the run's maximum
// seconds) cents, is given that many seconds, and settles max(1, ceil(duration_ms / 1000)) — never
// more than it held (shared/fees.ts, the same function the enclave signs into the run's receipt). A run that stopped because its credit ran out ends with the code
// `insufficient_credits`, its logs kept.
//
// Settling does not wait on the client: the route's whole attempt runs under waitUntil
// (idempotency/index.ts), and a hold nobody settles — the edge was killed, or the invocation was
// cut off while the enclave worked on — is charged in full when it expires (ledger.ts). So a hold
// must outlive everything the edge may still be waiting for, or a live request would be charged
// its whole hold: a write's outlives its enclave call, a run's its granted seconds and the way there
// and back.
import { runSeconds } from "../../shared/fees.ts";
import type { Logger } from "../../shared/log.ts";
import type { SigilActionResponse } from "../../shared/operations.ts";
import { SigilError, sentTransactionOf, transactionHashIn } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";
import { callerAccount, hashHex, ledgerOf, type PresentedKey } from "./account.ts";
import type { HoldResult, KeyCap, Ledger, SettleResult, UsageDetail } from "./ledger.ts";

/** What a run came to and what it was charged; `settled`: the Ledger's settle (the balance after it, for webhooks), when billing is on. */
export type Charged<T> = { result: T; chargedCents: number; settled?: SettleResult };
/** What a write came to, its result or the error it ended in, and what it was charged either way (`settled` as for a run, when it was settled). */
export type Metered<T> = ({ ok: true; result: T } | { ok: false; error: unknown }) & {
  chargedCents: number;
  settled?: SettleResult;
};

/** A write's hold outlives its enclave call (150 s, after reaching an enclave) with room to settle. */
const WRITE_HOLD_MS = 5 * 60_000;
/** Beyond a run's granted seconds: reaching an enclave, queueing for a sandbox, fetching code by CID, the way back (RUN_FORWARD_MARGIN_MS), settling. */
const RUN_HOLD_MARGIN_MS = 5 * 60_000;
/** How long the edge waits for a run's answer beyond its granted seconds (less than RUN_HOLD_MARGIN_MS). */
export const RUN_FORWARD_MARGIN_MS = 60_000;

/** Whose credit a metered request spends: its account's Ledger and, for a usage key, the key's cap. */
export type Payer = { ledger: DurableObjectStub<Ledger>; key: KeyCap | undefined };

/**
 * The payer of a request made with `key`: its account's Ledger among `ledgers` (the LEDGER binding)
 * and the key's cap, from one live read of the chain (a key that may not act is refused here, 401
 * or 403). Undefined while billing is off: nothing is held or charged, and nothing is read.
 */
export async function payerOf(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  key: PresentedKey,
): Promise<Payer | undefined> {
  if (!config.billing) return undefined;
  const account = await callerAccount(config, key);
  return {
    ledger: ledgerOf(ledgers, account.master),
    key: account.isMaster ? undefined : { keyHash: hashHex(account.keyHash), capCents: account.spendLimitCents },
  };
}

/** Refusals (402) made while the account's Ledger said its Webhooks object has nothing to hear of (HoldResult.webhooks). */
const refusedQuietly = new WeakSet<SigilError>();

/** Whether `err` is a refusal of credit for an account whose Webhooks object has nothing to hear of (so none is told of it). */
export function refusedWithoutWebhooks(err: unknown): boolean {
  return err instanceof SigilError && refusedQuietly.has(err);
}

function refused(hold: HoldResult): SigilError {
  const error =
    hold.refusedBy === "spend_limit"
      ? new SigilError("insufficient_credits", "this API key has spent its spend limit", {
          details: { spend_limit: true },
        })
      : new SigilError("insufficient_credits", "the account has no credit left; top up through /billing", {
          details: { balance_cents: hold.freeCents },
        });
  if (!hold.webhooks) refusedQuietly.add(error);
  return error;
}

/**
 * Charges `payer` for a managed write under `ref`: 1 cent once `send` has had the transaction
 * sent, nothing if it was refused before. A write without credit for its cent is refused (thrown,
 * 402) before `send`; what `send` throws comes back as the outcome, with what it cost.
 */
export async function meteredWrite<T>(
  payer: Payer | undefined,
  ref: string,
  operation: string,
  send: () => Promise<T>,
): Promise<Metered<T>> {
  if (!payer) {
    try {
      return { ok: true, result: await send(), chargedCents: 0 };
    } catch (error) {
      return { ok: false, error, chargedCents: 0 };
    }
  }
  const { ledger, key } = payer;
  const hold = await ledger.hold(ref, 1, WRITE_HOLD_MS, key, { op: "write", detail: { operation } });
  if (hold.granted === 0) throw refused(hold);
  let result: T;
  try {
    result = await send();
  } catch (error) {
    const sent = sentTransactionOf(error);
    if (sent === undefined) {
      await ledger.release(ref);
      return { ok: false, error, chargedCents: 0 };
    }
    // Sent, then reverted on chain or lost: the payer paid gas, and the write costs its cent.
    const settled = await ledger.settle(ref, 1, key, { op: "write", detail: { operation, transaction_hash: sent } });
    return { ok: false, error, chargedCents: settled.chargedCents, settled };
  }
  const sent = transactionHashIn(result);
  const settled = await ledger.settle(ref, 1, key, {
    op: "write",
    detail: { operation, ...(sent ? { transaction_hash: sent } : {}) },
  });
  return { ok: true, result, chargedCents: settled.chargedCents, settled };
}

/** Frees `ref`'s hold without charging (a hold that had expired is a charge already and stays one). */
export async function releaseHold(payer: Payer | undefined, ref: string): Promise<void> {
  if (!payer) return;
  await payer.ledger.release(ref);
}

/**
 * Charges `payer` for a run under `ref` by its started seconds (shared/fees.ts, the function the
 * enclave signs the run's receipt with). A run may last `timeoutMs` (the configured default,
 * limits.timeoutMs) and holds that many seconds; `run` gets the milliseconds the credit allows
 * (undefined: billing off). What is settled should be the receipt's `charged_cents`: when it is
 * not (the hold had expired and was charged in full, or an edge and an enclave disagree on the
 * fee), `log` says so loudly, and the answer keeps the receipt the enclave signed.
 */
export async function meteredRun(
  payer: Payer | undefined,
  timeoutMs: number,
  ref: string,
  cid: string | undefined,
  run: (timeoutMs: number | undefined) => Promise<SigilActionResponse>,
  log?: Logger,
): Promise<Charged<SigilActionResponse>> {
  const checked = (answer: SigilActionResponse, chargedCents: number): Charged<SigilActionResponse> => {
    // The enclave's answer is not parsed on the way back: an enclave that sent no receipt is logged, not a crash.
    const receiptCents = (answer.receipt as SigilActionResponse["receipt"] | undefined)?.charged_cents;
    if (receiptCents !== chargedCents) {
      log?.error("run receipt disagrees with the ledger", {
        ref,
        receiptCents: receiptCents ?? null,
        chargedCents,
        durationMs: answer.duration_ms,
      });
    }
    return { result: answer, chargedCents };
  };
  if (!payer) return checked(await run(undefined), 0);
  const { ledger, key } = payer;
  const maxSeconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const hold = await ledger.hold(ref, maxSeconds, maxSeconds * 1000 + RUN_HOLD_MARGIN_MS, key, {
    op: "run",
    ...(cid ? { detail: { cid } } : {}),
  });
  if (hold.granted === 0) throw refused(hold);
  let answer: SigilActionResponse;
  try {
    answer = await run(hold.granted * 1000);
  } catch (err) {
    await ledger.release(ref);
    throw err;
  }
  const settled = await ledger.settle(ref, runSeconds(answer.duration_ms), key, {
    op: "run",
    detail: runDetail(answer),
  });
  if (hold.granted < maxSeconds && answer.error?.code === "timeout") {
    answer = {
      ...answer,
      error: {
        code: "insufficient_credits",
        message: `the run used up the credit it could hold (${hold.granted} s) and was stopped`,
      },
    };
  }
  return { ...checked(answer, settled.chargedCents), settled };
}

/** What the usage history keeps of a run: its CID, duration, whether it failed, and its signed receipt. */
function runDetail(answer: SigilActionResponse): UsageDetail {
  const receipt = (answer as { receipt?: unknown }).receipt;
  return {
    cid: answer.cid,
    duration_ms: answer.duration_ms,
    ...(answer.has_error && answer.error ? { error_code: answer.error.code } : {}),
    ...(receipt === undefined ? {} : { receipt: JSON.stringify(receipt) }),
  };
}
