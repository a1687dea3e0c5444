// Token buckets: `capacity` at once, refilled at `perSecond`. One bucket guards one shared resource
// (every caller of an enclave's quote device); `TokenBuckets` keeps one per caller (a client's
// address, a channel peer) so that one caller spending its budget leaves the others theirs.
// No Node-only APIs: the channel's enclave end (shared/channel/) uses it too.

export type BucketRate = { capacity: number; perSecond: number };

/** take() answers the wait in ms until a token is there (0: one was taken). */
export class TokenBucket {
  readonly #capacity: number;
  readonly #perSecond: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(capacity: number, perSecond: number, now: () => number = Date.now) {
    this.#capacity = capacity;
    this.#perSecond = perSecond;
    this.#now = now;
    this.#tokens = capacity;
    this.#at = now();
  }

  take(): number {
    this.#refill();
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return ((1 - this.#tokens) / this.#perSecond) * 1000;
  }

  /** Whether the bucket has refilled completely: forgetting it then loses nothing. */
  full(): boolean {
    this.#refill();
    return this.#tokens >= this.#capacity;
  }

  #refill(): void {
    const t = this.#now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + ((t - this.#at) / 1000) * this.#perSecond);
    this.#at = t;
  }
}

/**
 * One bucket per key, at most `maxKeys` of them: when a new key would exceed that, buckets that
 * have refilled are forgotten first (they hold nothing), then the least recently used.
 */
export class TokenBuckets {
  readonly #rate: BucketRate;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, TokenBucket>();

  constructor(rate: BucketRate, options: { maxKeys?: number; now?: () => number } = {}) {
    this.#rate = rate;
    this.#maxKeys = options.maxKeys ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Takes a token from `key`'s bucket: the wait in ms, 0 when one was taken. */
  take(key: string): number {
    let bucket = this.#buckets.get(key);
    if (bucket) {
      // Most recently used last, so the first in the map is the one to forget.
      this.#buckets.delete(key);
    } else {
      if (this.#buckets.size >= this.#maxKeys) this.#makeRoom();
      bucket = new TokenBucket(this.#rate.capacity, this.#rate.perSecond, this.#now);
    }
    this.#buckets.set(key, bucket);
    return bucket.take();
  }

  /** Buckets held now. */
  get size(): number {
    return this.#buckets.size;
  }

  #makeRoom(): void {
    for (const [key, bucket] of this.#buckets) if (bucket.full()) this.#buckets.delete(key);
    if (this.#buckets.size >= this.#maxKeys) this.#buckets.delete(this.#buckets.keys().next().value as string);
  }
}
