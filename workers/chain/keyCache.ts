// Whose account a key is, cached per isolate (docs/design/billing.md, "Whose account a key is: the
// edge's key cache"): the answer of `billingOf` (the account's master hash, whether the key is live,
// its spend cap) and the key's expiry, for the keys that may act, kept correct by the contract's
// events as the enclave's permission cache is (enclave/authz/cache.ts, enclave/authz/listener.ts).
//
// - Only keys that may act are kept: a refusal (unknown, removed or expired key; a converted
//   account's master key) is read live every time and answered as before. Concurrent misses for one
//   key share one read, the others waiting by looking, never by awaiting another request's promise
//   (shared/flight.ts says why); failures are never kept; at most KEY_CACHE_MAX_ENTRIES, the oldest
//   dropped.
// - An event follower per isolate (per RPC URL and contract) reads the contract's logs
//   (shared/accountEvents.ts) and drops what an event may change of `billingOf`: a usage key's
//   events that key's entry, the master key's (converted, ownership moved) the account's entries;
//   an account's groups, wallets and actions are not what this cache holds. Workers have no
//   timers, so a lookup that finds the last poll attempt older than `pollMs` starts one, in the
//   background (single flight, not awaited). A generation counter keeps a read that started before
//   an invalidation from being stored after it.
// - An isolate that has not polled for a while (last success older than 2 × pollMs, no attempt
//   within pollMs) waits for one poll, at most CATCH_UP_TIMEOUT_MS, before answering from memory.
// - Every entry lives KEY_ENTRY_MAX_AGE_MS at most (never past the key's expiry); one older than
//   KEY_REFRESH_AFTER_MS is re-read in the background while it is served, so hot keys stay fresh
//   and outlive a chain outage of a few minutes.
// - The edge's own writes that change a key drop the caller's account at once (forgetAfterOwnWrite).
import { AccountEventCursor, type AccountEventSource } from "../../shared/accountEvents.ts";
import { Flight, FlightWaitExpired } from "../../shared/flight.ts";
import { keyRefusal } from "../../shared/apiKey.ts";
import type { SigilError } from "../../shared/errors.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import type { Logger } from "../../shared/log.ts";
import type { EdgeConfig } from "../config.ts";
import { edgeLog } from "../log.ts";
import { chainClient, contractAddress, readView } from "./client.ts";

/**
 * The longest an entry is served, counted from when its read started: the spec's bound for stale
 * grants when the listener is dead ("stale grants within 5 minutes"). Past it a lookup reads live,
 * and when the chain is down that is 503 chain_unavailable.
 */
export const KEY_ENTRY_MAX_AGE_MS = 5 * 60_000;

/**
 * The age after which a lookup that hits an entry also re-reads it in the background (one read per
 * key at a time, one attempt per poll interval while they fail) and serves the old value meanwhile:
 * a key in use is never older than about this, so it outlives a chain outage of about 4 minutes.
 */
export const KEY_REFRESH_AFTER_MS = 60_000;

/**
 * How long a lookup in an isolate that has not polled for a while (its last successful poll older
 * than 2 × pollMs and no attempt within pollMs) waits for the poll it starts, before answering from
 * memory anyway (the chain may be down: then memory is what there is).
 */
export const CATCH_UP_TIMEOUT_MS = 1_000;

/**
 * How long a poll or a read may stay unsettled before the cache stops waiting for it and starts
 * another: longer than any RPC call's timeout (10 s, retried once), so only work whose invocation
 * was cut off (its request ended, and the runtime with it) is given up.
 */
export const GIVE_UP_MS = 60_000;

/**
 * How long a lookup waits for a read of its key that another lookup started before it reads for
 * itself: longer than a read takes at worst (two eth_calls at once, each 10 s, retried once).
 */
export const JOIN_WAIT_MS = 25_000;

/** Entries per isolate at most; the oldest are dropped first (about 200 bytes each). */
export const KEY_CACHE_MAX_ENTRIES = 100_000;

