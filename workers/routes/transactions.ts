// `POST /internal/v1/transactions` (docs/design/transactions.md): where an enclave reserves the nonce
// of a transaction it will send for a run, says it sent it, or releases it. Not a client's endpoint
// and not in the OpenAPI document: the caller is an enclave that was sent the run, proven by the
// run's token (budgets/token.ts) that only the sealed request carried, and the request must name the
// run the token names. The answer is the account's Transactions object's (transactions/store.ts).
import { Hono } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { transactionRequestSchema } from "../../shared/transactions.ts";
import type { EdgeEnv } from "../router.ts";
import { internalBody, runRef } from "./internalBody.ts";
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
