// `sigil topup`: buys credit from the command line the way a browser would (api.md, Billing):
// asks the edge for a payment intent, confirms it with Stripe using a test card and the
// publishable key (against the local Stripe emulator under `npm start`, whose URL the edge gives
// as `api_base`), then asks the edge to credit it and waits until it has. Only test cards work:
// with real Stripe keys this buys nothing in live mode (Stripe refuses test cards there).
import { parseArgs } from "node:util";
import { SigilError } from "../../shared/errors.ts";

export type TopUpOptions = {
  /** The API base, e.g. http://127.0.0.1:8787/core/v1. */
  api: string;
  key: string;
  amountCents: number;
  /** A Stripe test payment method; pm_card_visa succeeds, pm_card_chargeDeclined is declined. */
  card?: string;
  /** How long to wait for a payment Stripe reports as processing (default 120 s). */
  waitMs?: number;
  log?: (line: string) => void;
};

export type TopUpResult = { paymentIntentId: string; creditedCents: number; alreadyCredited: boolean; balanceCents: number };

type ErrorBody = { error?: { code?: string; message?: string; details?: { status?: string } } };

/** The top-up did not complete (`payment_not_succeeded`); the message, for the CLI's user, says where it stopped. */
export class TopUpError extends SigilError {
  override readonly name = "TopUpError";
  constructor(message: string) {
    super("payment_not_succeeded", message, { expose: false });
  }
}

async function edge<T>(options: TopUpOptions, method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: T & ErrorBody }> {
  const res = await fetch(`${options.api.replace(/\/+$/, "")}${path}`, {
    method,
    headers: { "x-api-key": options.key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as T & ErrorBody };
  } catch {
    throw new TopUpError(`${method} ${path} answered ${res.status} without JSON: ${text.slice(0, 200)}`);
  }
}

function failed(what: string, r: { status: number; body: ErrorBody }): TopUpError {
  return new TopUpError(`${what}: ${r.status} ${r.body.error?.code ?? ""} ${r.body.error?.message ?? ""}`.trim());
}

export const dollars = (cents: number) => `$${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;

export async function topUp(options: TopUpOptions): Promise<TopUpResult> {
  const log = options.log ?? (() => {});
  const config = await edge<{ publishable_key: string; api_base?: string }>(options, "GET", "/billing/stripe_config");
  if (config.status !== 200) throw failed("stripe_config", config);
  const stripeBase = config.body.api_base ?? "https://api.stripe.com";

  const intent = await edge<{ payment_intent_id: string; client_secret: string }>(options, "POST", "/billing/create_payment_intent", { amount_cents: options.amountCents });
  if (intent.status !== 200) throw failed("create_payment_intent", intent);
  const id = intent.body.payment_intent_id;
  log(`payment intent ${id} for ${dollars(options.amountCents)}`);

  // What Stripe.js does in a browser: confirm with the publishable key and the client secret.
  const paid = await fetch(`${stripeBase}/v1/payment_intents/${encodeURIComponent(id)}/confirm`, {
    method: "POST",
    headers: { authorization: `Bearer ${config.body.publishable_key}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ payment_method: options.card ?? "pm_card_visa", client_secret: intent.body.client_secret }).toString(),
    signal: AbortSignal.timeout(60_000),
  });
  const payment = (await paid.json()) as { status?: string; error?: { message?: string; decline_code?: string } };
  if (!paid.ok) throw new TopUpError(`Stripe refused the payment: ${payment.error?.message ?? paid.status}${payment.error?.decline_code ? ` (${payment.error.decline_code})` : ""}`);
  log(`Stripe: ${payment.status}`);

  // The edge credits it once, whether its webhook or this call gets there first; a payment still
  // processing (crypto) is waited for.
  const deadline = Date.now() + (options.waitMs ?? 120_000);
  for (;;) {
    const r = await edge<{ credited_cents: number; already_credited: boolean; balance_cents: number }>(options, "POST", "/billing/confirm_payment", { payment_intent_id: id });
    if (r.status === 200) {
      return { paymentIntentId: id, creditedCents: r.body.credited_cents, alreadyCredited: r.body.already_credited, balanceCents: r.body.balance_cents };
    }
    const processing = r.status === 409 && r.body.error?.code === "payment_not_succeeded" && r.body.error.details?.status === "processing";
    if (!processing) throw failed("confirm_payment", r);
    if (Date.now() > deadline) throw new TopUpError(`the payment ${id} was still processing after ${Math.round((options.waitMs ?? 120_000) / 1000)} s; run confirm_payment later`);
    log("the payment is processing; waiting");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}

export const topUpUsage = `usage: sigil topup --key <api key> --amount <cents> [--api <url>] [--card <pm_card_…>]

  Buys <cents> of credit (at least 500) for the account of <api key> (or $SIGIL_API_KEY) with a
  Stripe test card (default pm_card_visa), and prints the new balance. <url> defaults to
  http://127.0.0.1:8787/core/v1, the API of \`npm start\`.`;

/** The `sigil topup` command; its exit code. */
export async function topUpCommand(args: string[]): Promise<number> {
  let values: { key?: string; amount?: string; api?: string; card?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { key: { type: "string" }, amount: { type: "string" }, api: { type: "string" }, card: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
    }));
  } catch (err) {
    console.error(`sigil topup: ${err instanceof Error ? err.message : String(err)}\n\n${topUpUsage}`);
    return 2;
  }
  if (values.help) {
    console.log(topUpUsage);
    return 0;
  }
  const key = values.key ?? process.env.SIGIL_API_KEY;
  const amount = Number(values.amount);
  if (!key || !values.amount || !Number.isInteger(amount) || amount <= 0) {
    console.error(`sigil topup: --key (or SIGIL_API_KEY) and --amount (whole cents) are required\n\n${topUpUsage}`);
    return 2;
  }
  try {
    const result = await topUp({
      api: values.api ?? "http://127.0.0.1:8787/core/v1",
      key,
      amountCents: amount,
      ...(values.card ? { card: values.card } : {}),
      log: (line) => console.error(line),
    });
    const how = result.alreadyCredited ? "credited by Stripe's webhook" : "credited";
    console.log(`${how}: ${dollars(amount)}; balance ${dollars(result.balanceCents)} (${result.balanceCents} cents)`);
    return 0;
  } catch (err) {
    console.error(`sigil topup: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
