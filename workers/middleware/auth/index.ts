// The caller's API key (docs/design/keys-and-authz.md, API keys): `X-Api-Key: <key>` or `Authorization: Bearer
// <key>` (scheme case-insensitive). Missing → 401 missing_api_key; both present and different →
// 400 conflicting_credentials; not a 44-character base64 key → 401 invalid_api_key, before any
// hashing, so a public hash can never be used as a key. The key is never logged or stored.
import type { Context } from "hono";
import { isApiKeyFormat } from "../../../shared/apiKey.ts";
import { isExposed, SigilError } from "../../../shared/errors.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";

export type CallerKey = { apiKey: string; keyHash: bigint };

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

/** The caller's key, or the 400/401 the headers deserve. */
export function callerKey(c: Context): CallerKey {
  const parsed = parse(c);
  if (!parsed.ok) throw parsed.error;
  return parsed.key;
}

/** The hash of a well-formed key the request carries, if any (for rate limiting; never throws). */
export function presentedKeyHash(c: Context): bigint | undefined {
  const parsed = parse(c);
  return parsed.ok ? parsed.key.keyHash : undefined;
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
  if (!isApiKeyFormat(apiKey)) throw new SigilError("invalid_api_key", "the API key is not valid");
  return { apiKey, keyHash: apiKeyHash(apiKey) };
}
