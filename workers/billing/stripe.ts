// Stripe from the Worker (docs/design/billing.md, Stripe): the `stripe` SDK on the fetch client and the subtle
// crypto provider, pointed at api.stripe.com or, when STRIPE_API_BASE is set, at the local
// emulator through the SDK's own host/port/protocol options — the production code path either way.
// Stripe's failures become the service's errors here: a missing intent 404 payment_not_found,
// anything Stripe or the network does wrong 503 payments_unavailable (logged, never shown).
import Stripe from "stripe";
import { SigilError } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";
import { edgeLog } from "../log.ts";

/** How old a webhook's signed timestamp may be (Stripe's default tolerance). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

const clients = new Map<string, Stripe>();
const cryptoProvider = Stripe.createSubtleCryptoProvider();

function unavailable(why: string): SigilError {
  return new SigilError("payments_unavailable", why, { retryAfterSeconds: 30 });
}

/** The SDK for this deployment's keys (one per isolate). */
export function stripeClient(config: EdgeConfig): Stripe {
  const { secretKey, apiBase } = config.stripe;
  if (!secretKey) throw unavailable("payments are not configured on this deployment");
  const cacheKey = `${apiBase ?? ""} ${secretKey}`;
  let client = clients.get(cacheKey);
  if (!client) {
    const target = apiBase === undefined ? {} : new URL(apiBase);
    client = new Stripe(secretKey, {
      httpClient: Stripe.createFetchHttpClient(),
      // Two retries with Stripe's idempotency keys; a request a Worker waits on stays short.
      maxNetworkRetries: 2,
      timeout: 20_000,
      ...(target instanceof URL
        ? {
            protocol: target.protocol === "http:" ? "http" : "https",
            host: target.hostname,
            port: target.port || (target.protocol === "http:" ? 80 : 443),
          }
        : {}),
    });
    clients.set(cacheKey, client);
  }
  return client;
}

/** Runs a Stripe call; what went wrong on Stripe's side is logged and answered 503. */
export async function stripeCall<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SigilError) throw err;
    const e = err as { type?: string; statusCode?: number; code?: string; requestId?: string; message?: string };
    // The client's Idempotency-Key reused for another request is the client's mistake; the edge's
    // own record says so first, this only once the record is gone (evicted) and Stripe's is not.
    if (e.type === "StripeIdempotencyError") {
      throw new SigilError(
        "idempotency_key_reused",
        "this Idempotency-Key was already used for a different request; use a new key for a new top-up",
      );
    }
    edgeLog.error("stripe call failed", {
      what,
      type: e.type,
      status: e.statusCode,
      code: e.code,
      stripe_request_id: e.requestId,
      error: e.message?.split("\n")[0],
    });
    throw unavailable("the payment processor could not be reached; try again shortly");
  }
}

/** The payment intent `id`, or 404 payment_not_found when Stripe has none by that id. */
export async function retrieveIntent(stripe: Stripe, id: string): Promise<Stripe.PaymentIntent> {
  try {
    return await stripe.paymentIntents.retrieve(id);
  } catch (err) {
    const e = err as { type?: string; code?: string; statusCode?: number };
    if (e.type === "StripeInvalidRequestError" && (e.code === "resource_missing" || e.statusCode === 404)) {
      throw new SigilError("payment_not_found", "no payment intent with that id exists");
    }
    return stripeCall("retrieve payment intent", () => Promise.reject(err));
  }
}

/**
 * The verified event of a webhook request: its `Stripe-Signature` must be the webhook secret's
 * HMAC of the exact body, signed within the tolerance; else 400 invalid_signature.
 */
export async function verifiedEvent(
  config: EdgeConfig,
  rawBody: string,
  signatureHeader: string | undefined,
): Promise<Stripe.Event> {
  if (!signatureHeader)
    throw new SigilError("invalid_signature", "the Stripe-Signature header is missing", { status: 400 });
  const secret = config.stripe.webhookSecret;
  if (!secret) throw unavailable("payments are not configured on this deployment");
  try {
    // The SDK's static webhooks helper needs no key; the client of this deployment has it too.
    return await Stripe.webhooks.constructEventAsync(
      rawBody,
      signatureHeader,
      secret,
      WEBHOOK_TOLERANCE_SECONDS,
      cryptoProvider,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
    edgeLog.warn("webhook refused", { reason: message });
    const stale = /tolerance/i.test(message ?? "");
    throw new SigilError(
      "invalid_signature",
      stale ? "the webhook's signature is too old" : "the webhook's signature does not match its body",
      { status: 400 },
    );
  }
}
