// `POST /internal/v1/budgets` (routes/budgets.ts) in workerd, through the edge's app with a channel
// identity seed bound: a run's token is required (401), names the run (403 for another's), the body
// is a budget request (400), and a valid one is the wallet's Budgets object's answer — a client's
// mistake is never a 500.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { BudgetAnswer, BudgetRequest } from "../../shared/guardrails/budgets.ts";
import { createApp } from "../app.ts";
import { issueBudgetToken } from "../budgets/token.ts";
import type { Env } from "../env.ts";

const SEED = "5369676c207465737420656467652069642d6e6f7420612073656372657421ff";
const OTHER_SEED = `${"00".repeat(31)}02`;
const app = createApp();
/** The workers project's bindings, with the edge's channel identity seed (a secret, so not in Env's generated type). */
const edgeEnv: Env & { SIGIL_EDGE_IDENTITY_KEY?: string } = {
  ...(env as unknown as Env),
  SIGIL_EDGE_IDENTITY_KEY: SEED,
};
let n = 0;

/** A request of a fresh wallet (one Budgets object each), under `ref`. */
function budgetRequest(ref: string, extra: Partial<BudgetRequest> = {}): BudgetRequest {
  return {
    op: "reserve",
    account: `0x${"33".repeat(32)}`,
    wallet: `0x${(Date.now() * 1000 + n++).toString(16).padStart(40, "0")}`,
    ref,
    digest: `0x${"44".repeat(32)}`,
    value_wei: "100",
    budgets: [
      {
        name: "daily",
        per: "wallet",
        scope: "wallet",
        window_seconds: 86_400,
        max_value_wei: "150",
        max_signatures: 5,
      },
    ],
    ...extra,
  };
}

