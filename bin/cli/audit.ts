// `sigil audit`: the account's administrative history (GET /core/v1/audit), newest first — keys,
// wallets, groups, actions, conversion, ownership — each with its block, time, sender and
// transaction. The SDK's client.all.audit follows the cursor, so --limit may exceed one page. With
// --sign, a ChainSecured account's admin wallet reads it without a key (X-Wallet-Auth).
import type { AuditEvent } from "../../sdk/src/index.ts";
import { signerOptions, signerUsage, walletAuthClient } from "./chainSecured.ts";
import { table, wholeNumber, type Command } from "./context.ts";

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
  options: { limit: { type: "string" }, sign: { type: "boolean" }, ...signerOptions },
  async run({ values, ctx }) {
    const limit =
      values.limit === undefined ? DEFAULT_LIMIT : wholeNumber("--limit", values.limit as string, { min: 1 });
    const client = values.sign ? await walletAuthClient(ctx, values) : ctx.keyed();
    const events: AuditEvent[] = [];
    for await (const e of client.all.audit({ limit: Math.min(limit, 100) })) {
      events.push(e);
      if (events.length >= limit) break;
    }
    ctx.print(events, () =>
      events.length === 0
        ? "no events"
        : table(
            ["BLOCK", "TIME", "WHAT", "SENDER", "TRANSACTION"],
            events.map((e) => [
              String(e.block_number),
              e.block_time === null ? "-" : new Date(e.block_time * 1000).toISOString().replace(".000Z", "Z"),
              e.summary,
              e.actor ?? "-",
              e.tx_hash,
            ]),
          ),
    );
  },
};
