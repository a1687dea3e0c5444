// A local Stripe for `npm start` without Stripe keys and for tests: a loopback HTTP server that
// speaks the slice of Stripe's v1 REST API the service uses, so the real `stripe` SDK (pointed
// here with its `host`/`port`/`protocol` options) runs the production code path against it.
//
// - Customers: create, retrieve. Payment intents: create, retrieve, confirm, cancel. Events:
//   list and retrieve. Form-encoded bodies with Stripe's bracket syntax (`metadata[account]=…`), JSON
//   answers shaped like Stripe's objects, Stripe's error bodies and statuses (400, 401, 402, 404).
// - Auth as Stripe does it: `Authorization: Bearer <key>` (or Basic with the key as user name).
//   The secret key opens every endpoint; the publishable key only the confirm endpoint, which
//   then needs the intent's `client_secret` (a browser may also send the key as the form field
//   `key`, as Stripe.js does).
// - `Idempotency-Key` on POSTs: the first answer is saved and replayed for the same key and
//   parameters (`Idempotent-Replayed: true`); other parameters or another endpoint → 400
//   idempotency_error. Parameter errors are not saved, so a fixed request can reuse its key.
// - Test payment methods: `pm_card_visa` (and a few other succeeding cards) → succeeded;
//   `pm_card_chargeDeclined` → 402 card_error, the intent back at requires_payment_method with
//   `last_payment_error`.
// - Refunds: create (all of a succeeded intent or part of it) and retrieve; succeeded at once.
// - Webhooks: `payment_intent.succeeded`, `payment_intent.payment_failed` and `refund.created` events are POSTed to
//   every webhook URL (set at start or later with `setWebhookUrls`) after the confirm has
//   answered, signed like Stripe (`Stripe-Signature: t=…,v1=HMAC-SHA256(secret, "t.body")`, a
//   fresh timestamp per attempt); a connection error or non-2xx is retried with doubling delays.
//   What Stripe does to a receiver besides, a test can do at will: `resend` sends a past event
//   again (the same event and bytes, signed afresh, as the Dashboard's "Resend" and Stripe's own
//   at-least-once delivery do), and `holdDeliveries` / `releaseHeld` keep new events back and then
//   send them in another order (Stripe does not guarantee the order of events).
//
// Routed with Hono (served by @hono/node-server): stripe/http.ts the request layer and the routes,
// stripe/resources.ts the objects, stripe/webhooks.ts the events and their deliveries (signed by the
// stripe package's own test-header helper, so they are Stripe's by construction), stripe/api.ts what
// they share. State lives in memory and dies with
// the server, but for customers when `customersFile` is given: `npm start` keeps them beside the
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { randomToken } from "./stripe/api.ts";
import { stripeRouter } from "./stripe/http.ts";
import { StripeResources } from "./stripe/resources.ts";
import { type Delivery, type StripeEvent, WebhookSender } from "./stripe/webhooks.ts";

export type { Delivery, StripeEvent };

export type StripeEmulator = {
  url: string;
  host: string;
  port: number;
  secretKey: string;
  publishableKey: string;
  webhookSecret: string;
  setWebhookUrls(urls: string[]): void;
  /** Every webhook delivery attempt so far, oldest first. */
  deliveries(): Delivery[];
  /** Resolves with deliveries() once `predicate` holds for it; rejects after `timeoutMs`. */
  waitForDeliveries(predicate: (deliveries: Delivery[]) => boolean, timeoutMs?: number): Promise<Delivery[]>;
  /** Every event created so far, oldest first. */
  events(): StripeEvent[];
  /**
   * Sends the event `eventId` again now to every webhook URL, with the usual retries: the same
   * event and body, a fresh signature. Resolves once each URL's first attempt has its answer.
   */
  resend(eventId: string): Promise<void>;
  /** From now on, new events are not sent until `releaseHeld` (their first attempts wait). */
  holdDeliveries(): void;
  /**
   * Stops holding, and sends what was held one after another, each once the previous one has its
   * answer: in the order the events were made (`created`), the reverse, or shuffled. Resolves with
   * the event ids in the order sent, once the last has its answer.
   */
  releaseHeld(order?: "created" | "reverse" | "shuffle"): Promise<string[]>;
  /** Deliveries not finished: held, waiting for a retry, or in flight. */
  pendingDeliveries(): number;
  stop(): Promise<void>;
};

export type StripeEmulatorOptions = {
  port?: number;
  secretKey?: string;
  publishableKey?: string;
  webhookSecret?: string;
  webhookUrls?: string[];
  /** Delay before the first redelivery; doubles with each further one. Default 200 ms. */
  retryBaseMs?: number;
  /** Delivery attempts per event and URL, the first included. Default 8. */
  maxAttempts?: number;
  log?: (line: string) => void;
  /** A JSON file the customers are read from at start and written to as they are made. */
  customersFile?: string;
};

export async function startStripeEmulator(options: StripeEmulatorOptions = {}): Promise<StripeEmulator> {
  const secretKey = options.secretKey ?? `sk_test_${randomToken(99)}`;
  const publishableKey = options.publishableKey ?? `pk_test_${randomToken(99)}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(32).toString("hex")}`;
  const log = options.log ?? (() => {});
  const intentVersions = new Map<string, string>();
  const webhooks = new WebhookSender({
    webhookSecret,
    webhookUrls: options.webhookUrls ?? [],
    retryBaseMs: options.retryBaseMs ?? 200,
    maxAttempts: options.maxAttempts ?? 8,
    log,
    intentVersions,
  });
  const resources = new StripeResources({
    customersFile: options.customersFile,
    intentVersions,
    emit: (type, object, request) => webhooks.emit(type, object, request),
  });
  const app = stripeRouter({ keys: { secretKey, publishableKey }, resources, events: webhooks.events, log });

  const server = createAdaptorServer({ fetch: app.fetch, hostname: "127.0.0.1" }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = "127.0.0.1";

  return {
    url: `http://${host}:${port}`,
    host,
    port,
    secretKey,
    publishableKey,
    webhookSecret,
    setWebhookUrls: (urls) => webhooks.setUrls(urls),
    deliveries: () => webhooks.deliveries(),
    events: () => webhooks.events.map((e) => structuredClone(e)),
    resend: (eventId) => webhooks.resend(eventId),
    holdDeliveries: () => webhooks.hold(),
    releaseHeld: (order) => webhooks.releaseHeld(order),
    pendingDeliveries: () => webhooks.pending(),
    waitForDeliveries: (predicate, timeoutMs) => webhooks.waitForDeliveries(predicate, timeoutMs),
    stop() {
      webhooks.stop();
      return new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}
