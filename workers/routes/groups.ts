// Groups (api.md, Groups and actions). Writes are forwarded to an enclave with the caller's key
// added as `api_key`: the enclave turns wallet ids into addresses and raw CIDs into hashes, and the
// contract decides whether the key holds the scope (its refusal comes back as 403
// permission_denied, 404 group_not_found or wallet_not_found). `list_groups` is a live eth_call.
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSchemas, responseSchemas } from "../../shared/enclaveApi.ts";
import { toHash32 } from "../../shared/hashing.ts";
import type { EdgeEnv } from "../app.ts";
import { validationHook } from "../app.ts";
import { readView } from "../chain/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { errorResponse as errors, jsonBody as body, jsonResponse as json, keySecurity, requireKey, listRoute } from "./openapi.ts";
import { pageArgs, pageQuerySchema, setTotalCount } from "./paging.ts";
import { forwardWrite } from "./write.ts";

const charged = { "X-Sigil-Charged-Cents": z.string().describe("credits this call cost, in cents") };
const writeErrors = { 400: errors, 401: errors, 402: errors, 403: errors, 404: errors, 409: errors, 413: errors, 429: errors, 503: errors };

type GroupWrite =
  | "add_group"
  | "remove_group"
  | "update_group"
  | "add_action_to_group"
  | "remove_action_from_group"
  | "add_pkp_to_group"
  | "remove_pkp_from_group";

/** A write's route: the enclave's request schema without `api_key` (the key comes from the header). */
const groupWrite = <Op extends GroupWrite, B extends z.ZodType>(op: Op, request: B, summary: string) =>
  createRoute({
    method: "post",
    path: `/${op}`,
    summary,
    security: keySecurity,
    middleware: [requireKey] as const,
    request: { body: body(request) },
    responses: { 200: { ...json(responseSchemas[op]), headers: z.object(charged) }, ...writeErrors },
  });

const routes = [
  groupWrite("add_group", requestSchemas.add_group.omit({ api_key: true }), "Create a group of wallets (addresses or wallet ids; the zero address = any account wallet) and actions (raw CIDs or 0x hashes; \"0\" = any action). Needs group:create"),
  groupWrite("remove_group", requestSchemas.remove_group.omit({ api_key: true }), "Delete a group. Needs group:delete"),
  groupWrite("update_group", requestSchemas.update_group.omit({ api_key: true }), "Replace a group's name, description, wallets and actions. Needs group:manageActions, group:addPkp and group:removePkp on the group"),
  groupWrite("add_action_to_group", requestSchemas.add_action_to_group.omit({ api_key: true }), "Permit an action (raw CID) in a group; answers its hashed_cid. Needs group:manageActions on the group"),
  groupWrite("remove_action_from_group", requestSchemas.remove_action_from_group.omit({ api_key: true }), "Remove an action (hashed_cid) from a group. Needs group:manageActions on the group"),
  groupWrite("add_pkp_to_group", requestSchemas.add_pkp_to_group.omit({ api_key: true }), "Permit a wallet (address or wallet id) in a group. Needs group:addPkp on the group"),
  groupWrite("remove_pkp_from_group", requestSchemas.remove_pkp_from_group.omit({ api_key: true }), "Remove a wallet from a group. Needs group:removePkp on the group"),
] as const;

const groupItem = z.object({
  id: z.string().describe("the group id, decimal"),
  group_name: z.string(),
  group_description: z.string(),
  pkp_ids_permitted: z.array(z.string()).describe("wallet addresses, lowercase; the zero address = any wallet of the account"),
  cid_hashes_permitted: z.array(z.string()).describe('action hashes, 0x + 64 hex; "0" = any action'),
});

const listGroups = listRoute({ path: "/list_groups", summary: "The account's groups", query: pageQuerySchema, item: groupItem });


/** An action hash as responses show it: `"0"` for the "any action" entry, else `0x` + 64 hex. */
export function cidHashText(hash: bigint): string {
  return hash === 0n ? "0" : toHash32(hash);
}

export function groupsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = new OpenAPIHono<EdgeEnv>({ defaultHook: (result) => validationHook(result as never) });

  for (const route of routes) {
    const op = route.path.slice(1) as GroupWrite;
    r.openapi(route as (typeof routes)[0], async (c) => c.json(await forwardWrite(c, op, c.req.valid("json")), 200) as never);
  }

  r.openapi(listGroups, async (c) => {
    const { keyHash } = callerKey(c);
    const [items, total] = await readView(c.get("config"), "listGroups", [keyHash, ...pageArgs(c.req.valid("query"))], keyHash);
    setTotalCount(c, total);
    return c.json(
      items.map((g) => ({
        id: g.id.toString(),
        group_name: g.name,
        group_description: g.description,
        pkp_ids_permitted: g.wallets.map((w) => w.toLowerCase()),
        cid_hashes_permitted: g.cidHashes.map(cidHashText),
      })),
      200,
    );
  });

  return r;
}
