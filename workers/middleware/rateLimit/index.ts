// Per-key and per-IP rate limits (docs/design/api.md, Rate limits), counted by the RateLimiter Durable Object
// through this isolate's leases (ratelimit/limiter.ts).
//
// Every request counts against its client IP and, with a well-formed API key (parsed once per
// request, see auth), against its key: `rateLimit()`, for the whole API. What a request is beyond
// that is its route's to say, never its path's text: a path can be spelled many ways that reach the
// same route (`new%5Faccount`, `%63ore/…`), so a route opts into a tighter class by declaring its
// middleware. `openWriteLimit()` is that class for the endpoints anyone may call without a key.
// The tightest bucket a request has taken goes out as RateLimit-Limit/Remaining/Reset; over a limit
// → 429 rate_limited with Retry-After.
import type { Context, MiddlewareHandler } from "hono";
import { SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../router.ts";
import { Leases } from "../../ratelimit/leases.ts";
import type { RateLimiter, TakeResult } from "../../ratelimit/limiter.ts";
import { presentedKeyHash } from "../auth/index.ts";

const MINUTE = 60;
const HOUR = 3600;

/**
 * The deployment's one bucket of open writes that spend the payers' gas: an hourly budget shared by
 * every client, so many addresses together (a botnet) cannot drain the payers either.
 */
export const GAS_BUDGET_BUCKET = "open-gas-budget";

type Bucket = { name: string; limit: number; windowSeconds: number };

/** The isolate's leases, per namespace (one in production; tests may bring their own). */
const leases = new WeakMap<DurableObjectNamespace<RateLimiter>, Leases>();

function leasesFor(namespace: DurableObjectNamespace<RateLimiter>): Leases {
  let l = leases.get(namespace);
  if (!l) {
    l = new Leases((bucket, limit, windowSeconds, want) =>
      namespace.get(namespace.idFromName(bucket)).lease(limit, windowSeconds, want),
    );
    leases.set(namespace, l);
  }
  return l;
}

/** What each request has taken so far, so its headers describe the tightest of all its buckets. */
const takenByRequest = new WeakMap<Request, TakeResult[]>();

/**
 * Counts the request against `buckets` at once (a request refused by one still counts against the
 * others, which only errs on the strict side), sets the RateLimit-* headers from the tightest bucket
 * it has taken, and refuses it if any of these is spent.
 */
async function take(
  c: Context<EdgeEnv>,
  namespace: DurableObjectNamespace<RateLimiter>,
  buckets: Bucket[],
  refusal: string,
): Promise<void> {
  const results = await Promise.all(buckets.map((b) => leasesFor(namespace).take(b.name, b.limit, b.windowSeconds)));
  const taken = [...(takenByRequest.get(c.req.raw) ?? []), ...results];
  takenByRequest.set(c.req.raw, taken);
  // Refused by any bucket → the one that frees up last; else the one with the least left.
  const refused = results.filter((r) => !r.allowed).sort((a, b) => b.resetSeconds - a.resetSeconds)[0];
  const tightest =
    refused ??
    taken.reduce<TakeResult | undefined>(
      (least, r) => (!least || r.remaining < least.remaining ? r : least),
      undefined,
    );
  if (!tightest) return;
  c.header("RateLimit-Limit", String(tightest.limit));
  c.header("RateLimit-Remaining", String(tightest.remaining));
  c.header("RateLimit-Reset", String(tightest.resetSeconds));
  if (refused) throw new SigilError("rate_limited", refusal, { retryAfterSeconds: refused.resetSeconds });
}

const TOO_MANY = "too many requests; slow down and retry after the reset";

/** Every request: its client IP and, when it carries a well-formed key, that key (per minute). */
export function rateLimit(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const namespace = c.env.RATE_LIMITER;
    if (!namespace || c.req.method === "OPTIONS") return next();
    const limits = c.get("config").rateLimits;
    const buckets: Bucket[] = [{ name: `ip:${clientAddress(c)}`, limit: limits.perIp, windowSeconds: MINUTE }];
    const keyHash = presentedKeyHash(c);
    if (keyHash !== undefined)
      buckets.push({ name: `key:${keyHash.toString(16)}`, limit: limits.perKey, windowSeconds: MINUTE });
    await take(c, namespace, buckets, TOO_MANY);
    await next();
  };
}

/**
 * Counts the request against the per-key bucket of `keyHash`: a delegated key's root, once an enclave
 * has vouched for the key (routes/openapi.ts requireKey) — every key descending from one usage key
 * shares its limit, however many an agent mints.
 */
export async function takeKeyLimit(c: Context<EdgeEnv>, keyHash: bigint): Promise<void> {
  const namespace = c.env.RATE_LIMITER;
  if (!namespace) return;
  const limits = c.get("config").rateLimits;
  await take(
    c,
    namespace,
    [{ name: `key:${keyHash.toString(16)}`, limit: limits.perKey, windowSeconds: MINUTE }],
    TOO_MANY,
  );
}

/** Per request: a budget its route's middleware left to be taken once the request is known to act. */
const deferredByRequest = new WeakMap<Request, () => Promise<void>>();

/**
 * Takes the budget the route's middleware deferred for this request, if any (once). Called by
 * the idempotent() stage (idempotency/) when a request under an Idempotency-Key turns out not to be a replay.
 */
export async function takeDeferredLimits(c: Context<EdgeEnv>): Promise<void> {
  const deferred = deferredByRequest.get(c.req.raw);
  if (!deferred) return;
  deferredByRequest.delete(c.req.raw);
  await deferred();
}

/**
 * The class of a route anyone may call without a key (new_account, the signature endpoints): its
 * client IP's tighter per-minute bucket and, when the call spends the payers' gas, the deployment's
 * hourly budget. The budget is taken only once the IP's bucket has let the request through, so a
 * client refused by its own limit never spends what every client shares. A request with an
 * Idempotency-Key may be a replay, which sends no transaction: its budget is left to the idempotent() stage,
 * which takes it only when the request acts (a route that spends gas declares that stage).
 * The IP's bucket is taken either way: it guards the edge itself, which a replay also works.
 */
export function openWriteLimit(options: { spendsGas: boolean }): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const namespace = c.env.RATE_LIMITER;
    if (!namespace) return next();
    const limits = c.get("config").rateLimits;
    await take(
      c,
      namespace,
      [{ name: `open-ip:${clientAddress(c)}`, limit: limits.openPerIp, windowSeconds: MINUTE }],
      TOO_MANY,
    );
    if (options.spendsGas) {
      const budget = () =>
        take(
          c,
          namespace,
          [{ name: GAS_BUDGET_BUCKET, limit: limits.openWritesPerHour, windowSeconds: HOUR }],
          "this service's hourly allowance for this operation is spent; retry after the reset",
        );
      if (c.req.header("idempotency-key") === undefined) await budget();
      else deferredByRequest.set(c.req.raw, budget);
    }
    await next();
  };
}

/** The request's client address: CF-Connecting-IP, which Cloudflare sets and a client cannot ("unknown" where nothing set it). Admission counts clients by it too. */
export function clientAddress(c: Context<EdgeEnv>): string {
  return c.req.header("cf-connecting-ip") ?? "unknown";
}
