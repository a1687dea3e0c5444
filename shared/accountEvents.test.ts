// The event cursor both caches follow AccountConfig with (shared/accountEvents.ts), over a fake chain: it
// starts at the head, reads from the last processed block less the reorg depth in bounded ranges, hands
// on only ranges that name an account, and keeps the progress a failed poll made. The enclave's
// listener runs it against anvil too (enclave/authz/listener.test.ts).
import { numberToHex, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { AccountEventCursor, accountsNamedBy, type AccountsNamed } from "./accountEvents.ts";

const t = (n: bigint): Hex => numberToHex(n, { size: 32 });
const SIG = t(0xabcn);

describe("accountsNamedBy", () => {
  it("takes the first indexed topic as the master, the second of a three-topic event as a key hash, and skips events with none", () => {
    const named = accountsNamedBy([
      { topics: [SIG] }, // ApiPayersSet
      { topics: [SIG, t(1n)] }, // AccountCreated-like
      { topics: [SIG, t(2n), t(20n)] }, // UsageApiKeySet(master, keyHash)
      { topics: [SIG, t(3n), t(30n), t(300n)] }, // ActionAddedToGroup: the second topic is no key
    ]);
    expect(named).toEqual({ masters: new Set([1n, 2n, 3n]), keyHashes: new Set([20n]) });
  });
});

describe("AccountEventCursor", () => {
  function chain() {
    const state = { head: 50n, failFrom: Number.POSITIVE_INFINITY, calls: [] as Array<[bigint, bigint]> };
    const events = new Map<bigint, bigint>([
      [49n, 7n],
      [53n, 8n],
      [57n, 9n],
    ]);
    const seen: AccountsNamed[] = [];
    const cursor = new AccountEventCursor({
      source: {
        blockNumber: async () => state.head,
        logs: async (from, to) => {
          state.calls.push([from, to]);
          if (state.calls.length >= state.failFrom) throw new Error("getLogs failed");
          const out: Array<{ topics: Hex[] }> = [];
          for (const [block, master] of events)
            if (block >= from && block <= to) out.push({ topics: [SIG, t(master)] });
          return out;
        },
      },
      maxRange: 3,
      reorgDepth: 2,
      onEvents: (named) => void seen.push(named),
    });
    return { state, cursor, seen };
  }

  it("starts at the head, then reads from the last processed block less the reorg depth in bounded ranges", async () => {
    const { state, cursor, seen } = chain();
    expect(await cursor.poll()).toBe("started");
    expect(state.calls).toEqual([]);
    expect(cursor.lastBlock).toBe(50n);
    state.head = 58n;
    expect(await cursor.poll()).toBe("followed");
    expect(state.calls).toEqual([
      [49n, 51n],
      [52n, 54n],
      [55n, 57n],
      [58n, 58n],
    ]);
    expect(seen.map((n) => [...n.masters])).toEqual([[7n], [8n], [9n]]);
    expect(cursor).toMatchObject({ lastBlock: 58n, chainHead: 58n });
  });

  it("keeps the ranges a failed poll read, and resumes after them", async () => {
    const { state, cursor } = chain();
    await cursor.poll();
    state.head = 58n;
    state.failFrom = 3;
    await expect(cursor.poll()).rejects.toThrow("getLogs failed");
    expect(cursor.lastBlock).toBe(54n);
    state.failFrom = Number.POSITIVE_INFINITY;
    state.calls = [];
    await cursor.poll();
    expect(state.calls[0]).toEqual([53n, 55n]);
    cursor.restart();
    expect(await cursor.poll()).toBe("started");
  });
});
