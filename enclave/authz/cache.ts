// The permission cache of one enclave instance (docs/design/keys-and-authz.md): key resolutions,
// `authorizeExecution` answers and wallet derivations for the execute path only. Entries are
// grouped by master hash and by key hash, so the chain listener and the enclave's own writes drop
// what an event may have changed (shared/accountEvents.ts, eventScope): a key's entries for an event
// of that usage key, an account's denials for an event by which it only gained, all of an account's
// entries for any other. Denials live at most 30 s, grants at most 5 minutes and never past a usage
// key's expiration; a grant older than REFRESH_AFTER_MS is re-read in the background while it is
// served, so a key in use is never much older than that and outlives a chain outage of minutes.
// Concurrent misses for one entry share one RPC call; failures are never cached.
import type { Address, Hex } from "viem";
import type { AccountsNamed } from "../../shared/accountEvents.ts";
import { authorizeExecution, resolveKey, type ChainContext, type KeyResolution } from "../chain/client.ts";

export type CacheTtls = { grantMs: number; denyMs: number };
export const defaultTtls: CacheTtls = { grantMs: 5 * 60_000, denyMs: 30_000 };

/** The age after which a grant that is used is re-read in the background (served meanwhile). */
export const REFRESH_AFTER_MS = 60_000;
/** While its re-reads fail (the chain is down), a grant is tried again at most this often. */
const REFRESH_RETRY_MS = 5_000;

type Entry = {
  value: unknown;
  expiresAt: number;
  master: bigint;
  keyHash: bigint;
  granted: boolean;
  readAt: number;
  refreshTriedAt: number;
};
type Loaded<T> = { value: T; master: bigint; granted: boolean; expiresAt: bigint };

/** What the chain answered, plus where it came from (for logs and tests). */
export type Cached<T> = { value: T; cached: boolean };

/** `guardrail`: the hash of the wallet's guardrail (docs/design/guardrails.md), null when it has none. */
export type WalletGrant = { allowed: boolean; derivation: bigint; guardrail: Hex | null };

export type PermissionSource = {
  resolveKey(keyHash: bigint): Promise<KeyResolution>;
  authorizeExecution(
    keyHash: bigint,
    cidHash: bigint,
    wallets: readonly Address[],
  ): Promise<{
    canExecute: boolean;
    walletAllowed: readonly boolean[];
    derivations: readonly bigint[];
    guardrails?: readonly Hex[];
  }>;
};

export function chainPermissionSource(chain: ChainContext): PermissionSource {
  return {
    resolveKey: (keyHash) => resolveKey(chain, keyHash),
    authorizeExecution: (keyHash, cidHash, wallets) => authorizeExecution(chain, keyHash, cidHash, wallets),
  };
}

export class PermissionCache {
  readonly #source: PermissionSource;
  readonly #ttl: CacheTtls;
  readonly #now: () => number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();
  readonly #byMaster = new Map<bigint, Set<string>>();
  readonly #byKey = new Map<bigint, Set<string>>();
  readonly #inflight = new Map<string, Promise<unknown>>();
  readonly #refreshAfterMs: number;
  /** Bumped by every invalidation: an answer fetched before it must not be stored after it. */
  #generation = 0;
  hits = 0;
  misses = 0;
  /** Background re-reads of grants older than REFRESH_AFTER_MS. */
  refreshes = 0;

