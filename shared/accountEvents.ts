// Following AccountConfig's events to keep a cache of its answers correct (docs/design/keys-and-authz.md,
// "Permission cache and chain listener"; docs/design/billing.md, "Whose account a key is: the edge's
// key cache"): every write emits an event whose first indexed topic is the account's master hash, so
// a cache that drops an account's entries whenever one of its events appears never serves an answer
// older than the last block it has read. The cursor reads `eth_getLogs` for the contract in bounded
// block ranges from its last processed block to the head; it starts at the head (a cache that starts
// empty, or is emptied when the cursor starts, cannot need older events), keeps what it processed
// when a later range fails, and re-reads the last few blocks on every poll so an event in a block
// replaced by a short reorg is still seen. The enclave's listener runs it on a timer; the edge, which
// has none, on its requests.
import { hexToBigInt, type Hex } from "viem";

/** Events with one more indexed topic after the master; for the usage-key events it is the key hash. */
const KEY_EVENT_TOPICS = 3;

/** What a cursor reads of the chain (a viem public client bound to the contract, or a test's fake). */
export type AccountEventSource = {
  /** The chain's head, never from a cache. */
  blockNumber(): Promise<bigint>;
  /** The contract's logs in [fromBlock, toBlock]. */
  logs(fromBlock: bigint, toBlock: bigint): Promise<ReadonlyArray<{ topics: readonly Hex[] }>>;
};

/** The accounts events name: their master hashes (topic 1), and the key hashes of the usage-key events (topic 2). */
export type AccountsNamed = { masters: Set<bigint>; keyHashes: Set<bigint> };

/**
 * The accounts a range's logs name. ApiPayersSet names no account (no indexed topic) and is
 * skipped; every other event's first indexed topic is the master hash (AdminApiPayerSet's is a
 * payer's address, taken for a master no cache holds: dropping it does nothing).
 */
export function accountsNamedBy(logs: ReadonlyArray<{ topics: readonly Hex[] }>): AccountsNamed {
  const masters = new Set<bigint>();
  const keyHashes = new Set<bigint>();
  for (const log of logs) {
    const [, first, second] = log.topics;
    if (first === undefined) continue;
    masters.add(hexToBigInt(first));
    if (second !== undefined && log.topics.length === KEY_EVENT_TOPICS) keyHashes.add(hexToBigInt(second));
  }
  return { masters, keyHashes };
}

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
      if (named.masters.size > 0) onEvents(named);
      if (this.lastBlock === null || to > this.lastBlock) this.lastBlock = to;
      from = to + 1n;
    }
    return "followed";
  }
}
