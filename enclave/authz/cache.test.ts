// The permission cache (docs/design/keys-and-authz.md, "Permission cache and chain listener"), against a fake
// PermissionSource that counts calls and a fake clock: TTLs of grants and denials, the cap at a
// usage key's expiration, coalesced misses, uncached failures, and invalidation.
import type { Address } from "viem";
import { beforeEach, describe, expect, it } from "vitest";
import { namedNothing } from "../../shared/accountEvents.ts";
import type { KeyResolution } from "../chain/client.ts";
import { PermissionCache, type PermissionSource } from "./cache.ts";

const MASTER_A = 0xaaaan;
const MASTER_B = 0xbbbbn;
const USAGE_A = 0xa001n; // a usage key of account A
const USAGE_A2 = 0xa002n; // another usage key of account A
const UNKNOWN = 0xdeadn;
const CID = 0xc1dn;
const CID2 = 0xc2dn;
const WALLET = "0x00000000000000000000000000000000000000a1" as Address;

const T0 = 1_700_000_000_000; // ms
const SECOND = 1_000;
const MINUTE = 60 * SECOND;

const unknownKey: KeyResolution = { master: 0n, isMaster: false, managed: false, live: false, expiresAt: 0n };

type Exec = { canExecute: boolean; walletAllowed: readonly boolean[]; derivations: readonly bigint[] };

/** A controllable chain: answers are read when a call starts (like an eth_call at that block). */
class FakeSource implements PermissionSource {
  keys = new Map<bigint, KeyResolution>();
  /** `${keyHash}:${cidHash}` → may execute. */
  exec = new Map<string, boolean>();
  /** `${keyHash}:${cidHash}:${wallet}` → derivation when the wallet is allowed. */
  walletGrants = new Map<string, bigint>();
  resolveCalls = 0;
  authorizeCalls = 0;
  /** When set, calls fail with it (after the gate opens). */
  failure: Error | undefined;
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  #held: "all" | "authorize" = "all";

  /** Holds every call (or only authorizeExecution calls) started from now on until `release()`. */
  hold(which: "all" | "authorize" = "all"): void {
    this.#held = which;
    this.#gate = new Promise<void>((resolve) => (this.#open = resolve));
  }
  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  async resolveKey(keyHash: bigint): Promise<KeyResolution> {
    this.resolveCalls++;
    const answer = { ...(this.keys.get(keyHash) ?? unknownKey) };
    const failure = this.failure;
    if (this.#held === "all") await this.#gate;
    if (failure ?? this.failure) throw failure ?? this.failure;
    return answer;
  }

  async authorizeExecution(keyHash: bigint, cidHash: bigint, wallets: readonly Address[]): Promise<Exec> {
    this.authorizeCalls++;
    const canExecute = this.exec.get(`${keyHash}:${cidHash}`) ?? false;
    const grants = wallets.map((w) => this.walletGrants.get(`${keyHash}:${cidHash}:${w.toLowerCase()}`));
    const failure = this.failure;
    await this.#gate;
    if (failure ?? this.failure) throw failure ?? this.failure;
    return {
      canExecute,
      walletAllowed: grants.map((g) => canExecute && g !== undefined),
      derivations: grants.map((g) => (canExecute && g !== undefined ? g : 0n)),
    };
  }
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

let source: FakeSource;
let now: number;
let cache: PermissionCache;

/** A cache on the fake source; no background re-reads unless a test asks (the TTL tests count every call). */
function setup(options: { maxEntries?: number; refreshAfterMs?: number } = {}) {
  source = new FakeSource();
  now = T0;
  source.keys.set(MASTER_A, { master: MASTER_A, isMaster: true, managed: true, live: true, expiresAt: 0n });
  source.keys.set(MASTER_B, { master: MASTER_B, isMaster: true, managed: true, live: true, expiresAt: 0n });
  source.keys.set(USAGE_A, { master: MASTER_A, isMaster: false, managed: true, live: true, expiresAt: 0n });
  source.keys.set(USAGE_A2, { master: MASTER_A, isMaster: false, managed: true, live: true, expiresAt: 0n });
  cache = new PermissionCache(source, { now: () => now, refreshAfterMs: Number.POSITIVE_INFINITY, ...options });
}

beforeEach(() => setup());

describe("grants", () => {
  it("serves a grant from the cache for up to 5 minutes, then asks the chain again", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: false });
    expect(source.authorizeCalls).toBe(1);

    now = T0 + 5 * MINUTE - 1;
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: true });
    expect(source.authorizeCalls).toBe(1);
    expect(source.resolveCalls).toBe(1);

