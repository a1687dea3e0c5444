// Per-key and per-IP rate limits (api.md, Rate limits), counted by the RateLimiter Durable Object
// through this isolate's leases (ratelimit/limiter.ts).
// A request with a well-formed API key (parsed once per request, see auth) counts against its key; every request also counts against
// its client IP (new_account and the signature endpoints only by IP, with a tighter limit). The
// tightest bucket's state goes out as RateLimit-Limit/Remaining/Reset; over a limit → 429
// rate_limited with Retry-After.
import type { MiddlewareHandler } from "hono";
import { SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../app.ts";
import { Leases } from "../../ratelimit/leases.ts";
import type { RateLimiter, TakeResult } from "../../ratelimit/limiter.ts";
import { presentedKeyHash } from "../auth/index.ts";

const WINDOW_SECONDS = 60;
/** Endpoints anyone may call without a key: limited by IP only, more tightly. */
const OPEN_WRITES = new Set(["/core/v1/new_account", "/core/v1/create_wallet_with_signature", "/core/v1/add_usage_api_key_with_signature"]);

/** The isolate's leases, per namespace (one in production; tests may bring their own). */
const leases = new WeakMap<DurableObjectNamespace<RateLimiter>, Leases>();

function leasesFor(namespace: DurableObjectNamespace<RateLimiter>): Leases {
  let l = leases.get(namespace);
  if (!l) {
    l = new Leases((bucket, limit, windowSeconds, want) => namespace.get(namespace.idFromName(bucket)).lease(limit, windowSeconds, want));
    leases.set(namespace, l);
  }
  return l;
}

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
    // The buckets are counted at once; a request refused by one still counts against the others,
    // which only errs on the strict side.
    const results = await Promise.all(buckets.map((b) => leasesFor(namespace).take(b.name, b.limit, WINDOW_SECONDS)));
    // Refused by any bucket → the one that frees up last; else the one with the least left.
    const refused = results.filter((r) => !r.allowed).sort((a, b) => b.resetSeconds - a.resetSeconds)[0];
    const tightest = refused ?? results.reduce<TakeResult | undefined>((least, r) => (!least || r.remaining < least.remaining ? r : least), undefined);
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
