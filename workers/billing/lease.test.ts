// Credit leases (docs/design/billing.md, Leases), in workerd against the real Ledger object: what the
// Ledger grants, keeps and charges for a lease, what happens to a lease whose isolate dies, and an
// isolate's CreditLease holding and settling runs with one Ledger call for many. Every test ends with
// the ledger's audit and its tables read back: the cached sum equals the entries, nothing is left
// held, no run is left open.
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { Env } from "../env.ts";
import { COMMIT_DELAY_MS, CreditLease, type LeaseLedger } from "./lease.ts";
import { LEDGER_COMMITS_PER_SECOND, type Ledger } from "./ledger.ts";
import type { LeaseCommit } from "./ledgerTypes.ts";

const namespace = (env as unknown as Env).LEDGER!;
let used: Array<DurableObjectStub<Ledger>> = [];
let n = 0;

function ledger(): DurableObjectStub<Ledger> {
  const stub = namespace.get(namespace.idFromName(`lease-test-${Date.now()}-${n++}`));
  used.push(stub);
  return stub;
}

/** The lease tables as stored, read inside the object. */
function tables(stub: DurableObjectStub<Ledger>) {
  return runInDurableObject(stub, (_l: unknown, state: DurableObjectState) => {
    const rows = (q: string) => state.storage.sql.exec(q).toArray();
    return {
      leases: rows("SELECT id, key_hash, cents, in_flight FROM leases"),
      open: rows("SELECT ref, lease_id, cents, op FROM lease_open"),
      charges: rows("SELECT ref, cents, op, detail FROM entries WHERE kind = 'charge' ORDER BY id") as Array<{
        ref: string;
        cents: number;
        op: string;
        detail: string | null;
      }>,
    };
  });
}

afterEach(async () => {
  for (const l of used) {
    const audit = await l.audit();
    expect(audit.consistent, JSON.stringify(audit)).toBe(true);
    expect(audit.freeCents).toBe(Math.max(0, audit.settledCents - audit.heldCents));
  }
  used = [];
});

const commit = (c: Partial<LeaseCommit>): LeaseCommit => ({
  charges: [],
  opened: [],
  closed: [],
  returnCents: 0,
  inFlightCents: 0,
  ttlMs: 60_000,
  ...c,
});

