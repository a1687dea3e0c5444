// ReceiptAnchor (contracts/ReceiptAnchor.sol) on the suite's anvil: its digest is the one
// shared/receiptAnchor.ts signs; a root signed by a receipt key is stored under that key's address,
// whoever sends it, once per (key, epoch); lastEpoch only moves up; empty anchors and malformed
// signatures revert; a signature over any other value recovers to another address, so it can never
// write the signer's epoch. Also prints the gas of an anchor.
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  hexToBigInt,
  http,
  keccak256,
  numberToHex,
  parseEventLogs,
  recoverMessageAddress,
  stringToHex,
  type Address,
  type Hex,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, sign as signRaw } from "viem/accounts";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { deployContract } from "../../contracts/deploy.ts";
import { anchorDigest, receiptAnchorAbi } from "../../shared/receiptAnchor.ts";
import { decodeRevert, randomAddress, type Revert } from "./fixture.ts";

const abi = receiptAnchorAbi;
const ZERO_ROOT = `0x${"00".repeat(32)}` as Hex;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const randomRoot = () => generatePrivateKey();

describe("ReceiptAnchor", () => {
  const transport = http(inject("rpcUrl"));
  const publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 });
  const walletClient = createWalletClient({ chain: foundry, transport });
  let contract: Address;
  let chainId: number;
  /** Two anvil dev accounts no other contract file sends from: the payers that carry anchors. */
  let payer: Address;
  let otherPayer: Address;
  let nextEpoch = 1_800_000_000;
  const epoch = () => nextEpoch++;

  beforeAll(async () => {
    const accounts = (await walletClient.getAddresses()).map((a) => getAddress(a));
    payer = accounts[18]!;
    otherPayer = accounts[19]!;
    chainId = await publicClient.getChainId();
    ({ address: contract } = await deployContract(
      { publicClient, walletClient, account: accounts[0]! },
      "ReceiptAnchor",
    ));
  });

  /** A receipt key: its address, and its EIP-191 signature over an anchor's digest. */
  function receiptKey(privateKey: Hex = generatePrivateKey()) {
    const account = privateKeyToAccount(privateKey);
    return {
      address: account.address,
      sign: (epoch: number, root: Hex, heads: number, on: { chain_id?: number; contract?: Address } = {}) =>
        account.signMessage({
          message: {
            raw: anchorDigest(
              { chain_id: on.chain_id ?? chainId, contract: on.contract ?? contract },
              epoch,
              root,
              heads,
            ),
          },
        }),
      privateKey,
    };
  }

  type Args = readonly [bigint, Hex, number, Hex];
  const args = (epoch: number, root: Hex, heads: number, signature: Hex): Args => [
    BigInt(epoch),
    root,
    heads,
    signature,
  ];

  async function send(from: Address, a: Args): Promise<TransactionReceipt> {
    const { request } = await publicClient.simulateContract({
      address: contract,
      abi,
      functionName: "anchor",
      args: a,
      account: from,
    });
    const hash = await walletClient.writeContract(request);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    return receipt;
  }

  async function revert(from: Address, a: Args): Promise<Revert> {
    try {
      await publicClient.simulateContract({ address: contract, abi, functionName: "anchor", args: a, account: from });
    } catch (err) {
      return decodeRevert(err);
    }
    throw new Error("anchor was expected to revert but would succeed");
  }

  const anchors = async (signer: Address, e: number) => {
    const [root, heads, anchoredAt] = await publicClient.readContract({
      address: contract,
      abi,
      functionName: "anchors",
      args: [signer, BigInt(e)],
    });
    return { root, heads, anchoredAt };
  };
  const lastEpoch = (signer: Address) =>
    publicClient.readContract({ address: contract, abi, functionName: "lastEpoch", args: [signer] });
  const anchoredEvents = (receipt: TransactionReceipt) =>
    parseEventLogs({ abi, logs: receipt.logs, eventName: "Anchored" }).map((l) => l.args);

  it("computes on chain the digest shared/receiptAnchor.ts signs (and another for another contract or chain)", async () => {
    const ref = { chain_id: chainId, contract };
    for (const [e, root, heads] of [
      [0, ZERO_ROOT, 0],
      [1_800_000_000, randomRoot(), 1],
      [2 ** 53 - 1, randomRoot(), 1_000_000],
      [1, `0x${"ff".repeat(32)}` as Hex, 2 ** 32 - 1],
    ] as const) {
      const onChain = await publicClient.readContract({
        address: contract,
        abi,
        functionName: "anchorDigest",
        args: [BigInt(e), root, heads],
      });
      expect(onChain).toBe(anchorDigest(ref, e, root, heads));
      expect(onChain).not.toBe(anchorDigest({ ...ref, contract: randomAddress() }, e, root, heads));
      expect(onChain).not.toBe(anchorDigest({ ...ref, chain_id: 1 }, e, root, heads));
      expect(onChain).not.toBe(anchorDigest(ref, e + 1, root, heads));
    }
  });

  it("stores a root signed by a receipt key under the key's address, sent by anyone: anchors(), lastEpoch() and the Anchored event", async () => {
    const key = receiptKey();
    expect(await lastEpoch(key.address)).toBe(0n);
    const e = epoch();
    const root = randomRoot();
    const receipt = await send(payer, args(e, root, 5, await key.sign(e, root, 5)));
    // The payer sent it; the key never had to hold gas or send.
    expect(getAddress(receipt.from)).toBe(payer);
    expect(payer).not.toBe(key.address);
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
    expect(await anchors(key.address, e)).toEqual({ root, heads: 5, anchoredAt: block.timestamp });
    expect(await lastEpoch(key.address)).toBe(BigInt(e));
    expect(anchoredEvents(receipt)).toEqual([{ signer: key.address, epoch: BigInt(e), root, heads: 5 }]);
    expect(receipt.logs).toHaveLength(1);
    expect(getAddress(receipt.logs[0]!.address)).toBe(contract);
    // Nothing stored under the payer, nor under the neighbouring epochs.
    expect((await anchors(payer, e)).root).toBe(ZERO_ROOT);
    expect(await lastEpoch(payer)).toBe(0n);
    expect((await anchors(key.address, e + 1)).root).toBe(ZERO_ROOT);
    expect((await anchors(key.address, e - 1)).root).toBe(ZERO_ROOT);

    // Another payer carries the key's next epoch: the signer, not the sender, is who anchors.
    const e2 = epoch();
    const root2 = randomRoot();
    const receipt2 = await send(otherPayer, args(e2, root2, 1, await key.sign(e2, root2, 1)));
    expect(getAddress(receipt2.from)).toBe(otherPayer);
    expect(anchoredEvents(receipt2)).toEqual([{ signer: key.address, epoch: BigInt(e2), root: root2, heads: 1 }]);
    expect((await anchors(key.address, e2)).root).toBe(root2);
    expect((await anchors(key.address, e)).root).toBe(root);
    expect(await lastEpoch(key.address)).toBe(BigInt(e2));
  });

  it("moves lastEpoch only upward: an earlier epoch is still stored, lastEpoch stays; one key's anchors are not another's", async () => {
    // Fixed keys, epochs and roots: the gas printed is the same on every run.
    const key = receiptKey(keccak256(stringToHex("receipt-anchor-test key")));
    const other = receiptKey(keccak256(stringToHex("receipt-anchor-test other key")));
    const base = 1_900_000_000;
    const write = async (k: ReturnType<typeof receiptKey>, e: number) => {
      const root = keccak256(stringToHex(`root ${k.address} ${e}`));
      const receipt = await send(payer, args(e, root, 2, await k.sign(e, root, 2)));
      return { root, receipt };
    };
    const first = await write(key, base + 10);
    expect(await lastEpoch(key.address)).toBe(BigInt(base + 10));
    const later = await write(key, base + 20);
    expect(await lastEpoch(key.address)).toBe(BigInt(base + 20));
    const earlier = await write(key, base + 15);
    expect(await lastEpoch(key.address)).toBe(BigInt(base + 20));
    expect((await anchors(key.address, base + 15)).root).toBe(earlier.root);
    expect(anchoredEvents(earlier.receipt)).toEqual([
      { signer: key.address, epoch: BigInt(base + 15), root: earlier.root, heads: 2 },
    ]);
    // Another key's epoch, even the same number, is its own.
    await write(other, base + 1);
    expect(await lastEpoch(other.address)).toBe(BigInt(base + 1));
    expect(await lastEpoch(key.address)).toBe(BigInt(base + 20));
    const same = await write(other, base + 20);
    expect((await anchors(other.address, base + 20)).root).toBe(same.root);
    expect((await anchors(key.address, base + 20)).root).toBe(later.root);

    console.log(
      `ReceiptAnchor.anchor gas: first anchor of a signer ${first.receipt.gasUsed}, ` +
        `a later epoch ${later.receipt.gasUsed}, an earlier epoch (lastEpoch unchanged) ${earlier.receipt.gasUsed}`,
    );
    expect(first.receipt.gasUsed).toBeGreaterThan(later.receipt.gasUsed);
    expect(later.receipt.gasUsed).toBeGreaterThan(earlier.receipt.gasUsed);
  });

  it("writes an epoch's root once: the same (signer, epoch) again reverts AlreadyAnchored, with the same root or another", async () => {
    const key = receiptKey();
    const e = epoch();
    const root = randomRoot();
    const signature = await key.sign(e, root, 3);
    await send(payer, args(e, root, 3, signature));
    // The very same transaction again (a payer's retry, a replay by anyone).
    expect(await revert(otherPayer, args(e, root, 3, signature))).toEqual({
      errorName: "AlreadyAnchored",
      args: [key.address, BigInt(e)],
    });
    // Another root, or another size, signed by the key for the same epoch.
    const root2 = randomRoot();
    expect(await revert(payer, args(e, root2, 3, await key.sign(e, root2, 3)))).toEqual({
      errorName: "AlreadyAnchored",
      args: [key.address, BigInt(e)],
    });
    expect(await revert(payer, args(e, root, 4, await key.sign(e, root, 4)))).toMatchObject({
      errorName: "AlreadyAnchored",
    });
    // Sent anyway (past the simulation), it reverts on chain and changes nothing.
    const hash = await walletClient.writeContract({
      address: contract,
      abi,
      functionName: "anchor",
      args: args(e, root2, 3, await key.sign(e, root2, 3)),
      account: payer,
      gas: 200_000n,
    });
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("reverted");
    expect((await anchors(key.address, e)).root).toBe(root);
    expect((await anchors(key.address, e)).heads).toBe(3);
  });

  it("refuses an empty anchor (zero root or zero heads) with EmptyAnchor, however well signed", async () => {
    const key = receiptKey();
    const e = epoch();
    expect(await revert(payer, args(e, ZERO_ROOT, 1, await key.sign(e, ZERO_ROOT, 1)))).toEqual({
      errorName: "EmptyAnchor",
      args: [],
    });
    const root = randomRoot();
    expect(await revert(payer, args(e, root, 0, await key.sign(e, root, 0)))).toEqual({
      errorName: "EmptyAnchor",
      args: [],
    });
    expect(await revert(payer, args(e, ZERO_ROOT, 0, "0x"))).toMatchObject({ errorName: "EmptyAnchor" });
    expect(await lastEpoch(key.address)).toBe(0n);
    // The same epoch with a root and heads is then accepted.
    await send(payer, args(e, root, 1, await key.sign(e, root, 1)));
    expect((await anchors(key.address, e)).root).toBe(root);
  });

  it("stores a signature over any other values under another address: it never writes the signer's epoch", async () => {
    const key = receiptKey();
    const e = epoch();
    const root = randomRoot();
    const heads = 7;
    const otherRoot = randomRoot();
    const cases: { what: string; signature: Hex; sent: Args }[] = [
      { what: "another epoch", signature: await key.sign(e + 1, root, heads), sent: args(e, root, heads, "0x") },
      { what: "another root", signature: await key.sign(e, otherRoot, heads), sent: args(e, root, heads, "0x") },
      { what: "another size", signature: await key.sign(e, root, heads + 1), sent: args(e, root, heads, "0x") },
      {
        what: "another chain",
        signature: await key.sign(e, root, heads, { chain_id: 1 }),
        sent: args(e, root, heads, "0x"),
      },
      {
        what: "another contract",
        signature: await key.sign(e, root, heads, { contract: randomAddress() }),
        sent: args(e, root, heads, "0x"),
      },
      {
        what: "the digest without EIP-191's prefix",
        signature: await signRaw({
          hash: anchorDigest({ chain_id: chainId, contract }, e, root, heads),
          privateKey: key.privateKey,
          to: "hex",
        }),
        sent: args(e, root, heads, "0x"),
      },
    ];
    const recovered = new Set<Address>();
    for (const c of cases) {
      const sent: Args = [c.sent[0], c.sent[1], c.sent[2], c.signature];
      const expected = await recoverMessageAddress({
        message: { raw: anchorDigest({ chain_id: chainId, contract }, e, root, heads) },
        signature: c.signature,
      });
      expect(expected, c.what).not.toBe(key.address);
      const receipt = await send(payer, sent);
      const [event] = anchoredEvents(receipt);
      expect(event?.signer, c.what).toBe(expected);
      expect((await anchors(expected, e)).root, c.what).toBe(root);
      expect((await anchors(key.address, e)).root, c.what).toBe(ZERO_ROOT);
      recovered.add(expected);
    }
    expect(recovered.size).toBe(cases.length);
    expect(await lastEpoch(key.address)).toBe(0n);
    // The signer's own epoch is still free for the root it did sign.
    const receipt = await send(payer, args(e, root, heads, await key.sign(e, root, heads)));
    expect(anchoredEvents(receipt)[0]?.signer).toBe(key.address);
    expect((await anchors(key.address, e)).root).toBe(root);
  });

  it("reverts on a malformed signature: wrong length, high s, a v other than 27/28, a zero r", async () => {
    const key = receiptKey();
    const e = epoch();
    const root = randomRoot();
    const good = await key.sign(e, root, 1);
    const r = good.slice(2, 66);
    const s = hexToBigInt(`0x${good.slice(66, 130)}`);
    const v = good.slice(130);
    const highS = numberToHex(SECP256K1_N - s, { size: 32 });
    const flipped = v === "1b" ? "1c" : "1b";
    const expectations: [Hex, Revert][] = [
      ["0x", { errorName: "ECDSAInvalidSignatureLength", args: [0n] }],
      [good.slice(0, 130) as Hex, { errorName: "ECDSAInvalidSignatureLength", args: [64n] }],
      [`${good}00`, { errorName: "ECDSAInvalidSignatureLength", args: [66n] }],
      // The same signature's malleable twin (s' = n − s, v flipped): refused, not a second signer.
      [`0x${r}${highS.slice(2)}${flipped}`, { errorName: "ECDSAInvalidSignatureS", args: [highS] }],
      [`0x${r}${good.slice(66, 130)}00`, { errorName: "ECDSAInvalidSignature", args: [] }],
      [`0x${r}${good.slice(66, 130)}1d`, { errorName: "ECDSAInvalidSignature", args: [] }],
      [`0x${"00".repeat(32)}${good.slice(66, 130)}${v}`, { errorName: "ECDSAInvalidSignature", args: [] }],
    ];
    for (const [signature, expected] of expectations) {
      expect(await revert(payer, args(e, root, 1, signature)), signature).toEqual(expected);
    }
    expect((await anchors(key.address, e)).root).toBe(ZERO_ROOT);
    // The well-formed one passes.
    await send(payer, args(e, root, 1, good));
    expect((await anchors(key.address, e)).root).toBe(root);
  });
});
