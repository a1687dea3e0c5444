// The caller's API key (docs/design/keys-and-authz.md, API keys): `X-Api-Key: <key>` or `Authorization: Bearer
// <key>` (scheme case-insensitive). Missing → 401 missing_api_key; both present and different →
// 400 conflicting_credentials; not a 44-character base64 key → 401 invalid_api_key, before any
// hashing, so a public hash can never be used as a key. A delegated key (`sgd_…`, docs/design/delegation.md)
// is read here for its root; whether it may act is an enclave's to say (routes/openapi.ts, requireKey).
// The key is never logged or stored.
import type { Context } from "hono";
import { isApiKeyFormat } from "../../../shared/apiKey.ts";
import { isExposed, SigilError } from "../../../shared/errors.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";
import { decodeDelegatedKey, DELEGATED_KEY_PREFIX, type DelegationToken } from "../../../shared/delegation.ts";

/**
 * The caller's key: the key as sent (`apiKey`), the hash of the key whose account and standing it acts
 * with (`keyHash`), and the hash of the key itself (`scopeHash`: what keeps two keys' idempotent answers
 * apart). For an API key both hashes are its own. For a delegated key (docs/design/delegation.md),
 * `keyHash` is its root usage key's and `delegated` is set: it acts only once an enclave has said it
 * made the key (routes/openapi.ts, requireKey), so a forged key never touches the root's account.
 */
export type CallerKey = { apiKey: string; keyHash: bigint; scopeHash: bigint; delegated?: DelegationToken };

type Parsed = { ok: true; key: CallerKey } | { ok: false; error: SigilError };

/** Per request: the headers are parsed and the key hashed once, however many steps ask. */
const parsedByRequest = new WeakMap<Request, Parsed>();

function parse(c: Context): Parsed {
  const known = parsedByRequest.get(c.req.raw);
  if (known) return known;
  let parsed: Parsed;
  try {
    parsed = { ok: true, key: readKey(c) };
  } catch (err) {
    if (!isExposed(err)) throw err;
    parsed = { ok: false, error: err };
  }
  parsedByRequest.set(c.req.raw, parsed);
  return parsed;
}

/** Requests whose route takes a delegated key with another method than GET (routes/openapi.ts requireRunKey). */
const delegatedTaken = new WeakSet<Request>();

/** Marks the request's route as one a delegated key may call whatever its method (a run, MCP, a revocation). */
export function takesDelegatedKey(c: Context): void {
  delegatedTaken.add(c.req.raw);
}

/**
 * The caller's key, or the 400/401 the headers deserve. A delegated key reads (GET) and acts only on a
 * route that takes one (`takesDelegatedKey`); anything else it asks is 403. That it was vouched for
 * by an enclave, app-wide middleware has made sure before any route (delegations/verify.ts).
 */
export function callerKey(c: Context): CallerKey {
  const parsed = parse(c);
  if (!parsed.ok) throw parsed.error;
  if (parsed.key.delegated && c.req.method !== "GET" && !delegatedTaken.has(c.req.raw))
    throw new SigilError("permission_denied", "a delegated key runs actions and reads; this needs an API key", {
      details: { scope: "delegated_key" },
    });
  return parsed.key;
}

/** The key the request carries, if it carries a well-formed one (never throws; no route's rules applied). */
export function presentedKey(c: Context): CallerKey | undefined {
  const parsed = parse(c);
  return parsed.ok ? parsed.key : undefined;
}

/**
 * The hash of a well-formed API key the request carries, if any (for rate limiting; never throws). A
 * delegated key gives none here: its root's limits are taken once an enclave has vouched for it.
 */
export function presentedKeyHash(c: Context): bigint | undefined {
  const parsed = parse(c);
  return parsed.ok && !parsed.key.delegated ? parsed.key.keyHash : undefined;
}

function readKey(c: Context): CallerKey {
  const header = c.req.header("x-api-key")?.trim();
  const authorization = c.req.header("authorization")?.trim();
  let bearer: string | undefined;
  if (authorization !== undefined) {
    const m = /^bearer\s+(.+)$/i.exec(authorization);
    if (!m) throw new SigilError("invalid_api_key", "the Authorization header must be `Bearer <api key>`");
    bearer = (m[1] as string).trim();
  }
  if (header !== undefined && bearer !== undefined && header !== bearer) {
    throw new SigilError("conflicting_credentials", "X-Api-Key and Authorization name different keys; send one");
  }
  const apiKey = header ?? bearer;
  if (apiKey === undefined || apiKey === "")
    throw new SigilError("missing_api_key", "send your API key in X-Api-Key or Authorization: Bearer");
  if (apiKey.startsWith(DELEGATED_KEY_PREFIX)) {
    // Read once per request: its token is the request's (delegations/verify.ts, routes/delegations.ts).
    let token: DelegationToken;
    try {
      token = decodeDelegatedKey(apiKey);
    } catch {
      throw new SigilError("invalid_api_key", "the delegated key is not valid");
    }
    return { apiKey, keyHash: BigInt(token.root), scopeHash: apiKeyHash(apiKey), delegated: token };
  }
  if (!isApiKeyFormat(apiKey)) throw new SigilError("invalid_api_key", "the API key is not valid");
  const keyHash = apiKeyHash(apiKey);
  return { apiKey, keyHash, scopeHash: keyHash };
}
