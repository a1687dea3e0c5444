// The edge's calls to an account's Webhooks Durable Object after its metered writes and runs
// (webhooks/emit.ts), billing on: none while the account has no endpoint and no balance.low
// threshold — the Ledger says so in the hold and settle the request makes anyway (ledger.ts,
// `webhooks`; webhooks/store.ts gives the argument) — and events again from the first run after an
// endpoint is added. A receiver is the stack's loopback fetch target (its /echo answers 200). Every
// test ends with the audit of every ledger there is (ledgers.ts).
import { env, listDurableObjectIds, runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../../shared/cid.ts";
import type { Env } from "../../../workers/env.ts";
import { edgeClient } from "../stack.ts";
import { billingLedgers, ledgerRows, masterHex } from "./ledgers.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";
import { issueBudgetToken } from "../../../workers/budgets/token.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../../enclave/constants.ts";

const { edge, ok200 } = edgeClient(SELF);
const bindings = env as unknown as Env;
const namespace = bindings.LEDGER!;
const webhooks = bindings.WEBHOOKS!;
const { newAccount, ledgerOf } = billingLedgers({
  self: SELF,
  namespace,
  listIds: () => listDurableObjectIds(namespace),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});

const QUICK = "async function main() { return 'quick' }";
const FAILING = "async function main() { throw new Error('on purpose') }";
let cids: string[];

beforeAll(async () => {
  cids = await Promise.all([QUICK, FAILING].map((c) => computeCid(c)));
});

const webhooksIdOf = (key: string) => webhooks.idFromName(masterHex(apiKeyHash(key)));
const webhooksOfKey = (key: string) => webhooks.get(webhooksIdOf(key));

/** Whether the account's Webhooks object exists at all: made by the first call anyone made to it. */
async function webhooksObjectExists(key: string): Promise<boolean> {
  const id = webhooksIdOf(key).toString();
  return (await listDurableObjectIds(webhooks)).some((i) => i.toString() === id);
}

/** The Ledger's flag as stored: null (not known), 0 (nothing to tell), 1 (tell). */
const ledgerFlag = (key: string) =>
  runInDurableObject(
    ledgerOf(key),
    (_l, state) =>
      state.storage.sql.exec<{ webhooks: number | null }>("SELECT webhooks FROM account WHERE id = 1").one().webhooks,
  );

/** A run; its request id. */
async function run(key: string, code: string): Promise<string> {
  const r = await edge<{ has_error: boolean }>("sigil_action", { key, body: { code } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error).toBe(code === FAILING);
  return r.headers.get("x-request-id")!;
}

/** The body of the first event of `type` delivered to `endpoint`, once it has been (as the account's Webhooks object keeps it). */
function deliveredBody(key: string, endpoint: string, type: string): Promise<string> {
  return waitFor(`${type} delivered`, async () => {
    const page = await ok200<Delivery[]>(`webhooks/${endpoint}/deliveries`, { key });
    const d = page.find((d) => d.event_type === type && d.status === "succeeded");
    if (!d) return undefined;
    return runInDurableObject(
      webhooksOfKey(key),
      (_w, state) =>
        state.storage.sql.exec<{ body: string }>("SELECT body FROM events WHERE id = ?", d.event_id).one().body,
    );
  });
}

/** The work the edge does after an answer (waitUntil) has had time to happen. */
const settle = () => new Promise((r) => setTimeout(r, 1_000));

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Delivery = {
  event_id: string;
  event_type: string;
  status: string;
  attempts: Array<{ status_code: number | null }>;
};

/** The run.failed event of request `requestId`, once delivered to `endpoint` (2xx from the receiver). */
async function deliveredRunFailed(key: string, endpoint: string, requestId: string): Promise<Delivery> {
  return waitFor(`run.failed of ${requestId} delivered`, async () => {
    const page = await ok200<Delivery[]>(`webhooks/${endpoint}/deliveries`, { key });
    for (const d of page.filter((d) => d.event_type === "run.failed" && d.status === "succeeded")) {
      const body = await runInDurableObject(
        webhooksOfKey(key),
        (_w, state) =>
          state.storage.sql.exec<{ body: string }>("SELECT body FROM events WHERE id = ?", d.event_id).one().body,
      );
      if ((JSON.parse(body) as { data: { request_id: string } }).data.request_id === requestId) return d;
    }
    return undefined;
  });
}

const addEndpoint = (key: string) =>
  ok200<{ id: string }>("webhooks", {
    key,
    body: { url: `${inject("fetchTargetUrl")}/echo`, events: ["run.failed", "balance.low"] },
  });

describe("the Webhooks object of an account that has no webhooks", () => {
  it("is never called by its writes and runs, failed ones included; an endpoint added makes the next run's event arrive", async () => {
    const key = await newAccount("quiet", { cents: 100 });
    expect(await ledgerFlag(key)).toBe(0);
    await ok200("add_group", {
      key,
      body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids },
    });
    await run(key, QUICK);
    await run(key, FAILING);
    await run(key, QUICK);
    await settle();
    expect(await webhooksObjectExists(key), "no call made the account's Webhooks object").toBe(false);

    const { id: endpoint } = await addEndpoint(key);
    expect(await ledgerFlag(key)).toBe(1);
    const requestId = await run(key, FAILING);
    const delivery = await deliveredRunFailed(key, endpoint, requestId);
    expect(delivery.attempts[0]?.status_code).toBe(200);

    // Removed again: nothing to tell, and the calls stop (a failed run's emit would record the account id).
    await ok200(`webhooks/${endpoint}`, { key, method: "DELETE" });
    expect(await ledgerFlag(key)).toBe(0);
    await runInDurableObject(
      webhooksOfKey(key),
      (_w, state) => void state.storage.sql.exec("UPDATE settings SET account_id = NULL WHERE id = 1").toArray(),
    );
    await run(key, FAILING);
    await settle();
    expect(
      await runInDurableObject(
        webhooksOfKey(key),
        (_w, state) =>
          state.storage.sql.exec<{ account_id: string | null }>("SELECT account_id FROM settings WHERE id = 1").one()
            .account_id,
      ),
    ).toBeNull();
  });

  it("with a balance.low threshold alone is still told of every settle (the crossing is tracked); the threshold off, it is not", async () => {
    const key = await newAccount("threshold", { cents: 100 });
    await ok200("add_group", {
      key,
      body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids },
    });
    const armed = () =>
      runInDurableObject(
        webhooksOfKey(key),
        (_w, state) =>
          state.storage.sql
            .exec<{ balance_low_armed: number }>("SELECT balance_low_armed FROM settings WHERE id = 1")
            .one().balance_low_armed,
      );
    expect((await edge("webhooks/settings", { key, method: "PUT", body: { balance_low_cents: 98 } })).status).toBe(200);
    expect(await ledgerFlag(key)).toBe(1);
    expect(await armed()).toBe(1);
    // 99 → 98 → 97: the second run crosses the threshold, which the object notes (disarmed) with no endpoint to tell.
    await run(key, QUICK);
    await run(key, QUICK);
    await waitFor("the crossing noted", async () => (await armed()) === 0);
    expect((await edge("webhooks/settings", { key, method: "PUT", body: { balance_low_cents: 0 } })).status).toBe(200);
    expect(await ledgerFlag(key)).toBe(0);
  });

  it("made before the Ledger kept the flag: the first call tells the Ledger, and an endpoint it had keeps getting events", async () => {
    const forget = async (key: string) => {
      await runInDurableObject(
        ledgerOf(key),
        (_l, state) => void state.storage.sql.exec("UPDATE account SET webhooks = NULL WHERE id = 1").toArray(),
      );
      await runInDurableObject(
        webhooksOfKey(key),
        (_w, state) =>
          void state.storage.sql
            .exec("UPDATE settings SET ledger_synced = 0, account_id = NULL WHERE id = 1")
            .toArray(),
      );
    };
    // With an endpoint: the flag unknown, the run calls, its event arrives, the Ledger learns "tell".
    const hooked = await newAccount("old with endpoint", { cents: 100 });
    await ok200("add_group", {
      key: hooked,
      body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids },
    });
    const { id: endpoint } = await addEndpoint(hooked);
    await forget(hooked);
    expect(await ledgerFlag(hooked)).toBeNull();
    await deliveredRunFailed(hooked, endpoint, await run(hooked, FAILING));
    expect(await ledgerFlag(hooked)).toBe(1);

    // With nothing: the first call tells the Ledger "nothing", and the next runs make none.
    const bare = await newAccount("old without", { cents: 100 });
    await ok200("add_group", {
      key: bare,
      body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids },
    });
    expect((await edge("webhooks/settings", { key: bare, method: "PUT", body: { balance_low_cents: 0 } })).status).toBe(
      200,
    );
    await forget(bare);
    await run(bare, FAILING);
    await waitFor("the Ledger told", async () => (await ledgerFlag(bare)) === 0);
    await runInDurableObject(
      webhooksOfKey(bare),
      (_w, state) => void state.storage.sql.exec("UPDATE settings SET account_id = NULL WHERE id = 1").toArray(),
    );
    await run(bare, FAILING);
    await settle();
    expect(
      await runInDurableObject(
        webhooksOfKey(bare),
        (_w, state) =>
          state.storage.sql.exec<{ account_id: string | null }>("SELECT account_id FROM settings WHERE id = 1").one()
            .account_id,
      ),
    ).toBeNull();
  });
});

