// Budgets' shared arithmetic (budgets.ts): a signature's charge is the digest the key actually signs
// (so a payload signed again is recognised as the same signature) and the native value it sends; the
// scopes a budget is counted in; where a budget refuses (at the cap, one wei over, the N+1-th
// signature, values past 2^128); the counters as a person reads them.
import {
  hashMessage,
  hashTypedData,
  keccak256,
  parseTransaction,
  recoverAddress,
  serializeTransaction,
  type Hex,
  type TransactionSerializable,
  type TypedDataDefinition,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  MAX_COUNTED_WEI,
  budgetCharge,
  budgetLimits,
  budgetRefusal,
  budgetState,
  countedDigest,
  showWei,
  useOf,
  type BudgetLimit,
  type BudgetUse,
} from "./budgets.ts";
import type { Budget } from "./schema.ts";

const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const BOB = "0x0000000000000000000000000000000000000b0b";
const ETH = 10n ** 18n;

const tx: TransactionSerializable = {
  chainId: 8453,
  to: BOB,
  value: 2n * 10n ** 17n,
  nonce: 7,
  gas: 21_000n,
  maxFeePerGas: 2_000_000_000n,
  maxPriorityFeePerGas: 1_000_000n,
  type: "eip1559",
};

const permit: TypedDataDefinition = {
  domain: {
    name: "USD Coin",
    version: "2",
    chainId: 1,
    verifyingContract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
  },
  types: {
    Permit: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" },
    ],
  },
  primaryType: "Permit",
  message: { owner: account.address, spender: BOB, value: 5n, nonce: 0n, deadline: 1n },
};

describe("budgetCharge", () => {
  it("a transaction: the hash its signature is over (keccak256 of the unsigned serialization) and its value", async () => {
    const charge = budgetCharge({ kind: "transaction", transaction: tx });
    expect(charge).toEqual({
      digest: keccak256(serializeTransaction(tx)),
      valueWei: 2n * 10n ** 17n,
      valueLamports: 0n,
    });
    // It is what the key signs: the signature of the signed transaction recovers to the key from it.
    const signed = parseTransaction(await account.signTransaction(tx));
    const signature = { r: signed.r as Hex, s: signed.s as Hex, yParity: signed.yParity as number };
    expect(await recoverAddress({ hash: charge.digest, signature })).toBe(account.address);
    // Another nonce is another signature.
    expect(budgetCharge({ kind: "transaction", transaction: { ...tx, nonce: 8 } }).digest).not.toBe(charge.digest);
  });

  it("a transaction without a value sends 0", () => {
    const { value: _value, ...call } = tx;
    expect(budgetCharge({ kind: "transaction", transaction: call })).toEqual({
      digest: keccak256(serializeTransaction(call)),
      valueWei: 0n,
      valueLamports: 0n,
    });
  });

  it("typed data: hashTypedData, value 0", async () => {
    const charge = budgetCharge({ kind: "typed_data", typedData: permit });
    expect(charge).toEqual({ digest: hashTypedData(permit), valueWei: 0n, valueLamports: 0n });
    const signature = await account.signTypedData(permit as Parameters<typeof account.signTypedData>[0]);
    expect(await recoverAddress({ hash: charge.digest, signature })).toBe(account.address);
  });

  it("a message, as text and as raw bytes: hashMessage (EIP-191), value 0", async () => {
    const text = budgetCharge({ kind: "message", message: "Sign in to example.com" });
    expect(text).toEqual({ digest: hashMessage("Sign in to example.com"), valueWei: 0n, valueLamports: 0n });
    expect(
      await recoverAddress({
        hash: text.digest,
        signature: await account.signMessage({ message: "Sign in to example.com" }),
      }),
    ).toBe(account.address);
    const raw = budgetCharge({ kind: "message", message: { raw: "0xdeadbeef" } });
    expect(raw).toEqual({ digest: hashMessage({ raw: "0xdeadbeef" }), valueWei: 0n, valueLamports: 0n });
    // The raw bytes of the text are the same message; other bytes are not.
    expect(
      budgetCharge({
        kind: "message",
        message: { raw: `0x${Buffer.from("Sign in to example.com").toString("hex")}` as Hex },
      }).digest,
    ).toBe(text.digest);
    expect(raw.digest).not.toBe(text.digest);
  });

  it("a raw digest: the digest itself, value 0", () => {
    const digest = keccak256("0x1234");
    expect(budgetCharge({ kind: "hash", digest })).toEqual({ digest, valueWei: 0n, valueLamports: 0n });
  });
});

