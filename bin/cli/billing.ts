// `sigil balance`, `sigil topup` and `sigil usage`: the account's credit, its history, and buying more the way a browser would
// (the SDK's topUp: a payment intent from the service, confirmed with Stripe with a test card and
// the publishable key at the Stripe API the service names — the local Stripe emulator under
// `npm start` —, then credited by confirm_payment). Only test cards work: with real Stripe keys
// this buys nothing in live mode. With --sign, a ChainSecured account's admin wallet pays without a
// key (X-Wallet-Auth).
import { signerOptions, signerUsage, walletAuthClient } from "./chainSecured.ts";
import {
  dollars,
  given,
  service,
  switches,
  UsageError,
  valued,
  wholeNumber,
  wholeNumberOption,
  type Command,
  type Context,
} from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

const billingClient = (ctx: Context, values: Record<string, unknown>) =>
  values.sign ? walletAuthClient(ctx, values) : Promise.resolve(ctx.keyed());

export const balanceCommand: Command = {
  name: "balance",
  summary: "the account's credit",
  usage: `[--sign [--keystore FILE]]

  Prints the credit of the key's account free to spend (credit held for running work is not
  included). With --sign, that of the signer's ChainSecured account, signed as its admin wallet.

  ${signerUsage}`,
  options: { ...switches("sign"), ...signerOptions },
  async run({ values, ctx }) {
    const balance = await (await billingClient(ctx, values)).getBalance();
    ctx.print(balance, () => `balance ${dollars(balance.balance_cents)}`);
  },
};

export const topUpCommand: Command = {
  name: "topup",
  summary: "buy credit with a Stripe test card",
  usage: `--amount CENTS [--card PAYMENT_METHOD] [--sign [--keystore FILE]]

  Buys CENTS of credit (at least 500) for the key's account with a Stripe test card
  (--card, default pm_card_visa; pm_card_chargeDeclined is declined) and prints the new balance.
  With --sign, for the signer's ChainSecured account, signed as its admin wallet.

  ${signerUsage}`,
  options: { ...valued("amount", "card"), ...switches("sign"), ...signerOptions },
  async run({ values, ctx }) {
    if (values.amount === undefined) throw new UsageError("--amount (whole cents) is required");
    const amountCents = wholeNumber("--amount", values.amount as string, { min: 1 });
    const client = await billingClient(ctx, values);
    const result = await service().topUp(client, { amountCents, ...given(values, { paymentMethod: "card" }) });
    const how = result.alreadyCredited ? "credited by Stripe's webhook" : "credited";
    ctx.print(result, () => `${how}: ${dollars(amountCents)}; balance ${dollars(result.balanceCents)}`);
  },
};

export const usageCommand: Command = {
  name: "usage",
  summary: "the account's usage history: runs, writes, top-ups and refunds, newest first",
  usage: `[--limit N] [--all] [--kind KINDS] [--key-hash HASH] [--from WHEN] [--to WHEN] [--sign [--keystore FILE]]

  Prints the newest N events (default 20; --all: every event, page by page) of the key's account:
  when, what (run, write, top_up, refund), how it moved the balance and the settled balance after
  it, with a run's CID and duration, a write's endpoint and transaction, a top-up's or refund's
  payment. --kind takes kinds comma-separated; --key-hash one usage key's events (a usage key sees
  only its own); WHEN is an ISO 8601 time or Unix seconds. --json prints the events as JSON.
  (CSV: GET /core/v1/usage with Accept: text/csv.) With --sign, the signer's ChainSecured account.

  ${signerUsage}`,
  options: { ...valued("limit", "kind", "key-hash", "from", "to"), ...switches("all", "sign"), ...signerOptions },
  async run({ values, ctx }) {
    const limit = wholeNumberOption(values, "limit", { min: 1 }) ?? 20;
    if (values.all && values.limit !== undefined) throw new UsageError("--all and --limit do not go together");
    const client = await billingClient(ctx, values);
    const query = given(values, { kind: "kind", key_hash: "key-hash", from: "from", to: "to" });
    // Page by page through the SDK's cursor iterator; without --all, only as many pages as `limit` needs.
    const most = values.all ? undefined : limit;
    const events = await collect(client.all.listUsage({ ...query, limit: Math.min(100, most ?? 100) }), most);
    ctx.list(events, "no usage", [
      ["TIME", (e) => e.time.replace(/\.\d{3}Z$/, "Z")],
      ["KIND", (e) => e.kind],
      ["AMOUNT", (e) => dollars(e.amount_cents)],
      ["BALANCE", (e) => (e.balance_after_cents === null ? "-" : dollars(e.balance_after_cents))],
      ["DETAIL", usageDetail],
    ]);
  },
};

/** One line of an event's particulars. */
function usageDetail(e: {
  kind: string;
  cid: string | null;
  duration_ms: number | null;
  operation: string | null;
  transaction_hash: string | null;
  payment_intent: string | null;
  key_hash: string | null;
  error_code: string | null;
  hold_expired: boolean;
}): string {
  const parts: string[] = [];
  if (e.operation) parts.push(e.operation);
  if (e.cid) parts.push(e.cid);
  if (e.duration_ms !== null) parts.push(`${e.duration_ms} ms`);
  if (e.error_code) parts.push(`failed: ${e.error_code}`);
  if (e.hold_expired) parts.push("hold expired");
  if (e.transaction_hash) parts.push(`tx ${e.transaction_hash}`);
  if (e.payment_intent) parts.push(e.payment_intent);
  if (e.key_hash) parts.push(`key ${e.key_hash.slice(0, 10)}…`);
  return parts.join("  ");
}
