// Metering with billing on (billing.md, Fees), through the edge in workerd against the real chain
// and enclave, every amount read back from the account's Ledger. Credit is put in the ledger
// directly here (the Stripe paths have their own tests); every test ends with the ledger's audit.
import { env, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../../shared/cid.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";
import type { Ledger } from "../../../workers/billing/ledger.ts";
import type { Env } from "../../../workers/env.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "../stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);
const namespace = (env as unknown as Env).LEDGER!;
const touched = new Set<DurableObjectStub<Ledger>>();

/** The ledger of the account whose master key is `key`. */
function ledgerOf(key: string): DurableObjectStub<Ledger> {
  const stub = namespace.get(namespace.idFromName(apiKeyHash(key).toString(16).padStart(64, "0")));
  touched.add(stub);
  return stub;
}

let topUps = 0;
async function credit(key: string, cents: number): Promise<void> {
  await ledgerOf(key).credit(`pi_test_${Date.now()}_${topUps++}`, cents);
}
const free = async (key: string) => (await ledgerOf(key).balance()).freeCents;

async function newAccount(name: string, cents = 0): Promise<string> {
  const { api_key: key } = await ok200<{ api_key: string }>("new_account", { body: { account_name: name } });
  if (cents > 0) await credit(key, cents);
  return key;
}

function charged(r: Reply<unknown>): number {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return Number(r.headers.get("x-sigil-charged-cents"));
}

afterEach(async () => {
  for (const l of touched) {
    const audit = await l.audit();
    expect(audit.consistent, JSON.stringify(audit)).toBe(true);
    expect(audit.heldCents).toBe(0);
  }
  touched.clear();
});

const QUICK = "async function main() { return 'quick' }";
const SLOW = "async function main() { console.log('started'); await new Promise((r) => setTimeout(r, 1500)); return 'slow' }";
const ENDLESS = "async function main() { console.log('working'); await new Promise((r) => setTimeout(r, 60000)); return 'never' }";
let cids: string[];

beforeAll(async () => {
  cids = await Promise.all([QUICK, SLOW, ENDLESS].map((c) => computeCid(c)));
});

async function groupFor(key: string): Promise<void> {
  await ok200("add_group", { key, body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids } });
}

describe("managed writes", () => {
  it("new_account is free; with no credit a managed write is 402 insufficient_credits and changes nothing on chain", async () => {
    const key = await newAccount("broke");
    expect(await free(key)).toBe(0);
    expectError(await edge("create_wallet", { key, method: "POST" }), 402, "insufficient_credits");
    expect((await ok200<{ items?: unknown[] }>("list_wallets", { key })).items ?? []).toHaveLength(0);
  });

  it("cost one cent each, to the cent: create_wallet, add_usage_api_key, add_group, add_action", async () => {
    const key = await newAccount("writes", 5);
    expect(charged(await edge("create_wallet", { key, method: "POST" }))).toBe(1);
    expect(charged(await edge("add_usage_api_key", { key, body: { name: "u", description: "", ...NO_PERMISSIONS } }))).toBe(1);
    expect(charged(await edge("add_group", { key, body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] } }))).toBe(1);
    expect(charged(await edge("add_action", { key, body: { action_ipfs_cid: cids[0], name: "a", description: "" } }))).toBe(1);
    expect(await free(key)).toBe(1);
    expect(charged(await edge("create_wallet", { key, method: "POST" }))).toBe(1);
    expect(await free(key)).toBe(0);
    expectError(await edge("create_wallet", { key, method: "POST" }), 402, "insufficient_credits");
  });

  it("a write the enclave refuses before sending costs nothing (its hold is released)", async () => {
    const key = await newAccount("refused", 3);
    expectError(await edge("remove_group", { key, body: { group_id: "999" } }), 404, "group_not_found");
    expect(await free(key)).toBe(3);
  });

  it("reads cost nothing", async () => {
    const key = await newAccount("reader", 2);
    await ok200("list_groups", { key });
    await ok200("list_wallets", { key });
    expect(await free(key)).toBe(2);
  });
});

