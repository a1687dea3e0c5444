// The Stripe emulator's objects: customers (kept in a file when one is given, as `npm start` keeps
// them beside the ledgers that name them), payment intents with the test cards, and refunds; each
// write that Stripe reports by webhook makes its event.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import {
  allowOnly,
  type Answer,
  apiError,
  type Auth,
  invalidParam,
  metadataOf,
  missingParam,
  newId,
  noSuch,
  now,
  optBoolean,
  optEmail,
  optString,
  type Params,
  randomToken,
  reqInteger,
  reqString,
} from "./api.ts";

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

/** Makes an event of `type` about `object`, for the request that made it. */
export type Emit = (
  type: string,
  object: Record<string, unknown>,
  request: { id: string; idempotencyKey: string | null },
) => void;

export class StripeResources {
  readonly customers: Map<string, Record<string, unknown>>;
  readonly refunds = new Map<string, Record<string, unknown>>();
  /** The API version each payment intent was made at (its events are rendered at it). */
  readonly intentVersions: Map<string, string>;
  readonly #intents = new Map<string, Record<string, unknown>>();
  /** Cents refunded so far, by payment intent. */
  readonly #refundedOf = new Map<string, number>();
  readonly #customersFile: string | undefined;
  readonly #emit: Emit;

  constructor(options: { customersFile?: string | undefined; intentVersions: Map<string, string>; emit: Emit }) {
    this.#customersFile = options.customersFile;
    this.intentVersions = options.intentVersions;
    this.#emit = options.emit;
    this.customers = new Map<string, Record<string, unknown>>(
      options.customersFile && existsSync(options.customersFile)
        ? (JSON.parse(readFileSync(options.customersFile, "utf8")) as Array<[string, Record<string, unknown>]>)
        : [],
    );
  }

  createCustomer(params: Params): Answer {
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
    this.customers.set(customer.id, customer);
    if (this.#customersFile) writeFileSync(this.#customersFile, JSON.stringify([...this.customers]));
    return { status: 200, body: customer };
  }

  createIntent(params: Params, apiVersion: string | undefined): Answer {
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
    if (customer !== undefined && !this.customers.has(customer)) throw noSuch("customer", customer, "customer", 400);
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
    this.#intents.set(id, intent);
    if (apiVersion) this.intentVersions.set(id, apiVersion);
    return { status: 200, body: intent };
  }

  intentOf(id: string): Record<string, unknown> {
    const intent = this.#intents.get(id);
    if (!intent) throw noSuch("payment_intent", id, "intent");
    return intent;
  }

  confirmIntent(
    id: string,
    params: Params,
    auth: Auth,
    request: { id: string; idempotencyKey: string | null },
  ): Answer {
    allowOnly(params, ["payment_method", "client_secret", "return_url", "receipt_email", "use_stripe_sdk"]);
    const intent = this.intentOf(id);
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
      this.#emit("payment_intent.payment_failed", intent, request);
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
    this.#emit("payment_intent.succeeded", intent, request);
    return { status: 200, body: intent };
  }

  cancelIntent(id: string, params: Params): Answer {
    allowOnly(params, ["cancellation_reason"]);
    const intent = this.intentOf(id);
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

  // --- this.refunds ----------------------------------------------------------------------------------

  /**
   * A refund of a succeeded intent, of `amount` cents (default: what is left of it), succeeded at
   * once as a card refund usually is; Stripe then sends `refund.created` (whose refund's status is
   * already succeeded) — what the edge debits the account's credit by.
   */
  createRefund(params: Params, request: { id: string; idempotencyKey: string | null }): Answer {
    allowOnly(params, ["payment_intent", "amount", "reason", "metadata"]);
    const intentId = reqString(params, "payment_intent");
    const intent = this.intentOf(intentId);
    if (intent.status !== "succeeded") {
      throw apiError(
        400,
        "invalid_request_error",
        `This PaymentIntent (${intentId}) does not have a successful charge to refund.`,
        { code: "charge_not_refundable" },
      );
    }
    const left = Number(intent.amount_received) - (this.#refundedOf.get(intentId) ?? 0);
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
    this.#refundedOf.set(intentId, (this.#refundedOf.get(intentId) ?? 0) + amount);
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
    this.refunds.set(String(refund.id), refund);
    this.#emit("refund.created", refund, request);
    return { status: 200, body: refund };
  }
}
