// `sigil transaction list|show|wait|send|speed-up`: transactions the service sends for the account's
// wallets and follows to their end (docs/design/transactions.md). `send` and `speed-up` run the SDK's
// signing action (sendSigilTransaction, speedUpSigilTransaction: what toSigilAccount runs, under the
// same grant); `wait` reads a transaction until it is terminal or its timeout (waitForTransaction),
// and exits 1 at the timeout with the last record.
import type { Transaction } from "../../sdk/src/index.ts";
import { collect } from "../../sdk/src/reads.ts";
import { TRANSACTION_STATUSES } from "../../shared/transactionStatus.ts";
import {
  fields,
  service,
  switches,
  text,
  UsageError,
  valued,
  wholeNumber,
  wholeNumberOption,
  type Command,
  type Group,
} from "./context.ts";

const STATUSES = TRANSACTION_STATUSES;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ID = /^tx_[0-9a-f]{24}$/;

function idOf(value: string | undefined): string {
  if (value === undefined || !ID.test(value)) throw new UsageError(`${value ?? "ID"}: not a transaction id (tx_…)`);
  return value;
}

function walletOf(value: string | undefined, flag = "--wallet"): string {
  if (value === undefined) throw new UsageError(`${flag} is required`);
  if (!ADDRESS.test(value)) throw new UsageError(`${flag} ${value}: not an address (0x and 40 hex digits)`);
  return value;
}

/** A decimal wei amount from `--flag`, or undefined when not given. */
function wei(values: Record<string, unknown>, flag: string): bigint | undefined {
  const value = text(values, flag);
  if (value === undefined) return undefined;
  if (!/^\d{1,78}$/.test(value)) throw new UsageError(`--${flag} ${value}: not a whole number of wei`);
  return BigInt(value);
}

const recordFields = (t: Transaction) =>
  fields([
    ["id", t.id],
    ["status", t.status],
    ["wallet", t.wallet_address],
    ["chain", t.chain_id],
    ["nonce", t.nonce],
    ["hash", t.hash ?? "-"],
    ["block", t.block_number ?? undefined],
    ["gas used", t.gas_used ?? undefined],
    ["fee (wei)", t.fee_wei ?? undefined],
    ["replaces", t.replaces ?? undefined],
    ["replaced by", t.replaced_by ?? undefined],
    ["last error", t.last_error ?? undefined],
    ["updated", t.updated_at],
  ]);

const list: Command = {
  name: "transaction list",
  summary: "transactions the service sent for the account, newest first",
  usage: `[--wallet ADDRESS] [--chain ID] [--status STATUS] [--limit N]

  Lists the transactions scripts sent (Sigil.Actions.sendTransaction), newest first, filtered by
  wallet, chain id and status (${STATUSES.join(", ")}); --limit caps how many (default 50).`,
  options: valued("wallet", "chain", "status", "limit"),
  async run({ values, ctx }) {
    const status = text(values, "status");
    if (status !== undefined && !(STATUSES as readonly string[]).includes(status))
      throw new UsageError(`--status ${status}: not a status (${STATUSES.join(", ")})`);
    const wallet = text(values, "wallet");
    const chain = wholeNumberOption(values, "chain", { min: 1 });
    const limit = wholeNumberOption(values, "limit", { min: 1 }) ?? 50;
    const pages = ctx.keyed().all.listTransactions({
      ...(wallet !== undefined ? { wallet_address: walletOf(wallet) } : {}),
      ...(chain !== undefined ? { chain_id: chain } : {}),
      ...(status !== undefined ? { status: status as Transaction["status"] } : {}),
      limit: Math.min(limit, 100),
    });
    const items: Transaction[] = [];
    for await (const t of pages) {
      items.push(t);
      if (items.length >= limit) break;
    }
    ctx.list(items, "no transactions", [
      ["ID", (t) => t.id],
      ["STATUS", (t) => t.status],
      ["CHAIN", (t) => String(t.chain_id)],
      ["NONCE", (t) => String(t.nonce)],
      ["WALLET", (t) => t.wallet_address],
      ["HASH", (t) => t.hash ?? "-"],
      ["UPDATED", (t) => t.updated_at],
    ]);
  },
};

const show: Command = {
  name: "transaction show",
  summary: "one transaction's record",
  usage: `ID

  Prints the transaction ID (tx_…): where it is, its receipt's block, gas and fee once mined, what
  replaced it, and what the follower last met (last error).`,
  positionals: { min: 1, max: 1, names: "ID" },
  async run({ positionals, ctx }) {
    const id = idOf(positionals[0]);
    const [t] = await collect(ctx.keyed().all.listTransactions({ id }));
    if (!t) throw new UsageError(`no transaction ${id} in this account`);
    ctx.print(t, () => recordFields(t));
  },
};

