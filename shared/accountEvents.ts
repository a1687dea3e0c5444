// Following AccountConfig's events to keep a cache of its answers correct (docs/design/keys-and-authz.md,
// "Permission cache and chain listener"; docs/design/billing.md, "Whose account a key is: the edge's
// key cache"): every write emits an event whose first indexed topic is the account's master hash, so
// a cache that drops what each event may have changed (eventScope: a usage key's entries, an
// account's denials, or all of an account) never serves an answer older than the last block it has
// read, and keeps what no event touched — through a chain outage too. The cursor reads `eth_getLogs` for the contract in bounded
// block ranges from its last processed block to the head; it starts at the head (a cache that starts
// empty, or is emptied when the cursor starts, cannot need older events), keeps what it processed
// when a later range fails, and re-reads the last few blocks on every poll so an event in a block
// replaced by a short reorg is still seen. The enclave's listener runs it on a timer; the edge, which
// has none, on its requests.
import { hexToBigInt, toEventSelector, type AbiEvent, type Hex } from "viem";
import { accountConfigAbi } from "./generated/accountConfigAbi.ts";

/**
 * What an event may have changed of its account, for the caches that follow them:
 *
 * - `grants` — what the enclave's permission cache holds: `key`, everything of the usage key the
 *   event names (its second topic); `widened`, the account only gained (a wallet, a group, an action,
 *   an action or a wallet in a group): a denial it cached may be wrong now, a grant is still right;
 *   `account`, anything of the account may have narrowed or changed: all of it goes.
 * - `billing` — what `billingOf` answers, which the edge's key cache holds: `key`, that usage key's;
 *   `account`, the master key's (converted, ownership moved); `none`.
 *
 * An event this code does not know counts as `account` for both.
 */
export type EventScope = { grants: "key" | "widened" | "account"; billing: "key" | "account" | "none" };

export const EVENT_SCOPES: Readonly<Record<string, EventScope>> = {
  AccountCreated: { grants: "widened", billing: "none" },
  AccountConvertedToChainSecured: { grants: "account", billing: "account" },
  ChainSecuredAccountOwnershipTransferred: { grants: "account", billing: "account" },
  UsageApiKeySet: { grants: "key", billing: "key" },
  UsageApiKeyMetadataUpdated: { grants: "key", billing: "key" },
  UsageApiKeyRemoved: { grants: "key", billing: "key" },
  UsageKeyGuardrailSet: { grants: "key", billing: "none" },
  WalletRegistered: { grants: "widened", billing: "none" },
  WalletGuardrailSet: { grants: "account", billing: "none" },
  GroupAdded: { grants: "widened", billing: "none" },
  GroupUpdated: { grants: "account", billing: "none" },
  GroupRemoved: { grants: "account", billing: "none" },
  ActionAddedToGroup: { grants: "widened", billing: "none" },
  ActionRemovedFromGroup: { grants: "account", billing: "none" },
  PkpAddedToGroup: { grants: "widened", billing: "none" },
  PkpRemovedFromGroup: { grants: "account", billing: "none" },
  ActionAdded: { grants: "widened", billing: "none" },
  ActionRemoved: { grants: "account", billing: "none" },
  ActionMetadataUpdated: { grants: "widened", billing: "none" },
};

/**
 * Events that name no account: the payers' (ApiPayersSet has no indexed topic, AdminApiPayerSet's is
 * a payer's address) and the contract's own governance (its proxy initialized, its ownership moved).
 */
export const EVENTS_NAMING_NO_ACCOUNT: ReadonlySet<string> = new Set([
  "ApiPayersSet",
  "AdminApiPayerSet",
  "Initialized",
  "OwnershipTransferStarted",
  "OwnershipTransferred",
]);

/** The contract's code was replaced (its proxy upgraded): any answer may have changed, every cache empties. */
export const EVENTS_CHANGING_EVERYTHING: ReadonlySet<string> = new Set(["Upgraded"]);

const UNKNOWN: EventScope = { grants: "account", billing: "account" };

/** Each AccountConfig event's selector (topic 0) and name. */
const EVENT_NAMES = new Map<string, string>(
  accountConfigAbi
    .filter((item): item is AbiEvent & typeof item => item.type === "event")
    .map((item) => [toEventSelector(item as AbiEvent).toLowerCase(), (item as AbiEvent).name]),
);

/** What AccountConfig's event named by `selector` (topic 0) may change; UNKNOWN for one this code does not know. */
export function eventScope(selector: Hex): EventScope | "no_account" | "everything" {
  const name = EVENT_NAMES.get(selector.toLowerCase());
  if (name === undefined) return UNKNOWN;
  if (EVENTS_NAMING_NO_ACCOUNT.has(name)) return "no_account";
  if (EVENTS_CHANGING_EVERYTHING.has(name)) return "everything";
  return EVENT_SCOPES[name] ?? UNKNOWN;
}