describe("the Ledger's leases", () => {
  it("grant a run's need plus at most a quarter of what is left beyond it; leased credit is spent for everyone else, and shown free but for the runs in flight", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    // Need 60, up to 240 more: a quarter of the 940 left beyond the need is 235.
    expect(await l.lease("a", 60, 240, 60_000)).toEqual({
      granted: 295,
      leaseCents: 295,
      freeCents: 940,
      webhooks: true,
    });
    expect(await l.balance()).toEqual({ settledCents: 1_000, heldCents: 60, freeCents: 940 });
    // Another isolate's lease and a write's hold see only what no lease holds (705).
    expect((await l.lease("b", 800, 0, 60_000)).granted).toBe(705);
    expect((await l.hold("w", 1, 60_000)).granted).toBe(0);
    // Leases given back: the credit is anyone's again.
    await l.commit("a", commit({ returnCents: 295 }));
    await l.commit("b", commit({ returnCents: 705 }));
    expect((await tables(l)).leases).toEqual([]);
    expect((await l.hold("w", 1, 60_000)).granted).toBe(1);
    await l.release("w");
  });

  it("a commit charges each run once under its ref, takes what it charged and gave back out of the lease, and closes a lease left empty", async () => {
    const l = ledger();
    await l.credit("pi", 500);
    await l.lease("a", 120, 0, 60_000);
    const r = await l.commit(
      "a",
      commit({
        charges: [
          { ref: "run-1", cents: 2, op: "run", detail: { cid: "Qm1" } },
          { ref: "run-2", cents: 1, op: "run", detail: { cid: "Qm2" } },
        ],
        returnCents: 50,
        inFlightCents: 60,
      }),
    );
    expect(r).toEqual({ charged: [2, 1], takenCents: 53, paceMs: 2, leaseCents: 67, freeCents: 437, webhooks: true });
    expect(await l.balance()).toEqual({ settledCents: 497, heldCents: 60, freeCents: 437 });
    // The same ref again (a retry's commit) charges nothing more and answers the charge there is.
    const again = await l.commit(
      "a",
      commit({ charges: [{ ref: "run-1", cents: 5, op: "run", detail: {} }], returnCents: 62 }),
    );
    expect(again.charged).toEqual([2]);
    expect(again.leaseCents).toBe(0);
    const t = await tables(l);
    expect(t.leases).toEqual([]);
    expect(t.charges.map((c) => [c.ref, c.cents, c.op])).toEqual([
      ["run-1", -2, "run"],
      ["run-2", -1, "run"],
    ]);
    expect(JSON.parse(t.charges[0]!.detail!)).toEqual({ cid: "Qm1" });
  });

  it("a key's lease never takes it past its cap, however many isolates lease for it", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const key = { keyHash: "k1", capCents: 100 };
    expect((await l.lease("a", 60, 240, 60_000, key)).granted).toBe(70); // 60 + a quarter of the 40 left
    expect((await l.lease("b", 60, 240, 60_000, key)).granted).toBe(30);
    expect(await l.lease("c", 60, 240, 60_000, key)).toMatchObject({ granted: 0, refusedBy: "spend_limit" });
    // The account's other keys are not stopped.
    expect((await l.lease("d", 60, 0, 60_000)).granted).toBe(60);
    for (const id of ["a", "b", "d"]) await l.commit(id, commit({ returnCents: 1_000 }));
  });

  it("an isolate that dies: its runs in flight are charged in full under their own refs when the lease expires, the rest of its credit is free again, and the lease id is not used again", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    await l.lease("dead", 200, 0, 100);
    // Its last commit told the Ledger of two runs in flight, one of which ended without a charge.
    await l.commit(
      "dead",
      commit({
        opened: [
          { ref: "in-flight", cents: 60, op: "run", detail: { cid: "QmA" } },
          { ref: "refused", cents: 60, op: "run" },
        ],
        inFlightCents: 120,
        ttlMs: 0,
      }),
    );
    await l.commit("dead", commit({ closed: ["refused"], inFlightCents: 60, ttlMs: 0 }));
    // Its isolate commits no more, and the lease expires: the next look charges the run in flight, 60, and frees the rest.
    await new Promise((r) => setTimeout(r, 120));
    expect(await l.balance()).toEqual({ settledCents: 940, heldCents: 0, freeCents: 940 });
    const t = await tables(l);
    expect(t.leases).toEqual([]);
    expect(t.open).toEqual([]);
    expect(t.charges.map((c) => [c.ref, c.cents])).toEqual([["in-flight", -60]]);
    expect(JSON.parse(t.charges[0]!.detail!)).toEqual({ cid: "QmA", hold_expired: true });
    // A late lease request under that id is told it expired; a late commit still makes its charges, once per ref.
    expect(await l.lease("dead", 60, 0, 60_000)).toMatchObject({ granted: 0, expired: true });
    const late = await l.commit(
      "dead",
      commit({
        charges: [
          { ref: "in-flight", cents: 1, op: "run", detail: {} },
          { ref: "late", cents: 2, op: "run", detail: {} },
        ],
      }),
    );
    expect(late).toMatchObject({ charged: [60, 2], expired: true });
    expect((await l.balance()).settledCents).toBe(938);
  });

  it("a run told at a lease's ask and retried through another isolate is charged once: the dead lease shows it held no more, and its expiry does not charge it", async () => {
    const l = ledger();
    await l.credit("pi", 500);
    await l.lease("dead", 1, 0, 100, undefined, {
      ref: "write-1",
      cents: 1,
      op: "write",
      detail: { operation: "add_group" },
    });
    expect(await l.balance()).toEqual({ settledCents: 500, heldCents: 1, freeCents: 499 });
    // The retry's isolate tells of it at its own ask, then charges it.
    await l.lease("alive", 1, 0, 60_000, undefined, { ref: "write-1", cents: 1, op: "write" });
    expect(await l.balance()).toEqual({ settledCents: 500, heldCents: 1, freeCents: 499 });
    await l.commit("alive", commit({ charges: [{ ref: "write-1", cents: 1, op: "write", detail: {} }] }));
    expect(await l.balance()).toEqual({ settledCents: 499, heldCents: 0, freeCents: 499 });
    await new Promise((r) => setTimeout(r, 120));
    expect(await l.balance()).toEqual({ settledCents: 499, heldCents: 0, freeCents: 499 });
    expect((await tables(l)).charges.map((c) => [c.ref, c.cents, c.op])).toEqual([["write-1", -1, "write"]]);
  });

  it("a release by ref frees a dead lease's run too (write_outcome_unknown): shown held no more, and its expiry charges nothing", async () => {
    const l = ledger();
    await l.credit("pi", 500);
    await l.lease("dead", 1, 0, 100, undefined, { ref: "write-lost", cents: 1, op: "write" });
    expect((await l.balance()).heldCents).toBe(1);
    expect(await l.release("write-lost")).toEqual({ settledCents: 500, heldCents: 0, freeCents: 500 });
    await new Promise((r) => setTimeout(r, 120));
    expect(await l.balance()).toEqual({ settledCents: 500, heldCents: 0, freeCents: 500 });
    expect((await tables(l)).charges).toEqual([]);
  });
});

