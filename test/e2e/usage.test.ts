// GET /usage on the real local stack (anvil, the enclave, the edge under workerd, the Stripe
// emulator): a top-up, writes, runs (by the master key and by a usage key) and a refund each appear
// once with the right cents and the settled balance after each; their sum is the ledger's balance;
// paging by cursor while new runs land returns every event exactly once; filters, CSV, and the
// refusals (a garbled cursor, a bad filter, another key's events, a wrong key).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { createSigilClient, SigilError, topUp, verifyReceipt, type SigilClient } from "../../sdk/src/index.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message: "usage" });
}`;
const HELLO = `async function main({ n }) { return n }`;

/** A page of /usage and one event, as the SDK's types (generated from the edge's schemas) say. */
type UsagePage = Awaited<ReturnType<SigilClient["listUsage"]>>;
type UsageEvent = UsagePage["events"][number];

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let master: SigilClient;
let masterKey = "";

beforeAll(async () => {
  stack = inject("localStack");
  const created = await createSigilClient({ baseUrl: stack.origin }).newAccount({ account_name: "usage" });
  masterKey = created.api_key;
  master = createSigilClient({ baseUrl: stack.origin, apiKey: masterKey });
}, 150_000);

afterAll(async () => {});

/** GET /usage with `key` and the query `q`; the answer as it came. */
function usage(key: string, q: Record<string, string> = {}, accept = "application/json"): Promise<Response> {
  return fetch(`${stack.api}/usage?${new URLSearchParams(q)}`, { headers: { "x-api-key": key, accept } });
}

async function page(key: string, q: Record<string, string> = {}): Promise<UsagePage> {
  const res = await usage(key, q);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as UsagePage;
}

/** Every event of the account, newest first, through every page of `limit`. */
async function everything(key: string, q: Record<string, string> = {}, limit = 100): Promise<UsageEvent[]> {
  const all: UsageEvent[] = [];
  let cursor: string | null = null;
  do {
    const p: UsagePage = await page(key, { ...q, limit: String(limit), ...(cursor ? { cursor } : {}) });
    all.push(...p.events);
    cursor = p.next_cursor;
  } while (cursor);
  return all;
}

/** The Stripe emulator the stack runs, and its secret key, from the edge's env file. */
function stripeOfStack(): { base: string; secret: string } {
  const env = readFileSync(join(stack.stateDir, "dev/edge.env"), "utf8");
  const v = (name: string) => JSON.parse(new RegExp(`^${name}=(.*)$`, "m").exec(env)?.[1] ?? '""') as string;
  return { base: v("STRIPE_API_BASE"), secret: v("STRIPE_SECRET_KEY") };
}

let wallet = "";
let usageKey = "";
let usageKeyHash = "";
const requestIds: string[] = [];

describe("the usage history", () => {
  it("shows a top-up, writes, runs and a refund with their cents and the balance after each, newest first", async () => {
    const paid = await topUp(master, { amountCents: 500 });
    const created = await master.createWallet({ name: "signer", description: "" });
    wallet = created.wallet_address;
    const cid = await computeCid(SIGN);
    const group = await master.addGroup({
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: [cid, await computeCid(HELLO)],
    });
    const runRes = await fetch(`${stack.api}/sigil_action`, {
      method: "POST",
      headers: { "x-api-key": masterKey, "content-type": "application/json" },
      body: JSON.stringify({ code: SIGN, js_params: { wallet } }),
    });
    expect(runRes.status).toBe(200);
    const runRequest = runRes.headers.get("x-request-id") as string;
    const runAnswer = (await runRes.json()) as { receipt: { instance_id: string } };
    const key = await master.addUsageApiKey({
      name: "runner",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [group.group_id],
    });
    usageKey = key.usage_api_key;
    const byKey = await createSigilClient({ baseUrl: stack.origin, apiKey: usageKey }).sigilAction({
      code: SIGN,
      js_params: { wallet },
    });
    expect(byKey.has_error).toBe(false);
    // A run's charge reaches the Ledger a moment after its answer (docs/design/billing.md, Leases); a
    // read through the edge commits it, so that the refund below comes after it in the history.
    await everything(masterKey);

    // A refund of $1 from Stripe: its refund.created webhook takes the cents back.
    const stripe = stripeOfStack();
    const refund = await fetch(`${stripe.base}/v1/refunds`, {
      method: "POST",
      headers: { authorization: `Bearer ${stripe.secret}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ payment_intent: paid.paymentIntentId, amount: "100" }),
    });
    expect(refund.status).toBe(200);
    const refundId = ((await refund.json()) as { id: string }).id;
    let events: UsageEvent[] = [];
    for (let i = 0; i < 100 && !events.some((e) => e.kind === "refund"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      events = await everything(masterKey);
    }

    expect(events.map((e) => [e.kind, e.operation, e.amount_cents, e.charged_cents, e.balance_after_cents])).toEqual([
      ["refund", null, -100, 0, 395],
      ["run", null, -1, 1, 495],
      ["write", "add_usage_api_key", -1, 1, 496],
      ["run", null, -1, 1, 497],
      ["write", "add_group", -1, 1, 498],
      ["write", "create_wallet", -1, 1, 499],
      ["top_up", null, 500, 0, 500],
    ]);
    const [refunded, keyRun, keyWrite, run, groupWrite, walletWrite, topUpEvent] = events as [
      UsageEvent,
      UsageEvent,
      UsageEvent,
      UsageEvent,
      UsageEvent,
      UsageEvent,
      UsageEvent,
    ];
    expect(refunded).toMatchObject({ payment_intent: paid.paymentIntentId, key_hash: null, request_id: null });
    expect(refunded.id).not.toBe(refundId);
    expect(topUpEvent).toMatchObject({ payment_intent: paid.paymentIntentId, key_hash: null });
    expect(run).toMatchObject({ cid, request_id: runRequest, key_hash: null, error_code: null, hold_expired: false });
    expect(run.duration_ms).toBeGreaterThanOrEqual(0);
    // The run's signed receipt is kept with it, byte for byte the answer's, and still verifies.
    expect(run.receipt).toEqual(runAnswer.receipt);
    const receiptKey = await master.getReceiptKey({ instance: runAnswer.receipt.instance_id });
    expect(run.receipt).not.toBeNull();
    expect((await verifyReceipt(run.receipt!, receiptKey)).ok).toBe(true);
    expect(walletWrite.receipt).toBeNull();
    usageKeyHash = keyRun.key_hash as string;
    expect(usageKeyHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(keyRun.cid).toBe(cid);
    expect(walletWrite.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(groupWrite.transaction_hash).toBe(group.transaction_hash);
    expect(keyWrite.transaction_hash).toBe(key.transaction_hash);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(Date.parse(events[0]!.time)).toBeGreaterThanOrEqual(Date.parse(events.at(-1)!.time));
    requestIds.push(runRequest);

    // The events add up to the balance the ledger keeps, and the key's spend to what it was charged.
    expect(events.reduce((sum, e) => sum + e.amount_cents, 0)).toBe((await master.getBalance()).balance_cents);
    const keys = await master.listApiKeys();
    expect(keys.find((k) => k.id === usageKeyHash)).toMatchObject({ spent_cents: 1 });
  });

  it("pages by cursor: 250 events paged 17 at a time while new runs land, each exactly once", async () => {
    // Each run holds its longest time's cents while it runs: ten at once need more than $3.95.
    await topUp(master, { amountCents: 5_000 });
    const run = (n: number) => master.sigilAction({ code: HELLO, js_params: { n } });
    for (let i = 0; i < 250; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) => run(i + j)));
    const before = await everything(masterKey);
    expect(before.length).toBe(258);

    const paged: UsageEvent[] = [];
    let cursor: string | null = null;
    let n = 1000;
    do {
      const p: UsagePage = await page(masterKey, { limit: "17", ...(cursor ? { cursor } : {}) });
      paged.push(...p.events);
      cursor = p.next_cursor;
      await run(n++); // lands newer than the cursor: no later page shows it or shifts
    } while (cursor);
    expect(paged.map((e) => e.id)).toEqual(before.map((e) => e.id));
    // The sum of the charges of one page is what the ledger took for those runs: 1 cent each.
    const first = (await page(masterKey, { limit: "40", kind: "run" })).events;
    expect(first.reduce((s, e) => s + e.charged_cents, 0)).toBe(40);
    const all = await everything(masterKey);
    expect(all.reduce((sum, e) => sum + e.amount_cents, 0)).toBe((await master.getBalance()).balance_cents);
  });

  it("filters by kind, key and time, and answers CSV for Accept: text/csv", async () => {
    expect((await everything(masterKey, { kind: "write" })).map((e) => e.operation)).toEqual([
      "add_usage_api_key",
      "add_group",
      "create_wallet",
    ]);
    expect((await everything(masterKey, { kind: "top_up,refund" })).map((e) => e.kind)).toEqual([
      "top_up",
      "refund",
      "top_up",
    ]);
    expect((await everything(masterKey, { key_hash: usageKeyHash })).map((e) => e.kind)).toEqual(["run"]);
    expect(await everything(masterKey, { from: String(Math.floor(Date.now() / 1000) + 3600) })).toEqual([]);
    expect(await everything(masterKey, { to: "2000-01-01T00:00:00Z" })).toEqual([]);
    expect((await everything(masterKey, { from: "2000-01-01T00:00:00Z" })).length).toBeGreaterThan(250);

    const csv = await usage(masterKey, { limit: "3", kind: "write" }, "text/csv");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe(
      "id,time,kind,key_hash,cid,operation,duration_ms,amount_cents,charged_cents,balance_after_cents,request_id,transaction_hash,payment_intent,error_code,hold_expired,delegated_key",
    );
    expect(lines.slice(1).map((l) => l.split(",")[5])).toEqual(["add_usage_api_key", "add_group", "create_wallet"]);
    expect(csv.headers.get("x-next-cursor")).toBeNull();
    const paged = await usage(masterKey, { limit: "1", kind: "write" }, "text/csv");
    expect(paged.headers.get("x-next-cursor")).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("a usage key sees only its own events; the SDK reads the same page", async () => {
    expect((await everything(usageKey)).map((e) => [e.kind, e.key_hash])).toEqual([["run", usageKeyHash]]);
    const other = await usage(usageKey, { key_hash: `0x${"ab".repeat(32)}` });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("permission_denied");
    const viaSdk = await master.listUsage({ limit: 2 });
    expect(viaSdk.events.map((e) => e.id)).toEqual((await page(masterKey, { limit: "2" })).events.map((e) => e.id));
    // client.all.listUsage follows next_cursor to the last page.
    const writes: string[] = [];
    for await (const e of master.all.listUsage({ kind: "write", limit: 1 })) writes.push(e.operation ?? "");
    expect(writes).toEqual(["add_usage_api_key", "add_group", "create_wallet"]);
  });

  it("refuses a cursor no page gave, bad filters and a wrong key, with their codes", async () => {
    const code = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string } }).error.code];
    expect(await code(await usage(masterKey, { cursor: "not-a-cursor" }))).toEqual([400, "invalid_cursor"]);
    expect(await code(await usage(masterKey, { cursor: btoa("u1.0") }))).toEqual([400, "invalid_cursor"]);
    expect(await code(await usage(masterKey, { limit: "0" }))).toEqual([400, "invalid_request"]);
    expect(await code(await usage(masterKey, { limit: "101" }))).toEqual([400, "invalid_request"]);
    expect(await code(await usage(masterKey, { kind: "run,bogus" }))).toEqual([400, "invalid_request"]);
    expect(await code(await usage(masterKey, { from: "yesterday" }))).toEqual([400, "invalid_request"]);
    expect(await code(await usage(masterKey, { key_hash: "0x12" }))).toEqual([400, "invalid_request"]);
    expect(await code(await usage(btoa("k".repeat(32))))).toEqual([401, "invalid_api_key"]);
    await expect(
      createSigilClient({ baseUrl: stack.origin, apiKey: btoa("k".repeat(32)) }).listUsage({}),
    ).rejects.toBeInstanceOf(SigilError);
  });
});
