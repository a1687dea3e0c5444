// The chain listener (docs/design/keys-and-authz.md): polls `eth_getLogs` for AccountConfig's events in bounded
// block ranges and drops the cache entries of every account an event names. It starts at the
// chain head (the cache is empty at start, so older events cannot matter), resumes from its last
// processed block after an error, and re-reads the last few blocks on every poll so an event in a
// block replaced by a short reorg is still seen.
import { hexToBigInt, type Address, type Log, type PublicClient } from "viem";
import type { Logger } from "../../shared/log.ts";

/** Events with one more indexed topic after the master; for the usage-key events it is the key hash, whose cached denial must go too (for the others, dropping an absent entry does nothing). */
const KEY_EVENT_COUNT = 3;

export type ListenerStatus = {
  /** Seconds since the last successful poll; null before the first. */
  lagSeconds: number | null;
  lastBlock: bigint | null;
  chainHead: bigint | null;
  lastError: string | null;
  /**
   * No successful poll for longer than `stalledAfterMs` (counted from the listener's start when
   * there has been none): the cache may be serving revoked grants, and nothing here says when it
   * will stop. The enclave answers for it; it does not repair it.
   */
  stalled: boolean;
};

export type ListenerOptions = {
  client: PublicClient;
  contract: Address;
  pollMs: number;
  /** How long without a successful poll before the listener counts as stalled: 3 polls, at least 30 s, by default. */
  stalledAfterMs?: number;
  maxRange: number;
  reorgDepth: number;
  /** Called with the master hashes (topic 1) and key hashes of the events in a range. */
  onEvents: (masters: Set<bigint>, keyHashes: Set<bigint>) => void;
  log: Logger;
  now?: () => number;
};

/** Three missed polls, and never less than 30 s: a slow RPC or a busy machine is not a stall. */
export function defaultStalledAfterMs(pollMs: number): number {
  return Math.max(3 * pollMs, 30_000);
}

export class ChainListener {
  readonly #o: ListenerOptions;
  readonly #now: () => number;
  readonly #stalledAfterMs: number;
  #since: number;
  #lastBlock: bigint | null = null;
  #chainHead: bigint | null = null;
  #lastSuccessAt: number | null = null;
  #lastError: string | null = null;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #stopped = false;
  #polling: Promise<void> | undefined;

  constructor(options: ListenerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#stalledAfterMs = options.stalledAfterMs ?? defaultStalledAfterMs(options.pollMs);
    this.#since = this.#now();
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#since = this.#now();
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#polling;
  }

  status(): ListenerStatus {
    const now = this.#now();
    return {
      lagSeconds: this.#lastSuccessAt === null ? null : Math.max(0, (now - this.#lastSuccessAt) / 1000),
      lastBlock: this.#lastBlock,
      chainHead: this.#chainHead,
      lastError: this.#lastError,
      stalled: now - (this.#lastSuccessAt ?? this.#since) > this.#stalledAfterMs,
    };
  }

  /** The lag above which status() says stalled, in seconds. */
  get stalledAfterSeconds(): number {
    return this.#stalledAfterMs / 1000;
  }

  /** One poll: reads every new block up to the head. Exposed for tests. */
  async poll(): Promise<void> {
    const { client, contract, maxRange, reorgDepth } = this.#o;
    const head = await client.getBlockNumber({ cacheTime: 0 });
    this.#chainHead = head;
    if (this.#lastBlock === null) {
      this.#lastBlock = head;
    } else {
      // Re-read the last `reorgDepth` blocks: dropping cache entries twice is harmless.
      let from = this.#lastBlock + 1n - BigInt(reorgDepth);
      if (from < 0n) from = 0n;
      while (from <= head) {
        const to = from + BigInt(maxRange) - 1n < head ? from + BigInt(maxRange) - 1n : head;
        const logs = await client.getLogs({ address: contract, fromBlock: from, toBlock: to });
        this.#dispatch(logs);
        if (to > this.#lastBlock) this.#lastBlock = to;
        from = to + 1n;
      }
    }
    this.#lastSuccessAt = this.#now();
    this.#lastError = null;
  }

  #dispatch(logs: Log[]): void {
    if (logs.length === 0) return;
    const masters = new Set<bigint>();
    const keyHashes = new Set<bigint>();
    for (const log of logs) {
      const [, first, second] = log.topics;
      // ApiPayersSet / AdminApiPayerSet name no account; every other event's first indexed topic is the master hash.
      if (first === undefined) continue;
      masters.add(hexToBigInt(first));
      if (second !== undefined && log.topics.length === KEY_EVENT_COUNT) keyHashes.add(hexToBigInt(second));
    }
    if (masters.size > 0) this.#o.onEvents(masters, keyHashes);
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#polling = this.poll()
        .catch((err: unknown) => {
          const message = err instanceof Error ? (err.message.split("\n")[0] ?? "poll failed") : String(err);
          if (this.#lastError !== message)
            this.#o.log.warn("chain listener poll failed; retrying from the last processed block", {
              error: message,
              lastBlock: this.#lastBlock,
            });
          this.#lastError = message;
        })
        .finally(() => this.#schedule(this.#o.pollMs));
    }, delay);
    this.#timer.unref?.();
  }
}
