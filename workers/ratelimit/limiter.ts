// The rate limiter (api.md, Rate limits): one Durable Object per bucket (an API key's hash or a
// client IP, per limit) is the only authority on a bucket's fixed window, so every isolate and
// every edge location counts against the same window; the counts live in the object's memory —
// losing them on eviction only forgives.
//
// A round trip to the object on every request would cost every request its latency (about 0.4 ms
// locally, a network hop in production), so an isolate takes a lease: the object grants a few of
// the window's requests at once, the isolate spends them locally and asks again when they are
// gone. The object never grants more than the window holds, so the limit is never exceeded; a
// lease an isolate does not spend is lost at the window's end, which only errs on the strict side.
// Leases start at one request and double while a bucket stays busy in an isolate, up to a twentieth
// of the limit, so a bucket used from many isolates wastes little and small limits stay exact.
import { DurableObject } from "cloudflare:workers";

export type TakeResult = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/** What the object answers a lease request: `granted` requests of the window ending at `windowEndMs`. */
export type Lease = { granted: number; limit: number; remaining: number; windowEndMs: number };

export class RateLimiter extends DurableObject {
  #windowStart = 0;
  #count = 0;

  /** Grants up to `want` of this window's requests (none when the window is spent). */
  lease(limit: number, windowSeconds: number, want: number): Lease {
    const now = Date.now();
    const windowMs = windowSeconds * 1000;
    if (now - this.#windowStart >= windowMs) {
      this.#windowStart = now - (now % windowMs);
      this.#count = 0;
    }
    const granted = Math.max(0, Math.min(want, limit - this.#count));
    this.#count += granted;
    return { granted, limit, remaining: limit - this.#count, windowEndMs: this.#windowStart + windowMs };
  }
}

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
        held = { left: lease.granted, lastGrant: Math.max(1, lease.granted), remaining: lease.remaining, windowEndMs: lease.windowEndMs };
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
