// Actions (docs/design/api.md, Groups and actions): the account's registry of CIDs with a name and a
// description. Writes go to an enclave with the caller's key as `api_key` (the contract checks
// group:manageActions); `list_actions` is a live eth_call, of the whole account or of one group.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { newRouter, type EdgeEnv } from "../router.ts";
import { readView } from "../chain/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { listRoute } from "./openapi.ts";
import { cidHashText } from "./groups.ts";
import { groupIdParam, pageArgs, pageQuerySchema, pageAnswer } from "./paging.ts";
import { serveWrites, writeRoute } from "./write.ts";
import { accountRead } from "./accountRead.ts";

const routes = [
  writeRoute(
    "add_action",
    "Actions",
    "Register an action (raw CID) with a name and a description; answers its hashed_cid. Needs group:manageActions in some group",
  ),
  writeRoute(
    "delete_action",
    "Actions",
    "Unregister an action and remove it from every group. Needs group:manageActions for all groups",
  ),
  writeRoute(
    "update_action_metadata",
    "Actions",
    "Rename or re-describe a registered action. Needs group:manageActions in some group",
  ),
];

const actionItem = z
  .object({
    hashed_cid: z.string().describe('keccak256 of the CID, 0x + 64 hex ("0" for a group\'s any-action entry)'),
    action_ipfs_cid: z.string().optional().describe("the raw CID, when the action was registered with add_action"),
    name: z.string(),
    description: z.string(),
  })
  .openapi("Action");

const listActions = listRoute({
  name: "list_actions",
  tag: "Actions",
  summary: "The account's registered actions, or with group_id that group's actions",
  query: pageQuerySchema.extend({ group_id: groupIdParam.optional() }),
  item: actionItem,
  notFound: true,
});

export function actionsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  serveWrites(r, routes);

  r.openapi(listActions, async (c) => {
    const { keyHash } = callerKey(c);
    const config = c.get("config");
    const query = c.req.valid("query");
    const [page, size] = pageArgs(query);
    const listed = await accountRead(c, `listActions|${keyHash}|${JSON.stringify(c.req.query())}`, () =>
      query.group_id === undefined
        ? readView(config, "listActions", [keyHash, page, size], keyHash)
        : readView(config, "listActionsInGroup", [keyHash, query.group_id, page, size], keyHash),
    );
    return pageAnswer(c, listed, (a) => ({
      hashed_cid: cidHashText(a.cidHash),
      ...(a.cid === "" ? {} : { action_ipfs_cid: a.cid }),
      name: a.name,
      description: a.description,
    }));
  });

  return r;
}
