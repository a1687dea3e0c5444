// The anchorer (anchors.ts) without a chain: a fake `send` records the calldata it is given, a real
// key signs, Node's SHA-256 hashes. Every head of an epoch of any size leads by its path to the
// root anchored (the root merkleBatch makes of the same leaves), the signature in the calldata is
// the receipt key's over anchorDigest, epochs strictly increase (also past the last one on chain),
// an epoch closes at maxHeads or after its interval, a failing send is retried with backoff and
// then marked failed, old epochs are dropped past keepHeads (pending ones never), and the receipt
// signer names the open epoch inside every receipt it signs and adds its batch's head to it.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  bytesToHex,
  decodeFunctionData,
  getAddress,
  hashMessage,
  hexToBytes,
  keccak256,
  recoverMessageAddress,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAddress } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SigilError, sentTransactionError } from "../../shared/errors.ts";
import { createLogger, type LogLevel } from "../../shared/log.ts";
import {
  merkleBatch,
  RECEIPT_VERSION,
  rootFromProof,
  type RunReceipt,
  type RunReceiptBody,
  type Sha256,
} from "../../shared/receipt.ts";
import {
  AnchorCheckError,
  anchorDigest,
  anchorLeaf,
  checkAnchored,
  receiptAnchorAbi,
  receiptHead,
  type AnchorProof,
} from "../../shared/receiptAnchor.ts";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { Keyring } from "../keys/derive.ts";
import { serializeSignature, signDigest } from "../keys/ecdsa.ts";
import { ReceiptAnchorer, type AnchoringConfig, type AnchorSender } from "./anchors.ts";
import { ReceiptSigner } from "./receipts.ts";

const KEY = `0x${"5a".repeat(32)}` as Hex;
const SIGNER = privateKeyToAddress(KEY);
const CHAIN_ID = 31337;
const CONTRACT = getAddress(`0x${"c0".repeat(20)}`);
const INSTANCE = "anc0".padEnd(40, "0");

const nodeSha256: Sha256 = (bytes) => createHash("sha256").update(bytes).digest();
/** EIP-191 over the 32 raw bytes of the digest, with the test key: what the receipt signer passes. */
const sign = (digest: Hex): Hex =>
  serializeSignature(signDigest(hexToBytes(hashMessage({ raw: digest })), hexToBytes(KEY)));
const hex = (bytes: Uint8Array) => bytesToHex(bytes);
const randomHead = () => new Uint8Array(randomBytes(32));

type Sent = { to: Address; data: Hex };

/** A send that records each call and answers it as mined (its hash is keccak256 of the calldata). */
function recordingSend() {
  const calls: Sent[] = [];
  let block = 100n;
  const send: AnchorSender = async (call) => {
    calls.push(call);
    return { transactionHash: keccak256(call.data), blockNumber: block++ };
  };
  return { calls, send };
}

/** A logger whose lines are kept, to see what was said (warnings, errors). */
function capturingLog() {
  const lines: { level: LogLevel; line: Record<string, unknown> }[] = [];
  return { lines, log: createLogger("debug", {}, (line, level) => lines.push({ level, line: JSON.parse(line) })) };
}

function anchorer(config: Partial<AnchoringConfig> = {}) {
  const { calls, send } = recordingSend();
  const a = new ReceiptAnchorer({
    config: {
      chainId: CHAIN_ID,
      contract: CONTRACT,
      intervalMs: 3_600_000,
      maxHeads: 1_000_000,
      keepHeads: 100_000_000,
      send,
      log: createLogger("silent"),
      ...config,
    },
    signer: SIGNER,
    instanceId: INSTANCE,
    sign,
    hash: nodeSha256,
  });
  return { a, calls };
}

/** Opens (or joins) the open epoch and adds `n` fresh heads to it. */
function addHeads(a: ReceiptAnchorer, n: number): { epoch: number; heads: Uint8Array[] } {
  const { epoch } = a.ref();
  const heads = Array.from({ length: n }, randomHead);
  for (const h of heads) a.add(epoch, h);
  return { epoch, heads };
}

