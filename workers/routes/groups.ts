// Groups (docs/design/api.md, Groups and actions). Writes are forwarded to an enclave with the caller's key
// added as `api_key`: the enclave turns wallet ids into addresses and raw CIDs into hashes, and the
// contract decides whether the key holds the scope (its refusal comes back as 403
// permission_denied, 404 group_not_found or wallet_not_found). `list_groups` is a live eth_call.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { toHash32 } from "../../shared/hashing.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { readView } from "../chain/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { listRoute } from "./openapi.ts";
import { pageArgs, pageQuerySchema, pageAnswer } from "./paging.ts";
import { serveWrites, writeRoute } from "./write.ts";
import { accountRead } from "./accountRead.ts";

const routes = [
  writeRoute(
    "add_group",
    "Groups",
    'Create a group of wallets (addresses or wallet ids; the zero address = any account wallet) and actions (raw CIDs or 0x hashes; "0" = any action). Needs group:create',
  ),
  writeRoute("remove_group", "Groups", "Delete a group. Needs group:delete"),
  writeRoute(
    "update_group",
    "Groups",
    "Replace a group's name, description, wallets and actions. Needs group:manageActions, group:addPkp and group:removePkp on the group",
  ),
  writeRoute(
    "add_action_to_group",
    "Groups",
    "Permit an action (raw CID) in a group; answers its hashed_cid. Needs group:manageActions on the group",
  ),
  writeRoute(
    "remove_action_from_group",
    "Groups",
    "Remove an action (hashed_cid) from a group. Needs group:manageActions on the group",
  ),
  writeRoute(
    "add_pkp_to_group",
    "Groups",
    "Permit a wallet (address or wallet id) in a group. Needs group:addPkp on the group",
  ),
  writeRoute("remove_pkp_from_group", "Groups", "Remove a wallet from a group. Needs group:removePkp on the group"),
];

const groupItem = z
  .object({
    id: z.string().describe("the group id, decimal"),
    group_name: z.string(),
    group_description: z.string(),
    pkp_ids_permitted: z
      .array(z.string())
      .describe("wallet addresses, lowercase; the zero address = any wallet of the account"),
    cid_hashes_permitted: z.array(z.string()).describe('action hashes, 0x + 64 hex; "0" = any action'),
  })
  .openapi("Group");

const listGroups = listRoute({
  name: "list_groups",
  tag: "Groups",
  summary: "The account's groups",
  query: pageQuerySchema,
  item: groupItem,
});

/** An action hash as responses show it: `"0"` for the "any action" entry, else `0x` + 64 hex. */
export function cidHashText(hash: bigint): string {
  return hash === 0n ? "0" : toHash32(hash);
}

export function groupsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  serveWrites(r, routes);

  r.openapi(listGroups, async (c) => {
    const { keyHash } = callerKey(c);
    return pageAnswer(
      c,
      await accountRead(c, `listGroups|${keyHash}|${JSON.stringify(c.req.query())}`, () =>
        readView(c.get("config"), "listGroups", [keyHash, ...pageArgs(c.req.valid("query"))], keyHash),
      ),
      (g) => ({
        id: g.id.toString(),
        group_name: g.name,
        group_description: g.description,
        pkp_ids_permitted: g.wallets.map((w) => w.toLowerCase()),
        cid_hashes_permitted: g.cidHashes.map(cidHashText),
      }),
    );
  });

  return r;
}
