// The Transactions Durable Object in workerd, called directly (docs/design/transactions.md): nonces
// handed out in order from the chain's pending count, a released nonce taken next (the gap filled), a
// reservation whose lease ran out taken again, a retried run's sends finding their records (never a
// second nonce, never a second send), a retried send of something else refused, 100 concurrent
// reservations on consecutive nonces, and the listing's filters and cursor.
import { env, runInDurableObject } from "cloudflare:test";
import { keccak256, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import type { TransactionAnswer, TransactionRecord, TransactionRequest } from "../../shared/transactions.ts";
import type { Env } from "../env.ts";
import { RESERVATION_LEASE_MS, type Transactions } from "./store.ts";

const namespace = (env as unknown as Env).TRANSACTIONS;
let n = 0;
/** A fresh account's object. */
const store = (): DurableObjectStub<Transactions> =>
  namespace.get(namespace.idFromName(`transactions-test-${Date.now()}-${n++}`));

const ACCOUNT = `0x${"11".repeat(32)}`;
const WALLET = `0x${"22".repeat(20)}`;
const OTHER = `0x${"33".repeat(20)}`;
const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const hash = (i: number) => `0x${i.toString(16).padStart(64, "0")}`;
/** Signed bytes standing for the i-th transaction sent, and their hash. */
const rawOf = (i: number) => `0x${(i + 1).toString(16).padStart(8, "0")}`;
const hashOf = (i: number) => keccak256(rawOf(i) as Hex);
/** The `sent` request of the i-th transaction. */
const sentReq = (ref: string, id: string, i: number): TransactionRequest => ({
  op: "sent",
  account: ACCOUNT,
  ref,
  id,
  hash: hashOf(i),
  raw: rawOf(i),
});

const reserve = (
  ref: string,
  index: number,
  options: { pending?: number; wallet?: string; chain?: number; payload?: number } = {},
): TransactionRequest => ({
  op: "reserve",
  account: ACCOUNT,
  ref,
  index,
  wallet: options.wallet ?? WALLET,
  chain_id: options.chain ?? 31337,
  chain_pending: options.pending ?? 0,
  payload: hash(options.payload ?? 1),
});

const record = (answer: TransactionAnswer): TransactionRecord => {
  expect(answer, JSON.stringify(answer)).toMatchObject({ ok: true });
  return (answer as Extract<TransactionAnswer, { ok: true }>).record;
};

describe("the Transactions store", () => {
  it("numbers a wallet's sends on a chain from the chain's pending count, each once; another wallet or chain counts apart", async () => {
    const s = store();
    const nonces = [];
    for (let i = 0; i < 3; i++) nonces.push(record(await s.decide(reserve(`run-${i}`, 0, { pending: 5 }), T0)).nonce);
    expect(nonces).toEqual([5, 6, 7]);
    expect(record(await s.decide(reserve("run-x", 0, { pending: 5, wallet: OTHER }), T0)).nonce).toBe(5);
    expect(record(await s.decide(reserve("run-y", 0, { pending: 0, chain: 1 }), T0)).nonce).toBe(0);
    // A chain that moved past what was handed out (the wallet sent elsewhere) is followed.
    expect(record(await s.decide(reserve("run-z", 0, { pending: 20 }), T0)).nonce).toBe(20);
  });

  it("a released nonce is the next one taken: the gap a failed send left is filled", async () => {
    const s = store();
    const a = record(await s.decide(reserve("a", 0), T0));
    const b = record(await s.decide(reserve("b", 0), T0));
    const c = record(await s.decide(reserve("c", 0), T0));
    expect([a.nonce, b.nonce, c.nonce]).toEqual([0, 1, 2]);
    const released = record(
      await s.decide({ op: "release", account: ACCOUNT, ref: "b", id: b.id, reason: "insufficient funds" }, T0 + 1),
    );
    expect(released).toMatchObject({ status: "released", last_error: "insufficient funds" });
    expect(record(await s.decide(reserve("d", 0), T0 + 2)).nonce).toBe(1);
    expect(record(await s.decide(reserve("e", 0), T0 + 3)).nonce).toBe(3);
  });

  it("a reservation neither sent nor released within its lease is taken again, and says why it was let go", async () => {
    const s = store();
    const held = record(await s.decide(reserve("dead", 0), T0));
    expect(record(await s.decide(reserve("alive", 0), T0 + RESERVATION_LEASE_MS - 1)).nonce).toBe(1);
    const again = record(await s.decide(reserve("next", 0), T0 + RESERVATION_LEASE_MS));
    expect(again.nonce).toBe(held.nonce);
    expect(await s.get(held.id)).toMatchObject({ status: "released", last_error: expect.stringMatching(/lease/) });
  });

  it("a retried run's send finds its record: the nonce it held, or the hash it sent — never a second nonce", async () => {
    const s = store();
    const first = record(await s.decide(reserve("run", 0), T0));
    expect(record(await s.decide(reserve("run", 0), T0 + 10))).toMatchObject({ id: first.id, nonce: first.nonce });
    const sent = record(await s.decide(sentReq("run", first.id, 77), T0 + 20));
    expect(sent).toMatchObject({ status: "pending", hash: hashOf(77) });
    expect(record(await s.decide(reserve("run", 0), T0 + 30))).toEqual(sent);
    // The run's second send is a transaction of its own.
    expect(record(await s.decide(reserve("run", 1), T0 + 40)).nonce).toBe(first.nonce + 1);
    // Sent again (an answer lost), the same hash is the same record.
    expect(record(await s.decide(sentReq("run", first.id, 77), T0 + 50))).toEqual(sent);
  });

  it("a retried run's held reservation whose lease ran out, and whose nonce another send took, is numbered afresh", async () => {
    const s = store();
    const first = record(await s.decide(reserve("slow", 0), T0));
    const taker = record(await s.decide(reserve("taker", 0), T0 + RESERVATION_LEASE_MS));
    expect(taker.nonce).toBe(first.nonce);
    const again = record(await s.decide(reserve("slow", 0), T0 + RESERVATION_LEASE_MS + 1));
    expect(again).toMatchObject({ id: first.id, status: "reserved", nonce: first.nonce + 1 });
  });

  it("a retried run gets a dropped transaction's record back and sends nothing: it could still be mined", async () => {
    const s = store();
    const first = record(await s.decide(reserve("run", 0), T0));
    await s.decide(sentReq("run", first.id, 1), T0 + 1);
    // The follower dropped it (the chain lost it and refused it sent again).
    await runInDurableObject(s, (_o, state) => {
      state.storage.sql.exec("UPDATE txs SET status = 'dropped' WHERE id = ?", first.id);
    });
    const again = record(await s.decide(reserve("run", 0, { pending: first.nonce }), T0 + 2));
    expect(again).toMatchObject({ id: first.id, status: "dropped", nonce: first.nonce, hash: hashOf(1) });
    // A released one, never sent, is numbered afresh as before.
    const other = record(await s.decide(reserve("other", 0), T0 + 3));
    await s.decide({ op: "release", account: ACCOUNT, ref: "other", id: other.id, reason: "refused" }, T0 + 4);
    expect(record(await s.decide(reserve("other", 0), T0 + 5))).toMatchObject({ id: other.id, status: "reserved" });
  });

  it("a retried run that sends something else at the same place is refused", async () => {
    const s = store();
    record(await s.decide(reserve("run", 0, { payload: 1 }), T0));
    const answer = await s.decide(reserve("run", 0, { payload: 2 }), T0 + 1);
    expect(answer).toMatchObject({
      ok: false,
      code: "conflict",
      reason: expect.stringMatching(/must send what it sent/),
    });
  });

  it("refuses to release what was sent, and to touch another run's transaction", async () => {
    const s = store();
    const r = record(await s.decide(reserve("run", 0), T0));
    await s.decide(sentReq("run", r.id, 5), T0 + 1);
    expect(
      await s.decide({ op: "release", account: ACCOUNT, ref: "run", id: r.id, reason: "x" }, T0 + 2),
    ).toMatchObject({
      ok: false,
      code: "conflict",
      reason: expect.stringMatching(/cannot be released/),
    });
    expect(await s.decide(sentReq("another", r.id, 6), T0 + 3)).toMatchObject({ ok: false, code: "not_found" });
    // Nothing changed: the record is pending with its hash.
    expect(await s.get(r.id)).toMatchObject({ status: "pending", hash: hashOf(5) });
  });

  it("refuses signed bytes that do not hash to the hash given", async () => {
    const s = store();
    const r = record(await s.decide(reserve("run", 0), T0));
    expect(await s.decide({ ...sentReq("run", r.id, 1), hash: hashOf(2) } as TransactionRequest, T0 + 1)).toMatchObject(
      {
        ok: false,
        code: "conflict",
      },
    );
    expect(await s.get(r.id)).toMatchObject({ status: "reserved", hash: null });
  });

  it("a speed-up holds the pending transaction's own nonce, found again by its run; only a pending one can be sped up", async () => {
    const s = store();
    const first = record(await s.decide(reserve("run", 0), T0));
    const early = await s.decide(
      { op: "replace", account: ACCOUNT, ref: "fast", index: 0, id: first.id, payload: hash(9) },
      T0 + 1,
    );
    expect(early).toMatchObject({ ok: false, code: "conflict", reason: expect.stringMatching(/is reserved/) });
    await s.decide(sentReq("run", first.id, 1), T0 + 2);
    // Any run of the account reads it with the bytes that were sent.
    expect(await s.decide({ op: "get", account: ACCOUNT, ref: "other", id: first.id }, T0 + 3)).toMatchObject({
      ok: true,
      record: { id: first.id, status: "pending" },
      raw: rawOf(1),
    });
    const replace = { op: "replace", account: ACCOUNT, ref: "fast", index: 0, id: first.id, payload: hash(9) } as const;
    const speedUp = record(await s.decide(replace, T0 + 4));
    expect(speedUp).toMatchObject({ nonce: first.nonce, status: "reserved", replaces: first.id, replaced_by: null });
    expect(record(await s.decide(replace, T0 + 5)).id).toBe(speedUp.id);
    // The nonce is held by both: the next send gets the one after.
    expect(record(await s.decide(reserve("later", 0), T0 + 6)).nonce).toBe(first.nonce + 1);
    expect(await s.decide({ ...replace, ref: "x", id: "tx_000000000000000000000000" }, T0 + 7)).toMatchObject({
      ok: false,
      code: "not_found",
    });
  });

  it("gives 100 concurrent reservations of one wallet 100 consecutive nonces", async () => {
    const s = store();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => s.decide(reserve(`r${i}`, 0, { pending: 3 }))),
    );
    const nonces = answers.map((a) => record(a).nonce).sort((x, y) => x - y);
    expect(nonces).toEqual(Array.from({ length: 100 }, (_, i) => 3 + i));
  });

  it("lists newest first, filtered by wallet, chain and status, a page at a time", async () => {
    const s = store();
    for (let i = 0; i < 5; i++) await s.decide(reserve(`w${i}`, 0), T0 + i);
    await s.decide(reserve("o", 0, { wallet: OTHER }), T0 + 10);
    const mine = await s.list({ wallet: WALLET, limit: 2 });
    expect(mine.items.map((t) => t.nonce)).toEqual([4, 3]);
    const next = await s.list({ wallet: WALLET, limit: 2, cursor: mine.next_cursor ?? "" });
    expect(next.items.map((t) => t.nonce)).toEqual([2, 1]);
    const last = await s.list({ wallet: WALLET, limit: 2, cursor: next.next_cursor ?? "" });
    expect(last).toMatchObject({ items: [expect.objectContaining({ nonce: 0 })], next_cursor: null });
    expect((await s.list({ wallet: OTHER, limit: 10 })).items).toHaveLength(1);
    expect((await s.list({ status: "pending", limit: 10 })).items).toEqual([]);
    expect((await s.list({ chain_id: 31337, status: "reserved", limit: 10 })).items).toHaveLength(6);
  });
});
