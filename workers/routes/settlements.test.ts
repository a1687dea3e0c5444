// `POST /internal/v1/settlements` (routes/settlements.ts) in workerd, through the edge's app with a
// channel identity seed bound, against the real Ledger: a run is charged once, never past what its
// token allows, out of the lease its token names; without its detail the answer says it is missing;
// a token that is not this edge's, has expired or names no bill is refused run by run; a body that
// is not a settlement request is a 400, and an edge with billing off takes none (401).
import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SETTLEMENT_PATH, type SettlementAnswer } from "../../shared/settlement.ts";
import { createApp } from "../app.ts";
import type { RunBill } from "../billing/ledgerTypes.ts";
import { issueBudgetToken } from "../budgets/token.ts";
import type { Env } from "../env.ts";

const SEED = "5369676c207465737420656467652069642d6e6f7420612073656372657421ff";
const OTHER_SEED = `${"00".repeat(31)}02`;
const app = createApp();
const edgeEnv: Env & { SIGIL_EDGE_IDENTITY_KEY?: string } = {
  ...(env as unknown as Env),
  SIGIL_EDGE_IDENTITY_KEY: SEED,
};
let n = 0;

/** A fresh account's Ledger, with `cents` in it. */
async function account(cents: number) {
  const hex = (Date.now() * 1000 + n++).toString(16).padStart(64, "0");
  const ledger = edgeEnv.LEDGER!.get(edgeEnv.LEDGER!.idFromName(hex));
  await ledger.credit(`pi_${hex}`, cents);
  return { hex, ledger };
}

async function post(body: unknown, e: Env = edgeEnv) {
  const ctx = createExecutionContext();
  const res = await app.request(
    `http://edge${SETTLEMENT_PATH}`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
    e,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const token = (ref: string, bill?: RunBill, seed = SEED, expiresAt = Date.now() + 60_000) =>
  issueBudgetToken(seed, ref, expiresAt, bill);
const detail = (ref: string) => ({ cid: "QmZ", duration_ms: 40, receipt: JSON.stringify({ request_id: ref }) });

describe(`POST ${SETTLEMENT_PATH}`, () => {
  it("says which runs are not charged yet, charges them once with their detail, never past the token's most, and refuses what is not a bill of this edge", async () => {
    const { hex, ledger } = await account(100);
    const bill = { account: hex, key: null, max: 3, lease: "no-such-lease" };
    const runs = [
      { token: await token("r1", bill), cents: 2 },
      { token: await token("r2", bill), cents: 9 },
      { token: await token("r3"), cents: 1 },
      { token: await token("r4", bill, OTHER_SEED), cents: 1 },
      { token: await token("r5", bill, SEED, Date.now() - 1), cents: 1 },
    ];
    const first = await post({ runs });
    expect(first.status).toBe(200);
    expect((await first.json()) as SettlementAnswer).toEqual({ refused: [2, 3, 4], missing: [0, 1] });
    expect((await ledger.balance()).settledCents).toBe(100);

    const second = await post({ runs: runs.slice(0, 2).map((r, i) => ({ ...r, detail: detail(`r${i + 1}`) })) });
    expect((await second.json()) as SettlementAnswer).toEqual({ refused: [], missing: [] });
    // 2 cents, and 3 (not 9: the token's most).
    expect(await ledger.balance()).toEqual({ settledCents: 95, heldCents: 0, freeCents: 95 });
    // Again: charged already, nothing more.
    await post({ runs: runs.slice(0, 2).map((r, i) => ({ ...r, detail: detail(`r${i + 1}`) })) });
    const page = await ledger.usage({ limit: 10 });
    expect(page.entries.filter((e) => e.kind === "charge").map((e) => [e.ref, e.cents])).toEqual([
      ["r2", -3],
      ["r1", -2],
    ]);
  });

  it("takes a run's charge out of the lease its token names, which its isolate hears of at its next commit", async () => {
    const { hex, ledger } = await account(1_000);
    await ledger.lease("isolate-1", 60, 0, 60_000, undefined, { ref: "held", cents: 60, op: "run" });
    const bill = { account: hex, key: null, max: 60, lease: "isolate-1" };
    const res = await post({ runs: [{ token: await token("held", bill), cents: 4, detail: detail("held") }] });
    expect((await res.json()) as SettlementAnswer).toEqual({ refused: [], missing: [] });
    const leases = await runInDurableObject(ledger, (_l: unknown, state: DurableObjectState) =>
      state.storage.sql.exec("SELECT cents, in_flight FROM leases").toArray(),
    );
    expect(leases).toEqual([{ cents: 56, in_flight: 0 }]);
    const commit = await ledger.commit("isolate-1", {
      charges: [],
      opened: [],
      closed: [],
      returnCents: 56,
      inFlightCents: 0,
      ttlMs: 60_000,
    });
    expect(commit).toMatchObject({ takenCents: 60, settledByEnclave: [{ ref: "held", cents: 4 }], leaseCents: 0 });
    expect(await ledger.balance()).toEqual({ settledCents: 996, heldCents: 0, freeCents: 996 });
  });

  it("a body that is not a settlement request is a 400; an edge with billing off takes none", async () => {
    for (const body of ["{", { runs: [] }, { runs: [{ token: "t", cents: -1 }] }, { other: 1 }]) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toMatch(/^invalid_(json|request)$/);
    }
    const off = await post({ runs: [{ token: "t", cents: 1 }] }, {
      ...edgeEnv,
      SIGIL_BILLING: "off",
    } as unknown as Env);
    expect(off.status).toBe(401);
  });
});