describe("the Ledger's pace", () => {
  it("asks each isolate to gather its charges longer the more leases the account has, so that their commits together stay near LEDGER_COMMITS_PER_SECOND; a second at most", async () => {
    const l = ledger();
    await l.credit("pi", 1_000_000);
    const paceWith = async (leases: number) => {
      for (let i = 0; i < leases; i++) await l.lease(`isolate-${leases}-${i}`, 1, 0, 60_000);
      return (await l.commit(`isolate-${leases}-0`, commit({}))).paceMs;
    };
    expect(await paceWith(1)).toBe(Math.floor(1_000 / LEDGER_COMMITS_PER_SECOND));
    // 1 + 100 leases live now: 101 isolates' commits, each every 202 ms, are 500 a second.
    expect(await paceWith(100)).toBe(Math.floor((101 * 1_000) / LEDGER_COMMITS_PER_SECOND));
    expect(await paceWith(600)).toBe(1_000);
    // 701 leases, each a transaction: under the whole suite's load that is seconds, not the default 5.
  }, 30_000);
});

describe("the enclaves' settlements of runs (settleRuns)", () => {
  const receipt = (ref: string) => ({ cid: "QmS", duration_ms: 12, receipt: JSON.stringify({ request_id: ref }) });

  it("charge a run no commit charged, once, out of its lease; say which are missing without their detail; leave a committed run as it is", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    // The isolate leased for two runs and told of one in flight; it committed one, then died.
    await l.lease("dead", 60, 60, 60_000, undefined, { ref: "told", cents: 60, op: "run" });
    await l.commit("dead", commit({ charges: [{ ref: "done", cents: 1, op: "run", detail: {} }], inFlightCents: 60 }));
    const before = (await tables(l)).leases[0] as { cents: number };
    // The charges alone: the committed run is left alone, the others are missing.
    expect(
      await l.settleRuns([
        { ref: "done", cents: 1, keyHash: null, leaseId: "dead" },
        { ref: "told", cents: 2, keyHash: null, leaseId: "dead" },
        { ref: "untold", cents: 1, keyHash: null, leaseId: "dead" },
      ]),
    ).toEqual({ charged: 0, missing: ["told", "untold"] });
    // With their detail: charged, out of the lease, no longer in flight.
    expect(
      await l.settleRuns([
        { ref: "told", cents: 2, keyHash: null, leaseId: "dead", detail: receipt("told") },
        { ref: "untold", cents: 1, keyHash: null, leaseId: "dead", detail: receipt("untold") },
      ]),
    ).toEqual({ charged: 2, missing: [] });
    let t = await tables(l);
    expect(t.open).toEqual([]);
    expect((t.leases[0] as { cents: number }).cents).toBe(before.cents - 3);
    expect(t.charges.map((c) => [c.ref, c.cents])).toEqual([
      ["done", -1],
      ["told", -2],
      ["untold", -1],
    ]);
    expect(JSON.parse(t.charges[1]!.detail!)).toEqual({ ...receipt("told"), settled_by_enclave: true });
    // Sent again: nothing more.
    expect(await l.settleRuns([{ ref: "told", cents: 2, keyHash: null, detail: receipt("told") }])).toEqual({
      charged: 0,
      missing: [],
    });
    // Nothing held for the dead lease's runs any more (so its expiry charges none of them in full);
    // the rest of its credit is free again when it expires.
    expect(await l.balance()).toEqual({ settledCents: 996, heldCents: 0, freeCents: 996 });
    t = await tables(l);
    expect(t.leases).toEqual([expect.objectContaining({ id: "dead", in_flight: 0 })]);
  });

  it("a run settled by its enclave before its live isolate commits it: the commit charges nothing more, and the isolate's count of its lease matches the Ledger's", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const { ledger: via } = counted(l);
    const lease = new CreditLease(undefined);
    await lease.hold(via, "slow", 60, 60_000, { op: "run" });
    await lease.hold(via, "freed", 60, 60_000, { op: "run" });
    // The enclave settles both first: "slow" ended and its edge has not committed yet; "freed" ran,
    // but its edge never got the answer and frees its hold.
    await l.settleRuns([
      { ref: "slow", cents: 3, keyHash: null, leaseId: lease.id, detail: receipt("slow") },
      { ref: "freed", cents: 2, keyHash: null, leaseId: lease.id, detail: receipt("freed") },
    ]);
    const s = lease.settle(via, "slow", 3, { op: "run" });
    lease.release(via, "freed");
    expect((await s.committed()).chargedCents).toBe(3);
    await lease.flush(via);
    const t = await tables(l);
    expect(t.charges.map((c) => [c.ref, c.cents])).toEqual([
      ["slow", -3],
      ["freed", -2],
    ]);
    const row = t.leases[0] as { cents: number } | undefined;
    expect(lease.leased).toBe(row?.cents ?? 0);
    expect(await l.balance()).toEqual({ settledCents: 995, heldCents: 0, freeCents: 995 });
    // Given back whole: the Ledger and the isolate agree there is nothing left.
    const had = lease.leased > 0;
    expect(await lease.giveBack(via)).toBe(had);
    expect((await tables(l)).leases).toEqual([]);
    expect(lease.leased).toBe(0);
  });
});

