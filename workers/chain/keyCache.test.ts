// The edge's key cache (workers/chain/keyCache.ts; docs/design/billing.md, "Whose account a key is: the
// edge's key cache") as pure logic: a fake chain (keys, blocks, logs, an outage), a fake clock and a
// logger that keeps its lines. What it must do: serve a key that may act from memory until an event
// of its account drops it, never keep a refusal or a failure, share concurrent reads, not store a
// read that an invalidation overtook, catch an idle isolate up before answering, survive an outage
// for at most the maximum age, refresh hot keys, and stay bounded.
import { numberToHex, toEventSelector, type AbiEvent, type Hex } from "viem";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { describe, expect, it } from "vitest";
import { keyRefusal } from "../../shared/apiKey.ts";
import { SigilError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { GIVE_UP_MS, KeyCache, type KeyCacheOptions, type KeyReading, type KeySource } from "./keyCache.ts";

const POLL_MS = 2_000;
const topic = (n: bigint): Hex => numberToHex(n, { size: 32 });
/** Any event's signature topic: the cache reads only the indexed topics after it. */
const SIG = topic(0xeeeen);

type Key = { master: bigint; live: boolean; spendLimitCents: number; expiresAtMs?: number };

function deferred(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

/** A chain of keys and logs, which may be down, whose calls a test may hold. */
class FakeChain implements KeySource {
  keys = new Map<bigint, Key>();
  head = 100n;
  logsAt = new Map<bigint, Hex[][]>();
  /** Everything fails (an unreachable RPC). */
  down = false;
  /** Only eth_getLogs fails. */
  logsDown = false;
  /** Only eth_blockNumber fails. */
  headDown = false;
  reads = 0;
  ranges: Array<[bigint, bigint]> = [];
  /** While set, each read waits for it. */
  readGate: Promise<void> | undefined;
  /** While set, each eth_getLogs waits for it. */
  logsGate: Promise<void> | undefined;

  async read(keyHash: bigint): Promise<KeyReading> {
    this.reads++;
    const k = this.keys.get(keyHash);
    await this.readGate;
    if (this.down) throw new SigilError("chain_unavailable", "the chain could not be reached; try again shortly");
    const master = k?.master ?? 0n;
    const isMaster = keyHash === master;
    const refusal = keyRefusal({ known: master !== 0n, isMaster, live: k?.live ?? false });
    if (refusal || !k) return { refusal: refusal ?? new SigilError("invalid_api_key", "the API key is not valid") };
    return {
      account: { keyHash, master, isMaster, spendLimitCents: k.spendLimitCents },
      expiresAtMs: k.expiresAtMs ?? Number.POSITIVE_INFINITY,
    };
  }

  async blockNumber(): Promise<bigint> {
    if (this.down || this.headDown) throw new Error("HTTP request failed.\nURL: http://rpc.example/secret-key-123");
    return this.head;
  }

  async logs(fromBlock: bigint, toBlock: bigint): Promise<Array<{ topics: Hex[] }>> {
    this.ranges.push([fromBlock, toBlock]);
    await this.logsGate;
    if (this.down || this.logsDown) throw new Error("request to http://rpc.example/secret-key-123 failed");
    const out: Array<{ topics: Hex[] }> = [];
    for (let b = fromBlock; b <= toBlock; b++) for (const topics of this.logsAt.get(b) ?? []) out.push({ topics });
    return out;
  }

  /** A new block holding AccountConfig's event `name` with these indexed topics. */
  mineEvent(name: string, ...indexed: bigint[]): void {
    const event = accountConfigAbi.find((item) => item.type === "event" && item.name === name);
    if (!event) throw new Error(`no event ${name}`);
    this.head++;
    this.logsAt.set(this.head, [[toEventSelector(event as AbiEvent), ...indexed.map(topic)]]);
  }

  /** A new block holding one event this code does not know, with these indexed topics (none: an event that names no account). */
  mine(...indexed: bigint[]): void {
    this.head++;
    this.logsAt.set(this.head, [[SIG, ...indexed.map(topic)]]);
  }
}

function recorder(): Logger & { lines: Array<{ level: string; msg: string; fields?: object }> } {
  const lines: Array<{ level: string; msg: string; fields?: object }> = [];
  const at =
    (level: string) =>
    (msg: string, fields?: object): void =>
      void lines.push({ level, msg, ...(fields ? { fields } : {}) });
  const log = { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => log };
  return log;
}

const M = 0x1000n;
const N = 0x2000n;
const [K1, K2, K3, K4] = [0x11n, 0x12n, 0x21n, 0x13n];
/** A key no account has. */
const UNKNOWN = 0x999n;

/** A chain with account M (master M, usage keys K1, K2) and N (usage key K3), a clock, and a cache over them. */
function setup(options: Partial<KeyCacheOptions> = {}) {
  const chain = new FakeChain();
  chain.keys.set(M, { master: M, live: true, spendLimitCents: 0 });
  chain.keys.set(K1, { master: M, live: true, spendLimitCents: 10 });
  chain.keys.set(K2, { master: M, live: true, spendLimitCents: 20 });
  chain.keys.set(K4, { master: M, live: true, spendLimitCents: 40 });
  chain.keys.set(N, { master: N, live: true, spendLimitCents: 0 });
  chain.keys.set(K3, { master: N, live: true, spendLimitCents: 30 });
  const clock = { t: 1_000_000_000 };
  const log = recorder();
  const background: Promise<unknown>[] = [];
  const cache = new KeyCache({
    source: chain,
    pollMs: POLL_MS,
    maxRange: 1_000,
    log,
    now: () => clock.t,
    background: (work) => void background.push(work),
    secrets: ["http://rpc.example/secret-key-123"],
    ...options,
  });
  /** Lets every background read and poll finish. */
  const flush = async () => {
    while (background.length > 0) await Promise.allSettled(background.splice(0));
  };
  return { chain, clock, log, cache, flush };
}

/** The cache of `setup`, with its first poll done (the follower is at the chain's head) and nothing in it. */
async function following(options: Partial<KeyCacheOptions> = {}) {
  const s = setup(options);
  await s.cache.get(UNKNOWN).catch(() => undefined);
  await s.flush();
  s.chain.reads = 0;
  expect(s.cache.status().lastBlock).toBe(s.chain.head);
  return s;
}

async function rejection(promise: Promise<unknown>): Promise<SigilError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SigilError);
  return err as SigilError;
}

