// An account's administrative history, read from AccountConfig's events (issue 14): every write
// emits an event whose first indexed topic is the account's master hash (docs/design/contract.md, Events), so
// one `eth_getLogs` filter — the contract's address, the account events' selectors, the master in
// topic 1 — finds them on the chain itself, with no index of our own. viem's getLogs filters a list
// of events by an indexed argument only after the logs came back (it sends no topic for `args`
// with `events`), so the filter's topics are built here and sent through viem's typed
// `eth_getLogs` request; the logs are decoded with viem's parseEventLogs.
//
// Newest first, in pages. A cursor is a position in the chain, never an offset, so events written
// while a client pages (always in later blocks) never shift or repeat a page. The walk goes
// backward in block windows (RPC providers cap a getLogs range) from the cursor, or from the chain
// head, until it has one event more than the page, reaches the account's creation (nothing of the
// account is older), reaches the first block to read, or has read its most windows for one request
// (a Worker may make only so many subrequests); then the page ends where it got to.
//
// Plain arguments only (a viem client, the contract, the master hash): the route knows HTTP.
import {
  decodeFunctionData,
  encodeEventTopics,
  formatLog,
  numberToHex,
  parseEventLogs,
  toEventSelector,
  type AbiEvent,
  type Address,
  type Hex,
  type Log,
  type PublicClient,
  type RpcLog,
} from "viem";
import { SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";

/**
 * The most getLogs windows one request reads (a Worker's subrequest budget is 50 on the free plan,
 * and the request makes a few other reads). A longer stretch without the account's events ends the
 * page early with a cursor that resumes below the last block read.
 */
export const MAX_AUDIT_WINDOWS_PER_PAGE = 40;
export const DEFAULT_AUDIT_LIMIT = 50;
export const MAX_AUDIT_LIMIT = 100;

type AccountConfigEvent = Extract<(typeof accountConfigAbi)[number], { type: "event" }>;
/** The account events: every event of the contract whose first input is the indexed master hash (the payer events name none). */
export const accountEvents = accountConfigAbi.filter(
  (item): item is AccountConfigEvent =>
    item.type === "event" && item.inputs[0]?.name === "master" && item.inputs[0]?.indexed === true,
);
export type AccountEventName = AccountConfigEvent["name"];

/** Where a page goes on from: just before an event of the account, or below a block (a page cut short by the window budget). */
export type AuditCursor = { kind: "event"; block: bigint; logIndex: number } | { kind: "below"; block: bigint };

const CURSOR_VERSION = "1";

/** A cursor as clients see it: base64url of `1:e:<block>:<logIndex>` or `1:b:<block>`, opaque to them. */
export function encodeCursor(cursor: AuditCursor): string {
  const text =
    cursor.kind === "event"
      ? `${CURSOR_VERSION}:e:${cursor.block}:${cursor.logIndex}`
      : `${CURSOR_VERSION}:b:${cursor.block}`;
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const invalidCursor = (why: string) =>
  new SigilError("invalid_cursor", `the cursor is not one this endpoint gave: ${why}; start again without one`, {
    details: [{ path: "cursor", message: why }],
  });

/** A cursor from a query string, or 400 invalid_cursor (details: `cursor`) for anything encodeCursor did not make. */
export function decodeCursor(value: string): AuditCursor {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) throw invalidCursor("it is not base64url");
  let text: string;
  try {
    const base64 = value.replace(/-/g, "+").replace(/_/g, "/");
    text = atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "="));
  } catch {
    throw invalidCursor("it is not base64url");
  }
  const event = /^1:e:(0|[1-9]\d{0,15}):(0|[1-9]\d{0,5})$/.exec(text);
  if (event) return { kind: "event", block: BigInt(event[1] as string), logIndex: Number(event[2]) };
  const below = /^1:b:([1-9]\d{0,15})$/.exec(text);
  if (below) return { kind: "below", block: BigInt(below[1] as string) };
  throw invalidCursor("it names no position");
}

/** One event of the account, decoded, with where it is and who sent its transaction. */
export type AuditEvent = {
  block_number: number;
  block_time: number | null;
  tx_hash: Hex;
  log_index: number;
  event: AccountEventName;
  actor: Address | null;
  summary: string;
  args: Record<string, string | boolean>;
};

export type AuditPage = { events: AuditEvent[]; next_cursor: string | null };

export type AuditQuery = {
  client: PublicClient;
  contract: Address;
  master: bigint;
  /** The first block to read: the contract's deployment block, or a later one the caller asked for. */
  fromBlock: bigint;
  windowBlocks: number;
  limit: number;
  cursor?: AuditCursor | undefined;
  /** Windows read at most (MAX_AUDIT_WINDOWS_PER_PAGE; smaller in tests). */
  maxWindows?: number;
};

type DecodedLog = Log<bigint, number, false, AccountConfigEvent, true, readonly AccountConfigEvent[]> & {
  eventName: AccountEventName;
  args: Record<string, unknown>;
};

