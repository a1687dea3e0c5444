// `POST /internal/v1/transactions` (routes/transactions.ts) in workerd, through the edge's app with
// a channel identity seed bound: a run's token is required (401), names the run (403 for another's),
// the body is a transaction request (400), and a valid one is the account's Transactions object's
// answer — a refusal is the answer's, never a 500.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { keccak256 } from "viem";
import { describe, expect, it } from "vitest";
import type { TransactionAnswer, TransactionRequest } from "../../shared/transactions.ts";
import { createApp } from "../app.ts";
import { issueBudgetToken } from "../budgets/token.ts";
import type { Env } from "../env.ts";

const SEED = "5369676c207465737420656467652069642d6e6f7420612073656372657421ff";
const app = createApp();
const edgeEnv: Env & { SIGIL_EDGE_IDENTITY_KEY?: string } = {
  ...(env as unknown as Env),
  SIGIL_EDGE_IDENTITY_KEY: SEED,
};
let n = 0;

/** A reservation of a fresh account (one Transactions object each), under `ref`. */
function reservation(ref: string): TransactionRequest {
  return {
    op: "reserve",
    account: `0x${(Date.now() * 1000 + n++).toString(16).padStart(64, "0")}`,
    ref,
    index: 0,
    wallet: `0x${"22".repeat(20)}`,
    chain_id: 31337,
    chain_pending: 4,
    payload: `0x${"44".repeat(32)}`,
  };
}

async function post(body: string | unknown, authorization?: string) {
  const ctx = createExecutionContext();
  const res = await app.request(
    "http://edge/internal/v1/transactions",
    {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
    edgeEnv,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const bearer = async (ref: string) => `Bearer ${await issueBudgetToken(SEED, ref, Date.now() + 60_000)}`;

describe("POST /internal/v1/transactions", () => {
  it("reserves a nonce, records the send's hash, and answers a refusal as the store's", async () => {
    const auth = await bearer("run-1");
    const req = reservation("run-1");
    const first = (await (await post(req, auth)).json()) as TransactionAnswer;
    expect(first).toMatchObject({ ok: true, record: { nonce: 4, status: "reserved", hash: null } });
    const id = first.ok ? first.record.id : "";
    const raw = `0x${"ab".repeat(40)}` as const;
    const hash = keccak256(raw);
    const sent = (await (
      await post({ op: "sent", account: req.account, ref: "run-1", id, hash, raw }, auth)
    ).json()) as TransactionAnswer;
    expect(sent).toMatchObject({ ok: true, record: { id, status: "pending", hash } });
    const release = await post({ op: "release", account: req.account, ref: "run-1", id, reason: "x" }, auth);
    expect(release.status).toBe(200);
    expect(await release.json()).toMatchObject({ ok: false, code: "conflict" });
  });

  it("refuses no token 401, another run's token 403, and a body that is not a request 400", async () => {
    const req = reservation("run-2");
    const none = await post(req);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    const other = await post(req, await bearer("run-3"));
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("permission_denied");
    for (const body of ["{", { ...req, chain_pending: -1 }, { op: "steal" }]) {
      const res = await post(body, await bearer("run-2"));
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});
