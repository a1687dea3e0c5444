// Delegated keys at the edge (docs/design/delegation.md): `POST /delegate_key` mints a usage key's
// first children (an enclave makes them: only it derives the secret their chains start from; nothing is
// written on chain, nothing is charged), `POST /revoke_delegation` revokes one block — the key minted
// with it and every key narrowed from that — in the account's Delegations store, and
// `POST /internal/v1/delegations` is where an enclave counts a run's use of a delegated key there (a
// run's token, not a client's key; not in the OpenAPI document).
import { Hono } from "hono";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { Context } from "hono";
import { decodeDelegatedKey, type DelegationToken, delegationUseRequestSchema } from "../../shared/delegation.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { SigilError } from "../../shared/errors.ts";
import { delegatedKeyField, requestSchemas, responseSchemas } from "../../shared/operations.ts";
import { callerAccount } from "../billing/account.ts";
import { delegationsOf } from "../delegations/index.ts";
import { vouchedFor } from "../delegations/verify.ts";
import { enclave } from "../enclave/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { defaultBodyLimit } from "../middleware/bodyLimit/index.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { internalBody, runRef } from "./internalBody.ts";
import { jsonBody as body, jsonResponse as json, requireKey, requireRunKey, route, toWire } from "./openapi.ts";

/** How long the edge waits for 10 000 keys to be minted and sealed back. */
const MINT_TIMEOUT_MS = 30_000;

const delegateKey = route("POST /delegate_key", "Usage keys", {
  summary:
    "Mint delegated keys from the caller's usage key: each a subset of it (fewer groups, actions or wallets, an expiry, a number of uses, a budget), made in the enclave with no chain write; the usage key's guardrail must allow delegation",
  security: "key",
  middleware: [defaultBodyLimit, requireKey],
  request: { body: body(requestSchemas.delegate_key.omit({ api_key: true })) },
  ok: json(responseSchemas.delegate_key, "the keys, shown once"),
  // 400: the caveats; 401: the key; 403: not a usage key that may delegate; 503: the chain or the enclave.
  errors: [400, 401, 403, 408, 413, 429, 503],
});

const revokeDelegation = route("POST /revoke_delegation", "Usage keys", {
  summary:
    "Revoke a delegated key: it and every key narrowed from it are refused from the next request. The account's master key names any by id; a usage key presents a key it minted; a delegated key revokes itself by its id or presents a key narrowed from it",
  security: "key",
  middleware: [defaultBodyLimit, requireRunKey],
  request: {
    body: body(
      z
        .strictObject({
          id: z
            .string()
            .regex(/^[0-9a-f]{32}$/, "must be a block id: 32 lowercase hex digits")
            .optional()
            .describe(
              "the key's id (delegate_key's ids; a narrowed key's last block): the master key's, or a delegated key's own",
            ),
          key: delegatedKeyField
            .optional()
            .describe(
              "the delegated key itself: one the calling usage key minted, or one narrowed from the calling delegated key",
            ),
        })
        .refine((b) => (b.id === undefined) !== (b.key === undefined), {
          message: "name the key by id or give the key itself, one of the two",
          path: ["id"],
        }),
    ),
  },
  ok: json(
    z
      .object({
        id: z.string().describe("the block revoked"),
        revoked: z.literal(true),
        already_revoked: z.boolean().describe("it was revoked before this call"),
      })
      .openapi("DelegationRevoked"),
  ),
  errors: [400, 401, 403, 408, 413, 429, 503],
});

const notYours = (message: string) =>
  new SigilError("permission_denied", message, { details: { scope: "revoke_delegation" } });

/**
 * The block a revocation may name (docs/design/delegation.md, Revocation and its bound): the master key any of its
 * account's; a usage key the last block of a key it is the root of; a delegated key its own last block,
 * or the last block of a key narrowed from it. A presented key must be one an enclave made.
 */
async function revocable(
  c: Context<EdgeEnv>,
  request: { id?: string | undefined; key?: string | undefined },
): Promise<string> {
  const caller = callerKey(c);
  const account = await callerAccount(c.get("config"), caller);
  const own = caller.delegated;
  if (request.id !== undefined) {
    if (account.isMaster && !caller.delegated) return request.id;
    if (own && own.blocks.at(-1)?.id === request.id) return request.id;
    throw notYours(
      caller.delegated
        ? "a delegated key revokes itself by its id, or a key narrowed from it by giving that key"
        : "a usage key revokes a key it minted by giving the key itself; by id, the account's master key",
    );
  }
  let token: DelegationToken;
  try {
    token = decodeDelegatedKey(request.key as string);
  } catch {
    throw new SigilError("invalid_api_key", "the delegated key to revoke is not valid");
  }
  await vouchedFor(c, {
    apiKey: request.key as string,
    keyHash: BigInt(token.root),
    scopeHash: apiKeyHash(request.key as string),
    delegated: token,
  });
  const last = (token.blocks.at(-1) as { id: string }).id;
  if (own) {
    const descends = own.root === token.root && own.blocks.every((b, i) => token.blocks[i]?.id === b.id);
    if (!descends) throw notYours("a delegated key revokes only itself and the keys narrowed from it");
    return last;
  }
  if (BigInt(token.root) === caller.keyHash) return last;
  if (
    account.isMaster &&
    (await callerAccount(c.get("config"), { keyHash: BigInt(token.root) })).master === account.master
  )
    return last;
  throw notYours("a usage key revokes only the keys it minted (and the keys narrowed from them)");
}

export function delegationRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  r.openapi(delegateKey, async (c) => {
    const input = c.req.valid("json");
    const answer = await enclave.call(
      "delegate_key",
      { ...(toWire(input) as typeof input), api_key: callerKey(c).apiKey },
      { config: c.get("config"), ids: c.get("ids"), timeoutMs: MINT_TIMEOUT_MS },
    );
    c.get("log").info("delegated keys minted", { count: answer.keys.length });
    return c.json(answer, 200);
  });

  r.openapi(revokeDelegation, async (c) => {
    const id = await revocable(c, c.req.valid("json"));
    const { master } = await callerAccount(c.get("config"), callerKey(c));
    const answer = await delegationsOf(c.env.DELEGATIONS, master).revoke(id);
    c.get("log").info("delegated key revoked", { block: id, already: answer.already });
    return c.json({ id, revoked: true as const, already_revoked: answer.already }, 200);
  });
  return r;
}

/** `POST /internal/v1/delegations`: an enclave counts a run's use of a delegated key (shared/delegation.ts). */
export function delegationUseRoutes(): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  r.post("/internal/v1/delegations", async (c) => {
    const ref = await runRef(c, "a delegated key's use");
    const request = await internalBody(c, delegationUseRequestSchema, "a delegated key's use");
    if (request.ref !== ref) throw new SigilError("permission_denied", "the token is for another run");
    const answer = await delegationsOf(c.env.DELEGATIONS, BigInt(request.account)).use(request);
    if (!answer.granted) c.get("log").info("delegated key refused", { block: answer.id, reason: answer.reason, ref });
    return c.json(answer);
  });
  return r;
}
