// The transactions scripts send (docs/design/transactions.md). `GET /core/v1/transactions`: the
// account's records, newest first, in cursor pages, for any key of the account.
// `POST /internal/v1/transactions`: where an enclave reserves the nonce
// of a transaction it will send for a run, says it sent it, or releases it. Not a client's endpoint
// and not in the OpenAPI document: the caller is an enclave that was sent the run, proven by the
// run's token (budgets/token.ts) that only the sealed request carried, and the request must name the
// run the token names. The answer is the account's Transactions object's (transactions/store.ts).
import type { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import { TRANSACTION_STATUSES, transactionRecordSchema, transactionRequestSchema } from "../../shared/transactions.ts";
import { callerAccount } from "../billing/account.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { internalBody, runRef } from "./internalBody.ts";
import { jsonResponse, requireKey, route } from "./openapi.ts";
import { countParam } from "./paging.ts";

const transactionsQuery = z.object({
  id: z
    .string()
    .regex(/^tx_[0-9a-f]{24}$/, "must be a transaction id, tx_ and 24 hex digits")
    .optional()
    .openapi({ param: { name: "id", in: "query" }, description: "only this transaction (sendTransaction's id)" }),
  wallet_address: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
    .optional()
    .openapi({ param: { name: "wallet_address", in: "query" }, description: "only this wallet's" }),
  chain_id: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .openapi({ param: { name: "chain_id", in: "query" }, description: "only this chain's" }),
  status: z
    .enum(TRANSACTION_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" }, description: "only those in this state" }),
  cursor: z
    .string()
    .regex(/^\d{1,15}$/, "must be the next_cursor of an earlier page")
    .optional()
    .openapi({
      param: { name: "cursor", in: "query" },
      description: "next_cursor of the page before; absent for the newest page",
    }),
  limit: countParam("limit", "transactions", 50, 100),
});

const listTransactions = route("GET /transactions", "Execution", {
  summary:
    "The transactions the account's scripts sent with Sigil.Actions.sendTransaction, newest first, in cursor pages",
  description:
    "Each with its wallet, chain, nonce, hash and status (reserved, pending, confirmed, reverted, replaced, dropped, released). Any key of the account.",
  security: "key",
  middleware: [requireKey],
  operationId: "listTransactions",
  request: { query: transactionsQuery },
  ok: jsonResponse(
    z.object({
      transactions: z.array(transactionRecordSchema.openapi("Transaction")),
      next_cursor: z.string().nullable().describe("the next page's cursor; null when there is none"),
    }),
  ),
  // 400: the query; 401: the key; 503: the chain, for a key the edge has not seen.
  errors: [400, 401, 429, 503],
  // The SDK's client.all.listTransactions iterates it by cursor (sdk/scripts/generate.ts reads this).
  "x-sigil-paging": { style: "cursor", items: "transactions" },
});

/** `GET /core/v1/transactions`, mounted under /core/v1 within admission. */
export function transactionListRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  r.openapi(listTransactions, async (c) => {
    const query = c.req.valid("query");
    const { master } = await callerAccount(c.get("config"), callerKey(c));
    const store = transactionsOf(c.env.TRANSACTIONS, master);
    if (query.id !== undefined) {
      const one = await store.get(query.id);
      return c.json({ transactions: one ? [one] : [], next_cursor: null }, 200);
    }
    const page = await store.list({
      ...(query.wallet_address ? { wallet: query.wallet_address.toLowerCase() } : {}),
      ...(query.chain_id !== undefined ? { chain_id: query.chain_id } : {}),
      ...(query.status ? { status: query.status } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
      limit: query.limit,
    });
    return c.json({ transactions: page.items, next_cursor: page.next_cursor }, 200);
  });
  return r;
}
import { transactionsOf } from "../transactions/index.ts";

export function transactionRoutes(): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  r.post("/internal/v1/transactions", async (c) => {
    const ref = await runRef(c, "a transaction's nonce");
    const request = await internalBody(c, transactionRequestSchema, "a transaction request");
    if (request.ref !== ref) throw new SigilError("permission_denied", "the token is for another run");
    const answer = await transactionsOf(c.env.TRANSACTIONS, request.account).decide(request);
    if (answer.ok)
      c.get("log").info("transaction", {
        op: request.op,
        id: answer.record.id,
        wallet: answer.record.wallet_address,
        chain: answer.record.chain_id,
        nonce: answer.record.nonce,
        status: answer.record.status,
        ref,
      });
    else c.get("log").info("transaction refused", { op: request.op, code: answer.code, ref });
    return c.json(answer);
  });
  return r;
}
