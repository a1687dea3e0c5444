// Admission (issue 16's soak): an isolate serves at most `config.maxInFlight` requests at once and
// answers the next 503 edge_busy with a short Retry-After, before it reads anything for it.
//
// An isolate runs its requests on one thread, each a chain of steps (the chain's read, the Ledger's
// hold, the enclave, the settle) interleaved with every other's, so N requests held at once each take
// about N times the CPU of one. After an outage, the clients it turned away come back together, and
// an edge that takes them all makes every one of them — the first run after an enclave restart too —
// wait seconds, while the holds of those that time out and retry are work done for nothing. Refused
// at the door, a request costs the edge almost nothing and its client comes back a moment later
// (the SDK retries after Retry-After plus up to half of it).
//
// Counted per isolate (a module's state), like the isolate's other memories: Cloudflare spreads a
// deployment's requests over many isolates, each with its own count; `npm start` and the soak run one.
// Mounted after the rate limits (every request counts against its key and IP, refused or not) and
// after the routes that must never be refused for load — health, the public facts and Stripe's
// webhook, whose events credit accounts (app.ts) — and before every other route's work.
import type { MiddlewareHandler } from "hono";
import { SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../router.ts";

/**
 * Seconds a refused client is told to wait. Long enough that a client's few retries span the
 * seconds a backlog takes to drain (the soak: a 10 s chain outage at 70 % load is over 10 s of
 * excess; with 1 s, a few percent of calls spent the SDK's three retries inside it), short enough
 * that the edge is not left idle.
 */
export const EDGE_BUSY_RETRY_AFTER_SECONDS = 2;

let inFlight = 0;

/** How many requests this isolate holds through admission now (for tests and logs). */
export function admittedNow(): number {
  return inFlight;
}

export function admission(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const limit = c.get("config").maxInFlight;
    if (limit > 0 && inFlight >= limit) {
      throw new SigilError("edge_busy", `this edge is serving as many requests as it can (${limit}); retry after ${EDGE_BUSY_RETRY_AFTER_SECONDS} s`, {
        retryAfterSeconds: EDGE_BUSY_RETRY_AFTER_SECONDS,
      });
    }
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}
