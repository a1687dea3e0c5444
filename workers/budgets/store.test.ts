// The Budgets Durable Object in workerd, called directly: reservations up to a cap and the refusal
// past it, all or nothing across budgets, a digest counted once, a peek that changes nothing, the
// rolling window (kept in buckets: an entry counts for at least window_seconds and at most a bucket
// more, and leaves when frees_at said), scopes per key counted apart, values past 2^64 summed
// exactly, budget.exhausted's notify once per exhaustion, and concurrent reservations that never
// overspend.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { BudgetAnswer, BudgetLimit, BudgetRequest } from "../../shared/guardrails/budgets.ts";
import { MAX_BUDGET_WINDOW_SECONDS } from "../../shared/guardrails/schema.ts";
import type { Env } from "../env.ts";
import type { Budgets } from "./store.ts";

const namespace = (env as unknown as Env).BUDGETS;
let n = 0;

/** A fresh wallet's store. */
const store = (): DurableObjectStub<Budgets> =>
  namespace.get(namespace.idFromName(`budgets-test-${Date.now()}-${n++}`));

const ACCOUNT = `0x${"11".repeat(32)}`;
const WALLET = `0x${"22".repeat(20)}`;
const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const ETH = 10n ** 18n;
/** The most a window may run long (docs/design/guardrails.md, Budgets: the window, in buckets): a 240th of it, at least a second. */
const bucketMs = (windowSeconds: number) => Math.max(1000, Math.ceil((windowSeconds * 1000) / 240));
/** When an entry counted at `at` in a window of `windowSeconds` leaves it, as its state says (checked to be in bounds). */
function freesAtOf(state: { frees_at: string | null } | undefined, at: number, windowSeconds: number): number {
  const freesAt = Date.parse(state?.frees_at ?? "");
  expect(freesAt).toBeGreaterThanOrEqual(at + windowSeconds * 1000);
  expect(freesAt).toBeLessThanOrEqual(at + windowSeconds * 1000 + bucketMs(windowSeconds));
  return freesAt;
}
const digest = (i: number | bigint) => `0x${BigInt(i).toString(16).padStart(64, "0")}`;

const limit = (l: Partial<BudgetLimit> & { name: string }): BudgetLimit => ({
  per: "wallet",
  scope: "wallet",
  window_seconds: 86_400,
  ...l,
});

const request = (
  budgets: BudgetLimit[],
  d: number | bigint,
  value: bigint = 0n,
  op: "reserve" | "peek" = "reserve",
): BudgetRequest => ({
  op,
  account: ACCOUNT,
  wallet: WALLET,
  ref: "req-1",
  digest: digest(d),
  value_wei: value.toString(),
  budgets,
});

type Granted = Extract<BudgetAnswer, { granted: true }>;
type Refused = Extract<BudgetAnswer, { granted: false }>;
const granted = (a: BudgetAnswer): Granted => {
  expect(a, JSON.stringify(a)).toMatchObject({ granted: true });
  return a as Granted;
};
const refused = (a: BudgetAnswer): Refused => {
  expect(a, JSON.stringify(a)).toMatchObject({ granted: false });
  return a as Refused;
};

/** The counters of `limits` at `now`, as [name, scope, used signatures, used wei]. */
async function used(s: DurableObjectStub<Budgets>, limits: BudgetLimit[], now: number) {
  const states = await s.states(limits, now);
  return states.map((st) => [st.name, st.scope, st.used_signatures, st.used_value_wei]);
}

