// Starting a top-up (docs/design/billing.md, Stripe): an amount of at least MIN_TOP_UP_CENTS becomes a Stripe
// payment intent in USD for the account's Stripe customer, made on its first top-up, with the
// account in its metadata so that confirming it, or Stripe's webhook, credits that account
// (payments.ts). The client confirms the intent with Stripe using its client secret.
import type Stripe from "stripe";
import { SigilError } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";
import { hashHex, ledgerOf } from "./account.ts";
import { centsDisplay } from "./balance.ts";
import type { Ledger } from "./ledger.ts";
import { stripeCall, stripeClient } from "./stripe.ts";

/** docs/design/billing.md: the smallest top-up, in cents. */
export const MIN_TOP_UP_CENTS = 500;
/** Stripe's largest USD amount. */
export const MAX_TOP_UP_CENTS = 99_999_999;

/** A started top-up: the intent's id and the secret the client confirms it with. */
export type TopUp = { paymentIntentId: string; clientSecret: string };

/**
 * Starts a top-up of `amountCents` for the account `master` (its Ledger among `ledgers`). Stripe's
 * idempotency key for the intent is made of `intentKey`: the same key is answered the same intent,
 * so a caller that may be retrying passes the same `intentKey` on every attempt.
 */
export async function startTopUp(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  master: bigint,
  amountCents: number,
  intentKey: string,
): Promise<TopUp> {
  if (amountCents < MIN_TOP_UP_CENTS) {
    throw new SigilError(
      "amount_below_minimum",
      `a top-up is at least ${MIN_TOP_UP_CENTS} cents (${centsDisplay(MIN_TOP_UP_CENTS)})`,
      { details: { minimum_cents: MIN_TOP_UP_CENTS } },
    );
  }
  const stripe = stripeClient(config);
  const customer = await customerOf(stripe, ledgerOf(ledgers, master), master);
  const account = hashHex(master);
  const intent = await stripeCall("create payment intent", () =>
    stripe.paymentIntents.create(
      {
        amount: amountCents,
        currency: "usd",
        customer,
        automatic_payment_methods: { enabled: true },
        metadata: { account },
        description: "Sigil credits",
      },
      { idempotencyKey: `sigil-intent-${intentKey}` },
    ),
  );
  if (!intent.client_secret) throw new Error(`Stripe answered payment intent ${intent.id} without a client secret`);
  return { paymentIntentId: intent.id, clientSecret: intent.client_secret };
}

/** The Stripe customer of the account, made on its first top-up. */
async function customerOf(stripe: Stripe, ledger: DurableObjectStub<Ledger>, master: bigint): Promise<string> {
  const known = await ledger.customer();
  if (known) return known;
  const email = await ledger.contactEmail();
  const account = hashHex(master);
  // One customer per account even when two first top-ups race: Stripe answers the same key alike.
  const created = await stripeCall("create customer", () =>
    stripe.customers.create(
      { metadata: { account }, ...(email ? { email } : {}) },
      { idempotencyKey: `sigil-customer-${account}` },
    ),
  );
  return (await ledger.customer(created.id)) ?? created.id;
}
