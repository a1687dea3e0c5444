// The Ledger Durable Object in workerd, called directly: holds, settles, releases and credits to
// the cent, idempotency, spend caps, expiry, concurrency; every test ends with the ledger's audit
// (the cached sum equals the sum of its entries).
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { Env } from "../env.ts";
import type { Ledger } from "./ledger.ts";

const namespace = (env as unknown as Env).LEDGER!;
let used: Array<DurableObjectStub<Ledger>> = [];
let n = 0;

/** A fresh account's ledger. */
function ledger(): DurableObjectStub<Ledger> {
  const stub = namespace.get(namespace.idFromName(`ledger-test-${Date.now()}-${n++}`));
  used.push(stub);
  return stub;
}

afterEach(async () => {
  for (const l of used) {
    const audit = await l.audit();
    expect(audit.consistent, JSON.stringify(audit)).toBe(true);
    expect(audit.freeCents).toBe(Math.max(0, audit.settledCents - audit.heldCents));
  }
  used = [];
});

describe("the ledger", () => {
  it("starts empty: nothing can be held (0 → the caller answers 402)", async () => {
    const l = ledger();
    expect(await l.balance()).toEqual({ settledCents: 0, heldCents: 0, freeCents: 0 });
    expect(await l.hold("r1", 1, 60_000)).toEqual({ granted: 0, freeCents: 0, refusedBy: "balance", webhooks: true });
  });

  it("credits once per payment intent; a second credit of the same intent adds nothing", async () => {
    const l = ledger();
    expect(await l.credit("pi_1", 500)).toEqual({ creditedCents: 500, alreadyCredited: false, freeCents: 500 });
    expect(await l.credit("pi_1", 500)).toEqual({ creditedCents: 0, alreadyCredited: true, freeCents: 500 });
    expect(await l.credit("pi_2", 250)).toMatchObject({ creditedCents: 250, freeCents: 750 });
  });

  it("a write: hold 1, settle 1 — the balance drops by exactly one cent; a second settle charges nothing more", async () => {
    const l = ledger();
    await l.credit("pi", 10);
    expect(await l.hold("w1", 1, 60_000)).toEqual({ granted: 1, freeCents: 9, webhooks: true });
    expect(await l.balance()).toEqual({ settledCents: 10, heldCents: 1, freeCents: 9 });
    expect(await l.settle("w1", 1)).toEqual({ chargedCents: 1, freeCents: 9, webhooks: true });
    expect(await l.settle("w1", 1)).toEqual({ chargedCents: 1, freeCents: 9, webhooks: true });
    expect(await l.balance()).toEqual({ settledCents: 9, heldCents: 0, freeCents: 9 });
  });

  it("a refused write: hold then release costs nothing", async () => {
    const l = ledger();
    await l.credit("pi", 3);
    await l.hold("w", 1, 60_000);
    expect(await l.release("w")).toEqual({ settledCents: 3, heldCents: 0, freeCents: 3 });
  });

  it("a run holds min(balance, max seconds) and is charged what it used, never more than it held", async () => {
    const l = ledger();
    await l.credit("pi", 20);
    expect((await l.hold("run1", 60, 120_000)).granted).toBe(20);
    // 20 s granted; the run's clock says 20.4 s (stopped a little late): charged the 20 it held.
    expect(await l.settle("run1", 21)).toEqual({ chargedCents: 20, freeCents: 0, webhooks: true });
    await l.credit("pi2", 100);
    expect((await l.hold("run2", 60, 120_000)).granted).toBe(60);
    expect(await l.settle("run2", 3)).toEqual({ chargedCents: 3, freeCents: 97, webhooks: true });
  });

  it("hold is idempotent on the request id: asking again returns the same hold, not a second one", async () => {
    const l = ledger();
    await l.credit("pi", 10);
    expect((await l.hold("same", 4, 60_000)).granted).toBe(4);
    expect((await l.hold("same", 4, 60_000)).granted).toBe(4);
    expect((await l.balance()).heldCents).toBe(4);
  });

  it("50 holds at once on credit for 20 never reserve more than 20, and the balance never goes below zero", async () => {
    const l = ledger();
    await l.credit("pi", 20);
    const holds = await Promise.all(Array.from({ length: 50 }, (_, i) => l.hold(`c${i}`, 1, 60_000)));
    expect(holds.filter((h) => h.granted === 1)).toHaveLength(20);
    await Promise.all(holds.map((h, i) => (h.granted ? l.settle(`c${i}`, 1) : l.release(`c${i}`))));
    expect(await l.balance()).toEqual({ settledCents: 0, heldCents: 0, freeCents: 0 });
  });

  it("a spend cap: a key's charges plus holds may not pass it; the account's other keys are not stopped", async () => {
    const l = ledger();
    await l.credit("pi", 100);
    const capped = { keyHash: "aa", capCents: 3 };
    expect((await l.hold("k1", 2, 60_000, capped)).granted).toBe(2);
    expect((await l.hold("k2", 5, 60_000, capped)).granted).toBe(1);
    expect(await l.hold("k3", 1, 60_000, capped)).toMatchObject({ granted: 0, refusedBy: "spend_limit" });
    await l.settle("k1", 2, capped);
    await l.release("k2");
    expect((await l.hold("k4", 5, 60_000, capped)).granted).toBe(1);
    expect((await l.hold("other", 5, 60_000, { keyHash: "bb", capCents: 0 })).granted).toBe(5);
    expect((await l.hold("master", 5, 60_000)).granted).toBe(5);
  });

  it("an expired hold nobody settled becomes a charge of its full amount, once: a late settle, a release or another look charges nothing more", async () => {
    const l = ledger();
    await l.credit("pi", 10);
    // A hold of -1 ms has expired as it is made: its request's edge never came back to settle it.
    await l.hold("gone", 4, -1);
    expect(await l.balance()).toEqual({ settledCents: 6, heldCents: 0, freeCents: 6 });
    expect(await l.balance()).toEqual({ settledCents: 6, heldCents: 0, freeCents: 6 });
    expect(await l.settle("gone", 1)).toEqual({ chargedCents: 4, freeCents: 6, webhooks: true });
    expect(await l.release("gone")).toEqual({ settledCents: 6, heldCents: 0, freeCents: 6 });
    expect(await l.settle("gone", 9)).toEqual({ chargedCents: 4, freeCents: 6, webhooks: true });
    expect((await l.audit()).entriesSumCents).toBe(6);
  });

  it("an expired hold is charged before anything else is judged: a new hold sees the credit it took, and a key's cap counts it", async () => {
    const l = ledger();
    await l.credit("pi", 10);
    const capped = { keyHash: "cc", capCents: 5 };
    await l.hold("lost", 4, -1, capped);
    expect(await l.hold("next", 50, 60_000)).toEqual({ granted: 6, freeCents: 0, webhooks: true });
    await l.release("next");
    expect((await l.hold("capped", 50, 60_000, capped)).granted).toBe(1);
    await l.release("capped");
  });

  it("a hold for a request id already charged reserves nothing new and answers what it paid (a retry under its first attempt's ref)", async () => {
    const l = ledger();
    await l.credit("pi", 5);
    await l.hold("first", 3, -1);
    expect(await l.hold("first", 3, 60_000)).toEqual({
      granted: 3,
      freeCents: 2,
      alreadyCharged: true,
      webhooks: true,
    });
    expect(await l.balance()).toEqual({ settledCents: 2, heldCents: 0, freeCents: 2 });
    expect(await l.settle("first", 1)).toEqual({ chargedCents: 3, freeCents: 2, webhooks: true });
    // A settled one too: nothing new is held when it is asked for again.
    expect((await l.hold("w", 1, 60_000)).granted).toBe(1);
    await l.settle("w", 1);
    expect(await l.hold("w", 1, 60_000)).toEqual({ granted: 1, freeCents: 1, alreadyCharged: true, webhooks: true });
    expect(await l.balance()).toEqual({ settledCents: 1, heldCents: 0, freeCents: 1 });
  });

  it("keeps the account's Stripe customer: the first one stored wins", async () => {
    const l = ledger();
    expect(await l.customer()).toBeNull();
    expect(await l.customer("cus_1")).toBe("cus_1");
    expect(await l.customer("cus_2")).toBe("cus_1");
  });

  it("keeps new_account's email for the customer; a later one replaces it", async () => {
    const l = ledger();
    expect(await l.contactEmail()).toBeNull();
    expect(await l.contactEmail("a@example.com")).toBe("a@example.com");
    expect(await l.contactEmail()).toBe("a@example.com");
    expect(await l.contactEmail("b@example.com")).toBe("b@example.com");
  });

  it("says whether the account's Webhooks object must hear of a request: yes until told otherwise; opened() makes an unknown no, never a yes", async () => {
    const said = async (l: DurableObjectStub<Ledger>, ref: string) => {
      const hold = await l.hold(ref, 1, 60_000);
      const settle = await l.settle(ref, 1);
      expect(settle.webhooks).toBe(hold.webhooks);
      return settle.webhooks;
    };
    // Not known (a ledger from before the flag, an account made outside new_account): tell.
    const old = ledger();
    await old.credit("pi_w", 10);
    expect(await said(old, "a")).toBe(true);
    expect((await old.hold("refused", 1, 60_000, { keyHash: "k", capCents: 0 })).webhooks).toBe(true);
    // A new account: nothing to hear of, also in a refusal.
    const fresh = ledger();
    await fresh.opened("new@example.com");
    expect(await fresh.contactEmail()).toBe("new@example.com");
    expect(await fresh.hold("refused", 1, 60_000)).toEqual({
      granted: 0,
      freeCents: 0,
      refusedBy: "balance",
      webhooks: false,
    });
    await fresh.credit("pi_w", 10);
    expect(await said(fresh, "a")).toBe(false);
    // The Webhooks object says what it has; opened() never overrides it.
    await fresh.setWebhooks(true);
    await fresh.opened();
    expect(await said(fresh, "b")).toBe(true);
    await fresh.setWebhooks(false);
    expect(await said(fresh, "c")).toBe(false);
    // A settle that finds its charge made already says it too.
    expect((await fresh.settle("c", 1)).webhooks).toBe(false);
  });

  it("records the usage history: each entry's kind, cents, key, particulars and the settled balance after it, newest first", async () => {
    const l = ledger();
    await l.credit("pi_a", 100);
    await l.hold("run-1", 30, 60_000, { keyHash: "k1", capCents: 0 }, { op: "run", detail: { cid: "QmRun" } });
    await l.settle(
      "run-1",
      2,
      { keyHash: "k1", capCents: 0 },
      { op: "run", detail: { duration_ms: 1500, receipt: '{"v":1}' } },
    );
    await l.hold("write-1", 1, 60_000, undefined, { op: "write", detail: { operation: "add_group" } });
    await l.settle("write-1", 1, undefined, { op: "write", detail: { transaction_hash: "0xabc" } });
    await l.hold("lost", 3, -1, { keyHash: "k2", capCents: 0 }, { op: "run", detail: { cid: "QmLost" } });
    const page = await l.usage({ limit: 10 });
    expect(page.more).toBe(false);
    expect(page.entries.map((e) => [e.op, e.kind, e.cents, e.ref, e.keyHash, e.balanceAfterCents])).toEqual([
      ["run", "charge", -3, "lost", "k2", 94],
      ["write", "charge", -1, "write-1", null, 97],
      ["run", "charge", -2, "run-1", "k1", 98],
      ["top_up", "credit", 100, "pi_a", null, 100],
    ]);
    expect(page.entries[0]?.detail).toEqual({ cid: "QmLost", hold_expired: true });
    expect(page.entries[1]?.detail).toEqual({ operation: "add_group", transaction_hash: "0xabc" });
    expect(page.entries[2]?.detail).toEqual({ cid: "QmRun", duration_ms: 1500, receipt: '{"v":1}' });
    expect(await l.keySpend(["k1", "k2", "k3"])).toEqual({ k1: 2, k2: 3, k3: 0 });
  });

  it("pages by id: a cursor keeps its place while entries arrive, and filters by time, kind and key", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    for (let i = 0; i < 25; i++) {
      await l.hold(
        `r${i}`,
        1,
        60_000,
        { keyHash: i % 2 ? "odd" : "even", capCents: 0 },
        { op: i % 5 ? "run" : "write" },
      );
      await l.settle(`r${i}`, 1);
    }
    const seen: string[] = [];
    let before: number | undefined;
    for (let page = 0; ; page++) {
      const got = await l.usage({ limit: 7, ...(before === undefined ? {} : { before }) });
      seen.push(...got.entries.map((e) => e.ref));
      // New work lands between pages: it is newer than the cursor, so no page shows it or shifts.
      await l.hold(`late${page}`, 1, 60_000);
      await l.settle(`late${page}`, 1);
      if (!got.more) break;
      before = got.entries.at(-1)?.id;
    }
    expect(seen).toEqual([...Array.from({ length: 25 }, (_, i) => `r${24 - i}`), "pi"]);
    expect((await l.usage({ limit: 100, ops: ["write"] })).entries.map((e) => e.ref)).toEqual([
      "r20",
      "r15",
      "r10",
      "r5",
      "r0",
    ]);
    expect((await l.usage({ limit: 100, keyHash: "odd", ops: ["run"] })).entries).toHaveLength(10);
    expect((await l.usage({ limit: 100, ops: ["top_up"] })).entries.map((e) => e.cents)).toEqual([1_000]);
    expect((await l.usage({ limit: 100, from: Date.now() + 60_000 })).entries).toEqual([]);
    expect((await l.usage({ limit: 100, to: 0 })).entries).toEqual([]);
  });

  it("indexes each run under the wallets its receipt says signed or read the key of: usage({ wallet }) is that wallet's history, pruned with the entries", async () => {
    const l = ledger();
    await l.credit("pi_w", 1_000);
    const A = `0x${"aa".repeat(20)}`;
    const B = `0x${"bb".repeat(20)}`;
    const wallet = (address: string, signed: number, action = false, exported = false) => ({
      address,
      action,
      signed: Array.from({ length: signed }, () => ({ kind: "message", digest: `0x${"00".repeat(32)}` })),
      key_exported: exported,
    });
    const runs: Array<[string, unknown[]]> = [
      ["both", [wallet(A, 1), wallet(B, 2)]],
      ["onlyB", [wallet(B, 1)]],
      ["usedNotSigned", [wallet(A, 0)]],
      ["keyRead", [wallet(A, 0, false, true)]],
      ["actionKey", [wallet(A, 1, true)]],
      ["upperA", [wallet(A.toUpperCase().replace("0X", "0x"), 1)]],
    ];
    for (const [ref, wallets] of runs) {
      await l.hold(ref, 1, 60_000);
      await l.settle(ref, 1, undefined, { op: "run", detail: { receipt: JSON.stringify({ wallets }) } });
    }
    await l.hold("plain", 1, 60_000);
    await l.settle("plain", 1, undefined, { op: "run", detail: { receipt: "not json" } });
    const refs = async (w: string) => (await l.usage({ limit: 100, wallet: w })).entries.map((e) => e.ref);
    // A run that read the key is the wallet's too, signing nothing here: after it the key could sign anywhere.
    expect(await refs(A)).toEqual(["upperA", "keyRead", "both"]);
    expect(await refs(B.toUpperCase().replace("0X", "0x"))).toEqual(["onlyB", "both"]);
    expect(await refs(`0x${"cc".repeat(20)}`)).toEqual([]);
    expect((await l.usage({ limit: 1, wallet: A })).more).toBe(true);
    // Pruned with the entries it points at.
    expect(await l.prune(Date.now() + 1_000 * 86_400_000)).toBeGreaterThan(0);
    expect(await refs(A)).toEqual([]);
    await l.hold("after", 1, 60_000);
    await l.settle("after", 1, undefined, {
      op: "run",
      detail: { receipt: JSON.stringify({ wallets: [wallet(A, 1)] }) },
    });
    expect(await refs(A)).toEqual(["after"]);
  });

  it("a refund takes its cents back once per refund id, and may leave the balance below zero until a top-up", async () => {
    const l = ledger();
    await l.credit("pi_r", 500);
    await l.hold("spend", 400, 60_000);
    await l.settle("spend", 400);
    expect(await l.refund("re_1", "pi_r", 500)).toEqual({ debitedCents: 500, alreadyDebited: false, freeCents: 0 });
    expect(await l.refund("re_1", "pi_r", 500)).toEqual({ debitedCents: 0, alreadyDebited: true, freeCents: 0 });
    expect(await l.balance()).toEqual({ settledCents: -400, heldCents: 0, freeCents: 0 });
    expect((await l.hold("nothing", 5, 60_000)).granted).toBe(0);
    const [refund] = (await l.usage({ limit: 1 })).entries;
    expect(refund).toMatchObject({
      op: "refund",
      kind: "adjustment",
      cents: -500,
      ref: "re_1",
      balanceAfterCents: -400,
      detail: { payment_intent: "pi_r" },
    });
    await l.credit("pi_more", 1_000);
    expect((await l.balance()).freeCents).toBe(600);
  });

  it("the retention prunes old entries into pruned_cents, keeping the balance, a key's spend and which payments were counted", async () => {
    const l = ledger();
    await l.credit("pi_old", 50);
    await l.hold("old-run", 5, 60_000, { keyHash: "kk", capCents: 8 }, { op: "run" });
    await l.settle("old-run", 5);
    const later = Date.now() + (90 * 86_400_000 + 1_000);
    expect(await l.prune(later)).toBe(2);
    expect(await l.prune(later)).toBe(0);
    expect((await l.usage({ limit: 10 })).entries).toEqual([]);
    expect(await l.balance()).toEqual({ settledCents: 45, heldCents: 0, freeCents: 45 });
    expect(await l.audit()).toMatchObject({ entriesSumCents: 0, prunedCents: 45, consistent: true });
    // The intent stays credited and the key's cap still counts what it spent before.
    expect(await l.credit("pi_old", 50)).toMatchObject({ creditedCents: 0, alreadyCredited: true });
    expect(await l.keySpend(["kk"])).toEqual({ kk: 5 });
    expect((await l.hold("capped", 10, 60_000, { keyHash: "kk", capCents: 8 })).granted).toBe(3);
    await l.release("capped");
  });

  it("arms its daily retention alarm when it wakes, and the alarm prunes and arms the next", async () => {
    const l = ledger();
    await l.credit("pi_alarm", 10);
    const alarm = () => runInDurableObject(l, (_o, state) => state.storage.getAlarm());
    const first = await alarm();
    expect(first).toBeGreaterThan(Date.now() + 86_400_000 - 60_000);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    expect(await alarm()).toBeGreaterThan(Date.now() + 86_400_000 - 60_000);
    // Nothing was old enough to prune: the credit is still in the history.
    expect((await l.usage({ limit: 10 })).entries.map((e) => e.ref)).toEqual(["pi_alarm"]);
  });
});
