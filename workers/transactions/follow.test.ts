// The follower's reading of one chain (follow.ts) against a chain of the test's making: a used nonce
// with a receipt is confirmed or reverted, without one replaced; an unused nonce in the pool stays
// pending and clears its absence; lost from it, its bytes are sent again (pending once more if the RPC
// takes them) and it is dropped only when they are refused past the delay; an RPC that fails
// leaves a transaction pending with the reason, and never the RPC's URL. The real chains are
// test/e2e/transactionsFollowed.test.ts.
import type { Hex } from "viem";
import { describe, expect, it } from "vitest";
import { follow, rpcError, type ChainReads, type PendingTransaction } from "./follow.ts";

const A = `0x${"aa".repeat(20)}` as Hex;
const B = `0x${"bb".repeat(20)}` as Hex;
const hash = (i: number) => `0x${i.toString(16).padStart(64, "0")}` as Hex;
const tx = (
  id: string,
  wallet: Hex,
  nonce: number,
  missingSince: number | null = null,
  raw: Hex | null = null,
): PendingTransaction => ({
  id,
  wallet,
  nonce,
  hash: hash(Number(id.slice(3))),
  missingSince,
  raw,
});

/** A chain: each wallet's mined count, the receipts by hash, what the pool holds; `fail` names reads that throw. */
function chain(state: {
  mined: Map<Hex, number>;
  receipts?: Map<Hex, boolean>;
  pool?: Set<Hex>;
  fail?: { count?: Hex; receipt?: Hex; known?: Hex };
  /** Bytes the RPC refuses when sent again, with its message; any other is taken back into the pool. */
  refuse?: Map<Hex, string>;
}): ChainReads & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    minedCount: async (wallet) => {
      calls.push(`count ${wallet.slice(0, 4)}`);
      if (state.fail?.count === wallet) throw new Error("HTTP request failed.\nURL: http://rpc.example/key123");
      return state.mined.get(wallet) ?? 0;
    },
    receipt: async (h) => {
      calls.push(`receipt ${Number(h)}`);
      if (state.fail?.receipt === h) throw new Error("timeout");
      const ok = state.receipts?.get(h);
      return ok === undefined ? null : { success: ok, blockNumber: 7n, gasUsed: 21_000n, feeWei: 42_000n };
    },
    known: async (h) => {
      calls.push(`known ${Number(h)}`);
      if (state.fail?.known === h) throw new Error("socket hang up");
      return state.pool?.has(h) ?? false;
    },
    resend: async (raw) => {
      calls.push(`resend ${raw}`);
      const refusal = state.refuse?.get(raw);
      if (refusal !== undefined) throw new Error(refusal);
    },
  };
}

describe("follow", () => {
  it("a used nonce: its receipt says confirmed or reverted, none says replaced", async () => {
    const reads = chain({
      mined: new Map([[A, 3]]),
      receipts: new Map([
        [hash(1), true],
        [hash(2), false],
      ]),
    });
    const out = await follow([tx("tx_1", A, 0), tx("tx_2", A, 1), tx("tx_3", A, 2)], reads, 1_000, 300_000);
    expect(out).toEqual([
      { id: "tx_1", status: "confirmed", blockNumber: "7", gasUsed: "21000", feeWei: "42000" },
      { id: "tx_2", status: "reverted", blockNumber: "7", gasUsed: "21000", feeWei: "42000" },
      { id: "tx_3", status: "replaced" },
    ]);
    // The wallet's count once, before any receipt.
    expect(reads.calls[0]).toBe("count 0xaa");
    expect(reads.calls.filter((c) => c.startsWith("count"))).toHaveLength(1);
  });

  it("an unused nonce: in the pool it is pending and present; seen nowhere it is dropped only after the delay", async () => {
    const reads = chain({ mined: new Map([[A, 0]]), pool: new Set([hash(1)]) });
    const out = await follow(
      [tx("tx_1", A, 0, 500), tx("tx_2", A, 1), tx("tx_3", A, 2, 2_000), tx("tx_4", A, 3, 700)],
      reads,
      10_000,
      9_000,
    );
    expect(out).toEqual([
      { id: "tx_1", status: "pending", missingSince: null, lastError: null },
      { id: "tx_2", status: "pending", missingSince: 10_000, lastError: null },
      { id: "tx_3", status: "pending", missingSince: 2_000, lastError: null },
      { id: "tx_4", status: "dropped", lastError: null },
    ]);
  });

  it("lost from the pool, its bytes are sent again: taken, it is pending and present; refused past the delay, dropped with the reason", async () => {
    const reads = chain({
      mined: new Map([[A, 0]]),
      refuse: new Map([
        ["0x02", "insufficient funds for gas * price + value"],
        ["0x03", "insufficient funds for gas * price + value"],
      ]),
    });
    const out = await follow(
      [tx("tx_1", A, 0, 100, "0x01"), tx("tx_2", A, 1, 100, "0x02"), tx("tx_3", A, 2, 9_500, "0x03")],
      reads,
      10_000,
      9_000,
    );
    expect(out).toEqual([
      { id: "tx_1", status: "pending", missingSince: null, lastError: null },
      {
        id: "tx_2",
        status: "dropped",
        lastError: "the chain had lost it, and refused it sent again: insufficient funds for gas * price + value",
      },
      {
        id: "tx_3",
        status: "pending",
        missingSince: 9_500,
        lastError: "the chain had lost it, and refused it sent again: insufficient funds for gas * price + value",
      },
    ]);
    expect(reads.calls.filter((c) => c.startsWith("resend"))).toEqual(["resend 0x01", "resend 0x02", "resend 0x03"]);
  });

  it("a used nonce whose hash the RPC knows without a receipt is read again, not said replaced; a resend the pool already has is pending", async () => {
    const reads = chain({
      mined: new Map([[A, 1]]),
      pool: new Set([hash(1)]),
      refuse: new Map([["0x02", "already known"]]),
    });
    const out = await follow([tx("tx_1", A, 0), tx("tx_2", A, 1, 100, "0x02")], reads, 10_000, 1);
    expect(out).toEqual([
      { id: "tx_1", status: "pending", missingSince: null, lastError: null },
      { id: "tx_2", status: "pending", missingSince: null, lastError: null },
    ]);
  });

  it("an RPC that fails leaves each transaction it was asked about pending with the reason, without its URL", async () => {
    const reads = chain({
      mined: new Map([
        [A, 1],
        [B, 0],
      ]),
      receipts: new Map([[hash(2), true]]),
      fail: { count: B, receipt: hash(1) },
    });
    const out = await follow([tx("tx_1", A, 0, 5), tx("tx_2", A, 0), tx("tx_3", B, 0, 9)], reads, 100, 1);
    expect(out).toMatchObject([
      { id: "tx_1", status: "pending", missingSince: 5, lastError: "the chain's RPC did not answer: timeout" },
      { id: "tx_2", status: "confirmed" },
      { id: "tx_3", status: "pending", missingSince: 9 },
    ]);
    const failed = out[2] as { lastError: string };
    expect(failed.lastError).toBe("the chain's RPC did not answer: HTTP request failed.");
    expect(rpcError(new Error("request to https://rpc.example/v2/secret failed"))).toBe("request to <rpc> failed");
  });
});
