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
// Routed with Hono (served by @hono/node-server); webhook signatures are made by the stripe package's
// own test-header helper, so they are Stripe's by construction. State lives in memory and dies with
// the server, but for customers when `customersFile` is given: `npm start` keeps them beside the
// credit ledgers that name them, so an account's next top-up after a restart still finds its customer.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import Stripe from "stripe";

export type Delivery = {
  eventId: string;
  type: string;
  url: string;
  attempt: number;
  /** The receiver's HTTP status; null when the connection failed. */
  status: number | null;
  ok: boolean;
  error?: string;
  at: number;
  /** Set on the attempts of a delivery made by `resend`. */
  resent?: true;
};

export type StripeEvent = {
  id: string;
  object: "event";
  api_version: string;
  created: number;
  data: { object: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
};

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

// The version events are rendered at when the request that made the object sent no
// `Stripe-Version` (the SDK always sends its own, stripe@23's being this one).
const DEFAULT_API_VERSION = "2026-10-28.endive";
const MAX_BODY_BYTES = 1024 * 1024;
const WEBHOOK_TIMEOUT_MS = 10_000;

type Params = Record<string, unknown>;
type Answer = { status: number; body: unknown; headers?: Record<string, string> };
type Auth = "secret" | "publishable";

// A Stripe error answer. `saved: false` marks parameter errors, which Stripe's idempotency layer
// does not remember.
class StripeApiError extends Error {
  status: number;
  body: Record<string, unknown>;
  saved: boolean;
  constructor(status: number, body: Record<string, unknown>, saved = true) {
    super(String(body.message));
    this.status = status;
    this.body = body;
    this.saved = saved;
  }
}

function apiError(
  status: number,
  type: string,
  message: string,
  extra: Record<string, unknown> = {},
  saved = true,
): StripeApiError {
  const code = extra.code;
  const docUrl =
    typeof code === "string" ? { doc_url: `https://stripe.com/docs/error-codes/${code.replace(/_/g, "-")}` } : {};
  return new StripeApiError(status, { ...extra, ...docUrl, message, type }, saved);
}
const invalidParam = (message: string, param: string, code = "parameter_invalid") =>
  apiError(400, "invalid_request_error", message, { code, param }, false);
const missingParam = (param: string) => invalidParam(`Missing required param: ${param}.`, param, "parameter_missing");
const noSuch = (kind: string, id: string, param: string, status = 404) =>
  apiError(status, "invalid_request_error", `No such ${kind}: '${id}'`, { code: "resource_missing", param }, false);

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}
const newId = (prefix: string) => `${prefix}_${randomToken(24)}`;
const now = () => Math.floor(Date.now() / 1000);

// `a[b][c]=v` → {a: {b: {c: v}}}; objects keyed 0..n-1 (`a[0]`, or `a[]`) become arrays.
// Null-prototype objects, so a parameter named `__proto__` is just a name.
function parseStripeForm(text: string): Params {
  const root: Params = Object.create(null) as Params;
  for (const [key, value] of new URLSearchParams(text)) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
    if (!m) throw invalidParam(`Invalid parameter name: ${key}`, key);
    const path = [m[1] as string, ...[...(m[2] ?? "").matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1] as string)];
    let node = root;
    for (let i = 0; i < path.length; i++) {
      let segment = path[i] as string;
      if (segment === "") segment = String(Object.keys(node).length);
      if (i === path.length - 1) {
        if (segment in node) throw invalidParam(`Received a parameter twice: ${key}`, key);
        node[segment] = value;
      } else {
        const next = node[segment] ?? (node[segment] = Object.create(null) as Params);
        if (typeof next !== "object") throw invalidParam(`Invalid parameter: ${key} mixes a value and a hash`, key);
        node = next as Params;
      }
    }
  }
  const arrays = (value: unknown): unknown => {
    if (typeof value !== "object" || value === null) return value;
    const entries = Object.entries(value as Params).map(([k, v]) => [k, arrays(v)] as const);
    if (entries.length > 0 && entries.every(([k], i) => k === String(i))) return entries.map(([, v]) => v);
    const out = Object.create(null) as Params;
    for (const [k, v] of entries) out[k] = v;
    return out;
  };
  return arrays(root) as Params;
}