/** Blocks every poll reads again, for short reorgs (as the enclave's SIGIL_LISTENER_REORG_DEPTH). */
export const KEY_EVENTS_REORG_DEPTH = 3;

/** The account a key belongs to, as the chain says (or said, within this cache's bounds), and the key's spend cap (0 = none). */
export type CallerAccount = { keyHash: bigint; master: bigint; isMaster: boolean; spendLimitCents: number };

/** What a read of a key says: the account it may act for and when it expires (ms; Infinity: never), or why it may not. */
export type KeyReading = { account: CallerAccount; expiresAtMs: number } | { refusal: SigilError };

/** Where the cache reads keys and events (the chain, or a test's fake). */
export type KeySource = AccountEventSource & {
  /** One live read of the key; a chain failure is thrown. */
  read(keyHash: bigint): Promise<KeyReading>;
};

export type KeyCacheOptions = {
  source: KeySource;
  /** How often the contract's events are read (EdgeConfig.keyPollMs). */
  pollMs: number;
  /** Blocks per eth_getLogs at most. */
  maxRange: number;
  reorgDepth?: number;
  maxAgeMs?: number;
  refreshAfterMs?: number;
  catchUpTimeoutMs?: number;
  /** How long a lookup waits for another's read of its key before reading itself (JOIN_WAIT_MS). */
  joinWaitMs?: number;
  maxEntries?: number;
  /** Keeps background work (a poll, a refresh) alive after the request that started it has answered. */
  background?: (work: Promise<unknown>) => void;
  /** Where a failed poll is told (one line per new failure, not per request); no secrets reach it. */
  log: Logger;
  /** Taken out of a poll failure's message: the RPC URL, which may carry a provider's key. */
  secrets?: readonly string[];
  now?: () => number;
};

/** What the cache says of itself (tests, and a health or metrics report: the edge's /health does not show it yet). */
export type KeyCacheStatus = {
  entries: number;
  /** Lookups answered from memory. */
  hits: number;
  /** Lookups that read the chain (shared reads counted once). */
  misses: number;
  /** Lookups that joined a read already in flight for the key. */
  shared: number;
  /** Background re-reads of entries past KEY_REFRESH_AFTER_MS. */
  refreshes: number;
  polls: number;
  pollFailures: number;
  /** When the last poll was started, and when the last one succeeded (ms since the epoch); null before the first. */
  lastPollAt: number | null;
  lastSuccessAt: number | null;
  /** Seconds since the last successful poll; null before the first. */
  lagSeconds: number | null;
  lastBlock: bigint | null;
  chainHead: bigint | null;
  /** The last poll's error (first line), null once one succeeds. */
  lastError: string | null;
};

type Entry = { account: CallerAccount; readAt: number; expiresAtMs: number; refreshTriedAt: number };