/** The account's logs in [from, to], newest first: one eth_getLogs with the master in topic 1. */
async function accountLogs(q: AuditQuery, from: bigint, to: bigint): Promise<DecodedLog[]> {
  const selectors = accountEvents.map((e) => toEventSelector(e as AbiEvent));
  // encodeEventTopics gives [selector, master] for the master-only filter of any account event.
  const [, masterTopic] = encodeEventTopics({
    abi: accountEvents,
    eventName: "GroupAdded",
    args: { master: q.master },
  } as never) as Hex[];
  const raw = (await q.client.request({
    method: "eth_getLogs",
    params: [
      {
        address: q.contract,
        topics: [selectors, masterTopic as Hex],
        fromBlock: numberToHex(from),
        toBlock: numberToHex(to),
      },
    ],
  })) as RpcLog[];
  const logs = parseEventLogs({
    abi: accountEvents,
    logs: raw.map((l) => formatLog(l)),
    strict: true,
  }) as unknown as DecodedLog[];
  return logs.sort((a, b) =>
    a.blockNumber === b.blockNumber ? b.logIndex - a.logIndex : a.blockNumber > b.blockNumber ? -1 : 1,
  );
}

const before = (log: DecodedLog, cursor: AuditCursor) =>
  cursor.kind === "below"
    ? log.blockNumber < cursor.block
    : log.blockNumber < cursor.block || (log.blockNumber === cursor.block && log.logIndex < cursor.logIndex);

/** One page of the account's events, newest first, and the cursor of the next (null at the account's creation or the first block). */
export async function auditPage(q: AuditQuery): Promise<AuditPage> {
  const maxWindows = q.maxWindows ?? MAX_AUDIT_WINDOWS_PER_PAGE;
  const window = BigInt(q.windowBlocks);
  const cursor = q.cursor;
  let hi: bigint;
  if (cursor === undefined) hi = await q.client.getBlockNumber({ cacheTime: 0 });
  else if (cursor.kind === "event") hi = cursor.block;
  else {
    // A page cut short ends below a block it read, so at most one past the head.
    if (cursor.block > (await q.client.getBlockNumber({ cacheTime: 0 })) + 1n)
      throw invalidCursor("it is past the chain's head");
    hi = cursor.block - 1n;
  }
  if (cursor?.kind === "event" && cursor.block < q.fromBlock)
    throw invalidCursor("it is before the first block read (from_block)");

  const found: DecodedLog[] = [];
  let created = false;
  let windows = 0;
  let checked = cursor?.kind !== "event";
  while (hi >= q.fromBlock && found.length <= q.limit && !created && windows < maxWindows) {
    const lo = hi - window + 1n > q.fromBlock ? hi - window + 1n : q.fromBlock;
    let logs = await accountLogs(q, lo, hi);
    windows++;
    if (!checked && cursor?.kind === "event") {
      // The cursor must name an event of this account: a made-up or another account's position is refused.
      if (!logs.some((l) => l.blockNumber === cursor.block && l.logIndex === cursor.logIndex))
        throw invalidCursor("no event of this account is there");
      checked = true;
    }
    if (cursor) logs = logs.filter((l) => before(l, cursor));
    for (const log of logs) {
      found.push(log);
      // Nothing of an account is older than its creation: the walk stops there, however far the first block is.
      if (log.eventName === "AccountCreated") {
        created = true;
        break;
      }
    }
    hi = lo - 1n;
  }

  const page = found.slice(0, q.limit);
  let next: AuditCursor | null = null;
  const last = page[page.length - 1];
  if (found.length > q.limit && last) next = { kind: "event", block: last.blockNumber, logIndex: last.logIndex };
  // The window budget ran out before the page filled: go on below the last block read.
  else if (!created && hi >= q.fromBlock) next = { kind: "below", block: hi + 1n };
  return { events: await describeAll(q.client, page), next_cursor: next === null ? null : encodeCursor(next) };
}

/**
 * The page's events with their senders and block times: one getTransaction per distinct
 * transaction and one getBlock per distinct block, all at once, which a batching transport sends
 * as one JSON-RPC batch. A transaction's input also names the CIDs a write registered, so the
 * summaries show an action by its CID where the write said it.
 */
async function describeAll(client: PublicClient, logs: DecodedLog[]): Promise<AuditEvent[]> {
  const txHashes = [...new Set(logs.map((l) => l.transactionHash))];
  const blockNumbers = [...new Set(logs.map((l) => l.blockNumber))];
  const [txs, blocks] = await Promise.all([
    Promise.all(txHashes.map((hash) => client.getTransaction({ hash }))),
    Promise.all(blockNumbers.map((blockNumber) => client.getBlock({ blockNumber }))),
  ]);
  const txByHash = new Map(txs.map((tx) => [tx.hash, tx]));
  const timeByBlock = new Map(blocks.map((b) => [b.number, Number(b.timestamp)]));
  const cids = new Map<bigint, string>();
  for (const tx of txs) for (const cid of cidsOfInput(tx.input)) cids.set(cidHash(cid), cid);
  return logs.map((log) => ({
    block_number: Number(log.blockNumber),
    block_time: timeByBlock.get(log.blockNumber) ?? null,
    tx_hash: log.transactionHash,
    log_index: log.logIndex,
    event: log.eventName,
    actor: (txByHash.get(log.transactionHash)?.from.toLowerCase() as Address | undefined) ?? null,
    summary: summarize(log.eventName, log.args, cids),
    args: argsOf(log.args),
  }));
}

