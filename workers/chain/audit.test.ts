// The audit log's walk (chain/audit.ts) against a chain made of numbers: which block windows it
// asks eth_getLogs for, that it stops at a full page, at the account's creation and at its window
// budget (ending the page with a cursor below the last block read), and the cursors it refuses.
import { encodeAbiParameters, encodeEventTopics, numberToHex, type Hex, type PublicClient } from "viem";
import { describe, expect, it } from "vitest";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { SigilError } from "../../shared/errors.ts";
import { argsOf, auditPage, decodeCursor, encodeCursor, summarize } from "./audit.ts";

const CONTRACT = "0x00000000000000000000000000000000000000c0";
const MASTER = 7n;
const TX = (n: number) => numberToHex(n, { size: 32 });

/** An RPC log of GroupAdded(MASTER, groupId) (or AccountCreated) at `block`, `logIndex`. */
function log(block: number, logIndex: number, event: "GroupAdded" | "AccountCreated" = "GroupAdded") {
  const topics =
    event === "GroupAdded"
      ? encodeEventTopics({
          abi: accountConfigAbi,
          eventName: "GroupAdded",
          args: { master: MASTER, groupId: BigInt(block) },
        })
      : encodeEventTopics({
          abi: accountConfigAbi,
          eventName: "AccountCreated",
          args: { master: MASTER, admin: "0x00000000000000000000000000000000000000aa" },
        });
  return {
    address: CONTRACT,
    topics,
    data: event === "GroupAdded" ? "0x" : encodeAbiParameters([{ type: "bool" }], [true]),
    blockNumber: numberToHex(block),
    logIndex: numberToHex(logIndex),
    transactionHash: TX(block),
    transactionIndex: "0x0",
    blockHash: TX(block + 1_000_000),
    removed: false,
  };
}

/** A client over `logs` whose chain head is `head`; it records each eth_getLogs range. */
function fakeChain(head: number, logs: ReturnType<typeof log>[]) {
  const ranges: Array<[number, number]> = [];
  const client = {
    getBlockNumber: async () => BigInt(head),
    request: async ({
      method,
      params,
    }: {
      method: string;
      params: [{ fromBlock: Hex; toBlock: Hex; topics: unknown[] }];
    }) => {
      expect(method).toBe("eth_getLogs");
      const { fromBlock, toBlock, topics } = params[0];
      // Topic 1 is the master hash: the RPC filters by account, not the edge.
      expect(topics[1]).toBe(numberToHex(MASTER, { size: 32 }));
      const [from, to] = [Number(fromBlock), Number(toBlock)];
      ranges.push([from, to]);
      return logs.filter((l) => Number(l.blockNumber) >= from && Number(l.blockNumber) <= to);
    },
    getTransaction: async ({ hash }: { hash: Hex }) => ({
      hash,
      from: "0x00000000000000000000000000000000000000Bb",
      input: "0x",
    }),
    getBlock: async ({ blockNumber }: { blockNumber: bigint }) => ({
      number: blockNumber,
      timestamp: 1000n + blockNumber,
    }),
  };
  return { client: client as unknown as PublicClient, ranges };
}

const query = (client: PublicClient, extra: Partial<Parameters<typeof auditPage>[0]> = {}) => ({
  client,
  contract: CONTRACT as Hex,
  master: MASTER,
  fromBlock: 0n,
  windowBlocks: 10,
  limit: 2,
  ...extra,
});