export class KeyCache {
  readonly #o: Required<Omit<KeyCacheOptions, "secrets" | "background">> & {
    secrets: readonly string[];
    background: (work: Promise<unknown>) => void;
  };
  readonly #cursor: AccountEventCursor;
  readonly #entries = new Map<bigint, Entry>();
  readonly #byMaster = new Map<bigint, Set<bigint>>();
  readonly #inflight = new Map<bigint, { generation: number; flight: Flight<CallerAccount> }>();
  /** Bumped by every invalidation: a read that started before it must not be stored after it. */
  #generation = 0;
  /**
   * When the follower last started at the head: what was read before then may have missed events it
   * will never read, so no read that started earlier is stored (and no entry kept).
   */
  #fence = Number.NEGATIVE_INFINITY;
  #polling: Flight<void> | undefined;
  #pollStartedAt = 0;
  /** The poll an isolate that had not polled for a while waits for, and until when. */
  #catchUp: { done: Flight<void>; deadline: number } | undefined;
  #lastPollAt: number | null = null;
  #lastSuccessAt: number | null = null;
  #lastError: string | null = null;
  #hits = 0;
  #misses = 0;
  #shared = 0;
  #refreshes = 0;
  #polls = 0;
  #pollFailures = 0;

  constructor(options: KeyCacheOptions) {
    this.#o = {
      reorgDepth: KEY_EVENTS_REORG_DEPTH,
      maxAgeMs: KEY_ENTRY_MAX_AGE_MS,
      refreshAfterMs: KEY_REFRESH_AFTER_MS,
      catchUpTimeoutMs: CATCH_UP_TIMEOUT_MS,
      joinWaitMs: JOIN_WAIT_MS,
      maxEntries: KEY_CACHE_MAX_ENTRIES,
      now: Date.now,
      ...options,
      secrets: (options.secrets ?? []).filter((s) => s.length > 0),
      background: options.background ?? (() => undefined),
    };
    this.#cursor = new AccountEventCursor({
      source: options.source,
      maxRange: this.#o.maxRange,
      reorgDepth: this.#o.reorgDepth,
      // Only what billingOf answers matters here: a usage key's events drop that key, the master
      // key's (converted, ownership moved) its account; groups, wallets and actions change nothing.
      onEvents: ({ everything, billingChanged, billingKeys }) => {
        if (everything) this.invalidateKeys([...this.#entries.keys()]);
        this.invalidateMasters(billingChanged);
        this.invalidateKeys(billingKeys);
      },
    });
  }

  /**
   * The account `keyHash` may act for: from memory while the entry is younger than the maximum age
   * (and the key has not expired), else one live read. A key that may not act is refused (thrown)
   * as the live read says, every time.
   */
  async get(keyHash: bigint): Promise<CallerAccount> {
    const catchUp = this.#follow(this.#o.now());
    let entry = this.#usable(keyHash, this.#o.now());
    if (entry && catchUp) {
      await this.#wait(catchUp);
      entry = this.#usable(keyHash, this.#o.now());
    }
    if (!entry) return this.#load(keyHash, "lookup");
    this.#hits++;
    const now = this.#o.now();
    if (
      now - entry.readAt >= this.#o.refreshAfterMs &&
      now - entry.refreshTriedAt >= this.#o.pollMs &&
      !this.#flight(keyHash, now)
    ) {
      entry.refreshTriedAt = now;
      this.#refreshes++;
      this.#o.background(this.#load(keyHash, "refresh").catch(() => undefined));
    }
    return entry.account;
  }

  /** Drops every entry of these accounts (their events were read, or the edge just wrote to one). */
  invalidateMasters(masters: Iterable<bigint>): void {
    this.#generation++;
    for (const master of masters) {
      const keys = this.#byMaster.get(master);
      if (!keys) continue;
      for (const k of keys) this.#entries.delete(k);
      this.#byMaster.delete(master);
    }
  }

  /** Drops these keys' entries (their usage-key events were read). */
  invalidateKeys(keyHashes: Iterable<bigint>): void {
    this.#generation++;
    for (const keyHash of keyHashes) this.#drop(keyHash);
  }

  /** Drops the accounts of these keys, where an entry says which they are (the keys' own entries with them). */
  forgetAccountsOf(keyHashes: Iterable<bigint>): void {
    const masters = new Set<bigint>();
    for (const k of keyHashes) {
      const entry = this.#entries.get(k);
      if (entry) masters.add(entry.account.master);
    }
    this.invalidateMasters(masters);
  }

  status(): KeyCacheStatus {
    const now = this.#o.now();
    return {
      entries: this.#entries.size,
      hits: this.#hits,
      misses: this.#misses,
      shared: this.#shared,
      refreshes: this.#refreshes,
      polls: this.#polls,
      pollFailures: this.#pollFailures,
      lastPollAt: this.#lastPollAt,
      lastSuccessAt: this.#lastSuccessAt,
      lagSeconds: this.#lastSuccessAt === null ? null : Math.max(0, (now - this.#lastSuccessAt) / 1000),
      lastBlock: this.#cursor.lastBlock,
      chainHead: this.#cursor.chainHead,
      lastError: this.#lastError,
    };
  }

  /** The poll in flight, once it has settled (tests). */
  async settled(): Promise<void> {
    await this.#polling?.promise;
  }

  #usable(keyHash: bigint, now: number): Entry | undefined {
    const entry = this.#entries.get(keyHash);
    if (!entry) return undefined;
    if (now - entry.readAt < this.#o.maxAgeMs && now < entry.expiresAtMs) return entry;
    this.#drop(keyHash);
    return undefined;
  }

  /**
   * Starts a poll when the last attempt is older than pollMs (or there was none); answers the poll
   * to wait for when the isolate has not polled for a while (see CATCH_UP_TIMEOUT_MS).
   */
  #follow(now: number): { done: Flight<void>; deadline: number } | undefined {
    if (this.#polling && now - this.#pollStartedAt < GIVE_UP_MS) return this.#catchUp;
    const { pollMs } = this.#o;
    if (this.#lastPollAt !== null && now - this.#lastPollAt < pollMs) return undefined;
    const idle = this.#lastSuccessAt === null || now - this.#lastSuccessAt > 2 * pollMs;
    this.#lastPollAt = now;
    // Reads given up on are forgotten here, once per poll, rather than kept for a key never asked again.
    for (const [keyHash, { flight }] of this.#inflight)
      if (now - flight.startedAt >= GIVE_UP_MS) this.#inflight.delete(keyHash);
    const done: Flight<void> = new Flight(
      () =>
        this.#poll(now).finally(() => {
          if (this.#polling !== done) return; // given up on, and another started since
          this.#polling = undefined;
          this.#catchUp = undefined;
        }),
      now,
    );
    this.#polling = done;
    this.#pollStartedAt = now;
    this.#catchUp = idle ? { done, deadline: now + this.#o.catchUpTimeoutMs } : undefined;
    this.#o.background(done.promise);
    return this.#catchUp;
  }

  /** Waits for the catch-up poll (by looking: it may be another request's) until its deadline at most. */
  async #wait(catchUp: { done: Flight<void>; deadline: number }): Promise<void> {
    const remaining = catchUp.deadline - this.#o.now();
    if (remaining <= 0) return;
    await catchUp.done.join(remaining).catch(() => undefined);
  }

  async #poll(startedAt: number): Promise<void> {
    this.#polls++;
    try {
      // A follower that has not read the chain for longer than an entry lives starts again at the
      // head (#startOver): no entry may miss what it skips, and none would have lived anyway.
      if (this.#lastSuccessAt === null || startedAt - this.#lastSuccessAt > this.#o.maxAgeMs) this.#cursor.restart();
      if ((await this.#cursor.poll()) === "started") this.#startOver(startedAt);
      this.#lastSuccessAt = this.#o.now();
      this.#lastError = null;
    } catch (err) {
      this.#pollFailures++;
      const message = this.#redact(err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err));
      // One line per new failure, not one per poll (nor per request): an outage is told once.
      if (this.#lastError !== message)
        this.#o.log.warn("key cache: reading the contract's events failed; keys are served from memory meanwhile", {
          error: message,
          lastBlock: this.#cursor.lastBlock,
          maxAgeSeconds: this.#o.maxAgeMs / 1000,
        });
      this.#lastError = message;
    }
  }

  /**
   * The follower now starts at the head it just read: what was read since this poll started is
   * younger than that head, or so near it that the next poll's re-read of the last blocks covers it;
   * everything older goes.
   */
  #startOver(pollStartedAt: number): void {
    this.#fence = pollStartedAt;
    for (const [keyHash, entry] of this.#entries) if (entry.readAt < pollStartedAt) this.#drop(keyHash);
  }

  #redact(message: string): string {
    let out = message || "poll failed";
    for (const secret of this.#o.secrets) out = out.split(secret).join("<rpc>");
    return out;
  }

  /**
   * One live read of the key, shared by the lookups that miss it meanwhile; stored unless an
   * invalidation came first. The lookup that starts it awaits it; the others wait by looking
   * (shared/flight.ts: a request must never await another request's pending promise), at most
   * joinWaitMs, after which one reads for itself (the request that started the read may have been
   * cut off). A re-read is kept alive by waitUntil (`background`); GIVE_UP_MS bounds the rest.
   */
  #load(keyHash: bigint, why: "lookup" | "refresh"): Promise<CallerAccount> {
    const generation = this.#generation;
    const readAt = this.#o.now();
    const joined = this.#flight(keyHash, readAt);
    if (joined) {
      if (why === "lookup") this.#shared++;
      return this.#join(keyHash, joined);
    }
    if (why === "lookup") this.#misses++;
    const flight = new Flight(
      () =>
        this.#o.source.read(keyHash).then((reading) => {
          if ("refusal" in reading) {
            // Never kept; and whatever was kept of the key is wrong now.
            this.#drop(keyHash);
            throw reading.refusal;
          }
          if (generation === this.#generation && readAt >= this.#fence) this.#store(keyHash, reading, readAt);
          return reading.account;
        }),
      readAt,
    );
    const done = () => {
      if (this.#inflight.get(keyHash)?.flight === flight) this.#inflight.delete(keyHash);
    };
    flight.promise.then(done, done);
    this.#inflight.set(keyHash, { generation, flight });
    return flight.promise;
  }

  /** A lookup's share of a read another lookup started; past joinWaitMs, a read of its own. */
  async #join(keyHash: bigint, flight: Flight<CallerAccount>): Promise<CallerAccount> {
    try {
      return await flight.join(this.#o.joinWaitMs);
    } catch (err) {
      if (!(err instanceof FlightWaitExpired)) throw err;
      if (this.#inflight.get(keyHash)?.flight === flight) this.#inflight.delete(keyHash);
      return this.#load(keyHash, "lookup");
    }
  }

  /**
   * The read of `keyHash` in flight that a lookup may join: only one started since the last
   * invalidation (an older one may predate the change), and not one given up on (GIVE_UP_MS).
   */
  #flight(keyHash: bigint, now: number): Flight<CallerAccount> | undefined {
    const inflight = this.#inflight.get(keyHash);
    if (!inflight || inflight.generation !== this.#generation || now - inflight.flight.startedAt >= GIVE_UP_MS)
      return undefined;
    return inflight.flight;
  }

  #store(keyHash: bigint, reading: { account: CallerAccount; expiresAtMs: number }, readAt: number): void {
    const now = this.#o.now();
    if (reading.expiresAtMs <= now || now - readAt >= this.#o.maxAgeMs) return;
    // Re-inserted, so that the Map's order is the entries' age and the first is the oldest.
    this.#drop(keyHash);
    this.#entries.set(keyHash, {
      account: reading.account,
      readAt,
      expiresAtMs: reading.expiresAtMs,
      refreshTriedAt: readAt,
    });
    const { master } = reading.account;
    let keys = this.#byMaster.get(master);
    if (!keys) this.#byMaster.set(master, (keys = new Set()));
    keys.add(keyHash);
    while (this.#entries.size > this.#o.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#drop(oldest.value);
    }
  }

  #drop(keyHash: bigint): void {
    const entry = this.#entries.get(keyHash);
    if (!entry) return;
    this.#entries.delete(keyHash);
    const keys = this.#byMaster.get(entry.account.master);
    keys?.delete(keyHash);
    if (keys?.size === 0) this.#byMaster.delete(entry.account.master);
  }
}