/** The CIDs an AccountConfig call registers (addAction, registerActions, through multicall too); none for any other input. */
export function cidsOfInput(input: Hex, depth = 0): string[] {
  let call;
  try {
    call = decodeFunctionData({ abi: accountConfigAbi, data: input });
  } catch {
    return []; // not a call of AccountConfig (a contract wallet's own execute, say)
  }
  const args = (call.args ?? []) as readonly unknown[];
  if (call.functionName === "addAction") return [args[2] as string];
  if (call.functionName === "registerActions") return [...(args[2] as readonly string[])];
  if (call.functionName === "multicall" && depth === 0)
    return (args[0] as readonly Hex[]).flatMap((inner) => cidsOfInput(inner, 1));
  return [];
}

/**
 * An event's arguments as JSON, the master left out: hashes as 0x + 64 hex, ids as decimal strings,
 * addresses lowercase. A guardrail's document is left out too (up to 16 KiB of someone's JSON, in
 * a page of 100 events): `guardrailHash` names it, and its bytes are in the event at that block.
 */
export function argsOf(args: Record<string, unknown>): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const [name, value] of Object.entries(args)) {
    if (name === "master" || name === "document") continue;
    if (typeof value === "bigint") out[name] = /Id$/.test(name) ? value.toString() : toHash32(value);
    else if (typeof value === "string") out[name] = value.toLowerCase();
    else if (typeof value === "boolean") out[name] = value;
  }
  return out;
}

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** A 256-bit hash shortened for reading: 0xabcd…1234. */
export const shortHash = (value: bigint) => {
  const hex = toHash32(value);
  return `${hex.slice(0, 6)}…${hex.slice(-4)}`;
};

/** A sentence for a person: what the event did, in the API's words. */
export function summarize(
  event: AccountEventName,
  args: Record<string, unknown>,
  cids: ReadonlyMap<bigint, string> = new Map(),
): string {
  const address = (name: string) => String(args[name]).toLowerCase();
  const id = (name: string) => String(args[name]);
  const key = () => `usage key ${shortHash(args.keyHash as bigint)}`;
  const action = () => {
    const hash = args.cidHash as bigint;
    if (hash === 0n) return "any action";
    return `action ${cids.get(hash) ?? shortHash(hash)}`;
  };
  const wallet = () =>
    address("wallet") === ZERO_ADDRESS ? "any wallet of the account" : `wallet ${address("wallet")}`;
  switch (event) {
    case "AccountCreated":
      return args.managed
        ? `managed account created, master wallet ${address("admin")}`
        : `ChainSecured account created, admin ${address("admin")}`;
    case "AccountConvertedToChainSecured":
      return `account converted to ChainSecured, admin ${address("newAdmin")}`;
    case "ChainSecuredAccountOwnershipTransferred":
      return `ownership transferred to ${address("newAdmin")} (from ${address("previousAdmin")})`;
    case "UsageApiKeySet":
      // The contract emits the same event for a new key and for one whose permissions are replaced.
      return `${key()} added or its permissions replaced`;
    case "UsageApiKeyMetadataUpdated":
      return `${key()} renamed (metadata updated)`;
    case "UsageApiKeyRemoved":
      return `${key()} removed`;
    case "WalletRegistered":
      return `wallet ${address("wallet")} registered (id ${id("walletId")})`;
    case "GroupAdded":
      return `group ${id("groupId")} added`;
    case "GroupUpdated":
      return `group ${id("groupId")} updated`;
    case "GroupRemoved":
      return `group ${id("groupId")} removed`;
    case "ActionAddedToGroup":
      return `${action()} added to group ${id("groupId")}`;
    case "ActionRemovedFromGroup":
      return `${action()} removed from group ${id("groupId")}`;
    case "PkpAddedToGroup":
      return `${wallet()} added to group ${id("groupId")}`;
    case "PkpRemovedFromGroup":
      return `${wallet()} removed from group ${id("groupId")}`;
    case "ActionAdded":
      return `${action()} registered`;
    case "ActionRemoved":
      return `${action()} unregistered`;
    case "ActionMetadataUpdated":
      return `${action()} metadata updated`;
    case "WalletGuardrailSet": {
      // An empty document removes the guardrail: the event then carries hash 0.
      const hash = BigInt(args.guardrailHash as Hex);
      return hash === 0n
        ? `guardrail of wallet ${address("wallet")} removed`
        : `guardrail of wallet ${address("wallet")} set (${shortHash(hash)})`;
    }
    case "UsageKeyGuardrailSet": {
      const hash = BigInt(args.guardrailHash as Hex);
      const usageKey = `usage key ${shortHash(args.usageKeyHash as bigint)}`;
      return hash === 0n ? `guardrail of ${usageKey} removed` : `guardrail of ${usageKey} set (${shortHash(hash)})`;
    }
    default:
      return `${String(event)}`; // an event a newer contract added: its name
  }
}