    now = T0 + 5 * MINUTE;
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: false });
    expect(source.authorizeCalls).toBe(2);
    expect(source.resolveCalls).toBe(2);
  });

  it("sees a grant revoked on chain only after the grant expires (without invalidation)", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.canExecute(USAGE_A, CID);
    source.exec.set(`${USAGE_A}:${CID}`, false);
    now = T0 + 4 * MINUTE;
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    now = T0 + 5 * MINUTE;
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(false);
  });

  it("caches a wallet grant with its derivation, keyed by the wallet in any case", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 77n);
    expect(await cache.wallet(USAGE_A, CID, WALLET)).toEqual({
      value: { allowed: true, derivation: 77n, guardrail: null },
      cached: false,
    });
    expect(await cache.wallet(USAGE_A, CID, WALLET.toUpperCase().replace("0X", "0x") as Address)).toEqual({
      value: { allowed: true, derivation: 77n, guardrail: null },
      cached: true,
    });
    expect(source.authorizeCalls).toBe(1);
  });

  it("refuses a wallet (derivation 0) when the run itself may not execute", async () => {
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 77n);
    expect((await cache.wallet(USAGE_A, CID, WALLET)).value).toEqual({
      allowed: false,
      derivation: 0n,
      guardrail: null,
    });
  });

  it("keeps entries of different code (cid) apart", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    expect((await cache.canExecute(USAGE_A, CID2)).value).toBe(false);
    expect(source.authorizeCalls).toBe(2);
  });
});

describe("denials", () => {
  it("serves a denial from the cache for up to 30 seconds, then asks the chain again", async () => {
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: false, cached: false });
    now = T0 + 30 * SECOND - 1;
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: false, cached: true });
    expect(source.authorizeCalls).toBe(1);
    now = T0 + 30 * SECOND;
    source.exec.set(`${USAGE_A}:${CID}`, true);
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: false });
    expect(source.authorizeCalls).toBe(2);
  });

  it("caches an unknown key as a denial for 30 seconds", async () => {
    expect(await cache.resolve(UNKNOWN)).toEqual({ value: unknownKey, cached: false });
    now = T0 + 29 * SECOND;
    expect((await cache.resolve(UNKNOWN)).cached).toBe(true);
    now = T0 + 30 * SECOND;
    expect((await cache.resolve(UNKNOWN)).cached).toBe(false);
    expect(source.resolveCalls).toBe(2);
  });

  it("caches a refused wallet as a denial for 30 seconds", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.wallet(USAGE_A, CID, WALLET);
    now = T0 + 29 * SECOND;
    expect((await cache.wallet(USAGE_A, CID, WALLET)).cached).toBe(true);
    now = T0 + 30 * SECOND;
    expect((await cache.wallet(USAGE_A, CID, WALLET)).cached).toBe(false);
  });
});