const decodeAnchor = (data: Hex) => {
  const call = decodeFunctionData({ abi: receiptAnchorAbi, data });
  expect(call.functionName).toBe("anchor");
  const [epoch, root, heads, signature] = call.args as readonly [bigint, Hex, number, Hex];
  return { epoch, root, heads, signature };
};

afterEach(() => {
  vi.useRealTimers();
});

describe("an epoch's tree", () => {
  for (const n of [1, 2, 3, 5, 8, 13, 100, 1000]) {
    it(`of ${n} head(s): every head's path leads to the root merkleBatch makes of their leaves, and nothing else does`, async () => {
      const { a, calls } = anchorer();
      const { epoch, heads } = addHeads(a, n);
      await a.flush();
      const leaves = heads.map((h) => anchorLeaf(h, nodeSha256));
      const expected = merkleBatch(leaves, nodeSha256);
      const root = hex(expected.root);
      // The leaf is RFC 9162's: SHA-256(0x00 ‖ head), with Node's hash as with viem's.
      expect(hex(anchorLeaf(heads[0]!, nodeSha256))).toBe(hex(anchorLeaf(heads[0]!)));
      expect(calls).toHaveLength(1);
      const sent = calls[0]!;
      for (const [index, head] of heads.entries()) {
        const p = a.proof(epoch, hex(head)) as AnchorProof;
        expect(p.status).toBe("anchored");
        expect(p).toMatchObject({
          instance_id: INSTANCE,
          signer: SIGNER,
          chain_id: CHAIN_ID,
          contract: CONTRACT,
          epoch,
          head: hex(head),
          index,
          size: n,
          root,
          transaction_hash: keccak256(sent.data),
          block_number: "100",
        });
        expect(p.error).toBeUndefined();
        expect(p.proof).toEqual(expected.proofs[index]!.map(hex));
        const path = p.proof!.map((x) => hexToBytes(x));
        const got = rootFromProof(anchorLeaf(head, nodeSha256), index, n, path, nodeSha256);
        expect(got && hex(got)).toBe(root);
      }
      // A wrong path, index, size or head does not lead to the root.
      const i = n - 1;
      const head = heads[i]!;
      const p = a.proof(epoch, hex(head))!;
      const path = p.proof!.map((x) => hexToBytes(x));
      const leadsTo = (leaf: Uint8Array, index: number, size: number, proof: Uint8Array[]) => {
        const r = rootFromProof(leaf, index, size, proof, nodeSha256);
        return r && hex(r);
      };
      expect(leadsTo(anchorLeaf(randomHead(), nodeSha256), i, n, path)).not.toBe(root);
      expect(leadsTo(anchorLeaf(head, nodeSha256), i, n + 1, path)).not.toBe(root);
      if (n > 1) {
        expect(leadsTo(anchorLeaf(head, nodeSha256), (i + 1) % n, n, path)).not.toBe(root);
        const bent = path.map((x, j) => (j === 0 ? nodeSha256(x) : x));
        expect(leadsTo(anchorLeaf(head, nodeSha256), i, n, bent)).not.toBe(root);
        expect(leadsTo(anchorLeaf(head, nodeSha256), i, n, path.slice(1))).not.toBe(root);
      }
      // The head itself (not its leaf) is no leaf of the tree.
      expect(leadsTo(head, i, n, path)).not.toBe(root);

      // The calldata anchors this epoch's root and size, signed by the receipt key.
      expect(sent.to).toBe(CONTRACT);
      const call = decodeAnchor(sent.data);
      expect(call).toMatchObject({ epoch: BigInt(epoch), root, heads: n });
      const digest = anchorDigest({ chain_id: CHAIN_ID, contract: CONTRACT }, epoch, root, n);
      expect(await recoverMessageAddress({ message: { raw: digest }, signature: call.signature })).toBe(SIGNER);
      expect(a.stats).toEqual({ epochs: 1, anchored: 1, failed: 0, heads: n });
    });
  }
});