// --- the isolate's caches --------------------------------------------------------------------------

/** One per chain and contract (and poll interval) this isolate reads. */
const caches = new Map<string, KeyCache>();

const cacheId = (config: EdgeConfig) =>
  `${config.rpcUrl}\n${config.contractAddress?.toLowerCase() ?? ""}\n${config.keyPollMs}`;

/** The key and its events as the chain answers, through the edge's RPC client (chain/client.ts). */
export function chainKeySource(config: EdgeConfig): KeySource {
  return {
    async read(keyHash) {
      const [[master, live, spendLimitCents], expiration] = await Promise.all([
        readView(config, "billingOf", [keyHash], keyHash),
        readView(config, "usageKeyExpiration", [keyHash], keyHash),
      ]);
      const isMaster = keyHash === master;
      const refusal = keyRefusal({ known: master !== 0n, isMaster, live });
      if (refusal) return { refusal };
      return {
        account: { keyHash, master, isMaster, spendLimitCents: Number(spendLimitCents) },
        expiresAtMs: expiration === 0n ? Number.POSITIVE_INFINITY : Number(expiration) * 1000,
      };
    },
    blockNumber: () => chainClient(config).getBlockNumber({ cacheTime: 0 }),
    logs: (fromBlock, toBlock) => chainClient(config).getLogs({ address: contractAddress(config), fromBlock, toBlock }),
  };
}