describe("usage key expiration", () => {
  // expiresAt is in unix seconds, the clock in milliseconds.
  const expiresInSeconds = (s: number) => BigInt(Math.floor(T0 / 1000) + s);

  it("never keeps a grant past the usage key's expiration", async () => {
    const expiresAt = expiresInSeconds(60);
    source.keys.set(USAGE_A, { master: MASTER_A, isMaster: false, managed: true, live: true, expiresAt });
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 5n);
    await cache.canExecute(USAGE_A, CID);
    await cache.wallet(USAGE_A, CID, WALLET);
    expect(source.resolveCalls).toBe(1);
    expect(source.authorizeCalls).toBe(2);

    now = Number(expiresAt) * 1000 - 1;
    expect((await cache.resolve(USAGE_A)).cached).toBe(true);
    expect((await cache.canExecute(USAGE_A, CID)).cached).toBe(true);
    expect((await cache.wallet(USAGE_A, CID, WALLET)).cached).toBe(true);

    // The key has expired: the chain now says it is not live, and nothing cached says otherwise.
    now = Number(expiresAt) * 1000;
    source.keys.set(USAGE_A, { master: MASTER_A, isMaster: false, managed: true, live: false, expiresAt });
    source.exec.set(`${USAGE_A}:${CID}`, false);
    expect(await cache.resolve(USAGE_A)).toEqual({ value: expect.objectContaining({ live: false }), cached: false });
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: false, cached: false });
    expect((await cache.wallet(USAGE_A, CID, WALLET)).value.allowed).toBe(false);
  });

  it("keeps a grant the full 5 minutes when the key expires later than that", async () => {
    source.keys.set(USAGE_A, {
      master: MASTER_A,
      isMaster: false,
      managed: true,
      live: true,
      expiresAt: expiresInSeconds(3600),
    });
    await cache.resolve(USAGE_A);
    now = T0 + 5 * MINUTE - 1;
    expect((await cache.resolve(USAGE_A)).cached).toBe(true);
    now = T0 + 5 * MINUTE;
    expect((await cache.resolve(USAGE_A)).cached).toBe(false);
  });

  it("does not store a grant for a key whose expiration has already passed by the local clock", async () => {
    source.keys.set(USAGE_A, {
      master: MASTER_A,
      isMaster: false,
      managed: true,
      live: true,
      expiresAt: expiresInSeconds(-1),
    });
    expect((await cache.resolve(USAGE_A)).value.live).toBe(true);
    expect((await cache.resolve(USAGE_A)).cached).toBe(false);
    expect(source.resolveCalls).toBe(2);
    expect(cache.size).toBe(0);
  });
});

describe("concurrent misses", () => {
  it("make one source call for one key, and every caller gets its answer", async () => {
    source.hold();
    const calls = [cache.resolve(USAGE_A), cache.resolve(USAGE_A), cache.resolve(USAGE_A)];
    await flush();
    expect(source.resolveCalls).toBe(1);
    source.release();
    const results = await Promise.all(calls);
    for (const r of results) expect(r.value.master).toBe(MASTER_A);
    expect(results.filter((r) => !r.cached)).toHaveLength(1);
    expect(source.resolveCalls).toBe(1);
  });

  it("make one authorizeExecution call for one (key, cid)", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.resolve(USAGE_A);
    source.hold();
    const calls = [cache.canExecute(USAGE_A, CID), cache.canExecute(USAGE_A, CID), cache.canExecute(USAGE_A, CID)];
    await flush();
    expect(source.authorizeCalls).toBe(1);
    source.release();
    expect((await Promise.all(calls)).map((r) => r.value)).toEqual([true, true, true]);
    expect(source.authorizeCalls).toBe(1);
  });

  it("make one call per key when cold (resolution and authorization both coalesce)", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    const calls = Array.from({ length: 5 }, () => cache.canExecute(USAGE_A, CID));
    expect((await Promise.all(calls)).map((r) => r.value)).toEqual([true, true, true, true, true]);
    expect(source.resolveCalls).toBe(1);
    expect(source.authorizeCalls).toBe(1);
  });

  it("do not coalesce different keys", async () => {
    source.hold();
    const calls = [cache.resolve(USAGE_A), cache.resolve(USAGE_A2)];
    await flush();
    expect(source.resolveCalls).toBe(2);
    source.release();
    await Promise.all(calls);
  });
});

describe("failures", () => {
  it("are not cached: the next call asks the source again", async () => {
    source.failure = new Error("rpc down");
    await expect(cache.resolve(USAGE_A)).rejects.toThrow("rpc down");
    expect(cache.size).toBe(0);
    source.failure = undefined;
    expect(await cache.resolve(USAGE_A)).toEqual({
      value: expect.objectContaining({ master: MASTER_A }),
      cached: false,
    });
    expect(source.resolveCalls).toBe(2);
  });

  it("reach every concurrent waiter of the failed call", async () => {
    source.hold();
    source.failure = new Error("rpc down");
    const calls = [cache.resolve(USAGE_A), cache.resolve(USAGE_A), cache.resolve(USAGE_A)].map((p) =>
      p.then(
        () => "resolved",
        (e: unknown) => (e as Error).message,
      ),
    );
    await flush();
    source.release();
    expect(await Promise.all(calls)).toEqual(["rpc down", "rpc down", "rpc down"]);
    expect(source.resolveCalls).toBe(1);
    source.failure = undefined;
    expect((await cache.resolve(USAGE_A)).cached).toBe(false);
    expect(source.resolveCalls).toBe(2);
  });

  it("of authorizeExecution are not cached either", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.resolve(USAGE_A);
    source.failure = new Error("rpc down");
    await expect(cache.canExecute(USAGE_A, CID)).rejects.toThrow("rpc down");
    source.failure = undefined;
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: false });
    expect(source.authorizeCalls).toBe(2);
  });
});