describe("KeyCache", () => {
  it("reads a key once, then serves it from memory", async () => {
    const { chain, cache, flush } = await following();
    expect(await cache.get(K2)).toEqual({ keyHash: K2, master: M, isMaster: false, spendLimitCents: 20 });
    expect(await cache.get(K2)).toEqual({ keyHash: K2, master: M, isMaster: false, spendLimitCents: 20 });
    expect(await cache.get(M)).toMatchObject({ master: M, isMaster: true });
    await flush();
    expect(chain.reads).toBe(2);
    expect(cache.status()).toMatchObject({ misses: 3, hits: 1 }); // UNKNOWN's lookup in `following` too
  });

  it("keeps what an isolate's first lookups read while its first poll takes the head", async () => {
    const { chain, cache, flush } = setup();
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    await flush();
    expect(cache.status().lastBlock).toBe(chain.head);
    await cache.get(K2);
    expect(chain.reads).toBe(1);
  });

  it("does not keep a read that started before the follower took the head", async () => {
    const { chain, clock, cache, flush } = setup();
    chain.headDown = true;
    await cache.get(UNKNOWN).catch(() => undefined); // its poll fails: no head yet
    await flush();
    chain.headDown = false;
    const gate = deferred();
    chain.readGate = gate.promise;
    clock.t += 1_000;
    const early = cache.get(K2); // no poll due yet: the read starts before the head is taken
    clock.t += 1_000;
    const during = cache.get(K1); // this one starts the poll that takes the head
    await flush();
    expect(cache.status().lastBlock).toBe(chain.head);
    gate.release();
    chain.readGate = undefined;
    await Promise.all([early, during]);
    chain.reads = 0;
    await cache.get(K2);
    await cache.get(K1);
    expect(chain.reads).toBe(1); // K2 again; K1's read started with the poll and was kept
  });

  it("shares one read among concurrent misses of a key", async () => {
    const { chain, cache } = await following();
    const gate = deferred();
    chain.readGate = gate.promise;
    const lookups = Array.from({ length: 5 }, () => cache.get(K2));
    gate.release();
    for (const account of await Promise.all(lookups)) expect(account.spendLimitCents).toBe(20);
    expect(chain.reads).toBe(1);
    expect(cache.status()).toMatchObject({ misses: 2, shared: 4 }); // UNKNOWN's lookup in `following` too
  });

  it("a lookup that joins another's read waits by looking, never by following the read's promise (in a Worker it is another request's)", async () => {
    const { chain, cache } = await following();
    const gate = deferred();
    let follows = 0;
    /** The read's promise, counting who follows it. */
    class Followed<T> extends Promise<T> {
      // biome-ignore lint/suspicious/noThenProperty: counting who calls it is the point.
      override then<A = T, B = never>(
        onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
        onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
      ): Promise<A | B> {
        follows++;
        return super.then(onfulfilled, onrejected);
      }
    }
    const read = chain.read.bind(chain);
    chain.read = (keyHash) =>
      new Followed<KeyReading>((resolve, reject) => void gate.promise.then(() => read(keyHash)).then(resolve, reject));
    const first = cache.get(K2);
    await Promise.resolve();
    const byTheFirst = follows;
    const joiners = Array.from({ length: 4 }, () => cache.get(K2));
    await new Promise((r) => setTimeout(r, 20));
    expect(follows).toBe(byTheFirst);
    gate.release();
    for (const account of await Promise.all([first, ...joiners])) expect(account.spendLimitCents).toBe(20);
    expect(follows).toBe(byTheFirst);
    expect(chain.reads).toBe(1);
  });

  it("a lookup whose shared read has not settled within joinWaitMs (its request was cut off) reads for itself", async () => {
    const { chain, cache } = await following({ joinWaitMs: 30 });
    chain.readGate = new Promise<void>(() => undefined);
    void cache.get(K2); // a read that never ends
    chain.readGate = undefined;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    expect(chain.reads).toBe(2);
    expect(cache.status()).toMatchObject({ shared: 1 });
    expect((await cache.get(K2)).spendLimitCents).toBe(20); // kept by its own read
    expect(chain.reads).toBe(2);
  });

  it("never keeps a refusal: an unknown, removed or retired key is read live every time, with the live read's error", async () => {
    const { chain, cache } = await following();
    chain.keys.set(K2, { master: M, live: false, spendLimitCents: 20 }); // expired
    chain.keys.set(M, { master: M, live: false, spendLimitCents: 0 }); // converted to ChainSecured
    for (let i = 0; i < 2; i++) {
      expect((await rejection(cache.get(UNKNOWN))).code).toBe("invalid_api_key");
      expect((await rejection(cache.get(K2))).code).toBe("invalid_api_key");
      expect((await rejection(cache.get(M))).code).toBe("chain_secured_account");
    }
    expect(chain.reads).toBe(6);
    expect(cache.status().entries).toBe(0);
  });

  it("never keeps a failure: the next lookup reads again", async () => {
    const { chain, cache } = await following();
    chain.down = true;
    expect((await rejection(cache.get(K2))).code).toBe("chain_unavailable");
    chain.down = false;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    expect(chain.reads).toBe(2);
  });

  it("drops every key of the account an unknown event names, and only those; events that name no account change nothing", async () => {
    const { chain, clock, cache, flush } = await following();
    for (const k of [K1, K2, K3]) await cache.get(k);
    chain.mine(); // no indexed topic
    chain.mine(M, K1); // an event this code does not know: the whole account goes
    chain.keys.set(K2, { master: M, live: true, spendLimitCents: 5 });
    chain.keys.set(K3, { master: N, live: true, spendLimitCents: 1 }); // unseen: no event of N
    clock.t += POLL_MS;
    await cache.get(K3); // starts the poll, answers from memory
    await flush();
    expect(cache.status().lastBlock).toBe(chain.head);
    chain.reads = 0;
    expect((await cache.get(K2)).spendLimitCents).toBe(5);
    expect((await cache.get(K1)).spendLimitCents).toBe(10);
    expect((await cache.get(K3)).spendLimitCents).toBe(30);
    expect(chain.reads).toBe(2);
  });

  it("drops what an event may change of billingOf: a usage key's events that key alone, a conversion the account; groups, wallets and actions nothing", async () => {
    const { chain, clock, cache, flush } = await following();
    for (const k of [K1, K2, M]) await cache.get(k);
    const refreshed = async () => {
      clock.t += POLL_MS;
      await cache.get(K1); // starts the poll, answers from memory
      await flush();
      expect(cache.status().lastBlock).toBe(chain.head);
      chain.reads = 0;
      for (const k of [K1, K2, M]) await cache.get(k);
      return chain.reads;
    };
    chain.mineEvent("GroupAdded", M, 7n);
    chain.mineEvent("WalletRegistered", M, 0xabcn);
    chain.mineEvent("ActionRemovedFromGroup", M, 7n, 0x99n);
    chain.mineEvent("WalletGuardrailSet", M, 0xabcn);
    chain.mineEvent("UsageKeyGuardrailSet", M, K2);
    chain.mineEvent("AdminApiPayerSet", M); // its topic is a payer's address, not an account
    expect(await refreshed()).toBe(0);
    chain.mineEvent("UsageApiKeySet", M, K2);
    expect(await refreshed()).toBe(1); // K2 alone
    chain.mineEvent("UsageApiKeyRemoved", M, K1);
    chain.keys.set(K1, { master: M, live: false, spendLimitCents: 10 });
    clock.t += POLL_MS;
    await cache.get(K2);
    await flush();
    expect((await rejection(cache.get(K1))).code).toBe("invalid_api_key");
    chain.keys.set(K1, { master: M, live: true, spendLimitCents: 10 });
    chain.mineEvent("AccountConvertedToChainSecured", M, 0xabcn);
    expect(await refreshed()).toBe(3); // the whole account
    chain.mineEvent("Upgraded", 0xc0den); // the contract's code replaced
    expect(await refreshed()).toBe(3); // everything
  });

  it("does not store a read that started before an invalidation", async () => {
    const { chain, cache } = await following();
    const gate = deferred();
    chain.readGate = gate.promise;
    const early = cache.get(K2);
    cache.invalidateMasters([M]); // an event of M was read while the read was on its way
    // A lookup after the invalidation does not join the older read.
    const late = cache.get(K2);
    gate.release();
    chain.readGate = undefined;
    expect((await early).spendLimitCents).toBe(20);
    expect((await late).spendLimitCents).toBe(20);
    expect(chain.reads).toBe(2);
    // The late read is kept; the early one was not stored over it (nor would it have been alone).
    await cache.get(K2);
    expect(chain.reads).toBe(2);

    const gate2 = deferred();
    chain.readGate = gate2.promise;
    cache.invalidateMasters([M]);
    const alone = cache.get(K1);
    cache.invalidateMasters([N]); // any invalidation: the read may predate it
    gate2.release();
    chain.readGate = undefined;
    await alone;
    await cache.get(K1);
    expect(chain.reads).toBe(4);
  });

  it("an isolate idle for longer than 2 × pollMs waits for one poll before answering from memory", async () => {
    const { chain, clock, cache, flush } = await following();
    await cache.get(K2);
    // K2 is removed while the isolate serves nothing.
    chain.keys.delete(K2);
    chain.mine(M, K2);
    clock.t += 3 * POLL_MS;
    const gate = deferred();
    chain.logsGate = gate.promise;
    let answered = false;
    const lookup = cache.get(K2).finally(() => (answered = true));
    // A second lookup meanwhile waits for the same poll (and then joins the first one's read: its
    // refusal is caught at once, as a request would await it).
    const second = rejection(cache.get(K2));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(answered).toBe(false);
    gate.release();
    expect((await rejection(lookup)).code).toBe("invalid_api_key");
    expect((await second).code).toBe("invalid_api_key");
    await flush();
    expect(cache.status().polls).toBe(2);
  });

  it("waits for that poll at most catchUpTimeoutMs, then answers from memory", async () => {
    const { chain, clock, cache, flush } = await following({ catchUpTimeoutMs: 30 });
    await cache.get(K2);
    clock.t += 3 * POLL_MS;
    const gate = deferred();
    chain.logsGate = gate.promise; // a poll that hangs
    const started = Date.now();
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    gate.release();
    await flush();
  });

  it("while the chain is down serves what it holds for up to 5 minutes (one warning, no secret), then reads live: chain_unavailable", async () => {
    const { chain, clock, log, cache, flush } = await following();
    await cache.get(K2);
    chain.down = true;
    // Lookups every second for 5 minutes: polls and background refreshes fail, memory answers.
    for (let s = 1; s < 300; s++) {
      clock.t += 1_000;
      expect((await cache.get(K2)).spendLimitCents).toBe(20);
      await flush();
    }
    expect(cache.status().pollFailures).toBeGreaterThan(100);
    const warnings = log.lines.filter((l) => l.level === "warn");
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      "secret-key-123",
    );
    expect(cache.status().lastError).toBe("HTTP request failed.");
    // A key never seen meanwhile is a live read, which fails.
    expect((await rejection(cache.get(K4))).code).toBe("chain_unavailable");
    clock.t += 1_000;
    expect((await rejection(cache.get(K2))).code).toBe("chain_unavailable");
    // Once the chain is back, the follower starts over (it read nothing for longer than an entry lives).
    chain.down = false;
    clock.t += POLL_MS;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    await flush();
    expect(cache.status()).toMatchObject({ lastError: null, lastBlock: chain.head });
  });

  it("re-reads an entry older than 60 s in the background, serving the old value meanwhile", async () => {
    const { chain, clock, cache, flush } = await following();
    await cache.get(K2);
    chain.keys.set(K2, { master: M, live: true, spendLimitCents: 7 }); // a change no event told (test only)
    clock.t += 59_000;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    await flush();
    expect(chain.reads).toBe(1);
    clock.t += 2_000;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    await flush();
    expect(chain.reads).toBe(2);
    expect(cache.status().refreshes).toBe(1);
    expect((await cache.get(K2)).spendLimitCents).toBe(7);
    // The refreshed entry lives 5 minutes from its re-read: it outlives the first read's age.
    clock.t += 4 * 60_000;
    chain.down = true;
    expect((await cache.get(K2)).spendLimitCents).toBe(7);
    await flush();
  });

  it("a refresh that finds the key refused drops it", async () => {
    const { chain, clock, cache, flush } = await following();
    await cache.get(K2);
    chain.keys.delete(K2);
    clock.t += 61_000;
    expect((await cache.get(K2)).spendLimitCents).toBe(20);
    await flush();
    expect((await rejection(cache.get(K2))).code).toBe("invalid_api_key");
  });

  it("never serves a usage key past its expiry", async () => {
    const { chain, clock, cache } = await following();
    chain.keys.set(K2, { master: M, live: true, spendLimitCents: 20, expiresAtMs: clock.t + 10_000 });
    await cache.get(K2);
    clock.t += 9_000;
    await cache.get(K2);
    expect(chain.reads).toBe(1);
    clock.t += 1_000;
    chain.keys.set(K2, { master: M, live: false, spendLimitCents: 20 });
    expect((await rejection(cache.get(K2))).code).toBe("invalid_api_key");
  });

  it("holds at most maxEntries, dropping the oldest", async () => {
    const { chain, cache } = await following({ maxEntries: 3 });
    for (const k of [K1, K2, K3, M]) await cache.get(k);
    expect(cache.status().entries).toBe(3);
    expect(chain.reads).toBe(4);
    for (const k of [K2, K3, M]) await cache.get(k);
    expect(chain.reads).toBe(4);
    await cache.get(K1);
    expect(chain.reads).toBe(5);
    expect(cache.status().entries).toBe(3);
  });

  it("drops the accounts of keys the edge itself just wrote to", async () => {
    const { chain, cache } = await following();
    for (const k of [K1, K2, K3]) await cache.get(k);
    cache.forgetAccountsOf([M, 0x777n]); // the caller's master key (not cached) and another
    cache.forgetAccountsOf([K1]); // the caller's usage key: its account goes
    for (const k of [K1, K2, K3]) await cache.get(k);
    expect(chain.reads).toBe(3 + 2);
  });

  it("gives up on a poll or a read that never settles (its invocation was cut off) and starts another", async () => {
    const { chain, clock, cache } = await following({ catchUpTimeoutMs: 10, joinWaitMs: 50 });
    await cache.get(K2);
    const never = new Promise<void>(() => undefined);
    chain.logsGate = never;
    clock.t += POLL_MS;
    await cache.get(K2); // starts a poll that never ends
    clock.t += POLL_MS;
    await cache.get(K2);
    expect(cache.status().polls).toBe(2);
    clock.t += GIVE_UP_MS;
    chain.logsGate = undefined;
    await cache.get(K2);
    expect(cache.status().polls).toBe(3);
    await cache.settled();
    expect(cache.status().lastBlock).toBe(chain.head);

    chain.readGate = never;
    void cache.get(K4); // a read that never ends
    expect(chain.reads).toBe(3); // K2, K2's re-read after 60 s, K4
    void cache.get(K4); // joins it
    expect(chain.reads).toBe(3);
    clock.t += GIVE_UP_MS;
    chain.readGate = undefined;
    expect((await cache.get(K4)).spendLimitCents).toBe(40);
    expect(chain.reads).toBe(4);
  });

  it("follows the chain from its head: the last processed block less the reorg depth, in ranges of maxRange, once per pollMs", async () => {
    const { chain, clock, cache, flush } = setup({ maxRange: 2 });
    await cache.get(K1);
    await flush();
    expect(chain.ranges).toEqual([]); // the first poll only takes the head
    expect(cache.status().lastBlock).toBe(100n);
    for (let i = 0; i < 5; i++) chain.mine(N);
    clock.t += POLL_MS - 1;
    await cache.get(K1);
    await flush();
    expect(cache.status().polls).toBe(1);
    clock.t += 1;
    await cache.get(K1);
    await flush();
    expect(chain.ranges).toEqual([
      [98n, 99n],
      [100n, 101n],
      [102n, 103n],
      [104n, 105n],
    ]);
    expect(cache.status()).toMatchObject({ polls: 2, lastBlock: 105n, chainHead: 105n, lagSeconds: 0 });
  });

  it("starts over at the head, dropping what it read before, when it has read no events for longer than an entry lives", async () => {
    const { chain, clock, cache, flush } = await following();
    await cache.get(K2);
    const lastSuccessAt = clock.t;
    chain.logsDown = true; // eth_call works, eth_getLogs does not: entries are kept fresh by re-reads
    for (let s = 30; s <= 300; s += 30) {
      clock.t += 30_000;
      await cache.get(K2);
      await flush();
    }
    expect(cache.status()).toMatchObject({ entries: 1, lastSuccessAt });
    chain.mine(M); // an event the follower will never read: it starts at the head
    chain.ranges = [];
    chain.reads = 0;
    clock.t += 30_000;
    // The lookup waits for that poll (the isolate has not polled successfully for long), which drops
    // the entry: it reads the key again.
    await cache.get(K2);
    await flush();
    expect(chain.ranges).toEqual([]);
    expect(cache.status().lastBlock).toBe(chain.head);
    expect(chain.reads).toBe(1);
    await cache.get(K2);
    expect(chain.reads).toBe(1);
  });
});