/** What a range of the contract's logs changed, by scope (EventScope). */
export type AccountsNamed = {
  /** The contract's code changed (EVENTS_CHANGING_EVERYTHING): drop everything. */
  everything: boolean;
  /** Every account an event names (topic 1). */
  masters: Set<bigint>;
  /** Accounts whose grants may have narrowed: everything cached of them goes. */
  grantsChanged: Set<bigint>;
  /** Accounts that only gained: their cached denials go. */
  widened: Set<bigint>;
  /** Usage keys an event named (topic 2 of the usage-key events): everything cached of each key goes. */
  keys: Set<bigint>;
  /** Accounts whose master key's `billingOf` may have changed. */
  billingChanged: Set<bigint>;
  /** Usage keys whose `billingOf` may have changed. */
  billingKeys: Set<bigint>;
};

/** Nothing named, nothing changed: what accountsNamedBy starts from (`over`: a test's own changes). */
export function namedNothing(over: Partial<AccountsNamed> = {}): AccountsNamed {
  return {
    everything: false,
    masters: new Set(),
    grantsChanged: new Set(),
    widened: new Set(),
    keys: new Set(),
    billingChanged: new Set(),
    billingKeys: new Set(),
    ...over,
  };
}

/** The accounts a range's logs name, and what each event may have changed of them (eventScope). */
export function accountsNamedBy(logs: ReadonlyArray<{ topics: readonly Hex[] }>): AccountsNamed {
  const named = namedNothing();
  for (const log of logs) {
    const [selector, first, second] = log.topics;
    if (selector === undefined) continue;
    const scope = eventScope(selector);
    if (scope === "everything") named.everything = true;
    if (scope === "no_account" || scope === "everything" || first === undefined) continue;
    const master = hexToBigInt(first);
    named.masters.add(master);
    // A key-scoped event without its key's topic is not what this code knows: the whole account.
    const keyHash = second === undefined ? undefined : hexToBigInt(second);
    if (scope.grants === "key" && keyHash !== undefined) named.keys.add(keyHash);
    else if (scope.grants === "widened") named.widened.add(master);
    else named.grantsChanged.add(master);
    if (scope.billing === "key" && keyHash !== undefined) named.billingKeys.add(keyHash);
    else if (scope.billing !== "none") named.billingChanged.add(master);
  }
  return named;
}

/** What a cursor reads of the chain (a viem public client bound to the contract, or a test's fake). */
export type AccountEventSource = {
  /** The chain's head, never from a cache. */
  blockNumber(): Promise<bigint>;
  /** The contract's logs in [fromBlock, toBlock]. */
  logs(fromBlock: bigint, toBlock: bigint): Promise<ReadonlyArray<{ topics: readonly Hex[] }>>;
};

export type CursorOptions = {
  source: AccountEventSource;
  /** Blocks per eth_getLogs at most (RPC providers cap a range). */
  maxRange: number;
  /** Blocks re-read on every poll, for short reorgs. */
  reorgDepth: number;
  /** Called for each range whose events name an account (not for ranges that name none). */
  onEvents: (named: AccountsNamed) => void;
};

/** What a poll did: `started` at the head (nothing before it was read), or `followed` from the last processed block. */
export type PollOutcome = "started" | "followed";

export class AccountEventCursor {
  readonly #o: CursorOptions;
  /** The last block whose events were handed on; null before the first poll, or after restart(). */
  lastBlock: bigint | null = null;
  /** The head the last poll saw. */
  chainHead: bigint | null = null;

  constructor(options: CursorOptions) {
    this.#o = options;
  }

  /** Forgets the last processed block: the next poll starts at the head again. */
  restart(): void {
    this.lastBlock = null;
  }

  /**
   * One poll: the head, then every block after the last processed one (less the reorg depth) up to
   * it, range by range; a range's events are handed on before the next is read, and the progress
   * made stands when a later range fails (the error is thrown; the next poll resumes there).
   */
  async poll(): Promise<PollOutcome> {
    const { source, maxRange, reorgDepth, onEvents } = this.#o;
    const head = await source.blockNumber();
    this.chainHead = head;
    if (this.lastBlock === null) {
      this.lastBlock = head;
      return "started";
    }
    // Re-read the last `reorgDepth` blocks: dropping cache entries twice is harmless.
    let from = this.lastBlock + 1n - BigInt(reorgDepth);
    if (from < 0n) from = 0n;
    const span = BigInt(maxRange);
    while (from <= head) {
      const to = from + span - 1n < head ? from + span - 1n : head;
      const named = accountsNamedBy(await source.logs(from, to));
      if (named.masters.size > 0 || named.everything) onEvents(named);
      if (this.lastBlock === null || to > this.lastBlock) this.lastBlock = to;
      from = to + 1n;
    }
    return "followed";
  }
}