describe("invalidation", () => {
  async function fillBothAccounts() {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.exec.set(`${MASTER_B}:${CID}`, true);
    await cache.canExecute(USAGE_A, CID);
    await cache.canExecute(USAGE_A2, CID);
    await cache.canExecute(MASTER_A, CID);
    await cache.canExecute(MASTER_B, CID);
    expect(cache.size).toBe(8);
  }

  it("invalidateMaster drops every entry of that account and only those", async () => {
    await fillBothAccounts();
    const before = { resolve: source.resolveCalls, authorize: source.authorizeCalls };
    cache.invalidateMaster(MASTER_A);
    expect(cache.size).toBe(2);

    expect((await cache.canExecute(MASTER_B, CID)).cached).toBe(true);
    expect((await cache.resolve(MASTER_B)).cached).toBe(true);
    expect(source.resolveCalls).toBe(before.resolve);

    expect((await cache.canExecute(USAGE_A, CID)).cached).toBe(false);
    expect((await cache.canExecute(USAGE_A2, CID)).cached).toBe(false);
    expect((await cache.canExecute(MASTER_A, CID)).cached).toBe(false);
    expect(source.resolveCalls).toBe(before.resolve + 3);
    expect(source.authorizeCalls).toBe(before.authorize + 3);
  });

  it("invalidateMaster makes a revoked grant visible at once", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    source.exec.set(`${USAGE_A}:${CID}`, false);
    cache.invalidateMaster(MASTER_A);
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(false);
  });

  it("invalidateMaster of an account with nothing cached changes nothing", async () => {
    await fillBothAccounts();
    cache.invalidateMaster(0x1234n);
    expect(cache.size).toBe(8);
  });

  it("invalidateKey drops that key's entries (its resolution and its answers), not its account's other keys'", async () => {
    await fillBothAccounts();
    cache.invalidateKey(USAGE_A);
    expect(cache.size).toBe(6);
    expect((await cache.resolve(USAGE_A2)).cached).toBe(true);
    expect((await cache.resolve(MASTER_A)).cached).toBe(true);
    expect((await cache.resolve(MASTER_B)).cached).toBe(true);
    expect((await cache.canExecute(USAGE_A, CID)).cached).toBe(false);
  });

  it("invalidateDenials drops the account's denials and keeps its grants (the account only gained)", async () => {
    await fillBothAccounts(); // A: USAGE_A may run CID, USAGE_A2 and MASTER_A may not
    const before = source.authorizeCalls;
    source.exec.set(`${USAGE_A2}:${CID}`, true); // e.g. the action added to a group USAGE_A2 runs in
    cache.invalidateDenials(MASTER_A);
    expect(cache.size).toBe(6);
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: true });
    expect(await cache.canExecute(USAGE_A2, CID)).toEqual({ value: true, cached: false });
    expect(await cache.canExecute(MASTER_A, CID)).toEqual({ value: false, cached: false });
    expect(await cache.canExecute(MASTER_B, CID)).toEqual({ value: true, cached: true });
    expect(source.authorizeCalls).toBe(before + 2);
  });

  it("applyEvents drops by each event's scope: narrowed accounts whole, named keys alone, accounts that only gained their denials", async () => {
    await fillBothAccounts();
    const named = namedNothing;
    cache.applyEvents(named({ masters: new Set([MASTER_A]), widened: new Set([MASTER_A]) }));
    expect(cache.size).toBe(6); // A's two denials (USAGE_A2's and MASTER_A's answers)
    cache.applyEvents(named({ masters: new Set([MASTER_A]), keys: new Set([USAGE_A]) }));
    expect(cache.size).toBe(4);
    expect((await cache.resolve(MASTER_A)).cached).toBe(true);
    cache.applyEvents(
      named({ masters: new Set([MASTER_B]), grantsChanged: new Set([MASTER_B]), widened: new Set([MASTER_B]) }),
    );
    expect((await cache.resolve(MASTER_B)).cached).toBe(false);
    expect((await cache.resolve(MASTER_A)).cached).toBe(true);
    cache.applyEvents(named({ everything: true })); // the contract was upgraded
    expect(cache.size).toBe(0);
  });

  it("invalidateKey drops the cached denial of a key that was unknown, so a newly set usage key works at once", async () => {
    const NEW_KEY = 0xa00fn;
    expect((await cache.canExecute(NEW_KEY, CID)).value).toBe(false);
    await cache.canExecute(MASTER_B, CID);
    // setUsageApiKey(A, NEW_KEY) lands on chain; the listener (or the enclave's write) invalidates it.
    source.keys.set(NEW_KEY, { master: MASTER_A, isMaster: false, managed: true, live: true, expiresAt: 0n });
    source.exec.set(`${NEW_KEY}:${CID}`, true);
    cache.invalidateKey(NEW_KEY);
    expect(await cache.canExecute(NEW_KEY, CID)).toEqual({ value: true, cached: false });
    expect((await cache.resolve(MASTER_B)).cached).toBe(true);
  });

  it("invalidateKey of a key that is not cached changes nothing", async () => {
    await fillBothAccounts();
    cache.invalidateKey(UNKNOWN);
    expect(cache.size).toBe(8);
  });

  it("does not store an answer that was in flight during an invalidation (its caller still gets it)", async () => {
    source.hold();
    const inFlight = cache.resolve(USAGE_A);
    await flush();
    cache.invalidateMaster(MASTER_A);
    source.release();
    expect(await inFlight).toEqual({ value: expect.objectContaining({ master: MASTER_A }), cached: false });
    expect(cache.size).toBe(0);
    expect((await cache.resolve(USAGE_A)).cached).toBe(false);
    expect(source.resolveCalls).toBe(2);
  });

  it("does not store an in-flight answer across an invalidation of another account either (stale by generation)", async () => {
    source.hold();
    const inFlight = cache.resolve(USAGE_A);
    await flush();
    cache.invalidateMaster(MASTER_B);
    source.release();
    await inFlight;
    expect(cache.size).toBe(0);
  });

  it("does not hand a call started after an invalidation the answer of a call started before it", async () => {
    await cache.resolve(MASTER_A);
    source.hold("authorize");
    const before = cache.canExecute(MASTER_A, CID); // the chain still says: may not run CID
    await flush();
    // The enclave's own write (addActionToGroup) lands, then it invalidates before answering.
    source.exec.set(`${MASTER_A}:${CID}`, true);
    cache.invalidateMaster(MASTER_A);
    const after = cache.canExecute(MASTER_A, CID);
    await flush();
    source.release();
    expect((await before).value).toBe(false);
    expect((await after).value).toBe(true);
  });

  it("clear() drops everything and discards answers in flight", async () => {
    await fillBothAccounts();
    source.hold();
    const inFlight = cache.resolve(UNKNOWN);
    await flush();
    cache.clear();
    source.release();
    await inFlight;
    expect(cache.size).toBe(0);
  });
});

