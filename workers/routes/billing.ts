// The billing endpoints (docs/design/api.md, Billing; docs/design/billing.md, Stripe): the publishable key, the balance,
// payment intents, their confirmation and Stripe's webhook. The rules (the minimum top-up, the
// Stripe customer, crediting a payment once) are billing/topUp.ts and billing/payments.ts; here
// the requests are validated, their caller named and the answers shaped. Both writes take an
// Idempotency-Key (idempotency/), kept under the caller's key or X-Wallet-Auth's wallet.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import { newRouter, perRequest, pipeline, type EdgeEnv } from "../router.ts";
import { billingCaller, WALLET_AUTH_HEADER, type BillingCaller, type BillingCredentials } from "../billing/account.ts";
import { accountBalance } from "../billing/balance.ts";
import { creditPayment, creditWebhook } from "../billing/payments.ts";
import { MAX_TOP_UP_CENTS, MIN_TOP_UP_CENTS, startTopUp } from "../billing/topUp.ts";
import {
  attemptOf,
  idempotencyHeaders,
  idempotent,
  idempotentAnswerHeaders,
  keyHolder,
  walletHolder,
  type HolderOf,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { defaultBodyLimit } from "../middleware/bodyLimit/index.ts";
import { emitterOf, paymentCredited, paymentFailed } from "../webhooks/emit.ts";
import { errorAnswer, jsonBody as body, jsonResponse as json, keySecurity, route } from "./openapi.ts";

export const billingSecurity: Array<Record<string, string[]>> = [...keySecurity, { WalletAuth: [] }];

/** An API key or X-Wallet-Auth must be there (and a key well-formed) before the body is read. */
export const requireCredentials = createMiddleware<EdgeEnv>(async (c, next) => {
  if (c.req.header(WALLET_AUTH_HEADER) === undefined) callerKey(c);
  await next();
});

/** Who the request says it is: X-Wallet-Auth, or else the API key; both at once are refused. */
export function billingCredentials(c: Context<EdgeEnv>): BillingCredentials {
  const walletAuth = c.req.header(WALLET_AUTH_HEADER);
  if (walletAuth === undefined) return { key: callerKey(c) };
  if (c.req.header("x-api-key") !== undefined || c.req.header("authorization") !== undefined) {
    throw new SigilError("conflicting_credentials", "send either an API key or X-Wallet-Auth, not both");
  }
  return { walletAuth };
}

/**
 * The Idempotency-Key of the billing writes: kept like a managed write's, under the caller's API key,
 * or under X-Wallet-Auth under the signing wallet (then, as on the other writes without a key, the
 * key also seals the kept answer — it holds the intent's client_secret — so it must be unguessable).
 */
const billingIdempotencyHeaders = z.object({
  "idempotency-key": idempotencyHeaders.shape["idempotency-key"].describe(
    "Makes the request safe to retry: the same key with the same body within 24 h answers the first answer again (Idempotent-Replayed: true) without acting again; with another body 422 idempotency_key_reused; while the first is in flight 409 request_in_progress (Retry-After). Under X-Wallet-Auth the key also seals the kept answer: use an unguessable one, a random UUID",
  ),
});
const replayHeaders = z.object(idempotentAnswerHeaders);
/**
 * What the billing writes may answer: the body and the credentials (400, 401; 408 and 413 for the
 * body, 413 also for an oversized X-Wallet-Auth), a wallet no longer the admin (403), no such account or intent (404),
 * the Idempotency-Key (409, 422), the rate limit, Stripe or the chain out of reach (503).
 */
const billingWriteErrors = [400, 401, 403, 404, 408, 409, 413, 422, 429, 503] as const;

/**
 * The holder of a billing write's Idempotency-Key (idempotency/): the account's object, and in it the
 * caller's API key or the wallet that signed X-Wallet-Auth (authenticated before any replay, like
 * a key: a retry signs X-Wallet-Auth afresh, which is not part of what the key fingerprints).
 */
const billingHolder: HolderOf = async (c, key, body) => {
  const caller = await payingCaller(c);
  if (caller.via === "wallet" && caller.wallet) return walletHolder(caller.master, caller.wallet, key, body);
  const { apiKey, keyHash } = callerKey(c);
  return keyHolder(caller.master, keyHash, apiKey, key);
};

/** The caller of a billing write (X-Wallet-Auth or the API key, allowed to pay): one chain read per request. */
const payingCaller = perRequest<BillingCaller>((c) => billingCaller(c.get("config"), billingCredentials(c), "pay"));

/** The billing writes' one stage: made once per Idempotency-Key, kept under the caller (billingHolder). */
const billingWriteStages = [idempotent({ holder: billingHolder })];

const balanceSchema = z.object({
  balance_cents: z
    .number()
    .int()
    .nonnegative()
    .describe("credit free to spend, in cents (credit in flight for running work is not included)"),
  balance_display: z.string().describe('the same in dollars, e.g. "$12.34"'),
});

const intentIdField = z
  .string()
  .regex(/^pi_[A-Za-z0-9_]{1,250}$/, "a Stripe payment intent id (pi_…)")
  .describe("the id create_payment_intent returned");

const stripeConfig = route("GET /billing/stripe_config", "Billing", {
  operationId: "getStripeConfig",
  summary:
    "Stripe's publishable key for confirming payments client-side (and api_base when the local Stripe emulator stands in for Stripe)",
  security: "open",
  ok: json(
    z.object({
      publishable_key: z.string(),
      api_base: z.url().optional().describe("the local Stripe emulator's URL; absent with real Stripe"),
    }),
  ),
  errors: [429, 503],
});

const balance = route("GET /billing/balance", "Billing", {
  operationId: "getBalance",
  summary: "The account's credit (API key, or X-Wallet-Auth signed as BillingAuth by the account's admin wallet)",
  security: billingSecurity,
  middleware: [requireCredentials],
  ok: json(balanceSchema),
  // 413: an X-Wallet-Auth over its size limit (it has no body).
  errors: [400, 401, 403, 404, 413, 429, 503],
});

const createIntent = route("POST /billing/create_payment_intent", "Billing", {
  summary: `Start a top-up of amount_cents (at least ${MIN_TOP_UP_CENTS}); confirm it with Stripe using client_secret, then call confirm_payment. An Idempotency-Key header makes a retry return the same intent`,
  security: billingSecurity,
  middleware: [defaultBodyLimit, requireCredentials],
  request: {
    headers: billingIdempotencyHeaders,
    // The minimum is startTopUp's to check (billing/topUp.ts), so every amount under it (0 and
    // negatives too) gets its own code, amount_below_minimum; the document still states it.
    body: body(
      z.strictObject({
        amount_cents: z
          .number()
          .int()
          .max(MAX_TOP_UP_CENTS)
          .meta({ minimum: MIN_TOP_UP_CENTS })
          .describe(`cents to buy; at least ${MIN_TOP_UP_CENTS} (less is 400 amount_below_minimum)`),
      }),
    ),
  },
  ok: { ...json(z.object({ client_secret: z.string(), payment_intent_id: z.string() })), headers: replayHeaders },
  errors: billingWriteErrors,
});

const confirmPayment = route("POST /billing/confirm_payment", "Billing", {
  summary:
    "Credit a succeeded payment intent of this account (once: a second call, or one after Stripe's webhook, credits 0 and says already_credited)",
  security: billingSecurity,
  middleware: [defaultBodyLimit, requireCredentials],
  request: { headers: billingIdempotencyHeaders, body: body(z.strictObject({ payment_intent_id: intentIdField })) },
  ok: {
    ...json(
      z.object({
        credited_cents: z
          .number()
          .int()
          .nonnegative()
          .describe(
            "what this call added; 0 when the payment was already credited (a replay under an Idempotency-Key answers what the first call added)",
          ),
        already_credited: z.boolean(),
        balance_cents: z
          .number()
          .int()
          .nonnegative()
          .describe("the credit after this call (on a replay, after the first call)"),
      }),
    ),
    headers: replayHeaders,
  },
  errors: billingWriteErrors,
});

/**
 * What Stripe posts to the webhook (documented, not validated: Stripe's events carry many more
 * fields, and only the signature decides whether one is read).
 */
const stripeEventSchema = z
  .looseObject({
    id: z.string().describe("the event's id, evt_…"),
    type: z
      .string()
      .describe(
        "the event's type; payment_intent.succeeded credits, payment_intent.payment_failed is told to the account's webhooks (payment.failed), others are acknowledged",
      ),
    data: z.looseObject({
      object: z.looseObject({}).describe("the event's object: for payment_intent.* events, the payment intent"),
    }),
  })
  .describe("a Stripe event, signed in Stripe-Signature");

const webhook = route("POST /billing/webhook", "Billing", {
  operationId: "stripeWebhook",
  summary:
    "Stripe's webhook (payment_intent.succeeded credits the intent's account); signed with the webhook secret, at most 5 minutes old",
  // Stripe's signature (Stripe-Signature), not a key, says who sent it.
  security: "open",
  request: {
    headers: z.object({
      "stripe-signature": z.string().optional().describe("t=<unix seconds>,v1=<HMAC-SHA256 of `t.body`>"),
    }),
    // Stripe's event object as Stripe sends it: the edge reads the exact bytes the signature covers.
    body: { required: true, content: { "application/json": { schema: stripeEventSchema } } },
  },
  ok: json(z.object({ received: z.literal(true), credited_cents: z.number().int().nonnegative() })),
  errors: [408, 413, 429, 503],
  answers: {
    // A bad or stale signature is 400 invalid_signature here (docs/design/api.md, Billing): the payload is refused.
    400: {
      ...errorAnswer(400),
      description:
        "Bad Request (error.code: invalid_signature: Stripe-Signature is missing, does not sign this body, or is older than 5 minutes)",
    },
  },
});

export function billingRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  r.openAPIRegistry.registerComponent("securitySchemes", "WalletAuth", {
    type: "apiKey",
    in: "header",
    name: WALLET_AUTH_HEADER,
    description:
      'base64url(JSON {"typed_data": …, "signature": "0x…"}), typed data of primaryType BillingAuth signed by the account\'s admin wallet',
  });

  r.openapi(stripeConfig, (c) => {
    const { publishableKey, apiBase } = c.get("config").stripe;
    if (!publishableKey)
      throw new SigilError("payments_unavailable", "payments are not configured on this deployment", {
        retryAfterSeconds: 30,
      });
    return c.json({ publishable_key: publishableKey, ...(apiBase === undefined ? {} : { api_base: apiBase }) }, 200);
  });

  r.openapi(balance, async (c) => {
    const { master } = await billingCaller(c.get("config"), billingCredentials(c), "read");
    const { cents, display } = await accountBalance(c.env.LEDGER, master);
    return c.json({ balance_cents: cents, balance_display: display }, 200);
  });

  // Under an Idempotency-Key a retry answers the same intent (idempotency/). Refusals (below the
  // minimum, Stripe unreachable) keep nothing: the key stays free for the corrected request.
  // Under an Idempotency-Key a retry answers the same intent (idempotency/). Refusals (below the
  // minimum, Stripe unreachable) keep nothing: the key stays free for the corrected request.
  r.openapi(
    createIntent,
    pipeline<typeof createIntent>(billingWriteStages, async (c) => {
      const caller = await payingCaller(c);
      const input = c.req.valid("json");
      // Stripe's own key for the intent: under an Idempotency-Key the record's, so an attempt that
      // made the intent but kept no answer (Stripe's reply lost, the edge killed) is answered the
      // same intent when retried; else the request's, for the SDK's own retries.
      const intentKey = attemptOf(c)?.record ?? c.get("ids").requestId;
      const topUp = await startTopUp(c.get("config"), c.env.LEDGER, caller.master, input.amount_cents, intentKey);
      return c.json({ client_secret: topUp.clientSecret, payment_intent_id: topUp.paymentIntentId }, 200);
    }),
  );

  // Idempotent by nature (the Ledger credits an intent once: a second call answers 0 and
  // already_credited); under an Idempotency-Key a retry is answered the first call's answer, like
  // every other write's, and a key reused for another intent is 422.
  r.openapi(
    confirmPayment,
    pipeline<typeof confirmPayment>(billingWriteStages, async (c) => {
      const caller = await payingCaller(c);
      const input = c.req.valid("json");
      const credited = await creditPayment(
        c.get("config"),
        c.env.LEDGER,
        caller.master,
        input.payment_intent_id,
        c.get("log"),
      );
      // payment.credited once per intent, whichever path credited it (the event is keyed by the intent).
      paymentCredited(emitterOf(c), caller.master, {
        paymentIntentId: input.payment_intent_id,
        amountCents: credited.amountCents,
        freeCents: credited.freeCents,
      });
      return c.json(
        {
          credited_cents: credited.creditedCents,
          already_credited: credited.alreadyCredited,
          balance_cents: credited.balanceCents,
        },
        200,
      );
    }),
  );

  return r;
}

/**
 * Stripe's webhook, a router of its own: app.ts mounts it before admission, since an event refused
 * for load would credit its account only when Stripe tries again, much later.
 */
export function stripeWebhookRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  // Documented, not validated: the signature covers the exact bytes, so nothing may parse the body first.
  r.openAPIRegistry.registerPath(webhook);
  r.post(webhook.path, defaultBodyLimit, async (c) => {
    const outcome = await creditWebhook(
      c.get("config"),
      c.env.LEDGER,
      await c.req.text(),
      c.req.header("stripe-signature"),
      c.get("log"),
    );
    // The account's own webhooks: payment.credited (keyed by the intent, so once with confirm_payment) and payment.failed.
    if (outcome.succeeded) paymentCredited(emitterOf(c), outcome.succeeded.master, outcome.succeeded);
    if (outcome.failed) paymentFailed(emitterOf(c), outcome.failed);
    return c.json({ received: true as const, credited_cents: outcome.creditedCents }, 200);
  });

  return r;
}