// Parameter readers that answer like Stripe when a value has the wrong shape.
function allowOnly(params: Params, allowed: string[]): void {
  for (const name of Object.keys(params)) {
    if (!allowed.includes(name)) {
      throw invalidParam(
        `Received unknown parameter: ${name} (the local Stripe emulator does not emulate it)`,
        name,
        "parameter_unknown",
      );
    }
  }
}
function optString(params: Params, name: string): string | undefined {
  const v = params[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalidParam(`Invalid string: ${name} must be a string`, name);
  return v;
}
function reqString(params: Params, name: string): string {
  const v = optString(params, name);
  if (v === undefined || v === "") throw missingParam(name);
  return v;
}
function reqInteger(params: Params, name: string): number {
  const v = reqString(params, name);
  if (!/^-?\d+$/.test(v)) throw invalidParam(`Invalid integer: ${v}`, name, "parameter_invalid_integer");
  return Number(v);
}
function optBoolean(params: Params, name: string, value: unknown = params[name]): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== "true" && value !== "false") throw invalidParam(`Invalid boolean: ${String(value)}`, name);
  return value === "true";
}
function metadataOf(params: Params): Record<string, string> {
  const v = params.metadata;
  const out = Object.create(null) as Record<string, string>;
  if (v === undefined || v === "") return out;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalidParam("Invalid hash", "metadata");
  const entries = Object.entries(v as Params);
  if (entries.length > 50) throw invalidParam("Invalid metadata: metadata can have at most 50 keys", "metadata");
  for (const [key, value] of entries) {
    if (typeof value !== "string")
      throw invalidParam(`Invalid value type: metadata[${key}] must be a string`, `metadata[${key}]`);
    if (key.length > 40)
      throw invalidParam(`Invalid metadata key: keys can be at most 40 characters`, `metadata[${key}]`);
    if (value.length > 500)
      throw invalidParam(`Invalid metadata value: values can be at most 500 characters`, `metadata[${key}]`);
    if (value !== "") out[key] = value;
  }
  return out;
}
function optEmail(params: Params, name: string): string | null {
  const v = optString(params, name);
  if (v === undefined || v === "") return null;
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v)) throw invalidParam(`Invalid email address: ${v}`, name, "email_invalid");
  return v;
}

// Stripe's test PaymentMethod tokens that the emulator knows: the card each stands for and, for
// the declining ones, the decline code.
const TEST_CARDS: Record<string, { brand: string; last4: string; decline?: string }> = {
  pm_card_visa: { brand: "visa", last4: "4242" },
  pm_card_visa_debit: { brand: "visa", last4: "5556" },
  pm_card_mastercard: { brand: "mastercard", last4: "4444" },
  pm_card_amex: { brand: "amex", last4: "8431" },
  pm_card_us: { brand: "visa", last4: "4242" },
  pm_card_chargeDeclined: { brand: "visa", last4: "0002", decline: "generic_decline" },
  pm_card_chargeDeclinedInsufficientFunds: { brand: "visa", last4: "9995", decline: "insufficient_funds" },
};
const DECLINE_MESSAGES: Record<string, string> = {
  generic_decline: "Your card was declined.",
  insufficient_funds: "Your card has insufficient funds.",
};

function paymentMethodObject(
  id: string,
  card: { brand: string; last4: string },
  created: number,
): Record<string, unknown> {
  return {
    id,
    object: "payment_method",
    allow_redisplay: "unspecified",
    billing_details: {
      address: { city: null, country: null, line1: null, line2: null, postal_code: null, state: null },
      email: null,
      name: null,
      phone: null,
    },
    card: {
      brand: card.brand,
      country: "US",
      exp_month: 12,
      exp_year: new Date().getUTCFullYear() + 3,
      funding: "credit",
      last4: card.last4,
    },
    created,
    customer: null,
    livemode: false,
    metadata: {},
    type: "card",
  };
}

const CONFIRMABLE = ["requires_confirmation", "requires_payment_method", "requires_action"];
const CANCELABLE = [
  "requires_payment_method",
  "requires_capture",
  "requires_confirmation",
  "requires_action",
  "processing",
];
const CANCELLATION_REASONS = ["duplicate", "fraudulent", "requested_by_customer", "abandoned"];