describe("size bound", () => {
  it("keeps size ≤ maxEntries by evicting the oldest entries", async () => {
    setup({ maxEntries: 10 });
    for (let i = 1n; i <= 35n; i++) {
      await cache.resolve(0x10000n + i);
      expect(cache.size).toBeLessThanOrEqual(10);
    }
    expect(cache.size).toBeGreaterThan(0);
    // The newest entry is still cached, the oldest is gone.
    expect((await cache.resolve(0x10000n + 35n)).cached).toBe(true);
    expect((await cache.resolve(0x10000n + 1n)).cached).toBe(false);
  });

  it("keeps invalidation working for entries that survived an eviction", async () => {
    setup({ maxEntries: 4 });
    source.exec.set(`${USAGE_A}:${CID}`, true);
    for (let i = 1n; i <= 6n; i++) await cache.resolve(0x10000n + i);
    await cache.canExecute(USAGE_A, CID);
    expect(cache.size).toBeLessThanOrEqual(4);
    cache.invalidateMaster(MASTER_A);
    expect((await cache.canExecute(USAGE_A, CID)).cached).toBe(false);
    expect(cache.size).toBeLessThanOrEqual(4);
  });
});

describe("counters", () => {
  it("counts hits and misses", async () => {
    await cache.resolve(USAGE_A);
    await cache.resolve(USAGE_A);
    await cache.resolve(USAGE_A);
    expect(cache.misses).toBe(1);
    expect(cache.hits).toBe(2);
  });
});