describe("guardrail.denied", () => {
  it("is delivered once for a run in which a wallet's guardrail refused a signature, listing each refusal, though the run succeeded; a run with none sends none", async () => {
    const key = await newAccount("guarded webhooks", { cents: 100 });
    const { wallet_address: wallet } = await ok200<{ wallet_address: string }>("create_wallet", { key, body: {} });
    await ok200("add_group", {
      key,
      body: { group_name: "any", group_description: "", pkp_ids_permitted: [wallet], cid_hashes_permitted: ["0"] },
    });
    const { guardrail_hash: guardrail } = await ok200<{ guardrail_hash: string }>("set_wallet_guardrail", {
      key,
      body: { wallet_address: wallet, guardrail: { version: 1, messages: { pattern: "ok*" } } },
    });
    // Registered without events: the default set has guardrail.denied.
    const { id: endpoint } = await ok200<{ id: string; events: string[] }>("webhooks", {
      key,
      body: { url: `${inject("fetchTargetUrl")}/echo` },
    });
    const digest = `0x${"9a".repeat(32)}`;
    const refused = await edge<{ has_error: boolean; response: string }>("sigil_action", {
      key,
      body: {
        code: `async function main({ wallet }) {
          await Sigil.Actions.signMessage({ pkpId: wallet, message: "ok then" });
          try { await Sigil.Actions.signDigest({ pkpId: wallet, digest: "${digest}" }); } catch (e) { return e.code; }
        }`,
        js_params: { wallet },
      },
    });
    expect(refused.body).toMatchObject({ has_error: false, response: "guardrail_denied" });
    const requestId = refused.headers.get("x-request-id");
    const body = await deliveredBody(key, endpoint, "guardrail.denied");
    expect(JSON.parse(body)).toMatchObject({
      type: "guardrail.denied",
      data: {
        request_id: requestId,
        refusals: [{ wallet: wallet.toLowerCase(), guardrail, kind: "hash", digest, rule: "raw_digests" }],
        usage_key_hash: null,
      },
    });
    // A run whose signatures the guardrail allowed: no second event.
    await edge("sigil_action", {
      key,
      body: {
        code: `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "ok again" }) }`,
        js_params: { wallet },
      },
    });
    await settle();
    const all = await ok200<Delivery[]>(`webhooks/${endpoint}/deliveries`, { key });
    expect(all.filter((d) => d.event_type === "guardrail.denied")).toHaveLength(1);
  });
});

