// Telling an account's webhook endpoints what happened (issue 14), from the places where it happens:
// the payment paths (routes/billing.ts), and the metered writes and runs, whose routes declare the
// `notices()` stage (routes/write.ts, routes/sigilAction.ts). Each fact goes to the account's Webhooks Durable Object (store.ts) under
// waitUntil, so no answer waits for it and none fails because of it (a failure is logged), and under a
// de-duplication key that names the fact (the payment intent, the request id, the key and its cap), so
// a fact reported twice — confirm_payment and Stripe's webhook, a retried request — is one event.
import type { Context } from "hono";
import { SigilError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { BudgetAnswer, BudgetRequest } from "../../shared/guardrails/budgets.ts";
import type { SigilActionResponse } from "../../shared/operations.ts";
import { accountObject, callerAccount, hashHex, type PresentedKey } from "../billing/account.ts";
import { meterOf, refusedWithoutWebhooks } from "../billing/meter.ts";
import type { EdgeConfig } from "../config.ts";
import type { KeyCap } from "../billing/ledgerTypes.ts";
import type { LeaseSettle, Settlement } from "../billing/lease.ts";
import type { PaymentFailure } from "../billing/payments.ts";
import { callerKey } from "../middleware/auth/index.ts";
import type { EdgeEnv, Stage } from "../router.ts";
import type { Emission, Webhooks } from "./store.ts";

/** Where an emission goes and how it outlives the request. */
export type Emitter = {
  namespace: DurableObjectNamespace<Webhooks> | undefined;
  waitUntil(work: Promise<unknown>): void;
  log: Logger;
};

/** The Webhooks object of the account `master` among `namespace` (the WEBHOOKS binding). */
export function webhooksOf(
  namespace: DurableObjectNamespace<Webhooks> | undefined,
  master: bigint,
): DurableObjectStub<Webhooks> {
  return accountObject(namespace, master, "webhooks need the WEBHOOKS Durable Object, which is not bound");
}

/** The account id events carry: its master hash as new_account answers it. */
export const accountIdOf = (master: bigint) => `0x${hashHex(master)}`;

/** The emitter of a request: its WEBHOOKS binding, its invocation's waitUntil (none outside one: the work just runs), its log. */
export function emitterOf(c: Context<EdgeEnv>): Emitter {
  let waitUntil: (work: Promise<unknown>) => void = () => undefined;
  try {
    const ctx = c.executionCtx;
    waitUntil = (work) => ctx.waitUntil(work);
  } catch {
    // no execution context (called outside a Worker invocation)
  }
  return { namespace: c.env.WEBHOOKS, waitUntil, log: c.get("log") };
}

/** Runs `work` on the account's object after the answer; a failure is logged, never thrown. */
function later(
  emitter: Emitter,
  master: bigint,
  what: string,
  work: (stub: DurableObjectStub<Webhooks>, accountId: string) => Promise<unknown>,
): void {
  if (!emitter.namespace) return;
  const run = (async () => {
    try {
      await work(webhooksOf(emitter.namespace, master), accountIdOf(master));
    } catch (err) {
      emitter.log.warn("webhook emission failed", {
        what,
        account: hashHex(master).slice(0, 12),
        error: err instanceof Error ? err.message : String(err),
      });
    }
  })();
  emitter.waitUntil(run);
}

function emit(emitter: Emitter, master: bigint, emission: Emission): void {
  later(emitter, master, emission.type, (stub, accountId) => stub.emit(accountId, emission));
}

/** `payment.credited`, once per payment intent (from confirm_payment or Stripe's webhook), and the balance it left. */
export function paymentCredited(
  emitter: Emitter,
  master: bigint,
  credit: { paymentIntentId: string; amountCents: number; freeCents: number },
): void {
  later(emitter, master, "payment.credited", async (stub, accountId) => {
    // A credit that lifts the balance to the threshold or above re-arms balance.low (before the
    // event goes out, so a receiver that got payment.credited knows the next crossing will fire).
    await stub.observeBalance(accountId, credit.freeCents, credit.paymentIntentId);
    await stub.emit(accountId, {
      type: "payment.credited",
      dedupe: `payment.credited:${credit.paymentIntentId}`,
      data: {
        payment_intent_id: credit.paymentIntentId,
        amount_cents: credit.amountCents,
        balance_cents: Math.max(0, credit.freeCents),
      },
    });
  });
}

/** `payment.failed`, once per Stripe event (a payment intent may fail more than once, with different cards). */
export function paymentFailed(emitter: Emitter, failure: PaymentFailure): void {
  emit(emitter, failure.master, {
    type: "payment.failed",
    dedupe: `payment.failed:${failure.stripeEventId}`,
    data: {
      payment_intent_id: failure.paymentIntentId,
      amount_cents: failure.amountCents,
      failure_code: failure.code,
      decline_code: failure.declineCode,
      failure_message: failure.message,
    },
  });
}

const capReached = (key: KeyCap, spentCents: number): Emission => ({
  type: "usage_key.cap_reached",
  // Once per key per cap: raising the cap and reaching it again is a new event.
  dedupe: `usage_key.cap_reached:${key.keyHash}:${key.capCents}`,
  data: { usage_key_hash: `0x${key.keyHash}`, spend_limit_cents: key.capCents, spent_cents: spentCents },
});

/** A usage key's hold was refused for its spend limit: `usage_key.cap_reached`. */
function capRefused(emitter: Emitter, master: bigint, key: KeyCap): void {
  emit(emitter, master, capReached(key, key.capCents));
}

/** Whether `err` is meter.ts's refusal of a hold for a usage key's spend limit (402 with details.spend_limit). */
function isSpendLimitRefusal(err: unknown): boolean {
  return (
    err instanceof SigilError &&
    err.code === "insufficient_credits" &&
    (err.details as { spend_limit?: unknown } | undefined)?.spend_limit === true
  );
}

/**
 * What a metered request (a write or a run under `ref`, by the caller `key`) tells the account's
 * endpoints, after it is answered: a refusal for the key's cap, the balance and the key's spending
 * after its settle. The caller's account is the one billing read for the request (no new chain read).
 * Nothing when the Ledger, in the hold or settle the request made anyway, said the account's
 * Webhooks object has no endpoint and no balance.low threshold (store.ts says why that is safe): a
 * call would change nothing there, and it costs the edge a Durable Object call per run.
 */
function afterMetered(
  emitter: Emitter,
  config: EdgeConfig,
  key: PresentedKey,
  ref: string,
  outcome: { settled?: Settlement | undefined; error?: unknown; run?: SigilActionResponse },
): void {
  if (!emitter.namespace) return;
  const refusals = refusalsOf(outcome.run);
  if (!outcome.settled && !isSpendLimitRefusal(outcome.error) && !outcome.run?.has_error && refusals.length === 0)
    return;
  if (outcome.settled ? !outcome.settled.webhooks : refusedWithoutWebhooks(outcome.error)) return;
  // The balance after the charge is the Ledger's, once the charge is committed there (lease.ts).
  const committed = outcome.settled?.committed().catch(() => undefined);
  emitter.waitUntil(
    Promise.all([callerAccount(config, key), committed])
      .then(([account, result]) => {
        const cap = account.isMaster
          ? undefined
          : { keyHash: hashHex(account.keyHash), capCents: account.spendLimitCents };
        if (cap && cap.capCents > 0 && isSpendLimitRefusal(outcome.error)) capRefused(emitter, account.master, cap);
        settled(emitter, account.master, ref, result, cap);
        if (outcome.run?.has_error) runFailed(emitter, account.master, ref, outcome.run, cap);
        if (outcome.run && refusals.length > 0)
          guardrailDenied(emitter, account.master, ref, outcome.run, refusals, cap);
      })
      .catch(() => undefined),
  );
}

/**
 * After a metered write or run settled under `ref`: balance.low if the balance went under the
 * threshold, and usage_key.cap_reached if the settle brought a usage key to its cap.
 */
function settled(
  emitter: Emitter,
  master: bigint,
  ref: string,
  result: LeaseSettle | undefined,
  key: KeyCap | undefined,
): void {
  if (!result) return;
  later(emitter, master, "balance.low", (stub, accountId) => stub.observeBalance(accountId, result.freeCents, ref));
  if (key && key.capCents > 0 && result.keySpentCents !== undefined && result.keySpentCents >= key.capCents)
    emit(emitter, master, capReached(key, result.keySpentCents));
}

/** A run whose answer has an error: `run.failed` (only endpoints that subscribed to it get it), once per request. */
function runFailed(
  emitter: Emitter,
  master: bigint,
  ref: string,
  run: { cid?: string | undefined; error?: { code: string; message: string } | undefined; duration_ms: number },
  key: KeyCap | undefined,
): void {
  emit(emitter, master, {
    type: "run.failed",
    dedupe: `run.failed:${ref}`,
    data: {
      request_id: ref,
      cid: run.cid ?? null,
      error: { code: run.error?.code ?? "script_error", message: run.error?.message ?? "" },
      duration_ms: run.duration_ms,
      usage_key_hash: key ? `0x${key.keyHash}` : null,
    },
  });
}

type Refusal = { wallet: string; guardrail: string | null; kind: string; digest: string | null; rule: string };

/** What the wallets' guardrails refused in a run, from its receipt (docs/design/guardrails.md). */
function refusalsOf(run: SigilActionResponse | undefined): Refusal[] {
  return (run?.receipt.wallets ?? []).flatMap((w) =>
    (w.refused ?? []).map((r) => ({
      wallet: w.address,
      guardrail: w.guardrail ?? null,
      kind: r.kind,
      digest: r.digest ?? null,
      rule: r.rule,
    })),
  );
}

/**
 * A run in which a wallet's guardrail refused a signature: `guardrail.denied`, once per request,
 * listing every refusal (wallet, guardrail hash, what was asked, the rule), whether or not the script
 * went on — a refusal is what the account's operator wants to hear of, even from a run that succeeded.
 */
function guardrailDenied(
  emitter: Emitter,
  master: bigint,
  ref: string,
  run: SigilActionResponse,
  refusals: Refusal[],
  key: KeyCap | undefined,
): void {
  emit(emitter, master, {
    type: "guardrail.denied",
    dedupe: `guardrail.denied:${ref}`,
    data: { request_id: ref, cid: run.cid, refusals, usage_key_hash: key ? `0x${key.keyHash}` : null },
  });
}

/**
 * A wallet's budget that refused a signature for want of room: `budget.exhausted`, once per budget
 * and scope until room frees up again (the Budgets object says which refusal is the first).
 */
export function budgetExhausted(
  emitter: Emitter,
  request: BudgetRequest,
  answer: Extract<BudgetAnswer, { granted: false }>,
): void {
  const state = answer.before.find((b) => b.name === answer.budget);
  emit(emitter, BigInt(request.account), {
    type: "budget.exhausted",
    dedupe: `budget.exhausted:${request.wallet}:${answer.budget}:${state?.scope ?? ""}:${state?.frees_at ?? ""}`,
    data: {
      wallet: request.wallet,
      budget: answer.budget,
      reason: answer.reason,
      request_id: request.ref,
      ...(state ? { state } : {}),
    },
  });
}

/**
 * The stage that tells the account's endpoints what came of a metered request (router.ts
 * `pipeline`; before the `metered` stage, which it reads): once the request is answered, under
 * waitUntil, never delaying the answer — a refusal for the key's cap, the balance and the key's
 * spending after the settle, a run that failed.
 */
export function notices(): Stage {
  return async (c, next) => {
    await next();
    const meter = meterOf(c);
    if (!meter) return;
    const outcome = meter.settlement || meter.run ? { settled: meter.settlement, run: meter.run } : { error: c.error };
    afterMetered(emitterOf(c), c.get("config"), callerKey(c), meter.ref, outcome);
  };
}