  constructor(
    source: PermissionSource,
    options: { ttl?: CacheTtls; now?: () => number; maxEntries?: number; refreshAfterMs?: number } = {},
  ) {
    this.#source = source;
    this.#ttl = options.ttl ?? defaultTtls;
    this.#now = options.now ?? Date.now;
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#refreshAfterMs = options.refreshAfterMs ?? REFRESH_AFTER_MS;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** What a key hash is (unknown keys resolve to master 0 and are cached as denials). */
  resolve(keyHash: bigint): Promise<Cached<KeyResolution>> {
    return this.#get(`k:${keyHash}`, keyHash, async () => {
      const r = await this.#source.resolveKey(keyHash);
      const granted = r.live;
      return { value: r, master: r.master, granted, expiresAt: r.expiresAt };
    });
  }

  /** Whether `keyHash` may run the code `cidHash` at all. */
  async canExecute(keyHash: bigint, cidHash: bigint): Promise<Cached<boolean>> {
    const key = await this.resolve(keyHash);
    return this.#get(`x:${keyHash}:${cidHash}`, keyHash, async () => {
      const r = await this.#source.authorizeExecution(keyHash, cidHash, []);
      return { value: r.canExecute, master: key.value.master, granted: r.canExecute, expiresAt: key.value.expiresAt };
    });
  }

  /** Whether this run (`keyHash`, `cidHash`) may use `wallet`, and the wallet's derivation. */
  async wallet(keyHash: bigint, cidHash: bigint, wallet: Address): Promise<Cached<WalletGrant>> {
    const key = await this.resolve(keyHash);
    return this.#get(`w:${keyHash}:${cidHash}:${wallet.toLowerCase()}`, keyHash, async () => {
      const r = await this.#source.authorizeExecution(keyHash, cidHash, [wallet]);
      const allowed = r.canExecute && r.walletAllowed[0] === true;
      const guardrail = allowed ? r.guardrails?.[0] : undefined;
      const grant: WalletGrant = {
        allowed,
        derivation: allowed ? (r.derivations[0] ?? 0n) : 0n,
        guardrail: guardrail && BigInt(guardrail) !== 0n ? guardrail : null,
      };
      return { value: grant, master: key.value.master, granted: allowed, expiresAt: key.value.expiresAt };
    });
  }

  /**
   * The grant of `wallet` for this run if the cache holds it now, live, with the key's resolution;
   * never a chain call. For keys offered to a run before its script asks (operations/sigilAction.ts):
   * an entry dropped by a revocation, or expired, is no offer, and the script's request then goes
   * the whole way (`wallet`).
   */
  cachedWallet(keyHash: bigint, cidHash: bigint, wallet: Address): WalletGrant | undefined {
    const now = this.#now();
    const key = this.#entries.get(`k:${keyHash}`);
    if (!key || key.expiresAt <= now) return undefined;
    const hit = this.#entries.get(`w:${keyHash}:${cidHash}:${wallet.toLowerCase()}`);
    if (!hit || hit.expiresAt <= now) return undefined;
    return hit.value as WalletGrant;
  }

  /** Drops what the events of a range may have changed (shared/accountEvents.ts, eventScope). */
  applyEvents(named: AccountsNamed): void {
    if (named.everything) {
      this.clear();
      return;
    }
    for (const master of named.grantsChanged) this.invalidateMaster(master);
    for (const keyHash of named.keys) this.invalidateKey(keyHash);
    for (const master of named.widened) if (!named.grantsChanged.has(master)) this.invalidateDenials(master);
  }

  /** Drops every entry of the account (an event that may narrow its grants named it, or the enclave just wrote to it). */
  invalidateMaster(master: bigint): void {
    this.#generation++;
    for (const k of [...(this.#byMaster.get(master) ?? [])]) this.#delete(k);
  }

  /**
   * Drops what is known of one key hash: its resolution and every answer for it (an event of that
   * usage key: set, its metadata or guardrail changed, removed; or the enclave just set it, and its
   * old denial must go).
   */
  invalidateKey(keyHash: bigint): void {
    this.#generation++;
    for (const k of [...(this.#byKey.get(keyHash) ?? [])]) this.#delete(k);
  }

  /**
   * Drops the account's denials and keeps its grants: it only gained (a wallet, a group, an action,
   * an action or a wallet in a group), which may turn a denial into a grant, never a grant into a
   * denial. Answers in flight are not stored (they may predate the change).
   */
  invalidateDenials(master: bigint): void {
    this.#generation++;
    for (const k of [...(this.#byMaster.get(master) ?? [])])
      if (this.#entries.get(k)?.granted === false) this.#delete(k);
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#byMaster.clear();
    this.#byKey.clear();
  }

  async #get<T>(key: string, keyHash: bigint, load: () => Promise<Loaded<T>>): Promise<Cached<T>> {
    const now = this.#now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) {
      this.hits++;
      // A grant in use is re-read in the background once it is a minute old, and served meanwhile.
      if (
        hit.granted &&
        now - hit.readAt >= this.#refreshAfterMs &&
        now - hit.refreshTriedAt >= REFRESH_RETRY_MS &&
        !this.#inflight.has(`${this.#generation}/${key}`)
      ) {
        hit.refreshTriedAt = now;
        this.refreshes++;
        this.#load(key, keyHash, load).catch(() => undefined);
      }
      return { value: hit.value as T, cached: true };
    }
    // Only calls started since the last invalidation are joined: an older one may predate the change.
    const pending = this.#inflight.get(`${this.#generation}/${key}`) as Promise<T> | undefined;
    if (pending) {
      this.hits++;
      return { value: await pending, cached: true };
    }
    this.misses++;
    return { value: await this.#load(key, keyHash, load), cached: false };
  }

  /** One call to the source for `key`, shared by whoever asks meanwhile; stored unless an invalidation came first. */
  async #load<T>(key: string, keyHash: bigint, load: () => Promise<Loaded<T>>): Promise<T> {
    const generation = this.#generation;
    const flight = `${generation}/${key}`;
    const readAt = this.#now();
    const promise = load().then((r) => {
      // An invalidation while the call was in flight means the answer may predate the change.
      if (generation === this.#generation) this.#store(key, keyHash, r, readAt);
      return r.value;
    });
    this.#inflight.set(flight, promise);
    try {
      return await promise;
    } finally {
      this.#inflight.delete(flight);
    }
  }

  #store(key: string, keyHash: bigint, r: Loaded<unknown>, readAt: number): void {
    const now = this.#now();
    let expiresAt = readAt + (r.granted ? this.#ttl.grantMs : this.#ttl.denyMs);
    if (r.granted && r.expiresAt !== 0n) expiresAt = Math.min(expiresAt, Number(r.expiresAt) * 1000);
    if (expiresAt <= now) return;
    this.#delete(key);
    if (this.#entries.size >= this.#maxEntries) this.#evictOldest();
    this.#entries.set(key, {
      value: r.value,
      expiresAt,
      master: r.master,
      keyHash,
      granted: r.granted,
      readAt,
      refreshTriedAt: readAt,
    });
    let byMaster = this.#byMaster.get(r.master);
    if (!byMaster) this.#byMaster.set(r.master, (byMaster = new Set()));
    byMaster.add(key);
    let byKey = this.#byKey.get(keyHash);
    if (!byKey) this.#byKey.set(keyHash, (byKey = new Set()));
    byKey.add(key);
  }

  /** Removes one entry and its places in the indexes. */
  #delete(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    const byMaster = this.#byMaster.get(e.master);
    byMaster?.delete(key);
    if (byMaster?.size === 0) this.#byMaster.delete(e.master);
    const byKey = this.#byKey.get(e.keyHash);
    byKey?.delete(key);
    if (byKey?.size === 0) this.#byKey.delete(e.keyHash);
  }

  #evictOldest(): void {
    // Map iteration is insertion order: drop the oldest tenth in one go.
    let n = Math.ceil(this.#maxEntries / 10);
    for (const k of this.#entries.keys()) {
      if (n-- <= 0) break;
      this.#delete(k);
    }
  }
}
