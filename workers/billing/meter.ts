// Metering (billing.md, Fees): what a managed write and a run cost, held before the work and
// settled after it, in the caller's account's Ledger, under the request's billing ref — its
// request id, or under an Idempotency-Key the first attempt's, so that every attempt of one
// request holds and settles the same ledger row and is charged once. A managed write holds 1 cent,
// settles 1 once the enclave has sent the transaction — also when it then reverted on chain or its
// receipt did not come (the enclave's error names the transaction) — and releases the hold when
// the enclave refused it before sending. Every metered answer, error or not, says what it cost
// (X-Sigil-Charged-Cents). A run holds min(free balance, key's remaining cap, the run's maximum
// seconds) cents, is given that many seconds, and settles max(1, ceil(duration_ms / 1000)) — never
// more than it held. A run that stopped because its credit ran out ends with the code
// `insufficient_credits`, its logs kept.
//
// Settling does not wait on the client: the route's whole attempt runs under waitUntil
// (idempotency/index.ts), and a hold nobody settles — the edge was killed, or the invocation was
// cut off while the enclave worked on — is charged in full when it expires (ledger.ts). So a hold
// must outlive everything the edge may still be waiting for, or a live request would be charged
// its whole hold: a write's outlives its enclave call, a run's its granted seconds and the way there
// and back.
import type { Context } from "hono";
import type { SigilActionResponse } from "../../shared/enclaveApi.ts";
import { SigilError, sentTransactionOf } from "../../shared/errors.ts";
import type { EdgeEnv } from "../router.ts";
import { callerAccount, hashHex, ledgerOf } from "./account.ts";
import type { HoldResult, KeyCap, Ledger } from "./ledger.ts";

export type Metered<T> = { result: T; chargedCents: number };

/** A write's hold outlives its enclave call (150 s, after reaching an enclave) with room to settle. */
const WRITE_HOLD_MS = 5 * 60_000;
/** Beyond a run's granted seconds: reaching an enclave, queueing for a sandbox, fetching code by CID, the way back (RUN_FORWARD_MARGIN_MS), settling. */
const RUN_HOLD_MARGIN_MS = 5 * 60_000;
/** How long the edge waits for a run's answer beyond its granted seconds (less than RUN_HOLD_MARGIN_MS). */
export const RUN_FORWARD_MARGIN_MS = 60_000;

type Billed = { ledger: DurableObjectStub<Ledger>; key: KeyCap | undefined };

/** The caller's account's ledger and the key's cap. */
async function billed(c: Context<EdgeEnv>): Promise<Billed> {
  const account = await callerAccount(c);
  return {
    ledger: ledgerOf(c, account.master),
    key: account.isMaster ? undefined : { keyHash: hashHex(account.keyHash), capCents: account.spendLimitCents },
  };
}

function refused(hold: HoldResult): SigilError {
  if (hold.refusedBy === "spend_limit") {
    return new SigilError("insufficient_credits", "this API key has spent its spend limit", { details: { spend_limit: true } });
  }
  return new SigilError("insufficient_credits", "the account has no credit left; top up through /billing", { details: { balance_cents: hold.freeCents } });
}

/**
 * Charges a managed write under `ref`: 1 cent once `send` has had the transaction sent, nothing if
 * it was refused before.
 */
export async function meteredWrite<T>(c: Context<EdgeEnv>, ref: string, send: () => Promise<T>): Promise<Metered<T>> {
  c.header("X-Sigil-Charged-Cents", "0");
  if (!c.get("config").billing) return { result: await send(), chargedCents: 0 };
  const { ledger, key } = await billed(c);
  const hold = await ledger.hold(ref, 1, WRITE_HOLD_MS, key);
  if (hold.granted === 0) throw refused(hold);
  let result: T;
  try {
    result = await send();
  } catch (err) {
    if (sentTransactionOf(err) === undefined) {
      await ledger.release(ref);
    } else {
      // Sent, then reverted on chain or lost: the payer paid gas, and the write costs its cent.
      const settled = await ledger.settle(ref, 1, key);
      c.header("X-Sigil-Charged-Cents", String(settled.chargedCents));
    }
    throw err;
  }
  const settled = await ledger.settle(ref, 1, key);
  c.header("X-Sigil-Charged-Cents", String(settled.chargedCents));
  return { result, chargedCents: settled.chargedCents };
}

/** Frees `ref`'s hold without charging (a hold that had expired is a charge already and stays one). */
export async function releaseHold(c: Context<EdgeEnv>, ref: string): Promise<void> {
  if (!c.get("config").billing) return;
  const { ledger } = await billed(c);
  await ledger.release(ref);
}

/**
 * Charges a run under `ref` by its started seconds; `run` gets the milliseconds the credit allows
 * (undefined: billing off).
 */
export async function meteredRun(c: Context<EdgeEnv>, ref: string, run: (timeoutMs: number | undefined) => Promise<SigilActionResponse>): Promise<Metered<SigilActionResponse>> {
  if (!c.get("config").billing) return { result: await run(undefined), chargedCents: 0 };
  const { ledger, key } = await billed(c);
  const maxSeconds = Math.max(1, Math.ceil(c.get("config").limits.timeoutMs / 1000));
  const hold = await ledger.hold(ref, maxSeconds, maxSeconds * 1000 + RUN_HOLD_MARGIN_MS, key);
  if (hold.granted === 0) throw refused(hold);
  let answer: SigilActionResponse;
  try {
    answer = await run(hold.granted * 1000);
  } catch (err) {
    await ledger.release(ref);
    throw err;
  }
  const settled = await ledger.settle(ref, Math.max(1, Math.ceil(answer.duration_ms / 1000)), key);
  if (hold.granted < maxSeconds && answer.error?.code === "timeout") {
    answer = { ...answer, error: { code: "insufficient_credits", message: `the run used up the credit it could hold (${hold.granted} s) and was stopped` } };
  }
  return { result: answer, chargedCents: settled.chargedCents };
}
