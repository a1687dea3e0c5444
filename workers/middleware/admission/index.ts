// Admission (issue 16's soak, issue 26): an isolate serves at most `config.maxInFlight` requests at
// once, one client at most `config.maxInFlightPerClient` of them, and answers the next 503 edge_busy
// with a short Retry-After before any work for it.
//
// An isolate runs its requests on one thread, each a chain of steps (the chain's read, the Ledger's
// hold, the enclave, the settle) interleaved with every other's, so N requests held at once each take
// about N times the CPU of one. After an outage, the clients it turned away come back together, and
// an edge that takes them all makes every one of them — the first run after an enclave restart too —
// wait seconds, while the holds of those that time out and retry are work done for nothing. Refused
// at the door, a request costs the edge almost nothing and its client comes back a moment later
// (the SDK retries after Retry-After plus up to half of it).
//
// A place is taken only once the request's body has arrived (middleware/bodyLimit: whole, within its
// route's limit and the body deadline, else 413 or 408), so a client that sends bodies slowly, or
// never ends them, holds sockets but no place: 130 such requests held all 128 before (issue 26).
// And one client — its address (CF-Connecting-IP, as the rate limits name it) and, apart from it,
// the hash of the API key it sends — holds at most its share of the places, so it cannot fill the
// isolate alone by any number of requests, fast or slow; random keys from one address are still
// that address's. Its next request is refused as one the isolate has no room for (edge_busy, which
// the SDK retries on a budget of its own): nothing was done for it, and it may be served a moment
// later. A request that would be refused now is refused before its body is read, as before.
//
// Counted per isolate (a module's state), like the isolate's other memories: Cloudflare spreads a
// deployment's requests over many isolates, each with its own count; `npm start` and the soak run one.
// Mounted after the rate limits (every request counts against its key and IP, refused or not) and
// after the routes that must never be refused for load — health, the public facts and Stripe's
// webhook, whose events credit accounts (app.ts) — and before every other route's work.
import type { Context, MiddlewareHandler } from "hono";
import { SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../router.ts";
import { presentedKeyHash } from "../auth/index.ts";
import { readBody, routeBodyLimit } from "../bodyLimit/index.ts";
import { clientAddress } from "../rateLimit/index.ts";

/**
 * Seconds a refused client is told to wait. Long enough that a client's few retries span the
 * seconds a backlog takes to drain (the soak: a 10 s chain outage at 70 % load is over 10 s of
 * excess; with 1 s, a few percent of calls spent the SDK's three retries inside it), short enough
 * that the edge is not left idle.
 */
export const EDGE_BUSY_RETRY_AFTER_SECONDS = 2;

/** Why a request has no place: the isolate is full, or one of its clients holds its whole share. */
export type Refusal = "full" | "client_share";

/**
 * The places of one isolate: how many are held, and by whom. A request is held against every
 * client name it has (its address, and its key's hash when it sends one); it has a place when the
 * isolate has one free and none of its clients holds `perClient` already. A limit of 0 is no limit.
 */
export class Places {
  #held = 0;
  /** Places held per client name; a name whose count falls to 0 is dropped, so the map holds only clients in flight. */
  readonly #byClient = new Map<string, number>();

  /** How many places are held now. */
  get held(): number {
    return this.#held;
  }

  /** How many places `client` holds now. */
  heldBy(client: string): number {
    return this.#byClient.get(client) ?? 0;
  }

  /** How many clients hold a place now. */
  get clients(): number {
    return this.#byClient.size;
  }

  /** Why a request of `clients` would be refused now, if it would be. */
  refusal(clients: readonly string[], limit: number, perClient: number): Refusal | undefined {
    if (limit > 0 && this.#held >= limit) return "full";
    if (perClient > 0 && clients.some((client) => this.heldBy(client) >= perClient)) return "client_share";
    return undefined;
  }

  /** Takes a place for a request of `clients`, or says why it has none; `release` gives the place back (once). */
  take(clients: readonly string[], limit: number, perClient: number): { release: () => void } | { refused: Refusal } {
    const refused = this.refusal(clients, limit, perClient);
    if (refused) return { refused };
    this.#held++;
    for (const client of clients) this.#byClient.set(client, this.heldBy(client) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#held--;
        for (const client of clients) {
          const left = this.heldBy(client) - 1;
          if (left > 0) this.#byClient.set(client, left);
          else this.#byClient.delete(client);
        }
      },
    };
  }
}

const places = new Places();

/** How many requests this isolate holds through admission now (for tests and logs). */
export function admittedNow(): number {
  return places.held;
}

/**
 * The names a request is counted under: its client address and, when it carries a well-formed API
 * key, that key's keccak hash (hashed as the rate limits and the chain hash it; the key itself is
 * never kept).
 */
export function clientsOf(c: Context<EdgeEnv>): string[] {
  const clients = [`ip:${clientAddress(c)}`];
  const keyHash = presentedKeyHash(c);
  if (keyHash !== undefined) clients.push(`key:${keyHash.toString(16)}`);
  return clients;
}

function refusedFor(refusal: Refusal, limit: number, perClient: number): SigilError {
  const retry = `retry after ${EDGE_BUSY_RETRY_AFTER_SECONDS} s`;
  const message =
    refusal === "full"
      ? `this edge is serving as many requests as it can (${limit}); ${retry}`
      : `this edge is already serving as many of this client's requests as one client may have at once (${perClient}); ${retry}`;
  return new SigilError("edge_busy", message, { retryAfterSeconds: EDGE_BUSY_RETRY_AFTER_SECONDS });
}

/**
 * Requests the edge sends through its own app for a request already admitted (the MCP route's tool
 * calls, routes/mcp.ts): they run within their parent's place, never waiting on places their parent
 * holds. Marked by object identity, so no client can claim it with a header.
 */
const admittedWithin = new WeakSet<Request>();

/** Marks `request`, made by the edge for a request it has admitted, as admitted with it. */
export function admitWithin(request: Request): Request {
  admittedWithin.add(request);
  return request;
}

export function admission(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    if (admittedWithin.has(c.req.raw)) {
      await next();
      return;
    }
    const { maxInFlight: limit, maxInFlightPerClient: perClient } = c.get("config");
    const clients = clientsOf(c);
    // Refused now, refused before its body is read: the door costs nothing.
    const early = places.refusal(clients, limit, perClient);
    if (early) throw refusedFor(early, limit, perClient);
    // The body, whole and within its route's limit and the deadline, before the place.
    await readBody(c, routeBodyLimit(c));
    const place = places.take(clients, limit, perClient);
    if ("refused" in place) throw refusedFor(place.refused, limit, perClient);
    try {
      await next();
    } finally {
      place.release();
    }
  };
}
