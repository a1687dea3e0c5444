// Accounts and keys (api.md, Accounts and keys). Writes are forwarded to an enclave with the
// caller's key added as `api_key` (the enclave authorizes them itself: a usage key on an owner
// operation gets 403 account_key_required from it); reads are live eth_calls from here. Every
// write takes an Idempotency-Key, new_account too (kept per client address: idempotency/).
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSchemas, responseSchemas } from "../../shared/enclaveApi.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { ledgerOf } from "../billing/account.ts";
import { readView } from "../chain/client.ts";
import { forward } from "../enclave/client.ts";
import { idempotentAnswerHeaders, newAccountHolder, openIdempotencyHeaders, routeRetry, serveOnce } from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { defaultBodyLimit } from "../middleware/bodyLimit/index.ts";
import { openWriteLimit } from "../middleware/rateLimit/index.ts";
import { errorResponse as errors, jsonBody as body, jsonResponse as json, keySecurity, registerKeySecurity, listRoute } from "./openapi.ts";
import { pageArgs, pageQuerySchema, setTotalCount } from "./paging.ts";
import { serveWrites, writeRoute } from "./write.ts";

const newAccount = createRoute({
  method: "post",
  path: "/new_account",
  summary: "Create a managed account: its master API key (shown once, or again to a retry with the same Idempotency-Key), the Account Master Wallet and the account id",
  // Anyone may call it, and the enclave's payers pay for the account's transaction.
  middleware: [defaultBodyLimit, openWriteLimit({ spendsGas: true })] as const,
  request: { headers: openIdempotencyHeaders, body: body(requestSchemas.new_account) },
  responses: { 200: { ...json(responseSchemas.new_account), headers: z.object(idempotentAnswerHeaders) }, 400: errors, 409: errors, 422: errors, 429: errors, 503: errors },
});

const accountExists = createRoute({
  method: "get",
  path: "/account_exists",
  summary: "Whether the key in the header is the master or a usage key of an existing account, and whether that account is managed",
  security: keySecurity,
  responses: { 200: json(z.object({ exists: z.boolean(), managed: z.boolean() })), 400: errors, 401: errors, 503: errors },
});

const ownerWrites = [
  writeRoute("add_usage_api_key", "Create a usage key with the given permissions (the key is shown once)"),
  writeRoute("update_usage_api_key", "Replace all permissions of a usage key (named by the key or its 0x hash)"),
  writeRoute("update_usage_api_key_metadata", "Rename or re-describe a usage key"),
  writeRoute("remove_usage_api_key", "Remove a usage key; it stops working at once"),
];

const groupIds = z.array(z.string());
const usageKeyItem = z.object({
  id: z.string().describe("the key's hash, 0x + 64 hex"),
  name: z.string(),
  description: z.string(),
  expires_at: z.number().describe("unix seconds; 0 = never"),
  spend_limit_cents: z.number().describe("0 = no cap"),
  can_create_groups: z.boolean(),
  can_delete_groups: z.boolean(),
  can_create_pkps: z.boolean(),
  manage_ipfs_ids_in_groups: groupIds,
  add_pkp_to_groups: groupIds,
  remove_pkp_from_groups: groupIds,
  execute_in_groups: groupIds,
});

const listApiKeys = listRoute({
  path: "/list_api_keys",
  summary: "The account's usage keys (metadata and permissions, never key values)",
  query: pageQuerySchema,
  item: usageKeyItem,
});


export function accountsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  registerKeySecurity(r);

  r.openapi(newAccount, (c) => {
    const input = c.req.valid("json");
    // Under an Idempotency-Key the account is made once per client address and key (newAccountHolder).
    return serveOnce(
      c,
      input,
      async (attempt) => {
        // A retry goes back to the enclave process the first attempt reached, whose memory answers
        // the account it made. If that process is gone, so is the key of any account it made (keys
        // live only in the answer): nobody can use that account, so a new one is made, as the
        // client would with a new key, rather than answering write_outcome_unknown for good.
        if (attempt) await routeRetry(c, attempt, "run");
        const res = await forward<z.infer<typeof responseSchemas.new_account>>(c.get("config"), c.get("ids"), "new_account", input, { idempotent: attempt?.send });
        // The email is kept only in the account's ledger, for its Stripe customer (billing.md). The
        // account exists already: a failure here is logged, and the customer is made without it.
        if (input.email && c.env.LEDGER) {
          await ledgerOf(c, apiKeyHash(res.api_key))
            .contactEmail(input.email)
            .catch((err: unknown) => console.error(JSON.stringify({ level: "error", msg: "could not keep the new account's email", request_id: c.get("ids").requestId, error: String(err) })));
        }
        return c.json(res, 200);
      },
      newAccountHolder,
    ) as never;
  });

  r.openapi(accountExists, async (c) => {
    const { keyHash } = callerKey(c);
    const [master, , managed] = await readView(c.get("config"), "resolveKey", [keyHash]);
    // resolveKey reports nothing for unknown and removed keys; for a converted account's old master
    // key (and its usage keys) `managed` is false.
    const exists = master !== 0n;
    return c.json({ exists, managed: exists && managed }, 200);
  });

  serveWrites(r, ownerWrites);

  r.openapi(listApiKeys, async (c) => {
    const { keyHash } = callerKey(c);
    const [items, total] = await readView(c.get("config"), "listUsageApiKeys", [keyHash, ...pageArgs(c.req.valid("query"))], keyHash);
    const ids = (list: readonly bigint[]) => list.map((g) => g.toString());
    setTotalCount(c, total);
    return c.json(
      items.map((k) => ({
        id: toHash32(k.keyHash),
        name: k.name,
        description: k.description,
        expires_at: Number(k.expiration),
        spend_limit_cents: Number(k.balance),
        can_create_groups: k.canCreateGroups,
        can_delete_groups: k.canDeleteGroups,
        can_create_pkps: k.canCreatePkps,
        manage_ipfs_ids_in_groups: ids(k.manageIpfsIdsInGroups),
        add_pkp_to_groups: ids(k.addPkpToGroups),
        remove_pkp_from_groups: ids(k.removePkpFromGroups),
        execute_in_groups: ids(k.executeInGroups),
      })),
      200,
    );
  });

  return r;
}