describe("countedDigest", () => {
  it("is the signer's and the payload's together: one signer's payload once, another signer's apart", () => {
    const digest = keccak256("0x1234");
    const a = countedDigest(account.address, digest);
    expect(a).toMatch(/^0x[0-9a-f]{64}$/);
    expect(countedDigest(account.address.toLowerCase(), digest)).toBe(a);
    expect(countedDigest(account.address, digest.toUpperCase().replace("0X", "0x") as Hex)).toBe(a);
    expect(countedDigest(BOB, digest)).not.toBe(a);
    expect(countedDigest(account.address, keccak256("0x1235"))).not.toBe(a);
    expect(a).not.toBe(digest);
  });
});

describe("budgetLimits", () => {
  const budgets: Budget[] = [
    { name: "daily", window_seconds: 86_400, max_value_wei: "500000000000000000" },
    { name: "per-key", per: "key", window_seconds: 3600, max_signatures: 10 },
    { name: "per-action", per: "action", window_seconds: 60, max_value_wei: "7", max_signatures: 2 },
    { name: "whole", per: "wallet", window_seconds: 600, max_signatures: 3 },
  ];
  const keyHash = `0x${"ab".repeat(32)}` as Hex;

  it("counts a wallet budget under 'wallet', a per-key one under the key's hash, a per-action one under the CID, each with its limits", () => {
    expect(budgetLimits(budgets, { keyHash, cid: "QmAction" })).toEqual([
      { name: "daily", per: "wallet", scope: "wallet", window_seconds: 86_400, max_value_wei: "500000000000000000" },
      { name: "per-key", per: "key", scope: `key:${keyHash}`, window_seconds: 3600, max_signatures: 10 },
      {
        name: "per-action",
        per: "action",
        scope: "action:QmAction",
        window_seconds: 60,
        max_value_wei: "7",
        max_signatures: 2,
      },
      { name: "whole", per: "wallet", scope: "wallet", window_seconds: 600, max_signatures: 3 },
    ]);
  });

  it("another key or action is another scope; the wallet's scope is the same for every runner", () => {
    const a = budgetLimits(budgets, { keyHash, cid: "QmA" });
    const b = budgetLimits(budgets, { keyHash: `0x${"cd".repeat(32)}`, cid: "QmB" });
    expect(a.map((l) => l.scope)).not.toEqual(b.map((l) => l.scope));
    expect(a[0]?.scope).toBe(b[0]?.scope);
    expect(a[1]?.scope).not.toBe(b[1]?.scope);
    expect(a[2]?.scope).not.toBe(b[2]?.scope);
    // A limit has no key the document did not give (the store's schema is strict about both maxima).
    expect(a[0]).not.toHaveProperty("max_signatures");
    expect(a[1]).not.toHaveProperty("max_value_wei");
  });
});

const limit = (l: Partial<BudgetLimit>): BudgetLimit => ({
  name: "daily",
  per: "wallet",
  scope: "wallet",
  window_seconds: 86_400,
  ...l,
});
const use = (count: number, value: bigint, oldest: number | null = null): BudgetUse => ({ count, value, oldest });