function redactKey(key: string): string {
  const prefix = /^(sk|pk|rk)_(test|live)_/.exec(key)?.[0] ?? "";
  const tail = key.length > prefix.length + 4 ? key.slice(-4) : "";
  return prefix + "*".repeat(Math.max(0, key.length - prefix.length - tail.length)) + tail;
}

/** Reads `body` to its end, keeping nothing; a body already being read elsewhere is left alone. */
async function drain(body: ReadableStream<Uint8Array> | null): Promise<void> {
  if (!body || body.locked) return;
  const reader = body.getReader();
  while (!(await reader.read()).done);
}

export async function startStripeEmulator(options: StripeEmulatorOptions = {}): Promise<StripeEmulator> {
  const secretKey = options.secretKey ?? `sk_test_${randomToken(99)}`;
  const publishableKey = options.publishableKey ?? `pk_test_${randomToken(99)}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(32).toString("hex")}`;
  const retryBaseMs = options.retryBaseMs ?? 200;
  const maxAttempts = options.maxAttempts ?? 8;
  const log = options.log ?? (() => {});
  let webhookUrls = [...(options.webhookUrls ?? [])];

  const customers = new Map<string, Record<string, unknown>>(
    options.customersFile && existsSync(options.customersFile)
      ? (JSON.parse(readFileSync(options.customersFile, "utf8")) as Array<[string, Record<string, unknown>]>)
      : [],
  );
  const intents = new Map<string, Record<string, unknown>>();
  const refunds = new Map<string, Record<string, unknown>>();
  /** Cents refunded so far, by payment intent. */
  const refundedOf = new Map<string, number>();
  const intentVersions = new Map<string, string>();
  const events: StripeEvent[] = [];
  const saved = new Map<string, { endpoint: string; params: string; requestId: string; answer: Answer }>();
  const deliveryLog: Delivery[] = [];
  const watchers = new Set<() => void>();
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<AbortController>();
  /** First attempts kept back while holding (holdDeliveries). */
  let held: Array<{ event: StripeEvent; url: string; body: string }> | undefined;
  let stopped = false;

  // --- webhooks -------------------------------------------------------------------------------

  /** The bytes an event is sent as (Stripe's pretty-printed JSON, which the signature covers). */
  const bodyOf = (event: StripeEvent) => JSON.stringify(event, null, 2);

  function emit(
    type: string,
    object: Record<string, unknown>,
    request: { id: string; idempotencyKey: string | null },
  ): void {
    const event: StripeEvent = {
      id: newId("evt"),
      object: "event",
      api_version: intentVersions.get(String(object.id)) ?? DEFAULT_API_VERSION,
      created: now(),
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: webhookUrls.length,
      request: { id: request.id, idempotency_key: request.idempotencyKey },
      type,
    };
    events.push(event);
    const body = bodyOf(event);
    // After the current answer has been written: deliveries never hold up the API response.
    for (const url of webhookUrls) {
      if (held) held.push({ event, url, body });
      else schedule(() => deliver(event, url, body, 1), 0);
    }
  }

  function schedule(fn: () => void, ms: number): void {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  }

  async function deliver(
    event: StripeEvent,
    url: string,
    body: string,
    attempt: number,
    resent = false,
  ): Promise<void> {
    if (stopped) return;
    const t = now();
    const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret, timestamp: t });
    const controller = new AbortController();
    inFlight.add(controller);
    const timeout = setTimeout(() => controller.abort(new Error("timed out")), WEBHOOK_TIMEOUT_MS);
    let status: number | null = null;
    let error: string | undefined;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          "stripe-signature": signature,
        },
        body,
        signal: controller.signal,
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch (e) {
      error =
        e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
    } finally {
      clearTimeout(timeout);
      inFlight.delete(controller);
    }
    if (stopped) return;
    const ok = status !== null && status >= 200 && status < 300;
    deliveryLog.push({
      eventId: event.id,
      type: event.type,
      url,
      attempt,
      status,
      ok,
      ...(error ? { error } : {}),
      at: Date.now(),
      ...(resent ? { resent: true as const } : {}),
    });
    log(
      `stripe-emulator: webhook ${event.type} ${event.id} → ${url} attempt ${attempt}${resent ? " (resent)" : ""}: ${status ?? error}`,
    );
    for (const watcher of watchers) watcher();
    if (!ok && attempt < maxAttempts)
      schedule(() => void deliver(event, url, body, attempt + 1, resent), retryBaseMs * 2 ** (attempt - 1));
  }

  async function resend(eventId: string): Promise<void> {
    const event = events.find((e) => e.id === eventId);
    if (!event) throw new Error(`stripe emulator: no event ${eventId}`);
    await Promise.all(webhookUrls.map((url) => deliver(event, url, bodyOf(event), 1, true)));
  }

  async function releaseHeld(order: "created" | "reverse" | "shuffle" = "created"): Promise<string[]> {
    const queue = held ?? [];
    held = undefined;
    if (order === "reverse") queue.reverse();
    if (order === "shuffle") {
      for (let i = queue.length - 1; i > 0; i--) {
        const j = randomBytes(4).readUInt32BE() % (i + 1);
        [queue[i], queue[j]] = [queue[j]!, queue[i]!];
      }
    }
    const sent: string[] = [];
    for (const { event, url, body } of queue) {
      if (stopped) break;
      sent.push(event.id);
      await deliver(event, url, body, 1);
    }
    return sent;
  }

  // --- resources --------------------------------------------------------------------------------

  function createCustomer(params: Params): Answer {
    allowOnly(params, ["email", "metadata", "name", "description", "phone"]);
    const customer = {
      id: newId("cus"),
      object: "customer",
      address: null,
      balance: 0,
      created: now(),
      currency: null,
      default_source: null,
      delinquent: false,
      description: optString(params, "description") || null,
      discount: null,
      email: optEmail(params, "email"),
      invoice_prefix: randomToken(8).toUpperCase(),
      invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
      livemode: false,
      metadata: metadataOf(params),
      name: optString(params, "name") || null,
      next_invoice_sequence: 1,
      phone: optString(params, "phone") || null,
      preferred_locales: [],
      shipping: null,
      tax_exempt: "none",
      test_clock: null,
    };
    customers.set(customer.id, customer);
    if (options.customersFile) writeFileSync(options.customersFile, JSON.stringify([...customers]));
    return { status: 200, body: customer };
  }

  function createIntent(params: Params, apiVersion: string | undefined): Answer {
    allowOnly(params, [
      "amount",
      "currency",
      "customer",
      "automatic_payment_methods",
      "metadata",
      "description",
      "receipt_email",
    ]);
    const amount = reqInteger(params, "amount");
    const currency = reqString(params, "currency").toLowerCase();
    if (!/^[a-z]{3}$/.test(currency)) throw invalidParam(`Invalid currency: ${currency}`, "currency");
    if (amount < 50 && currency === "usd")
      throw apiError(
        400,
        "invalid_request_error",
        "Amount must be at least $0.50 usd",
        { code: "amount_too_small", param: "amount" },
        false,
      );
    if (amount < 1) throw invalidParam("This value must be greater than or equal to 1.", "amount");
    if (amount > 99_999_999)
      throw invalidParam("Amount must be no more than $999,999.99", "amount", "amount_too_large");
    const customer = optString(params, "customer");
    if (customer !== undefined && !customers.has(customer)) throw noSuch("customer", customer, "customer", 400);
    const apm = params.automatic_payment_methods;
    let automatic = { allow_redirects: "always", enabled: true };
    if (apm !== undefined) {
      if (typeof apm !== "object" || apm === null || Array.isArray(apm))
        throw invalidParam("Invalid hash", "automatic_payment_methods");
      allowOnly(apm as Params, ["enabled", "allow_redirects"]);
      const enabled = optBoolean(apm as Params, "automatic_payment_methods[enabled]", (apm as Params).enabled);
      if (enabled === undefined) throw missingParam("automatic_payment_methods[enabled]");
      if (!enabled)
        throw invalidParam(
          "The emulator only emulates automatic_payment_methods[enabled]=true",
          "automatic_payment_methods[enabled]",
        );
      const redirects = (apm as Params).allow_redirects;
      if (redirects !== undefined && redirects !== "always" && redirects !== "never")
        throw invalidParam(
          `Invalid allow_redirects: ${String(redirects)}`,
          "automatic_payment_methods[allow_redirects]",
        );
      automatic = { allow_redirects: (redirects as string | undefined) ?? "always", enabled: true };
    }
    const id = newId("pi");
    const intent: Record<string, unknown> = {
      id,
      object: "payment_intent",
      amount,
      amount_capturable: 0,
      amount_details: { tip: {} },
      amount_received: 0,
      application: null,
      application_fee_amount: null,
      automatic_payment_methods: automatic,
      canceled_at: null,
      cancellation_reason: null,
      capture_method: "automatic_async",
      client_secret: `${id}_secret_${randomToken(25)}`,
      confirmation_method: "automatic",
      created: now(),
      currency,
      customer: customer ?? null,
      description: optString(params, "description") || null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      metadata: metadataOf(params),
      next_action: null,
      on_behalf_of: null,
      payment_method: null,
      payment_method_configuration_details: null,
      payment_method_options: {
        card: { installments: null, mandate_options: null, network: null, request_three_d_secure: "automatic" },
      },
      payment_method_types: ["card"],
      processing: null,
      receipt_email: optEmail(params, "receipt_email"),
      review: null,
      setup_future_usage: null,
      shipping: null,
      source: null,
      statement_descriptor: null,
      statement_descriptor_suffix: null,
      status: "requires_payment_method",
      transfer_data: null,
      transfer_group: null,
    };
    intents.set(id, intent);
    if (apiVersion) intentVersions.set(id, apiVersion);
    return { status: 200, body: intent };
  }

  function intentOf(id: string): Record<string, unknown> {
    const intent = intents.get(id);
    if (!intent) throw noSuch("payment_intent", id, "intent");
    return intent;
  }

  function confirmIntent(
    id: string,
    params: Params,
    auth: Auth,
    request: { id: string; idempotencyKey: string | null },
  ): Answer {
    allowOnly(params, ["payment_method", "client_secret", "return_url", "receipt_email", "use_stripe_sdk"]);
    const intent = intentOf(id);
    const clientSecret = optString(params, "client_secret");
    if (auth === "publishable" && !clientSecret) throw missingParam("client_secret");
    if (clientSecret !== undefined && clientSecret !== intent.client_secret) {
      throw apiError(
        400,
        "invalid_request_error",
        "The client_secret provided does not match any associated PaymentIntent on this account. Ensure the publishable key used belongs to the same account that created the PaymentIntent.",
        { param: "client_secret" },
        false,
      );
    }
    const status = String(intent.status);
    if (status === "succeeded") {
      throw apiError(
        400,
        "invalid_request_error",
        "You cannot confirm this PaymentIntent because it has already succeeded after being previously confirmed.",
        { code: "payment_intent_unexpected_state", payment_intent: structuredClone(intent) },
      );
    }
    if (!CONFIRMABLE.includes(status)) {
      throw apiError(
        400,
        "invalid_request_error",
        `You cannot confirm this PaymentIntent because it has a status of ${status}. Only a PaymentIntent with one of the following statuses may be confirmed: requires_confirmation, requires_payment_method, requires_action.`,
        { code: "payment_intent_unexpected_state", payment_intent: structuredClone(intent) },
      );
    }
    const pmToken = optString(params, "payment_method");
    if (!pmToken) {
      throw apiError(
        400,
        "invalid_request_error",
        "You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent with a test card, pass `payment_method=pm_card_visa`.",
        { code: "payment_intent_unexpected_state", payment_intent: structuredClone(intent) },
        false,
      );
    }
    const card = TEST_CARDS[pmToken];
    if (!card) throw noSuch("PaymentMethod", pmToken, "payment_method", 400);
    const receiptEmail = optEmail(params, "receipt_email");
    if (receiptEmail) intent.receipt_email = receiptEmail;
    const created = now();
    const paymentMethod = paymentMethodObject(newId("pm"), card, created);
    const charge = newId("ch");
    intent.latest_charge = charge;
    if (card.decline) {
      const message = DECLINE_MESSAGES[card.decline] ?? "Your card was declined.";
      const failure = {
        charge,
        code: "card_declined",
        decline_code: card.decline,
        doc_url: "https://stripe.com/docs/error-codes/card-declined",
        message,
        payment_method: paymentMethod,
        type: "card_error",
      };
      Object.assign(intent, { status: "requires_payment_method", payment_method: null, last_payment_error: failure });
      emit("payment_intent.payment_failed", intent, request);
      throw apiError(402, "card_error", message, {
        charge,
        code: "card_declined",
        decline_code: card.decline,
        payment_intent: structuredClone(intent),
        payment_method: paymentMethod,
      });
    }
    Object.assign(intent, {
      status: "succeeded",
      payment_method: paymentMethod.id,
      last_payment_error: null,
      amount_received: intent.amount,
    });
    emit("payment_intent.succeeded", intent, request);
    return { status: 200, body: intent };
  }

  function cancelIntent(id: string, params: Params): Answer {
    allowOnly(params, ["cancellation_reason"]);
    const intent = intentOf(id);
    const reason = optString(params, "cancellation_reason");
    if (reason !== undefined && !CANCELLATION_REASONS.includes(reason))
      throw invalidParam(
        `Invalid cancellation_reason: must be one of ${CANCELLATION_REASONS.join(", ")}`,
        "cancellation_reason",
      );
    const status = String(intent.status);
    if (!CANCELABLE.includes(status)) {
      throw apiError(
        400,
        "invalid_request_error",
        `You cannot cancel this PaymentIntent because it has a status of ${status}. Only a PaymentIntent with one of the following statuses may be canceled: ${CANCELABLE.join(", ")}.`,
        { code: "payment_intent_unexpected_state", payment_intent: structuredClone(intent) },
      );
    }
    Object.assign(intent, { status: "canceled", canceled_at: now(), cancellation_reason: reason ?? null });
    return { status: 200, body: intent };
  }

  // --- refunds ----------------------------------------------------------------------------------

  /**
   * A refund of a succeeded intent, of `amount` cents (default: what is left of it), succeeded at
   * once as a card refund usually is; Stripe then sends `refund.created` (whose refund's status is
   * already succeeded) — what the edge debits the account's credit by.
   */
  function createRefund(params: Params, request: { id: string; idempotencyKey: string | null }): Answer {
    allowOnly(params, ["payment_intent", "amount", "reason", "metadata"]);
    const intentId = reqString(params, "payment_intent");
    const intent = intentOf(intentId);
    if (intent.status !== "succeeded") {
      throw apiError(
        400,
        "invalid_request_error",
        `This PaymentIntent (${intentId}) does not have a successful charge to refund.`,
        { code: "charge_not_refundable" },
      );
    }
    const left = Number(intent.amount_received) - (refundedOf.get(intentId) ?? 0);
    const amount = params.amount === undefined ? left : reqInteger(params, "amount");
    if (amount < 1) throw invalidParam("Invalid positive integer", "amount");
    if (left <= 0)
      throw apiError(
        400,
        "invalid_request_error",
        `Charge ${String(intent.latest_charge)} has already been refunded.`,
        { code: "charge_already_refunded" },
      );
    if (amount > left) {
      throw invalidParam(
        `Refund amount ($${(amount / 100).toFixed(2)}) is greater than unrefunded amount on charge ($${(left / 100).toFixed(2)})`,
        "amount",
        "amount_too_large",
      );
    }
    const reason = optString(params, "reason");
    if (reason !== undefined && !["duplicate", "fraudulent", "requested_by_customer"].includes(reason)) {
      throw invalidParam("Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer", "reason");
    }
    refundedOf.set(intentId, (refundedOf.get(intentId) ?? 0) + amount);
    const refund: Record<string, unknown> = {
      id: newId("re"),
      object: "refund",
      amount,
      balance_transaction: newId("txn"),
      charge: intent.latest_charge,
      created: now(),
      currency: intent.currency,
      metadata: params.metadata ?? {},
      payment_intent: intentId,
      reason: reason ?? null,
      status: "succeeded",
    };
    refunds.set(String(refund.id), refund);
    emit("refund.created", refund, request);
    return { status: 200, body: refund };
  }

  // --- HTTP -------------------------------------------------------------------------------------

  /** What Stripe's request layer hands an endpoint: its parameters, the key's kind, the request. */
  type Call = {
    params: Params;
    auth: Auth;
    version: string | undefined;
    request: { id: string; idempotencyKey: string | null };
  };

  function authenticate(header: string | undefined, form: Params): Auth {
    let key: string | undefined;
    if (header) {
      const bearer = /^Bearer\s+(\S+)$/i.exec(header);
      const basic = /^Basic\s+(\S+)$/i.exec(header);
      if (bearer) key = bearer[1];
      else if (basic)
        key = Buffer.from(basic[1] as string, "base64")
          .toString()
          .split(":")[0];
    } else if (typeof form.key === "string") {
      key = form.key;
    }
    delete form.key;
    if (!key) {
      throw apiError(
        401,
        "invalid_request_error",
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      );
    }
    if (key === secretKey) return "secret";
    if (key === publishableKey) return "publishable";
    throw apiError(401, "invalid_request_error", `Invalid API Key provided: ${redactKey(key)}`);
  }

  // Newest first, as Stripe lists them; `type` filters, `limit` 1–100 (default 10).
  function listEvents(params: Params): Answer {
    allowOnly(params, ["type", "limit"]);
    const type = optString(params, "type");
    const limitText = optString(params, "limit");
    const limit = limitText === undefined ? 10 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw invalidParam("This value must be between 1 and 100.", "limit");
    const matching = events.filter((e) => type === undefined || e.type === type).reverse();
    return {
      status: 200,
      body: { object: "list", data: matching.slice(0, limit), has_more: matching.length > limit, url: "/v1/events" },
    };
  }

  /**
   * Stripe's request layer around one endpoint: the parameters (the query of a GET, the form body of
   * a POST), the key (a publishable key opens only the endpoints that say so), and Idempotency-Key
   * (the first answer replayed, another endpoint or other parameters refused); then the answer.
   */
  function handle(c: Context, raw: string, endpoint: (call: Call) => Answer, publishable: boolean): Answer {
    const method = c.req.method;
    const requestId = `req_${randomToken(14)}`;
    const keyHeader = c.req.header("idempotency-key");
    const idempotencyKey = method === "POST" && keyHeader ? keyHeader : null;
    const headers: Record<string, string> = { "request-id": requestId };
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    const version = c.req.header("stripe-version");
    if (version !== undefined) headers["stripe-version"] = version;
    try {
      const params = parseStripeForm(raw);
      const auth = authenticate(c.req.header("authorization"), params);
      if (auth === "publishable" && !publishable) {
        throw apiError(
          401,
          "invalid_request_error",
          "This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.",
        );
      }
      const endpointName = `${method} ${c.req.path}`;
      const fingerprint = JSON.stringify(params);
      if (idempotencyKey) {
        const prior = saved.get(idempotencyKey);
        if (prior && prior.endpoint !== endpointName) {
          throw apiError(
            400,
            "idempotency_error",
            `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${endpointName}' vs '${prior.endpoint}'). Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            {},
            false,
          );
        }
        if (prior && prior.params !== fingerprint) {
          throw apiError(
            400,
            "idempotency_error",
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            {},
            false,
          );
        }
        if (prior)
          return {
            ...prior.answer,
            headers: { ...headers, "idempotent-replayed": "true", "original-request": prior.requestId },
          };
      }
      let answer: Answer;
      try {
        answer = endpoint({ params, auth, version, request: { id: requestId, idempotencyKey } });
        // The saved answer is a snapshot, as Stripe replays what it first sent.
        answer = { status: answer.status, body: structuredClone(answer.body) };
      } catch (e) {
        if (idempotencyKey && e instanceof StripeApiError && e.saved) {
          saved.set(idempotencyKey, {
            endpoint: endpointName,
            params: fingerprint,
            requestId,
            answer: { status: e.status, body: { error: e.body } },
          });
        }
        throw e;
      }
      if (idempotencyKey) saved.set(idempotencyKey, { endpoint: endpointName, params: fingerprint, requestId, answer });
      return { ...answer, headers };
    } catch (e) {
      if (e instanceof StripeApiError) {
        const body = { error: { ...e.body, request_log_url: `https://dashboard.stripe.com/test/logs/${requestId}` } };
        return { status: e.status, body, headers };
      }
      log(`stripe-emulator: internal error: ${e instanceof Error ? e.stack : String(e)}`);
      return {
        status: 500,
        body: { error: { type: "api_error", message: "An unknown error occurred in the local Stripe emulator." } },
        headers,
      };
    }
  }

  function send(c: Context, answer: Answer): Response {
    return c.body(JSON.stringify(answer.body, null, 2), answer.status as ContentfulStatusCode, {
      "content-type": "application/json",
      "cache-control": "no-cache, no-store",
      ...answer.headers,
    });
  }

  /** Serves `endpoint` behind Stripe's request layer; `publishable`: a publishable key may call it. */
  const serve =
    (endpoint: (call: Call, c: Context) => Answer, { publishable = false } = {}) =>
    async (c: Context): Promise<Response> => {
      const raw =
        c.req.method === "GET" || c.req.method === "DELETE" ? new URL(c.req.url).search.slice(1) : await c.req.text();
      const answer = handle(c, raw, (call) => endpoint(call, c), publishable);
      log(`stripe-emulator: ${c.req.method} ${c.req.path} ${answer.status}`);
      return send(c, answer);
    };

  const app = new Hono();
  // Browsers confirm from another origin, as against api.stripe.com (which allows any origin).
  app.use(
    cors({
      origin: "*",
      allowMethods: ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"],
      allowHeaders: ["Authorization", "Content-Type", "Idempotency-Key", "Stripe-Version", "Stripe-Account"],
      exposeHeaders: ["Request-Id", "Idempotency-Key", "Idempotent-Replayed", "Original-Request", "Stripe-Version"],
      maxAge: 300,
    }),
  );
  app.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: async (c) => {
        // Read to its end first: answering a body still on its way would leave the client's
        // kept-alive connection unusable for its next request (the SDK shares it).
        await drain(c.req.raw.body);
        return send(c, {
          status: 413,
          body: { error: { type: "invalid_request_error", message: "Request body too large." } },
        });
      },
    }),
  );
  app.post(
    "/v1/customers",
    serve(({ params }) => createCustomer(params)),
  );
  app.get(
    "/v1/customers/:id",
    serve((_, c) => {
      const id = c.req.param("id") as string;
      const customer = customers.get(id);
      if (!customer) throw noSuch("customer", id, "id");
      return { status: 200, body: customer };
    }),
  );
  app.post(
    "/v1/payment_intents",
    serve(({ params, version }) => createIntent(params, version)),
  );
  app.get(
    "/v1/payment_intents/:id",
    serve(({ params }, c) => {
      allowOnly(params, ["client_secret"]);
      return { status: 200, body: intentOf(c.req.param("id") as string) };
    }),
  );
  app.post(
    "/v1/payment_intents/:id/confirm",
    serve(({ params, auth, request }, c) => confirmIntent(c.req.param("id") as string, params, auth, request), {
      publishable: true,
    }),
  );
  app.post(
    "/v1/payment_intents/:id/cancel",
    serve(({ params }, c) => cancelIntent(c.req.param("id") as string, params)),
  );
  app.post(
    "/v1/refunds",
    serve(({ params, request }) => createRefund(params, request)),
  );
  app.get(
    "/v1/refunds/:id",
    serve((_, c) => {
      const id = c.req.param("id") as string;
      const refund = refunds.get(id);
      if (!refund) throw noSuch("refund", id, "id");
      return { status: 200, body: refund };
    }),
  );
  app.get(
    "/v1/events",
    serve(({ params }) => listEvents(params)),
  );
  app.get(
    "/v1/events/:id",
    serve((_, c) => {
      const id = c.req.param("id") as string;
      const event = events.find((e) => e.id === id);
      if (!event) throw noSuch("event", id, "id");
      return { status: 200, body: event };
    }),
  );
  // As Stripe: the key is checked before the path is found unknown.
  app.notFound(
    serve((_, c) => {
      throw apiError(
        404,
        "invalid_request_error",
        `Unrecognized request URL (${c.req.method}: ${c.req.path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
        {},
        false,
      );
    }),
  );

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
    setWebhookUrls(urls) {
      webhookUrls = [...urls];
    },
    deliveries: () => deliveryLog.map((d) => ({ ...d })),
    events: () => events.map((e) => structuredClone(e)),
    resend,
    holdDeliveries() {
      held ??= [];
    },
    releaseHeld,
    pendingDeliveries: () => (held?.length ?? 0) + timers.size + inFlight.size,
    waitForDeliveries(predicate, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const snapshot = deliveryLog.map((d) => ({ ...d }));
          if (!predicate(snapshot)) return false;
          watchers.delete(check);
          clearTimeout(timer);
          resolve(snapshot);
          return true;
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(
            new Error(
              `stripe emulator: deliveries did not match within ${timeoutMs} ms: ${JSON.stringify(deliveryLog)}`,
            ),
          );
        }, timeoutMs);
        watchers.add(check);
        check();
      });
    },
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const controller of inFlight) controller.abort(new Error("emulator stopped"));
      return new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}
