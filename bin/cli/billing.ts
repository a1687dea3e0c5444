// `sigil balance` and `sigil topup`: the account's credit, and buying more the way a browser would
// (the SDK's topUp: a payment intent from the service, confirmed with Stripe with a test card and
// the publishable key at the Stripe API the service names — the local Stripe emulator under
// `npm start` —, then credited by confirm_payment). Only test cards work: with real Stripe keys
// this buys nothing in live mode. With --sign, a ChainSecured account's admin wallet pays without a
// key (X-Wallet-Auth).
import { topUp } from "../../sdk/src/index.ts";
import { signerOptions, signerUsage, walletAuthClient } from "./chainSecured.ts";
import { dollars, UsageError, wholeNumber, type Command, type Context } from "./context.ts";

const billingClient = (ctx: Context, values: Record<string, unknown>) => (values.sign ? walletAuthClient(ctx, values) : Promise.resolve(ctx.keyed()));

export const balanceCommand: Command = {
  name: "balance",
  summary: "the account's credit",
  usage: `[--sign [--keystore FILE]]

  Prints the credit of the key's account free to spend (credit held for running work is not
  included). With --sign, that of the signer's ChainSecured account, signed as its admin wallet.

  ${signerUsage}`,
  options: { sign: { type: "boolean" }, ...signerOptions },
  async run({ values, ctx }) {
    const balance = await (await billingClient(ctx, values)).getBalance();
    ctx.print(balance, () => `balance ${balance.balance_display} (${balance.balance_cents} cents)`);
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
  options: { amount: { type: "string" }, card: { type: "string" }, sign: { type: "boolean" }, ...signerOptions },
  async run({ values, ctx }) {
    if (values.amount === undefined) throw new UsageError("--amount (whole cents) is required");
    const amountCents = wholeNumber("--amount", values.amount as string, { min: 1 });
    const client = await billingClient(ctx, values);
    const result = await topUp(client, { amountCents, ...(values.card !== undefined ? { paymentMethod: values.card as string } : {}) });
    const how = result.alreadyCredited ? "credited by Stripe's webhook" : "credited";
    ctx.print(result, () => `${how}: ${dollars(amountCents)}; balance ${dollars(result.balanceCents)} (${result.balanceCents} cents)`);
  },
};