describe("budget.exhausted", () => {
  it("is delivered at a budget's first refusal, once until room frees up, with the budget's counters", async () => {
    const key = await newAccount("budget webhooks", { cents: 100 });
    const { id: endpoint } = await ok200<{ id: string }>("webhooks", {
      key,
      body: { url: `${inject("fetchTargetUrl")}/echo` },
    });
    // An enclave's reservations, as it makes them: with the token the edge sealed into a run.
    const ref = `budget-webhook-${Date.now()}`;
    const token = await issueBudgetToken(TEST_EDGE_IDENTITY_SEED, ref, Date.now() + 60_000);
    const wallet = `0x${"ab".repeat(20)}`;
    const reserve = async (n: number) => {
      const res = await SELF.fetch("https://edge.test/internal/v1/budgets", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({
          op: "reserve",
          account: `0x${masterHex(apiKeyHash(key))}`,
          wallet,
          ref,
          digest: `0x${n.toString(16).padStart(64, "0")}`,
          value_wei: "0",
          budgets: [{ name: "one", per: "wallet", scope: "wallet", window_seconds: 3600, max_signatures: 1 }],
        }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { granted: boolean };
    };
    expect((await reserve(1)).granted).toBe(true);
    expect((await reserve(2)).granted).toBe(false);
    expect((await reserve(3)).granted).toBe(false);
    const body = await deliveredBody(key, endpoint, "budget.exhausted");
    expect(JSON.parse(body)).toMatchObject({
      type: "budget.exhausted",
      data: {
        wallet,
        budget: "one",
        request_id: ref,
        state: { name: "one", used_signatures: 1, left_signatures: 0, frees_at: expect.any(String) },
      },
    });
    await settle();
    const all = await ok200<Delivery[]>(`webhooks/${endpoint}/deliveries`, { key });
    expect(all.filter((d) => d.event_type === "budget.exhausted")).toHaveLength(1);
  });
});
