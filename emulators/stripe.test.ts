// The local Stripe emulator, driven only through the real `stripe` SDK (as the Worker drives
// Stripe), plain fetch for what a browser sends (the publishable-key confirm), and a local webhook
// receiver that checks signatures with the SDK's own verifier.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startStripeEmulator, type Delivery, type StripeEmulator } from "./stripe.ts";

type Received = { body: string; signature: string; answered: number };
type Receiver = { url: string; received: Received[]; close(): Promise<void> };

// A webhook endpoint that records each request and answers what `answer` says for it (by the
// 0-based index of the request among those for the same event).
async function startReceiver(answer: (nthForEvent: number) => number | Promise<number> = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const id = (JSON.parse(body) as { id: string }).id;
      const nth = received.filter((r) => (JSON.parse(r.body) as { id: string }).id === id).length;
      const entry: Received = { body, signature: String(req.headers["stripe-signature"]), answered: 0 };
      received.push(entry);
      void Promise.resolve(answer(nth)).then((status) => {
        entry.answered = status;
        res.writeHead(status).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sdkFor = (emulator: StripeEmulator, key = emulator.secretKey) =>
  new Stripe(key, {
    host: emulator.host,
    port: emulator.port,
    protocol: "http",
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 0,
  });

const verify = (stripe: Stripe, body: string, signature: string, secret: string) =>
  stripe.webhooks.constructEventAsync(body, signature, secret, undefined, Stripe.createSubtleCryptoProvider());

// What a browser does: POST the confirm form with the publishable key.
async function browserConfirm(
  emulator: StripeEmulator,
  id: string,
  form: Record<string, string>,
  key = emulator.publishableKey,
) {
  const res = await fetch(`${emulator.url}/v1/payment_intents/${id}/confirm`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function thrown(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("expected the call to throw");
}

describe("stripe emulator", () => {
  let emulator: StripeEmulator;
  let receiver: Receiver;
  let stripe: Stripe;
  let customerId: string;

  beforeAll(async () => {
    receiver = await startReceiver();
    emulator = await startStripeEmulator({ retryBaseMs: 40, maxAttempts: 4 });
    emulator.setWebhookUrls([receiver.url]);
    stripe = sdkFor(emulator);
    customerId = (await stripe.customers.create({ email: "owner@example.com", metadata: { account: "acct-hash-1" } }))
      .id;
  });
  afterAll(async () => {
    await emulator?.stop();
    await receiver?.close();
  });

  const newIntent = (amount = 1500) =>
    stripe.paymentIntents.create({
      amount,
      currency: "usd",
      customer: customerId,
      automatic_payment_methods: { enabled: true },
      metadata: { account: "acct-hash-1" },
    });

  // Deliveries are matched to intents through the event the emulator recorded.
  const matches = (d: Delivery, intentId: string) =>
    emulator.events().some((e) => e.id === d.eventId && e.data.object.id === intentId);

  test("keys are in Stripe's formats and the server is on loopback", () => {
    expect(emulator.secretKey).toMatch(/^sk_test_[A-Za-z0-9]{20,}$/);
    expect(emulator.publishableKey).toMatch(/^pk_test_[A-Za-z0-9]{20,}$/);
    expect(emulator.webhookSecret).toMatch(/^whsec_[A-Za-z0-9]{20,}$/);
    expect(emulator.host).toBe("127.0.0.1");
    expect(emulator.url).toBe(`http://127.0.0.1:${emulator.port}`);
  });

  test("HTTP as Stripe answers it: a browser's preflight, an unknown URL (after the key), a body over 1 MiB", async () => {
    const preflight = await fetch(`${emulator.url}/v1/payment_intents/pi_x/confirm`, {
      method: "OPTIONS",
      headers: {
        origin: "http://page.test",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-max-age")).toBe("300");
    const auth = { authorization: `Bearer ${emulator.secretKey}`, origin: "http://page.test" };
    const unknown = await fetch(`${emulator.url}/v1/nothing_here`, { headers: auth });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("access-control-allow-origin")).toBe("*");
    expect(unknown.headers.get("access-control-expose-headers")).toContain("Request-Id");
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(
      /^Unrecognized request URL \(GET: \/v1\/nothing_here\)/,
    );
    expect((await fetch(`${emulator.url}/v1/nothing_here`)).status).toBe(401);
    const big = await fetch(`${emulator.url}/v1/customers`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/x-www-form-urlencoded" },
      body: `description=${"x".repeat(1 << 20)}`,
    });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
  });

  test("customers: create and retrieve", async () => {
    const created = await stripe.customers.create({ email: "a@example.com", metadata: { account: "acct-hash-2" } });
    expect(created.id).toMatch(/^cus_/);
    expect(created).toMatchObject({
      object: "customer",
      email: "a@example.com",
      metadata: { account: "acct-hash-2" },
      livemode: false,
    });
    const fetched = await stripe.customers.retrieve(created.id);
    expect(fetched).toMatchObject({ id: created.id, email: "a@example.com", metadata: { account: "acct-hash-2" } });
    const missing = await thrown(stripe.customers.retrieve("cus_nope"));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({ statusCode: 404, code: "resource_missing" });
  });

  test("payment intent: create has Stripe's shape", async () => {
    const intent = await newIntent(2500);
    expect(intent.id).toMatch(/^pi_/);
    expect(intent.client_secret).toMatch(new RegExp(`^${intent.id}_secret_[A-Za-z0-9]+$`));
    expect(intent).toMatchObject({
      object: "payment_intent",
      status: "requires_payment_method",
      amount: 2500,
      amount_received: 0,
      currency: "usd",
      customer: customerId,
      metadata: { account: "acct-hash-1" },
      automatic_payment_methods: { enabled: true },
      livemode: false,
    });
    expect(Math.abs(intent.created - Date.now() / 1000)).toBeLessThan(5);
    const unknownCustomer = await thrown(
      stripe.paymentIntents.create({ amount: 1000, currency: "usd", customer: "cus_nope" }),
    );
    expect(unknownCustomer).toMatchObject({ statusCode: 400, code: "resource_missing", param: "customer" });
    const tooSmall = await thrown(stripe.paymentIntents.create({ amount: 10, currency: "usd" }));
    expect(tooSmall).toMatchObject({ statusCode: 400, code: "amount_too_small" });
  });

  test("payment intent: an idempotency key replays the first answer", async () => {
    const params = {
      amount: 1200,
      currency: "usd",
      customer: customerId,
      automatic_payment_methods: { enabled: true },
      metadata: { account: "acct-hash-1" },
    };
    const first = await stripe.paymentIntents.create(params, { idempotencyKey: "topup-1" });
    const again = await stripe.paymentIntents.create(params, { idempotencyKey: "topup-1" });
    expect(again.id).toBe(first.id);
    expect(again.client_secret).toBe(first.client_secret);
    const other = await stripe.paymentIntents.create(params, { idempotencyKey: "topup-2" });
    expect(other.id).not.toBe(first.id);
    const changed = await thrown(
      stripe.paymentIntents.create({ ...params, amount: 1300 }, { idempotencyKey: "topup-1" }),
    );
    expect(changed).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(changed.statusCode).toBe(400);
  });

  test("payment intent: retrieve, and an unknown id is resource_missing 404", async () => {
    const intent = await newIntent();
    const fetched = await stripe.paymentIntents.retrieve(intent.id);
    expect(fetched).toMatchObject({ id: intent.id, amount: 1500, status: "requires_payment_method" });
    const missing = await thrown(stripe.paymentIntents.retrieve("pi_doesnotexist"));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({ statusCode: 404, code: "resource_missing", rawType: "invalid_request_error" });
    expect(missing.message).toContain("pi_doesnotexist");
  });

  test("confirm with the publishable key and client_secret succeeds; the webhook is signed and verifiable", async () => {
    const intent = await newIntent(4200);
    const { status, body } = await browserConfirm(emulator, intent.id, {
      payment_method: "pm_card_visa",
      client_secret: intent.client_secret as string,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: intent.id, status: "succeeded", amount_received: 4200 });
    expect(body.payment_method).toMatch(/^pm_/);
    const fetched = await stripe.paymentIntents.retrieve(intent.id);
    expect(fetched).toMatchObject({ status: "succeeded", amount_received: 4200 });

    const [delivery] = (
      await emulator.waitForDeliveries((ds) =>
        ds.some((d) => d.type === "payment_intent.succeeded" && d.ok && matches(d, intent.id)),
      )
    ).filter((d) => d.type === "payment_intent.succeeded" && matches(d, intent.id));
    expect(delivery).toMatchObject({ url: receiver.url, attempt: 1, status: 200, ok: true });
    const request = receiver.received.find((r) => JSON.parse(r.body).id === delivery?.eventId);
    expect(request?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const event = await verify(stripe, request!.body, request!.signature, emulator.webhookSecret);
    expect(event).toMatchObject({
      object: "event",
      type: "payment_intent.succeeded",
      livemode: false,
      api_version: Stripe.API_VERSION,
    });
    expect(event.id).toMatch(/^evt_/);
    const object = event.data.object as Stripe.PaymentIntent;
    expect(object).toMatchObject({
      id: intent.id,
      status: "succeeded",
      amount_received: 4200,
      metadata: { account: "acct-hash-1" },
    });
    // The same bytes under another secret, or altered bytes, do not verify.
    await expect(verify(stripe, request!.body, request!.signature, "whsec_not_the_secret")).rejects.toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
    await expect(
      verify(stripe, request!.body.replace("4200", "4201"), request!.signature, emulator.webhookSecret),
    ).rejects.toThrow(Stripe.errors.StripeSignatureVerificationError);
  });

  test("refunds: part, then the rest, of a succeeded intent (refund.created sent, signed); over-refunding, an unpaid intent and bad params refused as Stripe does", async () => {
    const intent = await newIntent(1000);
    const unpaid = await newIntent(1000);
    await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
    const part = await stripe.refunds.create({
      payment_intent: intent.id,
      amount: 300,
      reason: "requested_by_customer",
    });
    expect(part).toMatchObject({
      object: "refund",
      amount: 300,
      currency: "usd",
      payment_intent: intent.id,
      status: "succeeded",
      reason: "requested_by_customer",
    });
    expect(part.id).toMatch(/^re_/);
    expect(await stripe.refunds.retrieve(part.id)).toEqual(part);
    const rest = await stripe.refunds.create({ payment_intent: intent.id });
    expect(rest.amount).toBe(700);
    expect(await thrown(stripe.refunds.create({ payment_intent: intent.id, amount: 1 }))).toMatchObject({
      statusCode: 400,
      code: "charge_already_refunded",
    });
    expect(await thrown(stripe.refunds.create({ payment_intent: unpaid.id }))).toMatchObject({
      statusCode: 400,
      code: "charge_not_refundable",
    });
    const other = await newIntent(500);
    await stripe.paymentIntents.confirm(other.id, { payment_method: "pm_card_visa" });
    expect(await thrown(stripe.refunds.create({ payment_intent: other.id, amount: 501 }))).toMatchObject({
      statusCode: 400,
      code: "amount_too_large",
    });
    expect(await thrown(stripe.refunds.create({ payment_intent: other.id, amount: 0 }))).toMatchObject({
      statusCode: 400,
      param: "amount",
    });
    expect(await thrown(stripe.refunds.retrieve("re_missing"))).toMatchObject({
      statusCode: 404,
      code: "resource_missing",
    });

    const refunded = (d: Delivery) =>
      d.type === "refund.created" &&
      d.ok &&
      emulator.events().some((e) => e.id === d.eventId && e.data.object.id === part.id);
    const [delivery] = (await emulator.waitForDeliveries((ds) => ds.some(refunded))).filter(refunded);
    const request = receiver.received.find((r) => JSON.parse(r.body).id === delivery?.eventId);
    const event = await verify(stripe, request!.body, request!.signature, emulator.webhookSecret);
    expect(event.data.object).toMatchObject({
      id: part.id,
      object: "refund",
      amount: 300,
      payment_intent: intent.id,
      status: "succeeded",
    });
  });

  test("confirm with the secret key needs no client_secret", async () => {
    const intent = await newIntent(900);
    const confirmed = await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
    expect(confirmed).toMatchObject({ status: "succeeded", amount_received: 900 });
  });

  test("a wrong client_secret is 400, and the intent stays unconfirmed", async () => {
    const intent = await newIntent();
    const other = await newIntent();
    const wrong = await browserConfirm(emulator, intent.id, {
      payment_method: "pm_card_visa",
      client_secret: other.client_secret as string,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ type: "invalid_request_error", param: "client_secret" });
    const none = await browserConfirm(emulator, intent.id, { payment_method: "pm_card_visa" });
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({
      type: "invalid_request_error",
      code: "parameter_missing",
      param: "client_secret",
    });
    expect((await stripe.paymentIntents.retrieve(intent.id)).status).toBe("requires_payment_method");
  });

  test("the publishable key opens only the confirm endpoint; other keys nothing", async () => {
    const publishable = sdkFor(emulator, emulator.publishableKey);
    const created = await thrown(publishable.paymentIntents.create({ amount: 1000, currency: "usd" }));
    expect(created).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(created.statusCode).toBe(401);
    const intent = await newIntent();
    const retrieved = await thrown(publishable.paymentIntents.retrieve(intent.id));
    expect(retrieved).toMatchObject({ statusCode: 401 });
    const forged = await thrown(sdkFor(emulator, "sk_test_forged000000000000000000").customers.retrieve(customerId));
    expect(forged).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(forged.message).toContain("Invalid API Key provided");
    const anonymous = await fetch(`${emulator.url}/v1/customers/${customerId}`);
    expect(anonymous.status).toBe(401);
    const wrongKeyConfirm = await browserConfirm(
      emulator,
      intent.id,
      { payment_method: "pm_card_visa", client_secret: intent.client_secret as string },
      "pk_test_other",
    );
    expect(wrongKeyConfirm.status).toBe(401);
    expect((await stripe.paymentIntents.retrieve(intent.id)).status).toBe("requires_payment_method");
  });

  test("a declined card: 402 card_error, back to requires_payment_method, payment_failed webhook", async () => {
    const intent = await newIntent(3100);
    const { status, body } = await browserConfirm(emulator, intent.id, {
      payment_method: "pm_card_chargeDeclined",
      client_secret: intent.client_secret as string,
    });
    expect(status).toBe(402);
    expect(body.error).toMatchObject({ type: "card_error", code: "card_declined", decline_code: "generic_decline" });
    expect(body.error.payment_intent).toMatchObject({
      id: intent.id,
      status: "requires_payment_method",
      amount_received: 0,
    });
    const fetched = await stripe.paymentIntents.retrieve(intent.id);
    expect(fetched.status).toBe("requires_payment_method");
    expect(fetched.amount_received).toBe(0);
    expect(fetched.last_payment_error).toMatchObject({ type: "card_error", code: "card_declined" });
    // Through the SDK the same answer is a StripeCardError.
    const sdkDecline = await thrown(
      stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_chargeDeclined" }),
    );
    expect(sdkDecline).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(sdkDecline).toMatchObject({ statusCode: 402, code: "card_declined" });
    expect(sdkDecline.payment_intent?.id).toBe(intent.id);

    const deliveries = await emulator.waitForDeliveries(
      (ds) =>
        ds.filter((d) => d.type === "payment_intent.payment_failed" && d.ok && matches(d, intent.id)).length === 2,
    );
    const failed = deliveries.find((d) => d.type === "payment_intent.payment_failed" && matches(d, intent.id));
    const request = receiver.received.find((r) => JSON.parse(r.body).id === failed?.eventId);
    const event = await verify(stripe, request!.body, request!.signature, emulator.webhookSecret);
    expect(event.type).toBe("payment_intent.payment_failed");
    expect(event.data.object).toMatchObject({
      id: intent.id,
      status: "requires_payment_method",
      last_payment_error: { code: "card_declined" },
    });
    expect(emulator.deliveries().some((d) => d.type === "payment_intent.succeeded" && matches(d, intent.id))).toBe(
      false,
    );
  });

  test("confirming an intent that already succeeded is 400 payment_intent_unexpected_state", async () => {
    const intent = await newIntent();
    await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
    const again = await browserConfirm(emulator, intent.id, {
      payment_method: "pm_card_visa",
      client_secret: intent.client_secret as string,
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ type: "invalid_request_error", code: "payment_intent_unexpected_state" });
    const viaSdk = await thrown(stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" }));
    expect(viaSdk).toMatchObject({ statusCode: 400, code: "payment_intent_unexpected_state" });
    expect((await stripe.paymentIntents.retrieve(intent.id)).amount_received).toBe(1500);
  });

  test("cancel: the intent is canceled and can no longer be confirmed", async () => {
    const intent = await newIntent();
    const canceled = await stripe.paymentIntents.cancel(intent.id, { cancellation_reason: "abandoned" });
    expect(canceled).toMatchObject({
      id: intent.id,
      status: "canceled",
      cancellation_reason: "abandoned",
      amount_received: 0,
    });
    expect(canceled.canceled_at).toBeGreaterThan(0);
    const confirm = await browserConfirm(emulator, intent.id, {
      payment_method: "pm_card_visa",
      client_secret: intent.client_secret as string,
    });
    expect(confirm.status).toBe(400);
    expect(confirm.body.error.code).toBe("payment_intent_unexpected_state");
    const twice = await thrown(stripe.paymentIntents.cancel(intent.id));
    expect(twice).toMatchObject({ statusCode: 400, code: "payment_intent_unexpected_state" });
  });

  test("the confirm answers before the webhook is delivered", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = await startReceiver(() => held.then(() => 200));
    emulator.setWebhookUrls([slow.url]);
    try {
      const intent = await newIntent(700);
      const confirmed = await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
      expect(confirmed.status).toBe("succeeded");
      // The receiver has the request but has not answered it, and the confirm has returned.
      await expect.poll(() => slow.received.length).toBe(1);
      expect(emulator.deliveries().some((d) => d.url === slow.url)).toBe(false);
      release();
      const done = await emulator.waitForDeliveries((ds) => ds.some((d) => d.url === slow.url));
      expect(done.find((d) => d.url === slow.url)).toMatchObject({ ok: true, status: 200, attempt: 1 });
    } finally {
      release();
      emulator.setWebhookUrls([receiver.url]);
      await slow.close();
    }
  });
});

describe("stripe emulator webhook retries", () => {
  test("a receiver that answers 500 twice gets the event on the third attempt, each signed afresh", async () => {
    const flaky = await startReceiver((nth) => (nth < 2 ? 500 : 200));
    const emulator = await startStripeEmulator({ webhookUrls: [flaky.url], retryBaseMs: 50 });
    try {
      const stripe = sdkFor(emulator);
      const intent = await stripe.paymentIntents.create({
        amount: 5000,
        currency: "usd",
        automatic_payment_methods: { enabled: true },
      });
      await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
      const deliveries = await emulator.waitForDeliveries((ds) => ds.some((d) => d.ok));
      expect(deliveries.map((d) => [d.attempt, d.status, d.ok])).toEqual([
        [1, 500, false],
        [2, 500, false],
        [3, 200, true],
      ]);
      expect(new Set(deliveries.map((d) => d.eventId)).size).toBe(1);
      // Backoff: 50 ms, then 100 ms.
      const [a, b, c] = deliveries as [Delivery, Delivery, Delivery];
      expect(b.at - a.at).toBeGreaterThanOrEqual(45);
      expect(c.at - b.at).toBeGreaterThanOrEqual(95);
      expect(flaky.received.map((r) => r.answered)).toEqual([500, 500, 200]);
      for (const r of flaky.received) {
        const event = await verify(stripe, r.body, r.signature, emulator.webhookSecret);
        expect(event).toMatchObject({ id: a.eventId, type: "payment_intent.succeeded" });
      }
      // Nothing more once it got through.
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(emulator.deliveries()).toHaveLength(3);
    } finally {
      await emulator.stop();
      await flaky.close();
    }
  });

  test("an unreachable URL is tried maxAttempts times, then given up", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const emulator = await startStripeEmulator({ retryBaseMs: 10, maxAttempts: 3 });
    emulator.setWebhookUrls([`http://127.0.0.1:${port}/webhook`]);
    try {
      const stripe = sdkFor(emulator);
      const intent = await stripe.paymentIntents.create({ amount: 5000, currency: "usd" });
      await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
      const deliveries = await emulator.waitForDeliveries((ds) => ds.length === 3);
      expect(deliveries.map((d) => [d.attempt, d.status, d.ok])).toEqual([
        [1, null, false],
        [2, null, false],
        [3, null, false],
      ]);
      expect(deliveries[0]?.error).toBeTruthy();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(emulator.deliveries()).toHaveLength(3);
    } finally {
      await emulator.stop();
    }
  });
});

describe("stripe emulator replays and reorders", () => {
  test("resend sends a past event again: the same event id and bytes, signed afresh, marked resent", async () => {
    const receiver = await startReceiver();
    const emulator = await startStripeEmulator({ webhookUrls: [receiver.url] });
    try {
      const stripe = sdkFor(emulator);
      const intent = await stripe.paymentIntents.create({ amount: 700, currency: "usd" });
      await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
      const [first] = await emulator.waitForDeliveries((ds) => ds.length === 1);
      // A second apart, so the fresh signature's timestamp differs.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await emulator.resend(first!.eventId);
      expect(emulator.deliveries().map((d) => [d.eventId, d.attempt, d.ok, d.resent ?? false])).toEqual([
        [first!.eventId, 1, true, false],
        [first!.eventId, 1, true, true],
      ]);
      const [a, b] = receiver.received as [Received, Received];
      expect(b.body).toBe(a.body);
      expect(b.signature).not.toBe(a.signature);
      for (const r of receiver.received)
        expect((await verify(stripe, r.body, r.signature, emulator.webhookSecret)).id).toBe(first!.eventId);
      expect(emulator.pendingDeliveries()).toBe(0);
      await expect(emulator.resend("evt_unknown")).rejects.toThrow(/no event/);
    } finally {
      await emulator.stop();
      await receiver.close();
    }
  });

  test("held events are sent only when released, in the order asked for, each after the last was answered", async () => {
    const receiver = await startReceiver();
    const emulator = await startStripeEmulator({ webhookUrls: [receiver.url] });
    try {
      const stripe = sdkFor(emulator);
      emulator.holdDeliveries();
      // A declined card, then the same intent paid: payment_failed, then succeeded.
      const intent = await stripe.paymentIntents.create({ amount: 900, currency: "usd" });
      await thrown(stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_chargeDeclined" }));
      await stripe.paymentIntents.confirm(intent.id, { payment_method: "pm_card_visa" });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(receiver.received).toHaveLength(0);
      expect(emulator.pendingDeliveries()).toBe(2);
      const sent = await emulator.releaseHeld("reverse");
      const types = emulator.events().map((e) => e.type);
      expect(types).toEqual(["payment_intent.payment_failed", "payment_intent.succeeded"]);
      expect(sent).toEqual(
        emulator
          .events()
          .map((e) => e.id)
          .reverse(),
      );
      expect(receiver.received.map((r) => (JSON.parse(r.body) as { type: string }).type)).toEqual([
        "payment_intent.succeeded",
        "payment_intent.payment_failed",
      ]);
      expect(emulator.pendingDeliveries()).toBe(0);
      // No longer holding: the next event goes out at once.
      await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
      await emulator.waitForDeliveries((ds) => ds.length === 3);
    } finally {
      await emulator.stop();
      await receiver.close();
    }
  });
});
