// The audit log, GET /core/v1/audit (issue 14): the account's administrative history from
// AccountConfig's events, newest first, in cursor pages (chain/audit.ts reads and describes them).
// Who may read it is who may read the account's balance: its master key (a converted account's old
// master key too), any live usage key of the account — as every list endpoint lets a usage key see
// the whole account's keys, wallets and groups — or, for a ChainSecured account without a key, the
// admin wallet's X-Wallet-Auth (signed as BillingAuth, the header the billing reads take).
import { z, type OpenAPIHono } from "@hono/zod-openapi";
import { accountEvents, auditPage, decodeCursor, DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT } from "../chain/audit.ts";
import { batchedChainClient, contractAddress, read } from "../chain/client.ts";
import { billingCaller } from "../billing/account.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { billingCredentials, requireCredentials } from "./billing.ts";
import { jsonResponse, keySecurity, route } from "./openapi.ts";
import { countParam } from "./paging.ts";

const cursorParam = z
  .string()
  .optional()
  .openapi({
    param: { name: "cursor", in: "query" },
    description:
      "next_cursor of the previous page (opaque); absent: the newest events. One this endpoint did not give is 400 invalid_request",
  });

const limitParam = countParam("limit", "events", DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT);

const fromBlockParam = z
  .string()
  .regex(/^\d{1,16}$/, "must be a block number")
  .optional()
  .transform((v) => (v === undefined ? undefined : BigInt(v)))
  .openapi({
    param: { name: "from_block", in: "query" },
    description: "read no event older than this block (default: the contract's deployment block)",
    example: "0",
  });

const eventNames = accountEvents.map((e) => e.name) as [string, ...string[]];

const auditEvent = z
  .object({
    block_number: z.number().int().nonnegative(),
    block_time: z.number().int().nullable().describe("the block's timestamp, unix seconds"),
    tx_hash: z.string().describe("the transaction that emitted the event, 0x + 64 hex"),
    log_index: z.number().int().nonnegative().describe("the event's position in its block"),
    event: z.enum(eventNames).describe("the contract's event name (AccountConfig.sol, Events)"),
    actor: z
      .string()
      .nullable()
      .describe(
        "the transaction's sender, lowercase: for a managed account's writes one of the service's payers (the enclave sent it on the API key's behalf; get_api_payers lists them), for a ChainSecured account's the admin wallet (or whoever called the contract wallet that sent it)",
      ),
    summary: z
      .string()
      .describe(
        'what it did, for a person: "usage key 0xab…cd removed", "wallet 0x… registered (id 2)", "account converted to ChainSecured, admin 0x…"',
      ),
    args: z
      .record(z.string(), z.union([z.string(), z.boolean()]))
      .describe(
        "the event's arguments but the master hash, by their ABI names: hashes as 0x + 64 hex, ids as decimal strings, addresses lowercase",
      ),
  })
  .openapi("AuditEvent");

const audit = route("GET /audit", "Audit", {
  summary:
    "The account's administrative history from the contract's events (keys, wallets, groups, actions, conversion, ownership), newest first, in cursor pages",
  description:
    "Read from the chain with eth_getLogs on the account's master hash, in block windows walking back from the cursor. next_cursor is null when the account's creation (or from_block) is reached; events written while paging are in later blocks and never shift a page. API key (master or usage), or X-Wallet-Auth signed as BillingAuth by a ChainSecured account's admin wallet.",
  security: [...keySecurity, { WalletAuth: [] }],
  middleware: [requireCredentials],
  request: { query: z.object({ cursor: cursorParam, limit: limitParam, from_block: fromBlockParam }) },
  ok: jsonResponse(
    z.object({
      events: z.array(auditEvent),
      next_cursor: z.string().nullable().describe("the next page's cursor; null when there is none"),
    }),
  ),
  // 400: the query or the cursor, two credentials; 401: the key or signature; 403: a wallet no
  // longer the admin; 404: a wallet that administers no account; 413: an oversized X-Wallet-Auth.
  errors: [400, 401, 403, 404, 413, 429, 503],
  // The SDK's client.all.audit iterates it by cursor (sdk/scripts/generate.ts reads this).
  "x-sigil-paging": { style: "cursor", items: "events" },
});

export function auditRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  r.openapi(audit, async (c) => {
    const config = c.get("config");
    const query = c.req.valid("query");
    // The cursor first: a garbage one is the client's mistake whoever sends it.
    const cursor = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const { master } = await billingCaller(config, billingCredentials(c), "read");
    const deployed = config.events.fromBlock;
    const page = await read(() =>
      auditPage({
        client: batchedChainClient(config),
        contract: contractAddress(config),
        master,
        fromBlock: query.from_block !== undefined && query.from_block > deployed ? query.from_block : deployed,
        windowBlocks: config.events.windowBlocks,
        limit: query.limit,
        cursor,
      }),
    );
    return c.json(page, 200);
  });
  return r;
}
