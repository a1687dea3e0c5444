// Per-key and per-IP rate limits (api.md, Rate limits), counted by the RateLimiter Durable Object.
// A request with a well-formed API key (parsed once per request, see auth) counts against its key; every request also counts against
// its client IP (new_account and the signature endpoints only by IP, with a tighter limit). The
// tightest bucket's state goes out as RateLimit-Limit/Remaining/Reset; over a limit → 429
// rate_limited with Retry-After.
import type { MiddlewareHandler } from "hono";
import { SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../app.ts";
import type { TakeResult } from "../../ratelimit/limiter.ts";
import { presentedKeyHash } from "../auth/index.ts";

const WINDOW_SECONDS = 60;
/** Endpoints anyone may call without a key: limited by IP only, more tightly. */
const OPEN_WRITES = new Set(["/core/v1/new_account", "/core/v1/create_wallet_with_signature", "/core/v1/add_usage_api_key_with_signature"]);

export function rateLimit(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const namespace = c.env.RATE_LIMITER;
    const limits = c.get("config").rateLimits;
    if (!namespace || c.req.method === "OPTIONS") return next();
    const ip = c.req.header("cf-connecting-ip") ?? "unknown";
    const path = new URL(c.req.url).pathname;
    const buckets: Array<{ name: string; limit: number }> = [];
    if (OPEN_WRITES.has(path)) {
      buckets.push({ name: `open-ip:${ip}`, limit: limits.openPerIp });
    } else {
      buckets.push({ name: `ip:${ip}`, limit: limits.perIp });
      const keyHash = presentedKeyHash(c);
      if (keyHash !== undefined) buckets.push({ name: `key:${keyHash.toString(16)}`, limit: limits.perKey });
    }
    let tightest: TakeResult | undefined;
    for (const bucket of buckets) {
      const stub = namespace.get(namespace.idFromName(bucket.name));
      const r = (await stub.take(bucket.limit, WINDOW_SECONDS)) as TakeResult;
      if (!tightest || !r.allowed || r.remaining < tightest.remaining) tightest = r;
      if (!r.allowed) break;
    }
    if (tightest) {
      c.header("RateLimit-Limit", String(tightest.limit));
      c.header("RateLimit-Remaining", String(tightest.remaining));
      c.header("RateLimit-Reset", String(tightest.resetSeconds));
      if (!tightest.allowed) {
        throw new SigilError("rate_limited", "too many requests; slow down and retry after the reset", { retryAfterSeconds: tightest.resetSeconds });
      }
    }
    await next();
  };
}
