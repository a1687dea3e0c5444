// Actions (api.md, Groups and actions): the account's registry of CIDs with a name and a
// description. Writes go to an enclave with the caller's key as `api_key` (the contract checks
// group:manageActions); `list_actions` is a live eth_call, of the whole account or of one group.
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSchemas, responseSchemas } from "../../shared/enclaveApi.ts";
import type { EdgeEnv } from "../app.ts";
import { validationHook } from "../app.ts";
import { readView } from "../chain/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { errorResponse as errors, jsonBody as body, jsonResponse as json, keySecurity, requireKey, listRoute } from "./openapi.ts";
import { cidHashText } from "./groups.ts";
import { groupIdParam, pageArgs, pageQuerySchema, setTotalCount } from "./paging.ts";
import { forwardWrite } from "./write.ts";

const charged = { "X-Sigil-Charged-Cents": z.string().describe("credits this call cost, in cents") };
const writeErrors = { 400: errors, 401: errors, 402: errors, 403: errors, 404: errors, 409: errors, 413: errors, 429: errors, 503: errors };

type ActionWrite = "add_action" | "delete_action" | "update_action_metadata";

/** A write's route: the enclave's request schema without `api_key` (the key comes from the header). */
const actionWrite = <Op extends ActionWrite, B extends z.ZodType>(op: Op, request: B, summary: string) =>
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
  actionWrite("add_action", requestSchemas.add_action.omit({ api_key: true }), "Register an action (raw CID) with a name and a description; answers its hashed_cid. Needs group:manageActions in some group"),
  actionWrite("delete_action", requestSchemas.delete_action.omit({ api_key: true }), "Unregister an action and remove it from every group. Needs group:manageActions for all groups"),
  actionWrite("update_action_metadata", requestSchemas.update_action_metadata.omit({ api_key: true }), "Rename or re-describe a registered action. Needs group:manageActions in some group"),
] as const;

const actionItem = z.object({
  hashed_cid: z.string().describe('keccak256 of the CID, 0x + 64 hex ("0" for a group\'s any-action entry)'),
  action_ipfs_cid: z.string().optional().describe("the raw CID, when the action was registered with add_action"),
  name: z.string(),
  description: z.string(),
});

const listActions = listRoute({
  path: "/list_actions",
  summary: "The account's registered actions, or with group_id that group's actions",
  query: pageQuerySchema.extend({ group_id: groupIdParam.optional() }),
  item: actionItem,
  notFound: true,
});


export function actionsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = new OpenAPIHono<EdgeEnv>({ defaultHook: (result) => validationHook(result as never) });

  for (const route of routes) {
    const op = route.path.slice(1) as ActionWrite;
    r.openapi(route as (typeof routes)[0], async (c) => c.json(await forwardWrite(c, op, c.req.valid("json")), 200) as never);
  }

  r.openapi(listActions, async (c) => {
    const { keyHash } = callerKey(c);
    const config = c.get("config");
    const query = c.req.valid("query");
    const [page, size] = pageArgs(query);
    const [items, total] =
      query.group_id === undefined
        ? await readView(config, "listActions", [keyHash, page, size], keyHash)
        : await readView(config, "listActionsInGroup", [keyHash, query.group_id, page, size], keyHash);
    setTotalCount(c, total);
    return c.json(
      items.map((a) => ({
        hashed_cid: cidHashText(a.cidHash),
        ...(a.cid === "" ? {} : { action_ipfs_cid: a.cid }),
        name: a.name,
        description: a.description,
      })),
      200,
    );
  });

  return r;
}