async function post(body: string | unknown, authorization?: string, e: Env = edgeEnv) {
  const ctx = createExecutionContext();
  const res = await app.request(
    "http://edge/internal/v1/budgets",
    {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
    e,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

async function errorOf(res: Response) {
  const body = (await res.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  expect(typeof body.error.message).toBe("string");
  return body.error;
}

const tokenFor = (ref: string, seed = SEED, expiresAt = Date.now() + 60_000) => issueBudgetToken(seed, ref, expiresAt);

describe("POST /internal/v1/budgets", () => {
  it("a valid reservation is the store's answer: granted, then repeated for the same digest, then refused past the cap", async () => {
    const auth = `Bearer ${await tokenFor("run-1")}`;
    const req = budgetRequest("run-1");
    const first = await post(req, auth);
    expect(first.status).toBe(200);
    const a = (await first.json()) as BudgetAnswer;
    expect(a).toMatchObject({ granted: true, repeated: false });
    expect(a.granted && a.after[0]).toMatchObject({ used_value_wei: "100", used_signatures: 1, left_value_wei: "50" });
    const again = (await (await post(req, auth)).json()) as BudgetAnswer;
    expect(again).toMatchObject({ granted: true, repeated: true });
    // Another payload that would pass the cap: refused (and told once to the account's webhooks).
    const over = await post({ ...req, digest: `0x${"55".repeat(32)}` }, auth);
    expect(over.status).toBe(200);
    expect(await over.json()).toMatchObject({
      granted: false,
      budget: "daily",
      notify: true,
      observed: "100 wei asked, 50 wei left",
    });
    // A peek reads the same counters and counts nothing.
    const peek = (await (
      await post({ ...req, op: "peek", digest: `0x${"66".repeat(32)}`, value_wei: "50" }, auth)
    ).json()) as BudgetAnswer;
    expect(peek).toMatchObject({ granted: true, repeated: false });
    const after = (await (
      await post({ ...req, op: "peek", digest: `0x${"66".repeat(32)}`, value_wei: "50" }, auth)
    ).json()) as BudgetAnswer;
    expect(after.before[0]).toMatchObject({ used_value_wei: "100", used_signatures: 1 });
  });

  it("the token is taken case-insensitively after Bearer", async () => {
    const token = await tokenFor("run-2");
    expect((await post(budgetRequest("run-2"), `bearer ${token}`)).status).toBe(200);
  });

  it("refuses a request without a valid token 401 invalid_api_key, with the error body", async () => {
    const req = budgetRequest("run-3");
    const cases: Array<[string, string | undefined]> = [
      ["no header", undefined],
      ["empty", ""],
      ["Bearer only", "Bearer "],
      ["garbage", "Bearer not-a-token"],
      ["another edge's", `Bearer ${await tokenFor("run-3", OTHER_SEED)}`],
      ["expired", `Bearer ${await tokenFor("run-3", SEED, Date.now() - 1)}`],
      ["an api key's scheme", `Basic ${await tokenFor("run-3")}`],
    ];
    for (const [what, auth] of cases) {
      const res = await post(req, auth);
      expect(res.status, what).toBe(401);
      expect((await errorOf(res)).code, what).toBe("invalid_api_key");
    }
  });

  it("refuses every token 401 on an edge without a channel identity", async () => {
    const { SIGIL_EDGE_IDENTITY_KEY: _seed, ...bare } = edgeEnv;
    const res = await post(budgetRequest("run-4"), `Bearer ${await tokenFor("run-4")}`, bare as Env);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("invalid_api_key");
  });

  it("refuses another run's token 403 permission_denied, and counts nothing", async () => {
    const req = budgetRequest("run-5");
    const res = await post(req, `Bearer ${await tokenFor("run-6")}`);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("permission_denied");
    const peek = (await (
      await post({ ...req, op: "peek" }, `Bearer ${await tokenFor("run-5")}`)
    ).json()) as BudgetAnswer;
    expect(peek.before[0]).toMatchObject({ used_signatures: 0, used_value_wei: "0" });
  });

  it("refuses a body that is not JSON 400 invalid_json", async () => {
    const auth = `Bearer ${await tokenFor("run-7")}`;
    for (const body of ["", "{", "not json", '{"op":"reserve",}']) {
      const res = await post(body, auth);
      expect(res.status, body).toBe(400);
      expect((await errorOf(res)).code, body).toBe("invalid_json");
    }
  });

  it("refuses a body that is not a budget request 400 invalid_request — never 500", async () => {
    const auth = `Bearer ${await tokenFor("run-8")}`;
    const req = budgetRequest("run-8");
    const limit = req.budgets[0] as BudgetRequest["budgets"][number];
    const bodies: unknown[] = [
      null,
      [],
      JSON.stringify("reserve"),
      42,
      {},
      { ...req, op: "spend" },
      { ...req, account: "0x33" },
      { ...req, account: `0x${"AA".repeat(32)}` },
      { ...req, wallet: `0x${"AB".repeat(20)}` },
      { ...req, wallet: "wallet" },
      { ...req, ref: "" },
      { ...req, ref: "r".repeat(129) },
      { ...req, digest: `0x${"4".repeat(63)}` },
      { ...req, value_wei: "-1" },
      { ...req, value_wei: "1e18" },
      { ...req, value_wei: 100 },
      { ...req, value_wei: "1".repeat(79) },
      { ...req, budgets: [] },
      { ...req, budgets: Array.from({ length: 9 }, (_, i) => ({ ...limit, name: `b${i}` })) },
      { ...req, budgets: [{ ...limit, window_seconds: 0 }] },
      { ...req, budgets: [{ ...limit, window_seconds: 1.5 }] },
      { ...req, budgets: [{ ...limit, max_signatures: 0 }] },
      { ...req, budgets: [{ ...limit, max_value_wei: "0x10" }] },
      { ...req, budgets: [{ ...limit, per: "account" }] },
      { ...req, budgets: [{ ...limit, scope: "" }] },
      { ...req, budgets: [{ ...limit, extra: true }] },
      { ...req, budgets: "daily" },
      { ...req, extra: 1 },
    ];
    for (const body of bodies) {
      const res = await post(body, auth);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const error = await errorOf(res);
      expect(error.code, JSON.stringify(body)).toBe("invalid_request");
    }
  });

  it("answers any other method on the path with a 4xx, not a 500", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await app.request("http://edge/internal/v1/budgets", { method }, edgeEnv);
      expect(res.status, method).toBeGreaterThanOrEqual(400);
      expect(res.status, method).toBeLessThan(500);
    }
  });
});