describe("the Budgets store", () => {
  it("reserves until the value cap, exactly at it, then refuses with the numbers", async () => {
    const s = store();
    const daily = limit({ name: "daily", max_value_wei: (ETH / 2n).toString() });
    const first = granted(await s.decide(request([daily], 1, 2n * 10n ** 17n), T0));
    expect(first.repeated).toBe(false);
    expect(first.before[0]).toMatchObject({ used_value_wei: "0", used_signatures: 0, frees_at: null });
    expect(first.after[0]).toMatchObject({
      used_value_wei: "200000000000000000",
      used_signatures: 1,
      left_value_wei: "300000000000000000",
    });
    freesAtOf(first.after[0], T0, 86_400);
    granted(await s.decide(request([daily], 2, 2n * 10n ** 17n), T0 + 1000));
    // 0.4 ETH is counted: 0.1 ETH more reaches the cap exactly; then 1 wei is too much.
    granted(await s.decide(request([daily], 3, 10n ** 17n), T0 + 2000));
    const over = refused(await s.decide(request([daily], 4, 1n), T0 + 3000));
    expect(over.budget).toBe("daily");
    expect(over.reason).toBe(
      'budget "daily" allows 0.5 ETH a day; 0.5 ETH is counted and this sends 0.000000000000000001 ETH',
    );
    expect(over.observed).toBe("1 wei asked, 0 wei left");
    expect(over.before[0]).toMatchObject({
      used_value_wei: "500000000000000000",
      used_signatures: 3,
      left_value_wei: "0",
    });
    expect(await used(s, [daily], T0 + 3000)).toEqual([["daily", "wallet", 3, "500000000000000000"]]);
  });

  it("reserves until the signature cap, then refuses the next with the numbers", async () => {
    const s = store();
    const hourly = limit({ name: "hourly", window_seconds: 3600, max_signatures: 3 });
    for (let i = 0; i < 3; i++) granted(await s.decide(request([hourly], i), T0 + i));
    const over = refused(await s.decide(request([hourly], 3), T0 + 10));
    expect(over).toMatchObject({
      budget: "hourly",
      reason: 'budget "hourly" allows 3 signatures an hour, and 3 are counted',
      observed: "3 of 3 signatures used",
    });
    expect(over.before[0]).toMatchObject({ used_signatures: 3, left_signatures: 0 });
  });

  it("is all or nothing: a refusal by one budget counts nothing in the others", async () => {
    const s = store();
    const count = limit({ name: "count", max_signatures: 10 });
    const value = limit({ name: "value", max_value_wei: "100" });
    granted(await s.decide(request([count, value], 1, 60n), T0));
    const over = refused(await s.decide(request([count, value], 2, 41n), T0 + 1));
    expect(over.budget).toBe("value");
    expect(over.before.map((b) => b.used_signatures)).toEqual([1, 1]);
    expect(await used(s, [count, value], T0 + 2)).toEqual([
      ["count", "wallet", 1, "60"],
      ["value", "wallet", 1, "60"],
    ]);
    // The refused digest was not counted anywhere: sent again within the cap, it is new.
    const again = granted(await s.decide(request([count, value], 2, 40n), T0 + 3));
    expect(again.repeated).toBe(false);
    expect(await used(s, [count, value], T0 + 4)).toEqual([
      ["count", "wallet", 2, "100"],
      ["value", "wallet", 2, "100"],
    ]);
  });

  it("counts a digest once per window: the same digest again is granted, repeated, and changes no counter — even at the cap", async () => {
    const s = store();
    const one = limit({ name: "one", max_signatures: 1, max_value_wei: "10" });
    const first = granted(await s.decide(request([one], 7, 10n), T0));
    expect(first.repeated).toBe(false);
    const again = granted(await s.decide(request([one], 7, 10n), T0 + 1000));
    expect(again.repeated).toBe(true);
    expect(again.after).toEqual(again.before);
    expect(again.after[0]).toMatchObject({ used_signatures: 1, used_value_wei: "10" });
    expect(await used(s, [one], T0 + 2000)).toEqual([["one", "wallet", 1, "10"]]);
    // Another digest is another signature, which the cap refuses.
    refused(await s.decide(request([one], 8, 0n), T0 + 3000));
  });

  it("a digest counted in one budget and new to another is counted in the new one only", async () => {
    const s = store();
    const a = limit({ name: "a", max_signatures: 5 });
    const b = limit({ name: "b", max_signatures: 5 });
    granted(await s.decide(request([a], 1), T0));
    const both = granted(await s.decide(request([a, b], 1), T0 + 1));
    expect(both.repeated).toBe(false);
    expect(both.after.map((x) => x.used_signatures)).toEqual([1, 1]);
    expect(await used(s, [a, b], T0 + 2)).toEqual([
      ["a", "wallet", 1, "0"],
      ["b", "wallet", 1, "0"],
    ]);
  });

  it("a peek says what a reservation would find and changes nothing", async () => {
    const s = store();
    const two = limit({ name: "two", max_signatures: 2 });
    granted(await s.decide(request([two], 1), T0));
    const peek = granted(await s.decide(request([two], 2, 0n, "peek"), T0 + 1));
    expect(peek.before[0]?.used_signatures).toBe(1);
    expect(peek.after[0]?.used_signatures).toBe(2);
    expect(await used(s, [two], T0 + 2)).toEqual([["two", "wallet", 1, "0"]]);
    // The peeked digest was not counted: reserving it is new.
    expect(granted(await s.decide(request([two], 2), T0 + 3)).repeated).toBe(false);
    // A peek the budget refuses does not notify, and does not use up the notification.
    const peekRefused = refused(await s.decide(request([two], 3, 0n, "peek"), T0 + 4));
    expect(peekRefused.notify).toBe(false);
    expect(refused(await s.decide(request([two], 3), T0 + 5)).notify).toBe(true);
    expect(await used(s, [two], T0 + 6)).toEqual([["two", "wallet", 2, "0"]]);
  });

  it("rolls: an entry counts for at least window_seconds, at most a bucket more, and leaves when frees_at said", async () => {
    const s = store();
    const W = 60;
    const minute = limit({ name: "minute", window_seconds: W, max_signatures: 2, max_value_wei: "100" });
    // Counted mid-bucket, and 20 s later.
    const first = T0 + 500;
    const second = T0 + 20_000;
    granted(await s.decide(request([minute], 1, 30n), first));
    granted(await s.decide(request([minute], 2, 70n), second));
    const full = refused(await s.decide(request([minute], 3, 1n), T0 + 30_000));
    const freesAt = freesAtOf(full.before[0], first, W);
    // The window is never shorter than the budget says: the first entry still counts just before it ends…
    refused(await s.decide(request([minute], 3, 1n), first + W * 1000 - 1));
    // …and until frees_at; at frees_at it has left.
    refused(await s.decide(request([minute], 3, 1n), freesAt - 1));
    const after = granted(await s.decide(request([minute], 3, 30n), freesAt));
    expect(after.before[0]).toMatchObject({ used_signatures: 1, used_value_wei: "70" });
    const nextFreesAt = freesAtOf(after.before[0], second, W);
    expect(await used(s, [minute], nextFreesAt - 1)).toEqual([["minute", "wallet", 2, "100"]]);
    expect(await used(s, [minute], nextFreesAt)).toEqual([["minute", "wallet", 1, "30"]]);
    // Once every window it was counted in has passed, the first payload is new again: counted, not repeated.
    const again = granted(await s.decide(request([minute], 1, 30n), nextFreesAt));
    expect(again.repeated).toBe(false);
    expect(again.after[0]).toMatchObject({ used_signatures: 2, used_value_wei: "60" });
  });

  // Product bug (reported, minor): a grant's `after` takes `now` as the new entry's time (use.oldest
  // ?? now), but the entry counts until its bucket's end + the window, so `after.frees_at` is up to a
  // bucket earlier than the store's own next answer says (6 minutes for a day's window). Flip to `it`
  // once `after` uses the bucket's end.
  it("a grant's after.frees_at is when the store will let that entry go", async () => {
    const s = store();
    const day = limit({ name: "day", window_seconds: 86_400, max_signatures: 5 });
    const at = T0 + 1234;
    const first = granted(await s.decide(request([day], 1), at));
    const next = granted(await s.decide(request([day], 2), at + 1));
    expect(first.after[0]?.frees_at).toBe(next.before[0]?.frees_at);
  });

  it("a budget with a longer window keeps counting what a shorter one has let go", async () => {
    const s = store();
    const hour = limit({ name: "hour", window_seconds: 3600, max_signatures: 1 });
    const day = limit({ name: "day", window_seconds: 86_400, max_signatures: 2 });
    granted(await s.decide(request([hour, day], 1), T0));
    const full = refused(await s.decide(request([hour, day], 2), T0 + 1000));
    expect(full.budget).toBe("hour");
    const hourFrees = freesAtOf(full.before[0], T0, 3600);
    freesAtOf(full.before[1], T0, 86_400);
    const later = granted(await s.decide(request([hour, day], 2), hourFrees));
    expect(later.after.map((x) => x.used_signatures)).toEqual([1, 2]);
    expect(refused(await s.decide(request([hour, day], 3), hourFrees + 3600 * 1000 + bucketMs(3600))).budget).toBe(
      "day",
    );
  });

  it("keeps what the longest window needs, and drops it after, when it reserves", async () => {
    const s = store();
    const b = limit({ name: "b", window_seconds: MAX_BUDGET_WINDOW_SECONDS, max_signatures: 100 });
    granted(await s.decide(request([b], 1), T0));
    granted(await s.decide(request([b], 2), T0 + 1));
    const rows = () =>
      runInDurableObject(s, (_o, state) =>
        ["buckets", "seen"].map(
          (table) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n,
        ),
      );
    // Two signatures in one bucket: one bucket row, two digests.
    expect(await rows()).toEqual([1, 2]);
    // A reservation 30 days on still counts them, and keeps their rows.
    const month = granted(await s.decide(request([b], 3), T0 + MAX_BUDGET_WINDOW_SECONDS * 1000));
    expect(month.before[0]?.used_signatures).toBe(2);
    expect(await rows()).toEqual([2, 3]);
    // One well past every window drops everything before it.
    granted(await s.decide(request([b], 4), T0 + 100 * 86_400_000));
    expect(await rows()).toEqual([1, 1]);
  });

  it("counts per-key scopes apart; states() lists every scope of a per-key budget that has entries in its window", async () => {
    const s = store();
    const perKey = (scope: string) =>
      limit({ name: "per-key", per: "key", scope, window_seconds: 3600, max_signatures: 2 });
    const wallet = limit({ name: "all", max_signatures: 10 });
    const A = `key:0x${"aa".repeat(32)}`;
    const B = `key:0x${"bb".repeat(32)}`;
    granted(await s.decide(request([perKey(A), wallet], 1), T0));
    granted(await s.decide(request([perKey(A), wallet], 2), T0 + 1));
    refused(await s.decide(request([perKey(A), wallet], 3), T0 + 2));
    // Key B has its own two.
    granted(await s.decide(request([perKey(B), wallet], 3), T0 + 3));
    const b2 = granted(await s.decide(request([perKey(B), wallet], 4), T0 + 4));
    expect(b2.after.map((x) => [x.scope, x.used_signatures])).toEqual([
      [B, 2],
      ["wallet", 4],
    ]);
    const { scope: _scope, ...unscoped } = perKey(A);
    const states = await s.states([unscoped, wallet], T0 + 5);
    expect(states.map((st) => [st.name, st.scope, st.used_signatures, st.left_signatures])).toEqual([
      ["per-key", A, 2, 0],
      ["per-key", B, 2, 0],
      ["all", "wallet", 4, 6],
    ]);
    // A scope asked for by name; and once the window has passed, no scope of the per-key budget is listed.
    expect((await s.states([perKey(B)], T0 + 5)).map((st) => st.used_signatures)).toEqual([2]);
    const freesAt = freesAtOf(states[0], T0, 3600);
    expect(await s.states([unscoped], freesAt - 1)).toHaveLength(2);
    expect(await s.states([unscoped], freesAt)).toEqual([]);
    // The wallet scope is listed even when it is empty.
    expect(await used(s, [{ ...wallet, name: "unused" }], T0)).toEqual([["unused", "wallet", 0, "0"]]);
  });

  it("sums values above 2^64 exactly", async () => {
    const s = store();
    const big = limit({ name: "big", max_value_wei: (10n ** 40n).toString() });
    const v = 10n ** 19n + 1n; // above 2^63; three are above 2^64
    for (let i = 0; i < 3; i++) granted(await s.decide(request([big], i, v), T0 + i));
    expect(await used(s, [big], T0 + 10)).toEqual([["big", "wallet", 3, (3n * v).toString()]]);
    const huge = [2n ** 64n + 1n, 2n ** 100n + 3n, 2n ** 127n + 2n ** 96n - 1n, 2n ** 32n - 1n];
    for (const [i, h] of huge.entries()) granted(await s.decide(request([big], 100 + i, h), T0 + 20 + i));
    const total = 3n * v + huge.reduce((a, b) => a + b, 0n);
    expect(total > 2n ** 127n).toBe(true);
    expect(await used(s, [big], T0 + 30)).toEqual([["big", "wallet", 7, total.toString()]]);
    const state = (await s.states([big], T0 + 30))[0];
    expect(state?.left_value_wei).toBe((10n ** 40n - total).toString());
    // 2^128 wei or more is refused, however large the cap.
    const refusal = refused(await s.decide(request([big], 200, 2n ** 128n), T0 + 40));
    expect(refusal.budget).toBe("big");
    expect(await used(s, [big], T0 + 41)).toEqual([["big", "wallet", 7, total.toString()]]);
  });

  it("refuses a value that would pass the cap by 1 wei past 2^64", async () => {
    const s = store();
    const cap = 2n ** 65n;
    const b = limit({ name: "b", max_value_wei: cap.toString() });
    granted(await s.decide(request([b], 1, 2n ** 64n + 5n), T0));
    refused(await s.decide(request([b], 2, 2n ** 64n - 4n), T0 + 1));
    granted(await s.decide(request([b], 3, 2n ** 64n - 5n), T0 + 2));
    expect(await used(s, [b], T0 + 3)).toEqual([["b", "wallet", 2, cap.toString()]]);
  });

  // Product bug (reported): a count-only budget does not refuse a value of 2^128 wei or more
  // (budgetRefusal checks MAX_COUNTED_WEI only under max_value_wei), and limbs() keeps its value mod
  // 2^128 — the answer's `after` says one sum, the stored counters another, which a later document
  // that adds max_value_wei to the same budget name would read. Flip to `it` once fixed.
  it("a count-only budget's stored counters agree with its answer for a value of 2^128 wei or more", async () => {
    const s = store();
    const count = limit({ name: "count", max_signatures: 5 });
    const answer = await s.decide(request([count], 1, 2n ** 200n + 7n), T0);
    const stored = (await s.states([count], T0 + 1))[0]?.used_value_wei;
    expect(stored).toBe(answer.granted ? answer.after[0]?.used_value_wei : "0");
  });

  it("does not notify for a signature too large for an empty budget, nor let it hide the real exhaustion after", async () => {
    const s = store();
    const cap = limit({ name: "cap", window_seconds: 3600, max_value_wei: (10n * ETH).toString() });
    expect(refused(await s.decide(request([cap], 1, 11n * ETH), T0)).notify).toBe(false);
    granted(await s.decide(request([cap], 2, 10n * ETH), T0 + 1));
    expect(refused(await s.decide(request([cap], 3, 1n), T0 + 2)).notify).toBe(true);
  });

  it("notifies on the first refusal of an exhaustion only, and again once the window has freed room and it is exhausted anew", async () => {
    const s = store();
    const W = 3600;
    const one = limit({ name: "one", window_seconds: W, max_signatures: 1 });
    granted(await s.decide(request([one], 1), T0));
    const first = refused(await s.decide(request([one], 2), T0 + 1));
    expect(first.notify).toBe(true);
    const freesAt = freesAtOf(first.before[0], T0, W);
    expect(refused(await s.decide(request([one], 3), T0 + 2)).notify).toBe(false);
    expect(refused(await s.decide(request([one], 4), freesAt - 1)).notify).toBe(false);
    // The entry has left: room again, then exhausted again — a new notification.
    granted(await s.decide(request([one], 5), freesAt));
    expect(refused(await s.decide(request([one], 6), freesAt + 1)).notify).toBe(true);
    expect(refused(await s.decide(request([one], 7), freesAt + 2)).notify).toBe(false);
    // Another scope of the budget is exhausted on its own.
    const other = { ...one, per: "key" as const, scope: "key:0x01" };
    granted(await s.decide(request([other], 8), freesAt + 3));
    expect(refused(await s.decide(request([other], 9), freesAt + 4)).notify).toBe(true);
  });

  it("grants exactly the cap to 100 concurrent reservations of one wallet", async () => {
    const s = store();
    const cap = limit({ name: "cap", max_signatures: 37, max_value_wei: (100n * ETH).toString() });
    const now = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => s.decide(request([cap], 1000 + i, ETH), now)),
    );
    expect(answers.filter((a) => a.granted)).toHaveLength(37);
    expect(answers.filter((a) => !a.granted && a.notify)).toHaveLength(1);
    expect(await used(s, [cap], now)).toEqual([["cap", "wallet", 37, (37n * ETH).toString()]]);
  });

  it("a budget of lamports counts a request's lamports, never its wei; a budget that changes unit under its name starts afresh", async () => {
    const s = store();
    const sol = limit({ name: "spend", max_lamports: "1000" });
    const wei = limit({ name: "spend", max_value_wei: "1000" });
    const both = (d: number, valueWei: bigint, lamports: bigint) => ({
      ...request([sol], d, valueWei),
      value_lamports: lamports.toString(),
    });
    // 10^18 wei is nothing to a budget of lamports; 600 + 400 lamports fill it exactly.
    granted(await s.decide(both(1, ETH, 600n), T0));
    const full = granted(await s.decide(both(2, 0n, 400n), T0 + 1));
    expect(full.after[0]).toMatchObject({ used_lamports: "1000", left_lamports: "0", used_value_wei: "0" });
    expect(refused(await s.decide(both(3, 0n, 1n), T0 + 2))).toMatchObject({
      budget: "spend",
      observed: "1 lamports asked, 0 lamports left",
    });
    // The same name counting wei has its own counters: nothing counted in them yet.
    expect((await s.decide({ ...request([wei], 4, 1000n), value_lamports: "5" }, T0 + 3)).granted).toBe(true);
    expect(await used(s, [sol, wei], T0 + 4)).toEqual([
      ["spend", "wallet", 2, "0"],
      ["spend", "wallet", 1, "1000"],
    ]);
    expect((await s.states([sol], T0 + 4))[0]?.used_lamports).toBe("1000");
  });

  it("without `now`, counts at the present", async () => {
    const s = store();
    const b = limit({ name: "b", window_seconds: 60, max_signatures: 5 });
    const before = Date.now();
    const a = granted(await s.decide(request([b], 1)));
    const freesAt = Date.parse(a.after[0]?.frees_at ?? "");
    expect(freesAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(freesAt).toBeLessThanOrEqual(Date.now() + 60_000 + bucketMs(60));
    expect((await s.states([b]))[0]?.used_signatures).toBe(1);
  });
});