/** How background work outlives the request that started it: the runtime's waitUntil, which the Worker's entry hands in. */
let keepAlive: ((work: Promise<unknown>) => void) | undefined;

/**
 * Hands the key caches the runtime's `waitUntil` (cloudflare:workers), from the Worker's entry
 * (index.ts): this module is also loaded by Node (tests of app.ts), where that module does not exist.
 */
export function keepBackgroundWorkWith(waitUntil: (work: Promise<unknown>) => void): void {
  keepAlive = waitUntil;
}

/** Keeps `work` alive past the answer of the request it was started in (none outside one: it just runs). */
function outliveRequest(work: Promise<unknown>): void {
  try {
    keepAlive?.(work);
  } catch {
    // not inside a request
  }
}

/** This isolate's key cache for the deployment's chain and contract; undefined when either is not configured (reads then fail as before). */
export function keyCacheOf(config: EdgeConfig): KeyCache | undefined {
  if (!config.rpcUrl || !config.contractAddress) return undefined;
  const id = cacheId(config);
  let cache = caches.get(id);
  if (!cache) {
    cache = new KeyCache({
      source: chainKeySource(config),
      pollMs: config.keyPollMs,
      maxRange: config.events.windowBlocks,
      background: outliveRequest,
      log: edgeLog,
      secrets: [config.rpcUrl],
    });
    caches.set(id, cache);
  }
  return cache;
}