describe("cachedWallet (keys offered with a run)", () => {
  it("gives a wallet's grant only while the cache holds it live, never asking the chain: nothing before it was asked, nothing after it expires or its account is invalidated", async () => {
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 77n);
    expect(cache.cachedWallet(USAGE_A, CID, WALLET)).toBeUndefined();
    await cache.wallet(USAGE_A, CID, WALLET);
    const calls = { resolve: source.resolveCalls, authorize: source.authorizeCalls };
    expect(cache.cachedWallet(USAGE_A, CID, WALLET.toUpperCase().replace("0X", "0x") as Address)).toEqual({
      allowed: true,
      derivation: 77n,
      guardrail: null,
    });
    // Another action, or another key of the account, has no grant of its own yet.
    expect(cache.cachedWallet(USAGE_A, CID2, WALLET)).toBeUndefined();
    expect(cache.cachedWallet(USAGE_A2, CID, WALLET)).toBeUndefined();
    expect({ resolve: source.resolveCalls, authorize: source.authorizeCalls }).toEqual(calls);

    now = T0 + 5 * MINUTE;
    expect(cache.cachedWallet(USAGE_A, CID, WALLET)).toBeUndefined();

    now = T0;
    setup();
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 77n);
    await cache.wallet(USAGE_A, CID, WALLET);
    cache.invalidateMaster(MASTER_A);
    expect(cache.cachedWallet(USAGE_A, CID, WALLET)).toBeUndefined();
  });

  it("gives nothing once the key's own resolution has expired, though the wallet's entry is younger", async () => {
    source.keys.set(USAGE_A, { master: MASTER_A, isMaster: false, managed: true, live: true, expiresAt: 0n });
    source.exec.set(`${USAGE_A}:${CID}`, true);
    source.walletGrants.set(`${USAGE_A}:${CID}:${WALLET}`, 77n);
    await cache.resolve(USAGE_A);
    now = T0 + 4 * MINUTE;
    await cache.wallet(USAGE_A, CID, WALLET);
    expect(cache.cachedWallet(USAGE_A, CID, WALLET)).toEqual({ allowed: true, derivation: 77n, guardrail: null });
    now = T0 + 5 * MINUTE;
    expect(cache.cachedWallet(USAGE_A, CID, WALLET)).toBeUndefined();
  });
});

describe("re-reads of grants in use", () => {
  it("re-reads a grant older than refreshAfterMs in the background, serving it meanwhile, and keeps the new answer", async () => {
    setup({ refreshAfterMs: MINUTE });
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.canExecute(USAGE_A, CID);
    expect(source.authorizeCalls).toBe(1);
    now = T0 + MINUTE;
    source.exec.set(`${USAGE_A}:${CID}`, false); // revoked, and no event seen (the listener is behind)
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: true, cached: true });
    await flush();
    expect(source.authorizeCalls).toBe(2);
    expect(cache.refreshes).toBe(2); // the key's resolution and its answer
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: false, cached: true });
  });

  it("keeps serving a grant whose re-reads fail (the chain is down) until it is 5 minutes old, trying again at most every 5 s", async () => {
    setup({ refreshAfterMs: MINUTE });
    source.exec.set(`${USAGE_A}:${CID}`, true);
    await cache.canExecute(USAGE_A, CID);
    source.failure = new Error("rpc down");
    now = T0 + MINUTE;
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    await flush();
    const tried = source.authorizeCalls;
    now = T0 + MINUTE + 1_000;
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    await flush();
    expect(source.authorizeCalls).toBe(tried);
    now = T0 + 5 * MINUTE - 1;
    expect((await cache.canExecute(USAGE_A, CID)).value).toBe(true);
    await flush();
    now = T0 + 5 * MINUTE;
    await expect(cache.canExecute(USAGE_A, CID)).rejects.toThrow("rpc down");
  });

  it("never re-reads a denial (it lives 30 s)", async () => {
    setup({ refreshAfterMs: 1_000 });
    await cache.canExecute(USAGE_A, CID);
    now = T0 + 20_000;
    expect(await cache.canExecute(USAGE_A, CID)).toEqual({ value: false, cached: true });
    await flush();
    expect(source.authorizeCalls).toBe(1);
  });
});
