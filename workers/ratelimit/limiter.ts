// The rate limiter (docs/design/api.md, Rate limits): one Durable Object per bucket (an API key's hash or a
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
