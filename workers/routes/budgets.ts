// `POST /internal/v1/budgets` (docs/design/guardrails.md, Budgets): where an enclave reserves room in
// a wallet's budgets before it releases a budgeted signature, or (a dry run) reads what is used. Not
// a client's endpoint and not in the OpenAPI document: the caller is an enclave that was sent a run,
// proven by the run's token (budgets/token.ts) that only the sealed request carried. The answer is the
// wallet's Budgets object's (budgets/store.ts); the first refusal of a budget in its window tells the
// account's webhooks (budget.exhausted).
import { Hono } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { budgetRequestSchema } from "../../shared/guardrails/budgets.ts";
import type { EdgeEnv } from "../router.ts";
import { internalBody, runRef } from "./internalBody.ts";
import { budgetsOf } from "../budgets/index.ts";
import { budgetExhausted, emitterOf } from "../webhooks/emit.ts";

export function budgetRoutes(): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  r.post("/internal/v1/budgets", async (c) => {
    const ref = await runRef(c, "a budget reservation");
    const request = await internalBody(c, budgetRequestSchema, "a budget request");
    if (request.ref !== ref) throw new SigilError("permission_denied", "the token is for another run");
    const answer = await budgetsOf(c.env.BUDGETS, request.account, request.wallet).decide(request);
    if (!answer.granted) {
      c.get("log").info("budget refused a signature", { wallet: request.wallet, budget: answer.budget, ref });
      if (answer.notify) budgetExhausted(emitterOf(c), request, answer);
    }
    return c.json(answer);
  });
  return r;
}
