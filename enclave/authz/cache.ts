// The permission cache of one enclave instance (docs/design/keys-and-authz.md): key resolutions,
// `authorizeExecution` answers and wallet derivations for the execute path only. Entries are
// grouped by master hash so the chain listener and the enclave's own writes can drop an account's
// entries at once. Denials live at most 30 s, grants at most 5 minutes and never past a usage key's
// expiration; concurrent misses for one entry share one RPC call; failures are never cached.
import type { Address, Hex } from "viem";
import { authorizeExecution, resolveKey, type ChainContext, type KeyResolution } from "../chain/client.ts";

export type CacheTtls = { grantMs: number; denyMs: number };
export const defaultTtls: CacheTtls = { grantMs: 5 * 60_000, denyMs: 30_000 };

type Entry = { value: unknown; expiresAt: number; master: bigint };

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
  readonly #inflight = new Map<string, Promise<unknown>>();
  /** Bumped by every invalidation: an answer fetched before it must not be stored after it. */
  #generation = 0;
  hits = 0;
  misses = 0;

  constructor(source: PermissionSource, options: { ttl?: CacheTtls; now?: () => number; maxEntries?: number } = {}) {
    this.#source = source;
    this.#ttl = options.ttl ?? defaultTtls;
    this.#now = options.now ?? Date.now;
    this.#maxEntries = options.maxEntries ?? 100_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** What a key hash is (unknown keys resolve to master 0 and are cached as denials). */
  resolve(keyHash: bigint): Promise<Cached<KeyResolution>> {
    return this.#get(`k:${keyHash}`, async () => {
      const r = await this.#source.resolveKey(keyHash);
      const granted = r.live;
      return { value: r, master: r.master, granted, expiresAt: r.expiresAt };
    });
  }

  /** Whether `keyHash` may run the code `cidHash` at all. */
  async canExecute(keyHash: bigint, cidHash: bigint): Promise<Cached<boolean>> {
    const key = await this.resolve(keyHash);
    return this.#get(`x:${keyHash}:${cidHash}`, async () => {
      const r = await this.#source.authorizeExecution(keyHash, cidHash, []);
      return { value: r.canExecute, master: key.value.master, granted: r.canExecute, expiresAt: key.value.expiresAt };
    });
  }

  /** Whether this run (`keyHash`, `cidHash`) may use `wallet`, and the wallet's derivation. */
  async wallet(keyHash: bigint, cidHash: bigint, wallet: Address): Promise<Cached<WalletGrant>> {
    const key = await this.resolve(keyHash);
    return this.#get(`w:${keyHash}:${cidHash}:${wallet.toLowerCase()}`, async () => {
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

  /** Drops every entry of the account (an event named it, or the enclave just wrote to it). */
  invalidateMaster(master: bigint): void {
    this.#generation++;
    const keys = this.#byMaster.get(master);
    if (!keys) return;
    for (const k of keys) this.#entries.delete(k);
    this.#byMaster.delete(master);
  }

  /** Drops what is known of one key hash (a usage key was just set: its old denial must go). */
  invalidateKey(keyHash: bigint): void {
    this.#generation++;
    const entry = this.#entries.get(`k:${keyHash}`);
    if (entry) this.invalidateMaster(entry.master);
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#byMaster.clear();
  }

  async #get<T>(
    key: string,
    load: () => Promise<{ value: T; master: bigint; granted: boolean; expiresAt: bigint }>,
  ): Promise<Cached<T>> {
    const now = this.#now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) {
      this.hits++;
      return { value: hit.value as T, cached: true };
    }
    const generation = this.#generation;
    // Only calls started since the last invalidation are joined: an older one may predate the change.
    const flight = `${generation}/${key}`;
    const pending = this.#inflight.get(flight) as Promise<T> | undefined;
    if (pending) {
      this.hits++;
      return { value: await pending, cached: true };
    }
    this.misses++;
    const promise = load().then((r) => {
      // An invalidation while the call was in flight means the answer may predate the change.
      if (generation === this.#generation) this.#store(key, r);
      return r.value;
    });
    this.#inflight.set(flight, promise);
    try {
      return { value: await promise, cached: false };
    } finally {
      this.#inflight.delete(flight);
    }
  }

  #store(key: string, r: { value: unknown; master: bigint; granted: boolean; expiresAt: bigint }): void {
    const now = this.#now();
    let expiresAt = now + (r.granted ? this.#ttl.grantMs : this.#ttl.denyMs);
    if (r.granted && r.expiresAt !== 0n) expiresAt = Math.min(expiresAt, Number(r.expiresAt) * 1000);
    if (expiresAt <= now) return;
    if (this.#entries.size >= this.#maxEntries) this.#evictOldest();
    const old = this.#entries.get(key);
    if (old && old.master !== r.master) this.#byMaster.get(old.master)?.delete(key);
    this.#entries.set(key, { value: r.value, expiresAt, master: r.master });
    let set = this.#byMaster.get(r.master);
    if (!set) this.#byMaster.set(r.master, (set = new Set()));
    set.add(key);
  }

  #evictOldest(): void {
    // Map iteration is insertion order: drop the oldest tenth in one go.
    let n = Math.ceil(this.#maxEntries / 10);
    for (const [k, e] of this.#entries) {
      if (n-- <= 0) break;
      this.#entries.delete(k);
      this.#byMaster.get(e.master)?.delete(k);
    }
  }
}