describe("sigil_action", () => {
  it("with no credit is 402 insufficient_credits", async () => {
    const key = await newAccount("no runs", 1);
    await groupFor(key);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 402, "insufficient_credits");
  });

  it("costs 1 cent per started second, minimum 1: a quick run 1, a 1.5 s run 2", async () => {
    const key = await newAccount("runner", 20);
    await groupFor(key);
    const quick = await edge<{ charged_cents: number; response: string }>("sigil_action", { key, body: { code: QUICK } });
    expect(charged(quick)).toBe(1);
    expect(quick.body).toMatchObject({ response: "quick", charged_cents: 1 });
    const slow = await edge<{ charged_cents: number; duration_ms: number }>("sigil_action", { key, body: { code: SLOW } });
    expect(slow.body.duration_ms).toBeGreaterThanOrEqual(1500);
    expect(charged(slow)).toBe(Math.max(1, Math.ceil(slow.body.duration_ms / 1000)));
    expect(await free(key)).toBe(20 - 1 - 1 - charged(slow));
  });

  it("a run that outlives its credit is stopped at the granted seconds, charged exactly that, code insufficient_credits, logs kept", async () => {
    const key = await newAccount("short of credit", 1 + 2);
    await groupFor(key);
    const r = await edge<{ has_error: boolean; error: { code: string }; logs: string; charged_cents: number; duration_ms: number }>("sigil_action", { key, body: { code: ENDLESS } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ has_error: true, error: { code: "insufficient_credits" }, logs: "working\n", charged_cents: 2 });
    expect(r.body.duration_ms).toBeLessThan(3_000);
    expect(await free(key)).toBe(0);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 402, "insufficient_credits");
  });

  it("code the key may not run is 403 and costs nothing", async () => {
    const key = await newAccount("denied", 2);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 403, "permission_denied");
    expect(await free(key)).toBe(2);
  });
});

describe("spend caps", () => {
  it("a usage key's cap stops that key (402, details.spend_limit) and not the account's other keys", async () => {
    const key = await newAccount("capped", 50);
    await groupFor(key);
    const usage = (permissions: object) => ok200<{ usage_api_key: string }>("add_usage_api_key", { key, body: { name: "u", description: "", ...NO_PERMISSIONS, execute_in_groups: [0], ...permissions } });
    const capped = (await usage({ spend_limit_cents: 2 })).usage_api_key;
    const uncapped = (await usage({})).usage_api_key;
    expect(charged(await edge("sigil_action", { key: capped, body: { code: QUICK } }))).toBe(1);
    expect(charged(await edge("sigil_action", { key: capped, body: { code: QUICK } }))).toBe(1);
    const stopped = await edge<{ error: { details?: { spend_limit?: boolean } } }>("sigil_action", { key: capped, body: { code: QUICK } });
    expectError(stopped, 402, "insufficient_credits");
    expect(stopped.body.error.details?.spend_limit).toBe(true);
    expect(charged(await edge("sigil_action", { key: uncapped, body: { code: QUICK } }))).toBe(1);
    expect(charged(await edge("sigil_action", { key, body: { code: QUICK } }))).toBe(1);
    expect(await free(key)).toBe(50 - 3 - 2 - 1 - 1);
  });
});

describe("keys that may not act", () => {
  it("get the enclave's answer, 401 invalid_api_key, not a 402 for their account's empty ledger", async () => {
    const key = await newAccount("expiring", 2);
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const { usage_api_key: usage } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body: { name: "u", description: "", ...NO_PERMISSIONS, can_create_groups: true, execute_in_groups: [0], expires_at: expiresAt },
    });
    while (Date.now() / 1000 <= expiresAt + 1) await new Promise((resolve) => setTimeout(resolve, 250));
    // The chain judges expiry by its latest block: one more (paid) write mines a block past it.
    await groupFor(key);
    expect(await free(key)).toBe(0);
    expectError(await edge("add_group", { key: usage, body: { group_name: "x", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] } }), 401, "invalid_api_key");
    expectError(await edge("sigil_action", { key: usage, body: { code: QUICK } }), 401, "invalid_api_key");
    const unknown = btoa("u".repeat(32));
    expectError(await edge("create_wallet", { key: unknown, method: "POST" }), 401, "invalid_api_key");
  });
});

describe("concurrency", () => {
  it("50 runs at once on credit for 20 seconds never drive the balance below zero", async () => {
    const key = await newAccount("crowd", 1);
    await groupFor(key);
    await credit(key, 20);
    const answers = await Promise.all(Array.from({ length: 50 }, () => edge<{ charged_cents?: number }>("sigil_action", { key, body: { code: QUICK } })));
    const ok = answers.filter((a) => a.status === 200);
    const paid = ok.reduce((sum, a) => sum + Number(a.headers.get("x-sigil-charged-cents")), 0);
    for (const a of answers) expect([200, 402, 429]).toContain(a.status);
    expect(ok.length).toBeGreaterThan(0);
    expect(paid).toBeLessThanOrEqual(20);
    const balance = await ledgerOf(key).balance();
    expect(balance.freeCents).toBe(20 - paid);
    expect(balance.settledCents).toBeGreaterThanOrEqual(0);
  });
});
