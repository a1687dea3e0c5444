// The rate limiter (api.md, Rate limits): one Durable Object per bucket (an API key's hash or a
// client IP, per limit), so every edge location counts against the same window. A fixed window
// per bucket; the counts live in the object's memory — losing them on eviction only forgives.
import { DurableObject } from "cloudflare:workers";

export type TakeResult = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

export class RateLimiter extends DurableObject {
  #windowStart = 0;
  #count = 0;

  /** Counts one request against `limit` per `windowSeconds`; says whether it may go on. */
  take(limit: number, windowSeconds: number): TakeResult {
    const now = Date.now();
    const windowMs = windowSeconds * 1000;
    if (now - this.#windowStart >= windowMs) {
      this.#windowStart = now - (now % windowMs);
      this.#count = 0;
    }
    const resetSeconds = Math.max(1, Math.ceil((this.#windowStart + windowMs - now) / 1000));
    if (this.#count >= limit) return { allowed: false, limit, remaining: 0, resetSeconds };
    this.#count++;
    return { allowed: true, limit, remaining: limit - this.#count, resetSeconds };
  }
}