describe("the anchor's signature", () => {
  it("is EIP-191 over anchorDigest of this chain, contract, epoch, root and size: over anything else it recovers to another address", async () => {
    const { a, calls } = anchorer();
    const { epoch } = addHeads(a, 3);
    await a.flush();
    const { root, heads, signature } = decodeAnchor(calls[0]!.data);
    const ref = { chain_id: CHAIN_ID, contract: CONTRACT };
    const recover = (digest: Hex) => recoverMessageAddress({ message: { raw: digest }, signature });
    expect(await recover(anchorDigest(ref, epoch, root, heads))).toBe(SIGNER);
    // Not a raw signature over the digest (without EIP-191's prefix).
    expect(signature).not.toBe(
      serializeSignature(signDigest(hexToBytes(anchorDigest(ref, epoch, root, heads)), hexToBytes(KEY))),
    );
    for (const digest of [
      anchorDigest(ref, epoch + 1, root, heads),
      anchorDigest(ref, epoch, hex(randomHead()), heads),
      anchorDigest(ref, epoch, root, heads + 1),
      anchorDigest({ ...ref, chain_id: 1 }, epoch, root, heads),
      anchorDigest({ ...ref, contract: getAddress(`0x${"c1".repeat(20)}`) }, epoch, root, heads),
    ]) {
      expect(await recover(digest)).not.toBe(SIGNER);
    }
  });
});