describe("budgetRefusal", () => {
  const half = limit({ max_value_wei: (ETH / 2n).toString() });

  it("allows a signature that reaches the value cap exactly, refuses one 1 wei over, naming the numbers", () => {
    expect(budgetRefusal(half, use(2, 3n * 10n ** 17n), 2n * 10n ** 17n)).toBeUndefined();
    expect(budgetRefusal(half, use(0, 0n), ETH / 2n)).toBeUndefined();
    const over = budgetRefusal(half, use(2, 3n * 10n ** 17n), 2n * 10n ** 17n + 1n);
    expect(over).toEqual({
      reason: 'budget "daily" allows 0.5 ETH a day; 0.3 ETH is counted and this sends 0.200000000000000001 ETH',
      observed: "200000000000000001 wei asked, 200000000000000000 wei left",
    });
  });

  it("a signature of 0 wei fits a spent value budget; one of 1 wei does not, and 0 wei is left (never negative)", () => {
    expect(budgetRefusal(half, use(5, ETH / 2n), 0n)).toBeUndefined();
    expect(budgetRefusal(half, use(5, ETH / 2n), 1n)?.observed).toBe("1 wei asked, 0 wei left");
    // Counters above the cap (the document lowered it): still refused, still 0 left.
    expect(budgetRefusal(half, use(5, ETH), 1n)?.observed).toBe("1 wei asked, 0 wei left");
  });

  it("max_signatures N allows the N-th signature and refuses the N+1-th, whatever it sends", () => {
    const three = limit({ max_signatures: 3, window_seconds: 3600, per: "key", scope: "key:0x01" });
    expect(budgetRefusal(three, use(0, 0n), 0n)).toBeUndefined();
    expect(budgetRefusal(three, use(2, 0n), 0n)).toBeUndefined();
    expect(budgetRefusal(three, use(3, 0n), 0n)).toEqual({
      reason: 'budget "daily" allows 3 signatures an hour per usage key, and 3 are counted',
      observed: "3 of 3 signatures used",
    });
    // A count-only budget does not look at the value.
    expect(budgetRefusal(three, use(2, 10n ** 30n), 10n ** 30n)).toBeUndefined();
  });

  it("both maxima: either one refuses", () => {
    const both = limit({ max_signatures: 2, max_value_wei: "100" });
    expect(budgetRefusal(both, use(1, 50n), 50n)).toBeUndefined();
    expect(budgetRefusal(both, use(2, 0n), 0n)?.observed).toBe("2 of 2 signatures used");
    expect(budgetRefusal(both, use(1, 50n), 51n)?.observed).toBe("51 wei asked, 50 wei left");
  });

  it("refuses a value of 2^128 wei or more even under a larger cap; 2^128 - 1 is counted", () => {
    const huge = limit({ max_value_wei: (10n ** 77n).toString() });
    expect(MAX_COUNTED_WEI).toBe(2n ** 128n);
    expect(budgetRefusal(huge, use(0, 0n), 2n ** 128n - 1n)).toBeUndefined();
    expect(budgetRefusal(huge, use(0, 0n), 2n ** 128n)).toBeDefined();
    expect(budgetRefusal(huge, use(0, 0n), 2n ** 200n)).toBeDefined();
  });

  it("says the window and the scope in words", () => {
    const cases: Array<[Partial<BudgetLimit>, string]> = [
      [{ window_seconds: 60 }, "a minute"],
      [{ window_seconds: 120 }, "in 2 minutes"],
      [{ window_seconds: 3600, per: "action", scope: "action:Qm" }, "an hour per action"],
      [{ window_seconds: 7200 }, "in 2 hours"],
      [{ window_seconds: 86_400, per: "key", scope: "key:0x01" }, "a day per usage key"],
      [{ window_seconds: 7 * 86_400 }, "in 7 days"],
      [{ window_seconds: 90 }, "in 90 s"],
    ];
    for (const [l, words] of cases) {
      const refusal = budgetRefusal(limit({ ...l, max_signatures: 1 }), use(1, 0n), 0n);
      expect(refusal?.reason).toBe(`budget "daily" allows 1 signatures ${words}, and 1 are counted`);
    }
  });
});

describe("budgetState", () => {
  const at = Date.parse("2030-01-01T00:00:00.000Z");

  it("says what is used and left, and when the oldest entry leaves the window", () => {
    const l = limit({ max_value_wei: "1000", max_signatures: 5, window_seconds: 3600 });
    expect(budgetState(l, use(2, 300n, at))).toEqual({
      name: "daily",
      per: "wallet",
      scope: "wallet",
      window_seconds: 3600,
      max_value_wei: "1000",
      max_signatures: 5,
      used_value_wei: "300",
      used_signatures: 2,
      left_value_wei: "700",
      left_signatures: 3,
      frees_at: "2030-01-01T01:00:00.000Z",
    });
  });

  it("left_* are never negative (counters above a lowered cap); null frees_at when nothing is counted", () => {
    const l = limit({ max_value_wei: "1000", max_signatures: 5 });
    const over = budgetState(l, use(9, 5000n, at));
    expect(over.left_value_wei).toBe("0");
    expect(over.left_signatures).toBe(0);
    expect(over.used_value_wei).toBe("5000");
    expect(budgetState(l, use(0, 0n)).frees_at).toBeNull();
  });

  it("has no left_* for a maximum the budget does not have", () => {
    const countOnly = budgetState(limit({ max_signatures: 5 }), use(1, 10n));
    expect(countOnly).not.toHaveProperty("left_value_wei");
    expect(countOnly).not.toHaveProperty("max_value_wei");
    const valueOnly = budgetState(limit({ max_value_wei: "5" }), use(1, 1n));
    expect(valueOnly).not.toHaveProperty("left_signatures");
    expect(valueOnly).not.toHaveProperty("max_signatures");
  });

  it("useOf reads back the use a state describes (what a dry run adds to)", () => {
    const l = limit({ max_value_wei: "1000", window_seconds: 600 });
    expect(useOf(budgetState(l, use(3, 2n ** 100n, at)))).toEqual(use(3, 2n ** 100n, at));
    expect(useOf(budgetState(l, use(0, 0n)))).toEqual(use(0, 0n, null));
  });
});

describe("showWei", () => {
  it("writes wei as ETH, without trailing zeros", () => {
    expect(showWei(0n)).toBe("0 ETH");
    expect(showWei(1n)).toBe("0.000000000000000001 ETH");
    expect(showWei(ETH / 4n)).toBe("0.25 ETH");
    expect(showWei(3n * ETH)).toBe("3 ETH");
    expect(showWei(12n * ETH + 5n * 10n ** 16n)).toBe("12.05 ETH");
    expect(showWei(2n ** 128n)).toBe("340282366920938463463.374607431768211456 ETH");
  });
});