const wait: Command = {
  name: "transaction wait",
  summary: "wait until a transaction is confirmed, reverted, replaced or dropped",
  usage: `ID [--timeout SECONDS]

  Reads the transaction ID until it reaches a terminal state and prints it; after --timeout
  (default 120 s) prints the last record read and exits 1. Exits 1 too when it ended reverted,
  replaced, dropped or released.`,
  positionals: { min: 1, max: 1, names: "ID" },
  options: valued("timeout"),
  async run({ positionals, values, ctx }) {
    const id = idOf(positionals[0]);
    const timeout = wholeNumberOption(values, "timeout", { min: 1 }) ?? 120;
    let last = "";
    try {
      const t = await service().waitForTransaction(ctx.keyed(), id, {
        timeoutMs: timeout * 1000,
        onPending: (p) => {
          const line = `${p.status}${p.last_error ? ` (${p.last_error})` : ""}`;
          if (line !== last) ctx.note(`${id}: ${line}`);
          last = line;
        },
      });
      ctx.print(t, () => recordFields(t));
      if (t.status !== "confirmed") process.exitCode = 1;
    } catch (err) {
      if (!(err instanceof service().SigilTransactionTimeoutError)) throw err;
      const t = err.transaction;
      ctx.print({ timed_out: true, transaction: t ?? null }, () =>
        t ? `${recordFields(t)}\ntimed out after ${timeout} s` : `timed out after ${timeout} s; no record read`,
      );
      process.exitCode = 1;
    }
  },
};

const send: Command = {
  name: "transaction send",
  summary: "send a transaction from a wallet through the service (nonce, gas and fees filled)",
  usage: `--wallet ADDRESS --chain ID --to ADDRESS [--value WEI] [--data HEX] [--grant] [--wait]

  Sends from the wallet through the SDK's signing action, as toSigilAccount signs: the service
  fills gas and fees, numbers it, signs it (the wallet's guardrail and budgets decide) and sends it
  to its RPC for the chain; prints the transaction's id and hash. --grant makes the signing
  action's group for the wallet if the key has none; --wait then waits for its end (as
  \`transaction wait\`).`,
  options: { ...valued("wallet", "chain", "to", "value", "data"), ...switches("grant", "wait") },
  async run({ values, ctx }) {
    const wallet = walletOf(text(values, "wallet"));
    const chain = text(values, "chain");
    if (chain === undefined) throw new UsageError("--chain is required (the chain id to send on)");
    const chainId = wholeNumber("--chain", chain, { min: 1 });
    const to = walletOf(text(values, "to"), "--to");
    const data = text(values, "data");
    if (data !== undefined && !/^0x([0-9a-fA-F]{2})*$/.test(data))
      throw new UsageError("--data must be 0x and hex bytes");
    const client = ctx.keyed();
    const sent = await service().sendSigilTransaction(client, {
      wallet,
      transaction: {
        chainId,
        to: to as `0x${string}`,
        value: wei(values, "value") ?? 0n,
        ...(data !== undefined ? { data: data as `0x${string}` } : {}),
      },
      grant: values.grant === true,
    });
    if (!values.wait) {
      ctx.print(sent, () =>
        fields([
          ["id", sent.id],
          ["hash", sent.hash ?? "-"],
          ["nonce", sent.nonce],
          ["status", sent.status],
        ]),
      );
      return;
    }
    ctx.note(`sent ${sent.id} (${sent.hash}); waiting for it`);
    const t = await service().waitForTransaction(client, sent.id);
    ctx.print(t, () => recordFields(t));
    if (t.status !== "confirmed") process.exitCode = 1;
  },
};

const speedUp: Command = {
  name: "transaction speed-up",
  summary: "send a pending transaction again with its nonce and higher fees",
  usage: `ID --wallet ADDRESS [--max-fee WEI] [--max-priority-fee WEI] [--gas-price WEI] [--grant]

  Sends the wallet's pending transaction ID again with the same nonce and fees at least an eighth
  higher (and at least the chain's estimate, and at least what is given); prints the new
  transaction. Whichever of the two is mined, the other ends replaced.`,
  positionals: { min: 1, max: 1, names: "ID" },
  options: { ...valued("wallet", "max-fee", "max-priority-fee", "gas-price"), ...switches("grant") },
  async run({ positionals, values, ctx }) {
    const id = idOf(positionals[0]);
    const fees = {
      maxFeePerGas: wei(values, "max-fee"),
      maxPriorityFeePerGas: wei(values, "max-priority-fee"),
      gasPrice: wei(values, "gas-price"),
    };
    const sent = await service().speedUpSigilTransaction(ctx.keyed(), {
      wallet: walletOf(text(values, "wallet")),
      id,
      fees: Object.fromEntries(Object.entries(fees).filter(([, v]) => v !== undefined)),
      grant: values.grant === true,
    });
    ctx.print(sent, () =>
      fields([
        ["id", sent.id],
        ["replaces", id],
        ["hash", sent.hash ?? "-"],
        ["nonce", sent.nonce],
        ["status", sent.status],
      ]),
    );
  },
};

export const transactionGroup: Group = {
  name: "transaction",
  summary: "transactions sent for the account's wallets, followed to their end",
  commands: [list, show, wait, send, speedUp],
};
