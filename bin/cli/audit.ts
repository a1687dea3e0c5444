// `sigil audit`: the account's administrative history (GET /core/v1/audit), newest first — keys,
// wallets, groups, actions, conversion, ownership — each with its block, time, sender and
// transaction. The SDK's client.all.audit follows the cursor, so --limit may exceed one page. With
// --sign, a ChainSecured account's admin wallet reads it without a key (X-Wallet-Auth).
import { signerOptions, signerUsage, walletAuthClient } from "./chainSecured.ts";
import { switches, valued, wholeNumberOption, type Command } from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

const DEFAULT_LIMIT = 50;

export const auditCommand: Command = {
  name: "audit",
  summary: "the account's administrative history from the contract's events, newest first",
  usage: `[--limit N] [--sign [--keystore FILE]]

  Prints the account's last N administrative events (default ${DEFAULT_LIMIT}), newest first: block,
  time (UTC), what happened, who sent the transaction (for a managed account's writes, one of the
  service's payers) and the transaction. With --sign, those of the signer's ChainSecured account,
  signed as its admin wallet.

  --limit N   how many events (at least 1; pages of 100 are read as needed)
  ${signerUsage}`,
  options: { ...valued("limit"), ...switches("sign"), ...signerOptions },
  async run({ values, ctx }) {
    const limit = wholeNumberOption(values, "limit", { min: 1 }) ?? DEFAULT_LIMIT;
    const client = values.sign ? await walletAuthClient(ctx, values) : ctx.keyed();
    ctx.list(await collect(client.all.audit({ limit: Math.min(limit, 100) }), limit), "no events", [
      ["BLOCK", (e) => String(e.block_number)],
      [
        "TIME",
        (e) => (e.block_time === null ? "-" : new Date(e.block_time * 1000).toISOString().replace(".000Z", "Z")),
      ],
      ["WHAT", (e) => e.summary],
      ["SENDER", (e) => e.actor ?? "-"],
      ["TRANSACTION", (e) => e.tx_hash],
    ]);
  },
};