describe("auditPage", () => {
  it("walks back window by window only until the page has one event more than its limit", async () => {
    const { client, ranges } = fakeChain(1000, [
      log(100, 0, "AccountCreated"),
      log(955, 0),
      log(975, 1),
      log(975, 3),
      log(998, 0),
    ]);
    const page = await auditPage(query(client));
    expect(page.events.map((e) => [e.block_number, e.log_index])).toEqual([
      [998, 0],
      [975, 3],
    ]);
    expect(ranges).toEqual([
      [991, 1000],
      [981, 990],
      [971, 980],
    ]);
    expect(page.events[0]).toMatchObject({
      actor: "0x00000000000000000000000000000000000000bb",
      block_time: 1998,
      summary: "group 998 added",
      args: { groupId: "998" },
    });

    // The next page starts at the cursor's block, just before its event, and reads on.
    const next = await auditPage(query(client, { cursor: decodeCursor(page.next_cursor as string) }));
    expect(next.events.map((e) => [e.block_number, e.log_index])).toEqual([
      [975, 1],
      [955, 0],
    ]);
  });

  it("stops at the account's creation however far the first block is, with no next cursor", async () => {
    const { client, ranges } = fakeChain(1000, [log(985, 0, "AccountCreated"), log(995, 0)]);
    const page = await auditPage(query(client, { limit: 50 }));
    expect(page.events.map((e) => e.event)).toEqual(["GroupAdded", "AccountCreated"]);
    expect(page.next_cursor).toBeNull();
    expect(ranges).toHaveLength(2);
  });

  it("reads at most maxWindows windows, then ends the page with a cursor below the last block read", async () => {
    const { client, ranges } = fakeChain(1000, [log(500, 0, "AccountCreated"), log(999, 0)]);
    const page = await auditPage(query(client, { limit: 50, maxWindows: 3 }));
    expect(page.events.map((e) => e.block_number)).toEqual([999]);
    expect(ranges).toEqual([
      [991, 1000],
      [981, 990],
      [971, 980],
    ]);
    expect(decodeCursor(page.next_cursor as string)).toEqual({ kind: "below", block: 971n });
    ranges.length = 0;
    const next = await auditPage(
      query(client, { limit: 50, maxWindows: 3, cursor: decodeCursor(page.next_cursor as string) }),
    );
    expect(next.events).toEqual([]);
    expect(ranges[0]).toEqual([961, 970]);
  });

  it("never reads below the first block (the deployment block, or from_block)", async () => {
    const { client, ranges } = fakeChain(1000, [log(995, 0)]);
    const page = await auditPage(query(client, { limit: 50, fromBlock: 985n }));
    expect(page.events).toHaveLength(1);
    expect(page.next_cursor).toBeNull();
    expect(ranges).toEqual([
      [991, 1000],
      [985, 990],
    ]);
  });

  it("refuses a well-formed cursor that names no event of the account, and a 'below' cursor past the head", async () => {
    const { client } = fakeChain(1000, [log(995, 0)]);
    await expect(
      auditPage(query(client, { cursor: { kind: "event", block: 995n, logIndex: 1 } })),
    ).rejects.toMatchObject({ code: "invalid_cursor" });
    await expect(auditPage(query(client, { cursor: { kind: "below", block: 1002n } }))).rejects.toMatchObject({
      code: "invalid_cursor",
    });
  });
});

describe("cursors", () => {
  it("round-trip, and anything else is 400 invalid_cursor naming cursor", () => {
    for (const c of [
      { kind: "event", block: 12n, logIndex: 3 },
      { kind: "below", block: 9n },
    ] as const)
      expect(decodeCursor(encodeCursor(c))).toEqual(c);
    for (const bad of [
      "",
      "!!!",
      btoa("1:e:01:2"),
      btoa("2:e:1:2"),
      btoa("1:b:0"),
      btoa("1:e:1:2:3"),
      "a".repeat(65),
    ]) {
      let error: unknown;
      try {
        decodeCursor(bad.replace(/=+$/, ""));
      } catch (err) {
        error = err;
      }
      expect(error, bad).toBeInstanceOf(SigilError);
      expect(error).toMatchObject({ code: "invalid_cursor", details: [{ path: "cursor" }] });
    }
  });
});

describe("summaries", () => {
  it("name the any-action and any-wallet entries, and an action by its CID when the write said it", () => {
    expect(summarize("ActionAddedToGroup", { groupId: 3n, cidHash: 0n })).toBe("any action added to group 3");
    expect(summarize("PkpAddedToGroup", { groupId: 3n, wallet: "0x0000000000000000000000000000000000000000" })).toBe(
      "any wallet of the account added to group 3",
    );
    expect(summarize("ActionRemoved", { cidHash: 5n }, new Map([[5n, "QmCid"]]))).toBe("action QmCid unregistered");
    expect(summarize("UsageApiKeyRemoved", { keyHash: 0xabcdn << 240n })).toBe("usage key 0xabcd…0000 removed");
  });

  it("say whose guardrail was set (its hash shortened) or removed (hash 0, empty document)", () => {
    const wallet = "0x00000000000000000000000000000000000000Aa";
    const guardrailHash = `0xabcd${"0".repeat(56)}1234` as const;
    expect(summarize("WalletGuardrailSet", { wallet, guardrailHash, document: '{"version":1}' })).toBe(
      "guardrail of wallet 0x00000000000000000000000000000000000000aa set (0xabcd…1234)",
    );
    expect(summarize("WalletGuardrailSet", { wallet, guardrailHash: `0x${"0".repeat(64)}`, document: "" })).toBe(
      "guardrail of wallet 0x00000000000000000000000000000000000000aa removed",
    );
    expect(summarize("UsageKeyGuardrailSet", { usageKeyHash: 0xabcdn << 240n, guardrailHash, document: "{}" })).toBe(
      "guardrail of usage key 0xabcd…0000 set (0xabcd…1234)",
    );
    expect(
      summarize("UsageKeyGuardrailSet", {
        usageKeyHash: 0xabcdn << 240n,
        guardrailHash: `0x${"0".repeat(64)}`,
        document: "",
      }),
    ).toBe("guardrail of usage key 0xabcd…0000 removed");
    // The document stays out of the page's args (its hash names it); the rest as every event's.
    expect(argsOf({ master: MASTER, wallet, guardrailHash, document: '{"Version":1}' })).toEqual({
      wallet: wallet.toLowerCase(),
      guardrailHash,
    });
  });
});
