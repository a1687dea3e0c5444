// Usage keys (docs/design/api.md, Accounts and keys): scoped keys an account's master key makes, changes and
// removes. Writes are forwarded to an enclave with the caller's key added as `api_key` (the enclave
// authorizes them itself: a usage key gets 403 account_key_required from it); list_api_keys is a
// live eth_call from here. Every write takes an Idempotency-Key.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { toHash32 } from "../../shared/hashing.ts";
import { fromContract, permissionFields } from "../../shared/permissions.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { readView } from "../chain/client.ts";
import { hashHex, ledgerToRead } from "../billing/account.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { listRoute } from "./openapi.ts";
import { pageArgs, pageQuerySchema, pageAnswer } from "./paging.ts";
import { serveWrites, writeRoute } from "./write.ts";
import { accountRead } from "./accountRead.ts";

const routes = [
  writeRoute(
    "add_usage_api_key",
    "Usage keys",
    "Create a usage key with the given permissions (the key is shown once)",
  ),
  writeRoute(
    "update_usage_api_key",
    "Usage keys",
    "Replace all permissions of a usage key (named by the key or its 0x hash)",
  ),
  writeRoute("update_usage_api_key_metadata", "Usage keys", "Rename or re-describe a usage key"),
  writeRoute("remove_usage_api_key", "Usage keys", "Remove a usage key; it stops working at once"),
  writeRoute(
    "set_usage_key_guardrail",
    "Usage keys",
    "Narrow what every run of a usage key may sign, with any wallet (a guardrail of the key's own, checked on top of each wallet's), or remove it with null. Needs the account's master key",
  ),
];

const groupIds = z.array(z.string());
const usageKeyItem = z
  .object({
    id: z.string().describe("the key's hash, 0x + 64 hex"),
    name: z.string(),
    description: z.string(),
    expires_at: z.number().describe("unix seconds; 0 = never"),
    spend_limit_cents: z.number().describe("0 = no cap"),
    spent_cents: z
      .number()
      .int()
      .nonnegative()
      .describe(
        "what the key's runs and writes have been charged so far, against spend_limit_cents (0 while billing is off)",
      ),
    ...permissionFields(
      () => z.boolean(),
      () => groupIds,
    ),
  })
  .openapi("UsageKey");

const listApiKeys = listRoute({
  name: "list_api_keys",
  tag: "Usage keys",
  summary: "The account's usage keys (metadata and permissions, never key values)",
  query: pageQuerySchema,
  item: usageKeyItem,
});

export function usageKeysRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  serveWrites(r, routes);

  r.openapi(listApiKeys, async (c) => {
    const { keyHash } = callerKey(c);
    const config = c.get("config");
    const page = await accountRead(c, `listUsageApiKeys|${keyHash}|${JSON.stringify(c.req.query())}`, () =>
      readView(config, "listUsageApiKeys", [keyHash, ...pageArgs(c.req.valid("query"))], keyHash),
    );
    // Each key's spend from the account's Ledger (the view answered, so the key is the account's).
    let spent: Record<string, number> = {};
    if (config.billing && page[0].length > 0) {
      const [master] = await readView(config, "billingOf", [keyHash], keyHash);
      spent = await (await ledgerToRead(c.env.LEDGER, master)).keySpend(page[0].map((k) => hashHex(k.keyHash)));
    }
    return pageAnswer(c, page, (k) => ({
      id: toHash32(k.keyHash),
      name: k.name,
      description: k.description,
      expires_at: Number(k.expiration),
      spend_limit_cents: Number(k.balance),
      spent_cents: spent[hashHex(k.keyHash)] ?? 0,
      ...fromContract(k, (g) => g.toString()),
    }));
  });

  return r;
}
