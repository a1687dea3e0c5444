// Crediting payments (docs/design/billing.md, Stripe): a payment is credited exactly once, whichever of
// `confirm_payment` and Stripe's webhook reports it first. Both credit the account's Ledger under
// the payment intent's id, the amount Stripe received, and the Ledger adds a payment intent once.
// A payment that failed or was canceled credits nothing.
import type { Logger } from "../../shared/log.ts";
import type Stripe from "stripe";
import { SigilError } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";
import { hashHex, ledgerOf } from "./account.ts";
import { shownBalanceCents } from "./balance.ts";
import type { Ledger } from "./ledger.ts";
import type { CreditResult } from "./ledgerTypes.ts";
import { retrieveIntent, stripeClient, verifiedEvent } from "./stripe.ts";

/**
 * What crediting a confirmed payment did: the cents it added (0 when already credited) and the
 * balance after (as shown, and the Ledger's free cents); the payment's amount (what was credited,
 * by this call or the first).
 */
export type Credited = {
  creditedCents: number;
  alreadyCredited: boolean;
  balanceCents: number;
  amountCents: number;
  freeCents: number;
};

/**
 * What a Stripe webhook did: the cents it credited, and the payment it was about, for the account's
 * own webhooks (workers/webhooks/emit.ts): a Sigil top-up that succeeded or failed.
 */
export type WebhookOutcome = {
  creditedCents: number;
  succeeded?: { master: bigint; paymentIntentId: string; amountCents: number; freeCents: number };
  failed?: PaymentFailure;
};

/** A Sigil top-up that Stripe says failed: whose, which event and intent, and Stripe's reasons. */
export type PaymentFailure = {
  master: bigint;
  stripeEventId: string;
  paymentIntentId: string;
  amountCents: number;
  code: string | null;
  declineCode: string | null;
  message: string | null;
};

/**
 * Credits the payment intent `paymentIntentId`, which the client says it confirmed
 * (confirm_payment), to the account `master`, once: Stripe must say it
 * succeeded, in USD, and was made for this account (another account's intent is refused before
 * anything about it, its status, is told).
 */
export async function creditPayment(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  master: bigint,
  paymentIntentId: string,
  log: Logger,
): Promise<Credited> {
  const intent = await retrieveIntent(stripeClient(config), paymentIntentId);
  if (intent.metadata?.account !== hashHex(master)) {
    throw new SigilError("payment_belongs_to_another_account", "this payment intent was not made for this account");
  }
  if (intent.status !== "succeeded" || intent.currency !== "usd") {
    throw new SigilError(
      "payment_not_succeeded",
      `the payment has not succeeded (its status is ${intent.status}); confirm it with Stripe first`,
      { details: { status: intent.status } },
    );
  }
  const credit = await creditIntent(ledgerOf(ledgers, master), master, intent, "confirm_payment", log);
  return {
    creditedCents: credit.creditedCents,
    alreadyCredited: credit.alreadyCredited,
    balanceCents: shownBalanceCents(credit.freeCents),
    amountCents: intent.amount_received,
    freeCents: credit.freeCents,
  };
}

/**
 * Reads a webhook from Stripe (`rawBody` as it came, signed in `signature`: refused 400 unless the
 * signature holds) and credits a `payment_intent.succeeded` to the account in the intent's
 * metadata; what it added, and the payment it was about. A `payment_intent.payment_failed` of a
 * Sigil top-up credits nothing and is reported as failed. A succeeded refund (`refund.created` or
 * `refund.updated`) takes its amount back from that account (debitRefund). Other events, and
 * intents that are not Sigil top-ups, credit nothing.
 */
export async function creditWebhook(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  rawBody: string,
  signature: string | undefined,
  log: Logger,
): Promise<WebhookOutcome> {
  const event = await verifiedEvent(config, rawBody, signature);
  if (event.type === "refund.created" || event.type === "refund.updated") {
    await debitRefund(config, ledgers, event.data.object, log);
    return { creditedCents: 0 };
  }
  if (event.type !== "payment_intent.succeeded" && event.type !== "payment_intent.payment_failed")
    return { creditedCents: 0 };
  const intent = event.data.object;
  const account = intent.metadata?.account;
  // Stripe retries what is not answered 2xx; an intent that is not a Sigil top-up never will be.
  if (typeof account !== "string" || !/^[0-9a-f]{64}$/.test(account) || intent.currency !== "usd") {
    log.warn("webhook for a payment that is not a Sigil top-up", { event: event.id, payment_intent: intent.id });
    return { creditedCents: 0 };
  }
  const master = BigInt(`0x${account}`);
  if (event.type === "payment_intent.payment_failed") {
    const failure = intent.last_payment_error;
    return {
      creditedCents: 0,
      failed: {
        master,
        stripeEventId: event.id,
        paymentIntentId: intent.id,
        amountCents: intent.amount,
        code: failure?.code ?? null,
        declineCode: failure?.decline_code ?? null,
        message: failure?.message ?? null,
      },
    };
  }
  const credit = await creditIntent(ledgerOf(ledgers, master), master, intent, "webhook", log);
  return {
    creditedCents: credit.creditedCents,
    succeeded: { master, paymentIntentId: intent.id, amountCents: intent.amount_received, freeCents: credit.freeCents },
  };
}

/** Credits a succeeded intent to the account `master` (its `ledger`); what it added (0 if known). */
async function creditIntent(
  ledger: DurableObjectStub<Ledger>,
  master: bigint,
  intent: Stripe.PaymentIntent,
  path: "confirm_payment" | "webhook",
  log: Logger,
): Promise<CreditResult> {
  const credit = await ledger.credit(intent.id, intent.amount_received);
  log.info(credit.alreadyCredited ? "payment already credited" : "payment credited", {
    path,
    payment_intent: intent.id,
    account: hashHex(master).slice(0, 12),
    cents: credit.creditedCents,
  });
  return credit;
}

/**
 * Takes a succeeded refund's amount back from the account its payment intent credited, once per
 * refund (Stripe sends refund.created, then refund.updated as its status moves; the Ledger counts
 * a refund id once). The account is read from the intent itself, retrieved from Stripe: a refund
 * names only its intent. A refund not (yet) succeeded, or of an intent that is not a Sigil top-up,
 * takes nothing.
 */
async function debitRefund(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  refund: Stripe.Refund,
  log: Logger,
): Promise<void> {
  const intentId = typeof refund.payment_intent === "string" ? refund.payment_intent : refund.payment_intent?.id;
  if (refund.status !== "succeeded" || !intentId || refund.currency !== "usd") {
    log.info("refund not debited", { refund: refund.id, status: refund.status });
    return;
  }
  const intent = await retrieveIntent(stripeClient(config), intentId);
  const account = intent.metadata?.account;
  if (typeof account !== "string" || !/^[0-9a-f]{64}$/.test(account)) {
    log.warn("refund of a payment that is not a Sigil top-up", { refund: refund.id, payment_intent: intentId });
    return;
  }
  const master = BigInt(`0x${account}`);
  const debit = await ledgerOf(ledgers, master).refund(refund.id, intentId, refund.amount);
  log.info(debit.alreadyDebited ? "refund already debited" : "refund debited", {
    refund: refund.id,
    payment_intent: intentId,
    account: account.slice(0, 12),
    cents: debit.debitedCents,
  });
}