/** What every key cache of this isolate says of itself (tests; health). */
export function keyCacheStatus(): KeyCacheStatus[] {
  return [...caches.values()].map((c) => c.status());
}

/**
 * The managed writes that change what `billingOf` answers for a key of the caller's account (the
 * key removed, its spend cap or expiry set, the master key retired by the conversion).
 */
const KEY_WRITES: ReadonlySet<string> = new Set([
  "remove_usage_api_key",
  "update_usage_api_key",
  "convert_to_chain_secured_account",
]);

const HASH32 = /^0x[0-9a-fA-F]{64}$/;

/**
 * After the edge's own write `op` succeeded (the enclave sent it and has its receipt): drops the
 * caller's account from this isolate's key cache at once, so a key the caller just removed or
 * capped stops here on its next request rather than after the next poll. Other isolates hear of it
 * from the write's event. Found through the entries of the caller's key and of the usage key it
 * names (both the account's); nothing is read.
 */
export function forgetAfterOwnWrite(config: EdgeConfig, op: string, input: unknown): void {
  if (!KEY_WRITES.has(op) || typeof input !== "object" || input === null) return;
  const cache = caches.get(cacheId(config));
  if (!cache) return;
  const { api_key, usage_api_key } = input as { api_key?: unknown; usage_api_key?: unknown };
  const hashes: bigint[] = [];
  if (typeof api_key === "string") hashes.push(apiKeyHash(api_key));
  if (typeof usage_api_key === "string")
    hashes.push(HASH32.test(usage_api_key) ? BigInt(usage_api_key) : apiKeyHash(usage_api_key));
  cache.forgetAccountsOf(hashes);
}
