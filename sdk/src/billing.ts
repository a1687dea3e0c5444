// Buying credit from code (docs/design/api.md, Billing): a payment intent from the service, confirmed with
// Stripe as Stripe.js would in a browser (the publishable key and the intent's client secret, at
// the Stripe API the service names: the local Stripe emulator under `npm start`), then credited
// by confirm_payment — once, whether Stripe's webhook or this call gets there first.
import { SigilError } from "./errors.ts";
import type { CallOptions, SigilClient } from "./client.ts";

export type TopUpResult = {
  paymentIntentId: string;
  creditedCents: number;
  alreadyCredited: boolean;
  balanceCents: number;
};

/**
 * Buys `amountCents` of credit (at least 500) for the client's account (its API key, or its
 * X-Wallet-Auth) with `paymentMethod` (a Stripe payment method; test mode: `pm_card_visa`).
 * A payment Stripe reports as processing is waited for up to `waitMs` (default 120 s).
 */
export async function topUp(
  client: SigilClient,
  args: { amountCents: number; paymentMethod?: string; waitMs?: number; fetch?: typeof globalThis.fetch },
  options: CallOptions = {},
): Promise<TopUpResult> {
  const doFetch = args.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const config = await client.getStripeConfig(undefined, options);
  const intent = await client.createPaymentIntent({ amount_cents: args.amountCents }, options);
  const stripeBase = (config as { api_base?: string }).api_base ?? "https://api.stripe.com";
  let paid: Response;
  try {
    paid = await doFetch(`${stripeBase}/v1/payment_intents/${encodeURIComponent(intent.payment_intent_id)}/confirm`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${config.publishable_key}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({
        payment_method: args.paymentMethod ?? "pm_card_visa",
        client_secret: intent.client_secret,
      }).toString(),
      signal: options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(60_000)])
        : AbortSignal.timeout(60_000),
    });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw new SigilError({
      code: "payment_not_succeeded",
      status: 0,
      message: `Stripe could not be reached at ${stripeBase}`,
      cause: err,
    });
  }
  const payment = (await paid.json().catch(() => ({}))) as {
    status?: string;
    error?: { message?: string; decline_code?: string; code?: string };
  };
  if (!paid.ok) {
    throw new SigilError({
      code: "payment_not_succeeded",
      status: 402,
      message: `Stripe refused the payment: ${payment.error?.message ?? paid.status}${payment.error?.decline_code ? ` (${payment.error.decline_code})` : ""}`,
      details: { payment_intent_id: intent.payment_intent_id, stripe: payment.error },
    });
  }
  const deadline = Date.now() + (args.waitMs ?? 120_000);
  for (;;) {
    try {
      const r = await client.confirmPayment({ payment_intent_id: intent.payment_intent_id }, options);
      return {
        paymentIntentId: intent.payment_intent_id,
        creditedCents: r.credited_cents,
        alreadyCredited: r.already_credited,
        balanceCents: r.balance_cents,
      };
    } catch (err) {
      const processing =
        err instanceof SigilError &&
        err.code === "payment_not_succeeded" &&
        (err.details as { status?: string } | undefined)?.status === "processing";
      if (!processing || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
}