describe("waiting for a charge's commit", () => {
  it("committed() waits for the scheduled commit and makes none sooner (the charge goes with its batch); committed(true) commits at once", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const { ledger: via, calls } = counted(l);
    const lease = new CreditLease(undefined);
    lease.commitDelayMs = 300;
    for (const ref of ["a", "b", "c"]) await lease.hold(via, ref, 60, 60_000, { op: "run" });
    let done = false;
    const waiting = lease
      .settle(via, "a", 1, { op: "run" })
      .committed()
      .then(() => {
        done = true;
      });
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.commit).toBe(0);
    expect(done).toBe(false);
    lease.settle(via, "b", 1, { op: "run" });
    await waiting;
    // One commit for both: the wait joined the batch.
    expect(calls.commit).toBe(1);
    await lease.settle(via, "c", 1, { op: "run" }).committed(true);
    expect(calls.commit).toBe(2);
    expect((await l.balance()).settledCents).toBe(997);
  });
});

describe("a release while a commit is under way", () => {
  it("the commit tells the Ledger the run is in flight; the release that came meanwhile still closes it, so the lease's expiry charges nothing", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    let open: (() => void) | undefined;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const { ledger: plain } = counted(l);
    let first = true;
    const via: LeaseLedger = {
      lease: plain.lease,
      commit: async (...args) => {
        // The first commit reaches the Ledger only once the release has happened.
        if (first) {
          first = false;
          await gate;
        }
        return plain.commit(...args);
      },
    };
    const lease = new CreditLease(undefined);
    lease.commitDelayMs = 60_000;
    await lease.hold(via, "a", 60, 60_000, { op: "run" });
    await lease.hold(via, "b", 60, 60_000, { op: "run" });
    const a = lease.settle(via, "a", 1, { op: "run" }).committed(true);
    // The commit of "a" is under way, telling the Ledger "b" is in flight; "b" is freed now.
    lease.release(via, "b");
    open?.();
    await a;
    await lease.flush(via);
    expect((await tables(l)).open).toEqual([]);
    expect(await l.balance()).toMatchObject({ settledCents: 999, heldCents: 0 });
  });
});

