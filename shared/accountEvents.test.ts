// The event cursor both caches follow AccountConfig with (shared/accountEvents.ts), over a fake chain: it
// starts at the head, reads from the last processed block less the reorg depth in bounded ranges, hands
// on only ranges that name an account, and keeps the progress a failed poll made. The enclave's
// listener runs it against anvil too (enclave/authz/listener.test.ts).
import { numberToHex, toEventSelector, type AbiEvent, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import {
  AccountEventCursor,
  accountsNamedBy,
  EVENT_SCOPES,
  EVENTS_CHANGING_EVERYTHING,
  EVENTS_NAMING_NO_ACCOUNT,
  type AccountsNamed,
} from "./accountEvents.ts";
import { accountConfigAbi } from "./generated/accountConfigAbi.ts";

const t = (n: bigint): Hex => numberToHex(n, { size: 32 });
const SIG = t(0xabcn);

/** A log of AccountConfig's event `name` with these indexed topics. */
function log(name: string, ...indexed: bigint[]): { topics: Hex[] } {
  const event = accountConfigAbi.find((item) => item.type === "event" && item.name === name);
  if (!event) throw new Error(`no event ${name}`);
  return { topics: [toEventSelector(event as AbiEvent), ...indexed.map(t)] };
}

describe("accountsNamedBy", () => {
  it("takes the first indexed topic as the master and sorts each event by what it may change", () => {
    const named = accountsNamedBy([
      { topics: [log("ApiPayersSet").topics[0] as Hex] }, // names no account
      log("AdminApiPayerSet", 0xabcn), // its topic is a payer's address
      log("AccountCreated", 1n, 0xa1n),
      log("UsageApiKeySet", 2n, 20n),
      log("ActionAddedToGroup", 3n, 30n, 300n), // the second topic is a group, no key
      log("PkpRemovedFromGroup", 4n, 40n, 0x44n),
      log("AccountConvertedToChainSecured", 5n, 0x55n),
      log("UsageKeyGuardrailSet", 6n, 60n),
    ]);
    expect(named).toEqual({
      everything: false,
      masters: new Set([1n, 2n, 3n, 4n, 5n, 6n]),
      grantsChanged: new Set([4n, 5n]),
      widened: new Set([1n, 3n]),
      keys: new Set([20n, 60n]),
      billingChanged: new Set([5n]),
      billingKeys: new Set([20n]),
    });
  });

  it("empties every cache at an upgrade of the contract's code", () => {
    expect(accountsNamedBy([log("Upgraded", 0x1234n)])).toMatchObject({ everything: true, masters: new Set() });
  });

  it("counts an event it does not know as changing everything of its account", () => {
    expect(accountsNamedBy([{ topics: [SIG, t(7n), t(70n)] }])).toMatchObject({
      masters: new Set([7n]),
      grantsChanged: new Set([7n]),
      keys: new Set(),
      billingChanged: new Set([7n]),
    });
  });

  it("knows every event of AccountConfig's ABI (a new event must be sorted before a cache can keep anything through it)", () => {
    const events = accountConfigAbi.filter((item) => item.type === "event").map((item) => (item as AbiEvent).name);
    const sorted = (name: string) =>
      name in EVENT_SCOPES || EVENTS_NAMING_NO_ACCOUNT.has(name) || EVENTS_CHANGING_EVERYTHING.has(name);
    for (const name of events) expect(sorted(name), name).toBe(true);
    expect(events.length).toBe(
      Object.keys(EVENT_SCOPES).length + EVENTS_NAMING_NO_ACCOUNT.size + EVENTS_CHANGING_EVERYTHING.size,
    );
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
