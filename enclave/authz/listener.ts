// The chain listener (docs/design/keys-and-authz.md): polls `eth_getLogs` for AccountConfig's events in bounded
// block ranges and drops the cache entries of every account an event names. It starts at the
// chain head (the cache is empty at start, so older events cannot matter), resumes from its last
// processed block after an error, and re-reads the last few blocks on every poll so an event in a
// block replaced by a short reorg is still seen (the cursor of shared/accountEvents.ts, which the
// edge's key cache follows the same events with).
import type { Address, PublicClient } from "viem";
import { AccountEventCursor, type AccountsNamed } from "../../shared/accountEvents.ts";
import type { Logger } from "../../shared/log.ts";

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
  /**
   * Called with what the events of a range named and may have changed (shared/accountEvents.ts:
   * usage keys, accounts that only gained, accounts whose grants may have narrowed).
   */
  onEvents: (named: AccountsNamed) => void;
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
  readonly #cursor: AccountEventCursor;
  #since: number;
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
    const { client, contract } = options;
    this.#cursor = new AccountEventCursor({
      source: {
        blockNumber: () => client.getBlockNumber({ cacheTime: 0 }),
        logs: (fromBlock, toBlock) => client.getLogs({ address: contract, fromBlock, toBlock }),
      },
      maxRange: options.maxRange,
      reorgDepth: options.reorgDepth,
      onEvents: (named) => options.onEvents(named),
    });
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
      lastBlock: this.#cursor.lastBlock,
      chainHead: this.#cursor.chainHead,
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
    await this.#cursor.poll();
    this.#lastSuccessAt = this.#now();
    this.#lastError = null;
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
              lastBlock: this.#cursor.lastBlock,
            });
          this.#lastError = message;
        })
        .finally(() => this.#schedule(this.#o.pollMs));
    }, delay);
    this.#timer.unref?.();
  }
}
