// `POST /internal/v1/settlements` (docs/design/billing.md, Leases): where an enclave settles the charges
// of the runs it ran, a few seconds after each (shared/settlement.ts). The edge answers a run before
// its charge reaches the Ledger; should the isolate die before its commit, this is how the charge is
// made. Not a client's endpoint and not in the OpenAPI document: each run is proven by its own token
// (budgets/token.ts), which only its sealed request carried and which names the account, the usage
// key, the lease and the most it may be charged. The Ledger charges each billing ref once, so a run
// its edge committed already changes nothing.
import { Hono } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { settlementRequestSchema, type SettlementAnswer, type SettlementRequest } from "../../shared/settlement.ts";
import { ledgerOf } from "../billing/account.ts";
import type { RunBill, RunSettlement } from "../billing/ledgerTypes.ts";
import { verifyRunToken } from "../budgets/token.ts";
import type { EdgeEnv } from "../router.ts";
import { internalBody } from "./internalBody.ts";

export function settlementRoutes(): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  r.post("/internal/v1/settlements", async (c) => {
    const config = c.get("config");
    const seed = config.channel.identityKey;
    if (!seed || !config.billing || !c.env.LEDGER)
      throw new SigilError("invalid_api_key", "this edge takes no settlements (billing off, or no identity)");
    const request = await internalBody(c, settlementRequestSchema, "a settlement request");
    const now = Date.now();
    const claims = await Promise.all(request.runs.map((run) => verifyRunToken(seed, run.token, now)));
    const answer: SettlementAnswer = { refused: [], missing: [] };
    // Each account's runs go to its Ledger in one call; the index of each run, to answer by.
    const byAccount = new Map<string, { runs: RunSettlement[]; index: number[] }>();
    claims.forEach((claim, i) => {
      const bill = claim?.bill;
      if (!claim || !bill) {
        answer.refused.push(i);
        return;
      }
      const group = byAccount.get(bill.account) ?? { runs: [], index: [] };
      byAccount.set(bill.account, group);
      group.runs.push(settlementOf(claim.ref, bill, request.runs[i]!));
      group.index.push(i);
    });
    await Promise.all(
      [...byAccount].map(async ([account, group]) => {
        const { missing } = await ledgerOf(c.env.LEDGER, BigInt(`0x${account}`)).settleRuns(group.runs);
        const missingRefs = new Set(missing);
        group.runs.forEach((run, j) => {
          if (missingRefs.has(run.ref)) answer.missing.push(group.index[j]!);
        });
      }),
    );
    if (answer.refused.length > 0)
      c.get("log").warn("settlement runs refused: token expired or not this edge's", {
        refused: answer.refused.length,
      });
    return c.json(answer);
  });
  return r;
}

/** The Ledger's settlement of one run: never more than its token allows. */
function settlementOf(ref: string, bill: RunBill, run: SettlementRequest["runs"][number]): RunSettlement {
  return {
    ref,
    cents: Math.min(run.cents, bill.max),
    keyHash: bill.key,
    leaseId: bill.lease,
    ...(run.detail ? { detail: run.detail } : {}),
  };
}
