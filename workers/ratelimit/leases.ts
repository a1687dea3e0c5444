// An isolate's leases on the RateLimiter Durable Objects (limiter.ts explains the scheme). Kept
// apart from the object so the app can be loaded outside workerd (the OpenAPI test, in Node).
import type { Lease, TakeResult } from "./limiter.ts";

/** Asks a bucket's Durable Object for a lease. */
export type LeaseRequest = (bucket: string, limit: number, windowSeconds: number, want: number) => Promise<Lease>;

/** An isolate's unspent lease on one bucket. */
type Held = { left: number; lastGrant: number; remaining: number; windowEndMs: number };

/** Buckets an isolate remembers at most; the least recently used is forgotten (its lease is lost). */
const MAX_HELD = 10_000;

/**
 * One isolate's leases. `ask` reaches the bucket's Durable Object; the rest is local. The result is
 * the bucket's state as this isolate knows it: what the object has left plus what it holds unspent.
 */
export class Leases {
  readonly #held = new Map<string, Held>();
  readonly #ask: LeaseRequest;

  constructor(ask: LeaseRequest) {
    this.#ask = ask;
  }

  async take(bucket: string, limit: number, windowSeconds: number): Promise<TakeResult> {
    const now = Date.now();
    let held = this.#held.get(bucket);
    if (held && held.windowEndMs <= now) held = undefined;
    if (!held || held.left === 0) {
      const cap = Math.max(1, Math.floor(limit / 20));
      const want = held ? Math.min(cap, held.lastGrant * 2) : 1;
      const lease = await this.#ask(bucket, limit, windowSeconds, want);
      // Another request of this isolate may have taken a lease meanwhile: pool the two.
      const current = this.#held.get(bucket);
      if (current && current !== held && current.windowEndMs === lease.windowEndMs) {
        current.left += lease.granted;
        current.remaining = Math.min(current.remaining, lease.remaining);
        held = current;
      } else {
        held = {
          left: lease.granted,
          lastGrant: Math.max(1, lease.granted),
          remaining: lease.remaining,
          windowEndMs: lease.windowEndMs,
        };
      }
    }
    this.#held.delete(bucket);
    this.#held.set(bucket, held);
    if (this.#held.size > MAX_HELD) this.#held.delete(this.#held.keys().next().value as string);
    const resetSeconds = Math.max(1, Math.ceil((held.windowEndMs - now) / 1000));
    if (held.left === 0) return { allowed: false, limit, remaining: 0, resetSeconds };
    held.left--;
    return { allowed: true, limit, remaining: held.remaining + held.left, resetSeconds };
  }
}