describe("an isolate's CreditLease answering before its commit", () => {
  it("a run's settle calls nothing; its charge and those made within COMMIT_DELAY_MS go in one commit after; a read through flush sees them", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const { ledger: via, calls } = counted(l);
    const lease = new CreditLease(undefined);
    // Long enough that nothing commits on its own while the test looks (a loaded machine is slow).
    lease.commitDelayMs = 60_000;
    for (const ref of ["a", "b", "c"]) await lease.hold(via, ref, 60, 60_000, { op: "run" });
    const asked = calls.lease;
    const settled = ["a", "b", "c"].map((ref) => lease.settle(via, ref, 1, { op: "run" }));
    expect(settled.map((x) => x.chargedCents)).toEqual([1, 1, 1]);
    expect(calls.commit).toBe(0);
    expect((await tables(l)).charges).toEqual([]);
    await lease.flush(via);
    expect(calls.commit).toBe(1);
    expect(calls.lease).toBe(asked);
    expect((await tables(l)).charges.map((c) => c.ref)).toEqual(["a", "b", "c"]);
    // Unflushed, the scheduled commit comes by itself (the one scheduled before now waits out its
    // minute, and commits nothing: this one took its charge).
    const fresh = new CreditLease(undefined);
    expect(fresh.commitDelayMs).toBe(COMMIT_DELAY_MS);
    fresh.commitDelayMs = 20;
    await fresh.hold(via, "d", 60, 60_000, { op: "run" });
    const before = calls.commit;
    fresh.settle(via, "d", 2, { op: "run" });
    expect(calls.commit).toBe(before);
    for (let i = 0; calls.commit === before; i++) {
      expect(i, "the scheduled commit never came").toBeLessThan(500);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await l.balance()).settledCents).toBe(995);
  });
});

/** The Ledger stub as a lease sees it, counting its calls and failing the commits `failCommits` says. */
function counted(stub: DurableObjectStub<Ledger>, failCommits = () => false) {
  const calls = { lease: 0, commit: 0 };
  const ledger: LeaseLedger = {
    lease: (...args) => {
      calls.lease++;
      return stub.lease(...args);
    },
    commit: async (...args) => {
      calls.commit++;
      if (failCommits()) throw new Error("the Ledger is unreachable");
      return stub.commit(...args);
    },
  };
  return { ledger, calls };
}