describe("heads written as they come (dir)", () => {
  it("a restarted anchorer serves its earlier epochs' paths again, anchors the epoch it was gathering when it stopped, and names later epochs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sigil-anchors-"));
    try {
      const { a, calls } = anchorer({ dir });
      const first = addHeads(a, 10);
      await a.flush();
      const anchoredRoot = a.proof(first.epoch, hex(first.heads[3]!))?.root;
      expect(calls).toHaveLength(1);
      // The next epoch gathers five heads, and the process stops before it closes (nothing flushed).
      const second = addHeads(a, 5);
      expect(second.epoch).toBeGreaterThan(first.epoch);
      expect(readdirSync(dir).sort()).toEqual([`${first.epoch}.heads`, `${second.epoch}.heads`]);

      const { a: b, calls: resent } = anchorer({ dir, lastAnchored: async () => first.epoch });
      await b.start();
      // The first epoch: the chain has it; its paths are served again, to the same root.
      expect(b.proof(first.epoch, hex(first.heads[3]!))).toMatchObject({
        status: "anchored",
        root: anchoredRoot,
        size: 10,
      });
      // The second: closed from its heads and anchored now.
      await b.flush();
      expect(resent).toHaveLength(1);
      const { epoch, root, heads } = decodeAnchor(resent[0]!.data);
      expect([Number(epoch), heads]).toEqual([second.epoch, 5]);
      expect(b.proof(second.epoch, hex(second.heads[4]!))).toMatchObject({ status: "anchored", root, size: 5 });
      expect(merkleBatch(second.heads.map((h) => anchorLeaf(h))).root).toEqual(hexToBytes(root));
      // New epochs come after both.
      expect(b.ref().epoch).toBeGreaterThan(second.epoch);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an epoch dropped past keepHeads is removed from the folder too; an epoch that closes empty leaves no file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sigil-anchors-"));
    try {
      const { a } = anchorer({ dir, keepHeads: 2 });
      const old = addHeads(a, 2);
      await a.flush();
      const next = addHeads(a, 2);
      await a.flush();
      expect(existsSync(join(dir, `${old.epoch}.heads`))).toBe(false);
      expect(existsSync(join(dir, `${next.epoch}.heads`))).toBe(true);
      const { epoch } = a.ref();
      await a.flush();
      expect(existsSync(join(dir, `${epoch}.heads`))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a contract address with no code, and a stop", () => {
  it("turns anchoring off at start, so receipts name no anchor, and says so", async () => {
    const { a, calls } = anchorer({ hasCode: async () => false });
    await a.start();
    expect(a.enabled).toBe(false);
    const { a: b } = anchorer({ hasCode: async () => true });
    await b.start();
    expect(b.enabled).toBe(true);
    // Unreachable at start: anchoring stays on (its sends will say what they meet).
    const { a: c } = anchorer({
      hasCode: async () => {
        throw new Error("down");
      },
    });
    await c.start();
    expect(c.enabled).toBe(true);
    expect(calls).toHaveLength(0);
  });

  it("flush(timeout) returns by its timeout while a send hangs", async () => {
    const { a } = anchorer({ send: () => new Promise(() => undefined) });
    addHeads(a, 3);
    const t0 = Date.now();
    await a.flush(200);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});

describe("epochs", () => {
  it("strictly increase: epochs opened in the same second get the next numbers, and a later clock names its own second", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t = 1_800_000_000;
    vi.setSystemTime(t * 1000 + 250);
    const { a, calls } = anchorer();
    const epochs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const { epoch } = addHeads(a, 1);
      epochs.push(epoch);
      await a.flush();
    }
    expect(epochs).toEqual([t, t + 1, t + 2, t + 3]);
    // The ref of an open epoch is the same until it closes.
    const open = a.ref();
    expect(a.ref()).toEqual(open);
    expect(open).toEqual({ chain_id: CHAIN_ID, contract: CONTRACT, epoch: t + 4 });
    a.add(open.epoch, randomHead());
    await a.flush();
    vi.setSystemTime((t + 100) * 1000);
    expect(a.ref().epoch).toBe(t + 100);
    // Each epoch was anchored once, under its own number, in order.
    expect(calls.map((c) => decodeAnchor(c.data).epoch)).toEqual([0, 1, 2, 3, 4].map((i) => BigInt(t + i)));
  });

  it("an epoch with no heads is never anchored, and its number is not used again", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t = 1_800_000_000;
    vi.setSystemTime(t * 1000);
    const { a, calls } = anchorer();
    expect(a.ref().epoch).toBe(t);
    await a.flush();
    expect(calls).toHaveLength(0);
    expect(a.stats.epochs).toBe(0);
    expect(a.ref().epoch).toBe(t + 1);
  });

  it("start(): the next epoch comes after the last the contract holds for this key, even one in the future", async () => {
    const now = Math.floor(Date.now() / 1000);
    const asked: Address[] = [];
    const { a } = anchorer({
      lastAnchored: async (signer) => {
        asked.push(signer);
        return now + 1000;
      },
    });
    await a.start();
    expect(asked).toEqual([SIGNER]);
    expect(a.ref().epoch).toBe(now + 1001);

    // Without a past epoch on chain (0), the clock names it.
    const { a: fresh } = anchorer({ lastAnchored: async () => 0 });
    await fresh.start();
    const epoch = fresh.ref().epoch;
    expect(epoch).toBeGreaterThanOrEqual(now);
    expect(epoch).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it("start(): a failed read of the last epoch is logged, and the clock still names the epochs", async () => {
    const { lines, log } = capturingLog();
    const { a } = anchorer({
      log,
      lastAnchored: async () => {
        throw new Error("connection refused at http://127.0.0.1:1/secret-path");
      },
    });
    const before = Math.floor(Date.now() / 1000);
    await a.start();
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe("warn");
    expect(lines[0]!.line.error).toBe("connection refused at <rpc>");
    expect(a.ref().epoch).toBeGreaterThanOrEqual(before);
  });

  it("maxHeads closes the epoch at that many heads: it is pending at once, adding to it throws, and the next ref() opens another", async () => {
    let release!: () => void;
    const mined = new Promise<void>((resolve) => (release = resolve));
    const calls: Sent[] = [];
    const { a } = anchorer({
      maxHeads: 3,
      send: async (call) => {
        calls.push(call);
        await mined;
        return { transactionHash: keccak256(call.data), blockNumber: 7n };
      },
    });
    const { epoch, heads } = addHeads(a, 2);
    expect(a.proof(epoch, hex(heads[0]!))?.status).toBe("open");
    expect(a.ref().epoch).toBe(epoch);
    const third = randomHead();
    a.add(epoch, third);
    const p = a.proof(epoch, hex(third))!;
    expect(p.status).toBe("pending");
    expect(p).toMatchObject({ index: 2, size: 3, transaction_hash: null, block_number: null });
    expect(() => a.add(epoch, randomHead())).toThrow(`epoch ${epoch} is not open`);
    const next = a.ref().epoch;
    expect(next).toBeGreaterThan(epoch);
    a.add(next, randomHead());
    release();
    await a.flush();
    expect(a.proof(epoch, hex(third))).toMatchObject({ status: "anchored", block_number: "7" });
    expect(calls.map((c) => decodeAnchor(c.data))).toMatchObject([
      { epoch: BigInt(epoch), heads: 3 },
      { epoch: BigInt(next), heads: 1 },
    ]);
  });

  it("the interval closes the epoch and anchors it without a flush", async () => {
    const { a, calls } = anchorer({ intervalMs: 50 });
    const { epoch, heads } = addHeads(a, 2);
    const open = a.proof(epoch, hex(heads[1]!))!;
    expect(open.status).toBe("open");
    expect(open.closes_at).toBe(epoch + 1);
    // The close comes from the interval's timer, whenever a loaded machine runs it.
    await vi.waitFor(() => expect(a.proof(epoch, hex(heads[1]!))?.status).toBe("anchored"), { timeout: 10_000 });
    expect(calls).toHaveLength(1);
    const p = a.proof(epoch, hex(heads[1]!))!;
    expect(p).toMatchObject({ status: "anchored", index: 1, size: 2 });
    expect(p.closes_at).toBeGreaterThanOrEqual(epoch);
    expect(() => a.add(epoch, randomHead())).toThrow(/not open/);
    expect(a.ref().epoch).toBeGreaterThan(epoch);
  });
});

describe("a send that fails", () => {
  it("is retried with backoff (1 s, doubling) and after 6 attempts the epoch is failed, with the error; the next epoch is still anchored", async () => {
    vi.useFakeTimers();
    const { lines, log } = capturingLog();
    const attempts: number[] = [];
    let failing = true;
    const { a } = anchorer({
      log,
      send: async (call) => {
        attempts.push(Date.now());
        if (failing) throw new Error("nonce too low at https://rpc.example/v2/KEY\nsecond line");
        return { transactionHash: keccak256(call.data), blockNumber: 9n };
      },
    });
    const { epoch, heads } = addHeads(a, 4);
    let done = false;
    const flushed = a.flush().then(() => (done = true));
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toHaveLength(1);
    expect(a.proof(epoch, hex(heads[0]!))?.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(999);
    expect(attempts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flushed;
    expect(attempts.map((t) => t - t0)).toEqual([0, 1_000, 3_000, 7_000, 15_000, 31_000]);
    const p = a.proof(epoch, hex(heads[2]!))!;
    expect(p.status).toBe("failed");
    expect(p.error).toBe("nonce too low at <rpc>");
    // Its tree is still served: a verifier sees which root failed.
    expect(p).toMatchObject({ index: 2, size: 4, transaction_hash: null, block_number: null });
    expect(a.stats).toMatchObject({ epochs: 1, anchored: 0, failed: 1 });
    expect(lines.filter((l) => l.level === "warn")).toHaveLength(5);
    expect(lines.filter((l) => l.level === "error").map((l) => l.line.error)).toEqual(["nonce too low at <rpc>"]);

    failing = false;
    const next = addHeads(a, 1);
    expect(next.epoch).toBeGreaterThan(epoch);
    const again = a.flush();
    await vi.advanceTimersByTimeAsync(0);
    await again;
    expect(a.proof(next.epoch, hex(next.heads[0]!))?.status).toBe("anchored");
    expect(a.stats).toMatchObject({ epochs: 2, anchored: 1, failed: 1 });
  });

  it("that succeeds on a retry leaves the epoch anchored", async () => {
    vi.useFakeTimers();
    let n = 0;
    const { a } = anchorer({
      send: async (call) => {
        if (++n < 3) throw new Error("temporarily unavailable");
        return { transactionHash: keccak256(call.data), blockNumber: 11n };
      },
    });
    const { epoch, heads } = addHeads(a, 1);
    const flushed = a.flush();
    await vi.advanceTimersByTimeAsync(3_000);
    await flushed;
    expect(n).toBe(3);
    const p = a.proof(epoch, hex(heads[0]!))!;
    expect(p).toMatchObject({ status: "anchored", block_number: "11" });
    expect(p.error).toBeUndefined();
  });
});

describe("a send whose transaction was mined though the send threw", () => {
  // PayerPool.sendCall throws when the receipt does not come within its 120 s wait, though the
  // transaction may still be mined; a retry of the same calldata then only reverts AlreadyAnchored.
  // The anchorer reads the contract after a failed send and takes a root already there as anchored.
  it("an epoch already on chain is anchored when the contract holds its root, not failed, naming the transaction the send made", async () => {
    vi.useFakeTimers();
    const onChain = new Map<bigint, Hex>();
    let sends = 0;
    const sentHash = keccak256("0x01");
    const { a } = anchorer({
      send: async (call) => {
        sends++;
        const { epoch, root } = decodeAnchor(call.data);
        if (onChain.has(epoch)) throw new Error(`execution reverted: AlreadyAnchored(${SIGNER}, ${epoch})`);
        onChain.set(epoch, root);
        // As PayerPool.sendCall throws when the receipt of a transaction it sent does not come.
        throw sentTransactionError(new SigilError("chain_unavailable", "no receipt for the transaction"), sentHash);
      },
      storedRoot: async (_signer, epoch) => onChain.get(BigInt(epoch)) ?? `0x${"00".repeat(32)}`,
    });
    const { epoch, heads } = addHeads(a, 2);
    const flushed = a.flush();
    await vi.advanceTimersByTimeAsync(31_000);
    await flushed;
    expect(sends).toBe(1);
    expect(onChain.has(BigInt(epoch))).toBe(true);
    expect(a.proof(epoch, hex(heads[0]!))).toMatchObject({ status: "anchored", transaction_hash: sentHash });
    expect(a.stats).toMatchObject({ anchored: 1, failed: 0 });
  });

  it("a root of another epoch's tree on chain does not count: the epoch fails after its retries", async () => {
    vi.useFakeTimers();
    const { a } = anchorer({
      send: async () => {
        throw new Error("execution reverted: AlreadyAnchored");
      },
      storedRoot: async () => `0x${"11".repeat(32)}`,
    });
    const { epoch, heads } = addHeads(a, 1);
    const flushed = a.flush();
    await vi.advanceTimersByTimeAsync(31_000);
    await flushed;
    expect(a.proof(epoch, hex(heads[0]!))?.status).toBe("failed");
  });
});

describe("keepHeads", () => {
  it("drops the oldest anchored epochs past the bound and keeps the newest", async () => {
    const { a } = anchorer({ keepHeads: 4 });
    const epochs: { epoch: number; heads: Uint8Array[] }[] = [];
    for (let i = 0; i < 4; i++) {
      epochs.push(addHeads(a, 2));
      await a.flush();
    }
    const kept = (i: number) => a.proof(epochs[i]!.epoch, hex(epochs[i]!.heads[0]!));
    expect(kept(0)).toBeUndefined();
    expect(kept(1)).toBeUndefined();
    expect(kept(2)?.status).toBe("anchored");
    expect(kept(3)?.status).toBe("anchored");
    expect(a.proof(epochs[3]!.epoch, hex(epochs[3]!.heads[1]!))).toMatchObject({ index: 1, size: 2 });
  });

  it("keeps an epoch larger than the bound on its own, and never drops one still pending", async () => {
    let release!: () => void;
    const mined = new Promise<void>((resolve) => (release = resolve));
    const { a } = anchorer({
      keepHeads: 2,
      send: async (call) => {
        await mined;
        return { transactionHash: keccak256(call.data), blockNumber: 1n };
      },
    });
    const big = addHeads(a, 5);
    a.flush();
    const second = addHeads(a, 1);
    a.flush();
    const third = addHeads(a, 1);
    a.flush();
    // All pending: none dropped, though 7 heads are kept for a bound of 2.
    for (const e of [big, second, third]) expect(a.proof(e.epoch, hex(e.heads[0]!))?.status).toBe("pending");
    release();
    await a.flush();
    for (const e of [big, second, third]) expect(a.proof(e.epoch, hex(e.heads[0]!))?.status).toBe("anchored");
    // The next close drops the anchored ones down to the bound, oldest first.
    const fourth = addHeads(a, 1);
    await a.flush();
    expect(a.proof(big.epoch, hex(big.heads[0]!))).toBeUndefined();
    expect(a.proof(second.epoch, hex(second.heads[0]!))).toBeUndefined();
    expect(a.proof(third.epoch, hex(third.heads[0]!))?.status).toBe("anchored");
    expect(a.proof(fourth.epoch, hex(fourth.heads[0]!))?.status).toBe("anchored");
  });
});

describe("proof()", () => {
  it("of an unknown head or epoch is undefined; of the open epoch is `open` with no root; a head's hex case does not matter", async () => {
    const { a } = anchorer();
    const { epoch, heads } = addHeads(a, 3);
    expect(a.proof(epoch, hex(randomHead()))).toBeUndefined();
    expect(a.proof(epoch + 1, hex(heads[0]!))).toBeUndefined();
    expect(a.proof(epoch - 1, hex(heads[0]!))).toBeUndefined();
    const open = a.proof(epoch, hex(heads[1]!))!;
    expect(open).toEqual({
      instance_id: INSTANCE,
      signer: SIGNER,
      chain_id: CHAIN_ID,
      contract: CONTRACT,
      epoch,
      head: hex(heads[1]!),
      status: "open",
      closes_at: epoch + 3600,
    });
    const upper = `0x${hex(heads[1]!).slice(2).toUpperCase()}` as Hex;
    expect(a.proof(epoch, upper)).toEqual(open);
    await a.flush();
    expect(a.proof(epoch, upper)).toMatchObject({ status: "anchored", index: 1, head: hex(heads[1]!) });
    expect(a.proof(epoch, hex(randomHead()))).toBeUndefined();
  });

  it("add() for an epoch that is not open throws: none open, another number, or one closed", async () => {
    const { a } = anchorer();
    expect(() => a.add(1_800_000_000, randomHead())).toThrow("epoch 1800000000 is not open");
    const { epoch } = a.ref();
    expect(() => a.add(epoch + 1, randomHead())).toThrow(/not open/);
    expect(() => a.add(epoch - 1, randomHead())).toThrow(/not open/);
    a.add(epoch, randomHead());
    await a.flush();
    expect(() => a.add(epoch, randomHead())).toThrow(/not open/);
    expect(a.stats.heads).toBe(1);
  });
});

describe("the receipt signer with anchoring", () => {
  const keyring = () => new Keyring(hexToBytes(TEST_ROOT_KEY));
  function signerWith(send: AnchorSender) {
    return new ReceiptSigner({
      keyring: keyring(),
      instanceId: INSTANCE,
      composeHash: "ab".repeat(32),
      quote: async () => ({ quote: "00", event_log: "[]" }),
      anchoring: {
        chainId: CHAIN_ID,
        contract: CONTRACT,
        intervalMs: 3_600_000,
        maxHeads: 1_000,
        keepHeads: 100_000,
        send,
        log: createLogger("silent"),
      },
    });
  }
  const body = (i: number): Omit<RunReceiptBody, "instance_id" | "compose_hash"> => ({
    version: RECEIPT_VERSION,
    request_id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    account: `0x${"11".repeat(32)}`,
    cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    params_sha256: `0x${"01".repeat(32)}`,
    response_sha256: `0x${"02".repeat(32)}`,
    logs_sha256: `0x${"03".repeat(32)}`,
    has_error: false,
    wallets: [],
    started_at: "2026-01-01T00:00:00.000Z",
    ended_at: "2026-01-01T00:00:01.000Z",
    duration_ms: 1000,
    charged_cents: 0,
  });

  it("names the open epoch in every receipt, inside its leaf, and adds its batch's head, which anchors to the root on chain", async () => {
    const { calls, send } = recordingSend();
    const signer = signerWith(send);
    const anchors = signer.anchors!;
    const batch: RunReceipt[] = await Promise.all([0, 1, 2].map((i) => signer.sign(body(i))));
    const epoch = batch[0]!.anchor!.epoch;
    for (const r of batch) expect(r.anchor).toEqual({ chain_id: CHAIN_ID, contract: CONTRACT, epoch });
    expect(new Set(batch.map((r) => r.signature)).size).toBe(1);
    const head = receiptHead(batch[0]!)!;
    for (const r of batch) expect(receiptHead(r)).toBe(head);
    // The head is what the receipt key signed for the batch.
    expect(
      (await recoverMessageAddress({ message: { raw: head }, signature: batch[0]!.signature })).toLowerCase(),
    ).toBe(signer.address);
    expect(anchors.proof(epoch, head)).toMatchObject({ status: "open", signer: signer.address, head });

    // The anchor is in the leaf: another epoch (or chain, or contract) leads to another head, unknown to the anchorer.
    const moved = { ...batch[0]!, anchor: { ...batch[0]!.anchor!, epoch: epoch + 1 } };
    expect(receiptHead(moved)).not.toBe(head);
    expect(anchors.proof(epoch, receiptHead(moved)!)).toBeUndefined();
    expect(receiptHead({ ...batch[0]!, anchor: { ...batch[0]!.anchor!, chain_id: 1 } })).not.toBe(head);
    const { anchor: _anchor, ...unanchored } = batch[0]!;
    expect(receiptHead(unanchored as RunReceipt)).not.toBe(head);

    // A later batch joins the same open epoch.
    const later = await signer.sign(body(3));
    expect(later.anchor?.epoch).toBe(epoch);
    const laterHead = receiptHead(later)!;
    expect(laterHead).not.toBe(head);

    await anchors.flush();
    const proof = anchors.proof(epoch, head)!;
    expect(proof).toMatchObject({ status: "anchored", index: 0, size: 2 });
    expect(anchors.proof(epoch, laterHead)).toMatchObject({ status: "anchored", index: 1, size: 2 });
    const call = decodeAnchor(calls[0]!.data);
    expect(call).toMatchObject({ epoch: BigInt(epoch), root: proof.root, heads: 2 });
    expect(
      (
        await recoverMessageAddress({
          message: { raw: anchorDigest({ chain_id: CHAIN_ID, contract: CONTRACT }, epoch, call.root, 2) },
          signature: call.signature,
        })
      ).toLowerCase(),
    ).toBe(signer.address);

    // The SDK's check passes against the root as sent, and fails against any other.
    const onChain = { root: call.root, heads: call.heads, anchoredAt: Math.floor(Date.now() / 1000) + 10 };
    await expect(checkAnchored(batch[1]!, signer.address, proof, async () => onChain)).resolves.toMatchObject({
      epoch,
      root: call.root,
    });
    // An anchor older than the receipt's end (or its epoch) is not its anchor: the receipt was made after.
    await expect(
      checkAnchored(batch[1]!, signer.address, proof, async () => ({ ...onChain, anchoredAt: epoch - 1 })),
    ).rejects.toMatchObject({ check: "time" });
    // Not on chain, while the instance says the epoch is still to be anchored: pending, not failed.
    const zero = { ...onChain, root: `0x${"00".repeat(32)}` as Hex };
    await expect(
      checkAnchored(batch[1]!, signer.address, { ...proof, status: "pending" }, async () => zero),
    ).rejects.toMatchObject({ check: "pending" });
    await expect(
      checkAnchored(batch[1]!, signer.address, { ...proof, status: "failed" }, async () => zero),
    ).rejects.toMatchObject({ check: "not_anchored" });
    await expect(
      checkAnchored(batch[1]!, signer.address, proof, async () => {
        throw new Error("connection refused");
      }),
    ).rejects.toMatchObject({ check: "chain" });
    await expect(
      checkAnchored(batch[1]!, signer.address, proof, async () => ({ ...onChain, root: hex(randomHead()) })),
    ).rejects.toMatchObject({ check: "root" });
    await expect(checkAnchored(moved, signer.address, proof, async () => onChain)).rejects.toBeInstanceOf(
      AnchorCheckError,
    );

    // The next batch opens the next epoch.
    const after = await signer.sign(body(4));
    expect(after.anchor!.epoch).toBeGreaterThan(epoch);
  });

  it("without anchoring, receipts name no anchor", async () => {
    const plain = new ReceiptSigner({
      keyring: keyring(),
      instanceId: INSTANCE,
      composeHash: "ab".repeat(32),
      quote: async () => ({ quote: "00", event_log: "[]" }),
    });
    expect(plain.anchors).toBeUndefined();
    const r = await plain.sign(body(0));
    expect("anchor" in r).toBe(false);
  });
});
