// Delegated keys at the edge (docs/design/delegation.md): `POST /delegate_key` mints a usage key's
// first children (an enclave makes them: only it derives the secret their chains start from; nothing is
// written on chain, nothing is charged), `POST /revoke_delegation` revokes one block — the key minted
// with it and every key narrowed from that — in the account's Delegations store, and
// `POST /internal/v1/delegations` is where an enclave counts a run's use of a delegated key there (a
// run's token, not a client's key; not in the OpenAPI document).
import { Hono } from "hono";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { delegationUseRequestSchema } from "../../shared/delegation.ts";
import { SigilError } from "../../shared/errors.ts";
import { requestSchemas, responseSchemas } from "../../shared/operations.ts";
import { accountObject, callerAccount } from "../billing/account.ts";
import type { Delegations } from "../delegations/store.ts";
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
    "Revoke a delegated key by its block id: it and every key narrowed from it stop working from the next run. Any key of the account, a delegated one too",
  security: "key",
  middleware: [defaultBodyLimit, requireRunKey],
  request: {
    body: body(
      z.strictObject({
        id: z
          .string()
          .regex(/^[0-9a-f]{32}$/, "must be a block id: 32 lowercase hex digits")
          .describe("the id delegate_key answered for the key (or the id of the block a narrowing added)"),
      }),
    ),
  },
  ok: json(
    z
      .object({
        id: z.string(),
        revoked: z.literal(true),
        already_revoked: z.boolean().describe("it was revoked before this call"),
        used: z.number().int().nonnegative().describe("the runs counted against the block so far"),
      })
      .openapi("DelegationRevoked"),
  ),
  errors: [400, 401, 403, 408, 413, 429, 503],
});

/** The Delegations object of the account `master` (its master hash). */
const delegationsOf = (namespace: DurableObjectNamespace<Delegations> | undefined, master: bigint) =>
  accountObject(namespace, master, "delegated keys need the DELEGATIONS Durable Object, which is not bound");

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
    const { id } = c.req.valid("json");
    const { master } = await callerAccount(c.get("config"), callerKey(c));
    const answer = await delegationsOf(c.env.DELEGATIONS, master).revoke(id);
    c.get("log").info("delegated key revoked", { block: id, already: answer.already });
    return c.json({ id, revoked: true as const, already_revoked: answer.already, used: answer.used }, 200);
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