describe("an isolate's CreditLease", () => {
  it("holds and settles 100 concurrent runs with far fewer Ledger calls than runs (a few lease calls for the burst, commits grouped), each charged once, the account's sum exact", async () => {
    const l = ledger();
    await l.credit("pi", 10_000);
    const { ledger: via, calls } = counted(l);
    const lease = new CreditLease(undefined);
    const holds = await Promise.all(
      Array.from({ length: 100 }, (_, i) => lease.hold(via, `r${i}`, 60, 60_000, { op: "run", detail: { cid: "Qm" } })),
    );
    expect(holds.every((h) => h.granted === 60)).toBe(true);
    // They end together: each is answered at once, and their charges go in the commits that follow.
    const settled = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        lease.settle(via, `r${i}`, 1 + (i % 3), { op: "run", detail: { duration_ms: i } }).committed(),
      ),
    );
    expect(settled.map((s) => s.chargedCents)).toEqual(Array.from({ length: 100 }, (_, i) => 1 + (i % 3)));
    const total = settled.reduce((t, s) => t + s.chargedCents, 0);
    // The Ledger grants at most a quarter of what is left beyond a need, so a burst takes a few asks.
    expect(calls.lease).toBeLessThanOrEqual(8);
    expect(calls.commit).toBeLessThanOrEqual(3);
    const t = await tables(l);
    expect(t.charges).toHaveLength(100);
    expect(t.open).toEqual([]);
    expect(await l.balance()).toMatchObject({ settledCents: 10_000 - total, heldCents: 0 });
    // The detail given at the hold and at the settle are both kept.
    expect(JSON.parse(t.charges[0]!.detail!)).toMatchObject({ cid: "Qm", duration_ms: expect.any(Number) });
  });

  it("never lets its runs hold more than the account has: on credit for 3 runs, the 4th is refused, and after the others end the credit is held again", async () => {
    const l = ledger();
    await l.credit("pi", 180);
    const { ledger: via } = counted(l);
    const lease = new CreditLease(undefined);
    const holds = await Promise.all([0, 1, 2, 3].map((i) => lease.hold(via, `h${i}`, 60, 60_000, { op: "run" })));
    expect(holds.map((h) => h.granted).sort()).toEqual([0, 60, 60, 60]);
    const refusedAt = holds.findIndex((h) => h.granted === 0);
    expect(holds[refusedAt]).toMatchObject({ refusedBy: "balance" });
    for (const [i, h] of holds.entries())
      if (h.granted > 0) await lease.settle(via, `h${i}`, 1, { op: "run" }).committed();
    expect((await lease.hold(via, "after", 60, 60_000, { op: "run" })).granted).toBe(60);
    lease.release(via, "after");
    await lease.flush(via);
    expect((await l.balance()).settledCents).toBe(177);
  });

  it("a commit that fails leaves its charge pending: the run is answered all the same, whoever waits on its commit is told the error after three tries, and the next commit makes the charge, once", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    let failing = true;
    const { ledger: via } = counted(l, () => failing);
    const lease = new CreditLease(undefined);
    await lease.hold(via, "a", 60, 60_000, { op: "run" });
    const a = lease.settle(via, "a", 2, { op: "run" });
    expect(a.chargedCents).toBe(2);
    await expect(a.committed()).rejects.toThrow("the Ledger is unreachable");
    expect((await tables(l)).charges).toEqual([]);
    failing = false;
    await lease.hold(via, "b", 60, 60_000, { op: "run" });
    expect((await lease.settle(via, "b", 1, { op: "run" }).committed()).chargedCents).toBe(1);
    expect((await tables(l)).charges.map((c) => [c.ref, c.cents])).toEqual([
      ["a", -2],
      ["b", -1],
    ]);
  });

  it("tells the Ledger of a run in flight at a commit (so a dead isolate's run is charged), and of its release (so it is not)", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const { ledger: via } = counted(l);
    const lease = new CreditLease(undefined);
    await lease.hold(via, "long", 60, 60_000, { op: "run", detail: { cid: "QmLong" } });
    await lease.hold(via, "short", 60, 60_000, { op: "run" });
    await lease.settle(via, "short", 1, { op: "run" }).committed();
    expect((await tables(l)).open).toEqual([{ ref: "long", lease_id: lease.id, cents: 60, op: "run" }]);
    expect((await l.balance()).heldCents).toBe(60);
    lease.release(via, "long");
    await lease.flush(via);
    expect((await tables(l)).open).toEqual([]);
    expect((await l.balance()).heldCents).toBe(0);
  });

  it("a key's cap lowered on chain stops the key at its next hold: what the lease held under the old cap is given back and asked for again under the new one", async () => {
    const l = ledger();
    await l.credit("pi", 10_000);
    const { ledger: via } = counted(l);
    const lease = new CreditLease({ keyHash: "capped", capCents: 1_000 });
    await lease.hold(via, "a", 60, 60_000, { op: "run" });
    await lease.settle(via, "a", 5, { op: "run" }).committed();
    // The lease keeps credit for the runs to come, granted under a cap of 1 000.
    expect(lease.leased).toBeGreaterThan(60);
    lease.capChanged({ keyHash: "capped", capCents: 5 });
    expect(await lease.hold(via, "b", 60, 60_000, { op: "run" })).toMatchObject({
      granted: 0,
      refusedBy: "spend_limit",
    });
    expect(lease.leased).toBe(0);
    lease.capChanged({ keyHash: "capped", capCents: 7 });
    expect((await lease.hold(via, "c", 60, 60_000, { op: "run" })).granted).toBe(2);
    await lease.settle(via, "c", 1, { op: "run" }).committed();
    lease.capChanged({ keyHash: "capped", capCents: 0 });
    await lease.hold(via, "d", 60, 60_000, { op: "run" });
    lease.release(via, "d");
    await lease.flush(via);
  });

  it("gives its whole lease back once it has been idle IDLE_RETURN_MS, from the request that settled last", async () => {
    const l = ledger();
    await l.credit("pi", 1_000);
    const { ledger: via } = counted(l);
    const lease = new CreditLease(undefined);
    await lease.hold(via, "a", 60, 60_000, { op: "run" });
    await lease.settle(via, "a", 1, { op: "run" }).committed();
    expect(lease.leased).toBeGreaterThan(0);
    const deferred: Array<Promise<unknown>> = [];
    lease.returnWhenIdle(via, (work) => deferred.push(work));
    lease.returnWhenIdle(via, (work) => deferred.push(work));
    expect(deferred).toHaveLength(1);
    await Promise.all(deferred);
    expect(lease.leased).toBe(0);
    expect((await tables(l)).leases).toEqual([]);
    expect(await l.balance()).toEqual({ settledCents: 999, heldCents: 0, freeCents: 999 });
  });
});
