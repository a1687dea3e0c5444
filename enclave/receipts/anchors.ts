// Receipts anchored on chain (shared/receiptAnchor.ts; docs/guides/receipts.md, "Anchored
// receipts"): the heads of the receipt batches this instance signs, gathered by epoch; each epoch's
// Merkle root signed with the receipt key and written into the ReceiptAnchor contract by one payer
// transaction when the epoch closes (an interval after it opened, or at a number of heads); and the
// path of any head of a kept epoch to its root, for GET /attestation/receipt-anchor.
//
// An epoch opens with the first batch after the last one closed, named by the unix second it opened
// (strictly increasing, and after the last epoch the contract holds for this key, read at start: a
// restarted instance never reuses one). Epochs are anchored one at a time, in order, each retried
// with backoff; a root already on chain after a failed send counts as anchored; one that still fails
// is `failed` and its receipts can never pass an anchored check — which is what such a check is
// for. Heads are kept 32 bytes each, in memory up to SIGIL_RECEIPT_ANCHOR_KEEP_HEADS, and written as
// they come to SIGIL_RECEIPT_ANCHOR_DIR: a restarted process serves its earlier epochs' paths again
// and anchors what it had gathered but not anchored.
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { bytesToHex, encodeFunctionData, hexToBytes, type Address, type Hex } from "viem";
import { anchorDigest, anchorLeaf, receiptAnchorAbi, type AnchorProof } from "../../shared/receiptAnchor.ts";
import { merkleNode as node, splitPoint, type ReceiptAnchorRef, type Sha256 } from "../../shared/receipt.ts";
import { SigilError, transactionHashIn } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";

/**
 * Sends one transaction to the contract from a payer and waits for it to be mined (PayerPool.sendCall).
 * A send that throws after its transaction was sent (its receipt did not come in time, or said
 * reverted) names that transaction in its error (shared/errors.ts sentTransactionError).
 */
export type AnchorSender = (call: { to: Address; data: Hex }) => Promise<{ transactionHash: Hex; blockNumber: bigint }>;

export type AnchoringConfig = {
  chainId: number;
  contract: Address;
  /** An epoch closes this long after it opened… */
  intervalMs: number;
  /** …or when it has this many heads. */
  maxHeads: number;
  /** Heads of closed epochs kept for their paths (oldest epochs dropped first), 32 bytes each. */
  keepHeads: number;
  send: AnchorSender;
  /**
   * Where each epoch's heads are written as they come (`<epoch>.heads`, 32 bytes each; they are
   * hashes that name nothing): a restarted instance serves its earlier epochs' paths again and
   * anchors what it had closed or was gathering when it stopped. Unset: memory only.
   */
  dir?: string;
  /** Whether the contract has code, read once at start (none: anchoring is turned off, and says why). */
  hasCode?: () => Promise<boolean>;
  /** The last epoch the contract holds for this receipt key (0: none), read once at start. */
  lastAnchored?: (signer: Address) => Promise<number>;
  /**
   * The root the contract holds for (key, epoch) (zero: none). Read after a failed send: a
   * transaction whose answer or receipt was lost may have been mined, and then a retry only reverts.
   */
  storedRoot?: (signer: Address, epoch: number) => Promise<Hex>;
  log: Logger;
};

type Epoch = {
  epoch: number;
  /** The open epoch's file, heads appended as they come (`dir` only). */
  fd?: number;
  closesAt: number;
  /** The heads, 32 bytes each, back to back (`count` of them): 32 bytes a head, whatever the count. */
  heads: Uint8Array;
  count: number;
  /**
   * While open: the roots of the perfect subtrees the heads so far make, largest first (RFC 9162's
   * tree is these, folded from the right), so a head costs two hashes as it comes and closing
   * costs a few — nothing of the epoch's size on the service thread.
   */
  stack: Array<{ size: number; root: Uint8Array }>;
  status: AnchorProof["status"];
  root?: Uint8Array;
  transactionHash?: Hex;
  blockNumber?: bigint;
  error?: string;
};

/** Attempts to anchor one epoch, and the wait before each retry (doubling). */
const ATTEMPTS = 6;
const FIRST_RETRY_MS = 1_000;
const SPAN = 2 ** 21;
/** Trees whose inner nodes are kept for their paths: the epochs verifiers ask about now. */
const KEPT_TREES = 4;

export class ReceiptAnchorer {
  readonly #config: AnchoringConfig;
  readonly #sign: (digest: Hex) => Hex;
  readonly #hash: Sha256;
  readonly #signer: Address;
  readonly #instanceId: string;
  #open: Epoch | undefined;
  #timer: NodeJS.Timeout | undefined;
  #last = 0;
  readonly #kept = new Map<number, Epoch>();
  #keptHeads = 0;
  /** The inner nodes of the trees paths were last asked of (built on the first ask, a few epochs kept). */
  readonly #trees = new Map<number, Map<number, Uint8Array>>();
  /** False once the configured contract is found to have no code: nothing is anchored, receipts name no anchor. */
  #enabled = true;
  /** Epochs are anchored one after another. */
  #queue: Promise<void> = Promise.resolve();
  readonly stats = { epochs: 0, anchored: 0, failed: 0, heads: 0 };

  constructor(args: {
    config: AnchoringConfig;
    signer: Address;
    instanceId: string;
    /** EIP-191 signature by the receipt key over a 32-byte digest. */
    sign: (digest: Hex) => Hex;
    hash: Sha256;
  }) {
    this.#config = args.config;
    this.#sign = args.sign;
    this.#hash = args.hash;
    this.#signer = args.signer;
    this.#instanceId = args.instanceId;
  }

  /** Reads the last epoch the contract holds for this key, so that no epoch is named twice. */
  async start(): Promise<void> {
    if (this.#config.hasCode) {
      try {
        if (!(await this.#config.hasCode())) {
          // A mistyped address, or another chain's: every anchor would "succeed" as a call to no code.
          this.#enabled = false;
          this.#config.log.error("SIGIL_RECEIPT_ANCHOR has no contract code on this chain: receipts are not anchored", {
            contract: this.#config.contract,
          });
          return;
        }
      } catch (err) {
        // Unreachable now: anchoring goes on, and its sends say what they meet.
        this.#config.log.warn("could not read the receipt anchor's code", { error: shortError(err) });
      }
    }
    let onChain: number | undefined;
    if (this.#config.lastAnchored) {
      try {
        onChain = await this.#config.lastAnchored(this.#signer);
        this.#last = Math.max(this.#last, onChain);
      } catch (err) {
        // The clock still names new epochs after any earlier one of this key.
        this.#config.log.warn("could not read the last anchored epoch", { error: shortError(err) });
      }
    }
    this.#load(onChain);
  }

  /**
   * The epochs an earlier process of this instance wrote (`dir`), oldest first, within the bound:
   * each closed again from its heads. Those after the last epoch the contract holds are anchored now
   * (a crash between gathering and anchoring loses nothing written); the rest are the chain's.
   */
  #load(lastOnChain: number | undefined): void {
    const { dir, log } = this.#config;
    if (!dir) return;
    let files: number[];
    try {
      mkdirSync(dir, { recursive: true });
      files = readdirSync(dir)
        .map((f) => /^(\d{1,15})\.heads$/.exec(f)?.[1])
        .filter((e): e is string => e !== undefined)
        .map(Number)
        .sort((a, b) => a - b);
    } catch (err) {
      log.warn("could not read the anchored epochs' heads; serving paths of new epochs only", {
        error: shortError(err),
      });
      return;
    }
    let loaded = 0;
    let resent = 0;
    for (const epoch of files) {
      let bytes: Uint8Array;
      try {
        bytes = readFileSync(join(dir, `${epoch}.heads`));
      } catch {
        continue;
      }
      const count = Math.min(Math.floor(bytes.length / 32), this.#config.maxHeads);
      if (count === 0) {
        rmSync(join(dir, `${epoch}.heads`), { force: true });
        continue;
      }
      const e: Epoch = {
        epoch,
        closesAt: epoch,
        heads: new Uint8Array(32 * count),
        count: 0,
        stack: [],
        status: "open",
      };
      for (let i = 0; i < count; i++) this.#push(e, bytes.subarray(i * 32, i * 32 + 32));
      this.#last = Math.max(this.#last, epoch);
      const anchored = lastOnChain !== undefined && epoch <= lastOnChain;
      this.#seal(e, anchored ? "anchored" : "pending");
      loaded++;
      if (!anchored) {
        resent++;
        this.#queue = this.#queue.then(() => this.#anchor(e));
      }
    }
    if (loaded > 0) log.info("anchored epochs' heads read back", { epochs: loaded, anchoring: resent });
  }

  /** Whether receipts are anchored: not once the contract was found to have no code (`start`). */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** Where the batch being signed now is anchored: the open epoch, opened now if none is. */
  ref(): ReceiptAnchorRef {
    if (!this.#open) {
      const epoch = Math.max(this.#last + 1, Math.floor(Date.now() / 1000));
      this.#last = epoch;
      this.#open = {
        epoch,
        closesAt: epoch + Math.ceil(this.#config.intervalMs / 1000),
        heads: new Uint8Array(32 * 64),
        count: 0,
        stack: [],
        status: "open",
      };
      if (this.#config.dir) {
        try {
          this.#open.fd = openSync(join(this.#config.dir, `${epoch}.heads`), "a");
        } catch (err) {
          this.#config.log.warn("could not write the epoch's heads; its paths are in memory only", {
            epoch,
            error: shortError(err),
          });
        }
      }
      this.#timer = setTimeout(() => this.#close(), this.#config.intervalMs);
      this.#timer.unref();
    }
    return { chain_id: this.#config.chainId, contract: this.#config.contract, epoch: this.#open.epoch };
  }

  /** The head of a batch just signed under `ref()`'s epoch. */
  add(epoch: number, head: Uint8Array): void {
    const open = this.#open;
    if (!open || open.epoch !== epoch) throw new Error(`epoch ${epoch} is not open`);
    if (head.length !== 32) throw new Error("a batch head is 32 bytes");
    this.#push(open, head);
    if (open.fd !== undefined) {
      try {
        writeSync(open.fd, head);
      } catch (err) {
        this.#config.log.warn("could not write a batch head; the epoch's paths are in memory only", {
          epoch,
          error: shortError(err),
        });
        closeQuietly(open);
      }
    }
    this.stats.heads++;
    if (open.count >= this.#config.maxHeads) this.#close();
  }

  /** Adds `head` to `e`'s heads and its running root. */
  #push(e: Epoch, head: Uint8Array): void {
    if (e.heads.length < (e.count + 1) * 32) {
      const grown = new Uint8Array(Math.max(64 * 32, e.heads.length * 2));
      grown.set(e.heads);
      e.heads = grown;
    }
    e.heads.set(head, e.count * 32);
    e.count++;
    // The new leaf, merged with the subtrees of its size before it.
    let top = { size: 1, root: anchorLeaf(head, this.#hash) };
    for (let left = e.stack.at(-1); left && left.size === top.size; left = e.stack.at(-1)) {
      e.stack.pop();
      top = { size: left.size * 2, root: node(left.root, top.root, this.#hash) };
    }
    e.stack.push(top);
  }

  /** The path of `head` in `epoch`'s tree, as far as it is known; undefined for an epoch or head not kept. */
  proof(epoch: number, head: Hex): AnchorProof | undefined {
    const e = this.#open?.epoch === epoch ? this.#open : this.#kept.get(epoch);
    const index = e ? indexOf(e, hexToBytes(head)) : -1;
    if (!e || index < 0) return undefined;
    const base: AnchorProof = {
      instance_id: this.#instanceId,
      signer: this.#signer,
      chain_id: this.#config.chainId,
      contract: this.#config.contract,
      epoch,
      head: head.toLowerCase() as Hex,
      status: e.status,
      closes_at: e.closesAt,
    };
    if (!e.root) return base;
    return {
      ...base,
      index,
      size: e.count,
      proof: auditPath(e, this.#tree(e), index, this.#hash).map((p) => bytesToHex(p)),
      root: bytesToHex(e.root),
      transaction_hash: e.transactionHash ?? null,
      block_number: e.blockNumber?.toString() ?? null,
      ...(e.error ? { error: e.error } : {}),
    };
  }

  /**
   * Closes the open epoch and waits until every closed epoch is anchored or has failed — at most
   * `timeoutMs` when given (a stopping instance has seconds, not the retries' minutes).
   */
  async flush(timeoutMs?: number): Promise<void> {
    this.#close();
    if (timeoutMs === undefined) return this.#queue;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#queue, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** The inner nodes of closed epoch `e`'s tree, built on the first path asked of it. */
  #tree(e: Epoch): Map<number, Uint8Array> {
    let nodes = this.#trees.get(e.epoch);
    if (!nodes) {
      const leaves = Array.from({ length: e.count }, (_, i) =>
        anchorLeaf(e.heads.subarray(i * 32, i * 32 + 32), this.#hash),
      );
      nodes = buildTree(leaves, this.#hash).nodes;
      if (this.#trees.size >= KEPT_TREES) this.#trees.delete(this.#trees.keys().next().value as number);
      this.#trees.set(e.epoch, nodes);
    }
    return nodes;
  }

  #close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const e = this.#open;
    this.#open = undefined;
    if (e) closeQuietly(e);
    if (!e || e.count === 0) {
      if (e && this.#config.dir) rmSync(join(this.#config.dir, `${e.epoch}.heads`), { force: true });
      return;
    }
    e.closesAt = Math.max(Math.floor(Date.now() / 1000), e.epoch);
    this.#seal(e, "pending");
    this.#queue = this.#queue.then(() => this.#anchor(e));
  }

  /** Fixes a closed epoch's root (RFC 9162's: the perfect subtrees, folded from the right) and keeps it. */
  #seal(e: Epoch, status: Epoch["status"]): void {
    e.heads = e.heads.slice(0, e.count * 32);
    let root = (e.stack.at(-1) as { root: Uint8Array }).root;
    for (let i = e.stack.length - 2; i >= 0; i--)
      root = node((e.stack[i] as { root: Uint8Array }).root, root, this.#hash);
    e.root = root;
    e.stack = [];
    e.status = status;
    this.stats.epochs++;
    this.#keep(e);
  }

  async #anchor(e: Epoch): Promise<void> {
    const { log } = this.#config;
    const root = bytesToHex(e.root as Uint8Array);
    const signature = this.#sign(
      anchorDigest({ chain_id: this.#config.chainId, contract: this.#config.contract }, e.epoch, root, e.count),
    );
    const data = encodeFunctionData({
      abi: receiptAnchorAbi,
      functionName: "anchor",
      args: [BigInt(e.epoch), root, e.count, signature],
    });
    let wait = FIRST_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        const sent = await this.#config.send({ to: this.#config.contract, data });
        e.status = "anchored";
        e.transactionHash = sent.transactionHash;
        e.blockNumber = sent.blockNumber;
        this.stats.anchored++;
        log.info("receipts anchored", {
          epoch: e.epoch,
          heads: e.count,
          root,
          tx: sent.transactionHash,
          block: sent.blockNumber.toString(),
        });
        return;
      } catch (err) {
        // The transaction this send made, when it got that far (PayerPool.sendCall names it).
        const sent = err instanceof SigilError ? (transactionHashIn(err.details) as Hex | undefined) : undefined;
        if (await this.#onChainAlready(e.epoch, root)) {
          e.status = "anchored";
          // Most likely the transaction that was mined.
          if (sent) e.transactionHash = sent;
          this.stats.anchored++;
          log.warn("receipts anchored, though the send that anchored them did not say so", {
            epoch: e.epoch,
            heads: e.count,
            root,
            error: shortError(err),
          });
          return;
        }
        if (attempt >= ATTEMPTS) {
          e.status = "failed";
          e.error = shortError(err);
          this.stats.failed++;
          log.error("receipts could not be anchored: their anchored checks will fail", {
            epoch: e.epoch,
            heads: e.count,
            error: e.error,
          });
          return;
        }
        log.warn("anchoring receipts failed; retrying", {
          epoch: e.epoch,
          attempt,
          error: shortError(err),
          ...(sent ? { tx: sent } : {}),
        });
        await new Promise((resolve) => setTimeout(resolve, wait));
        wait *= 2;
      }
    }
  }

  /** Whether the contract already holds `root` for `epoch` of this key (unknown counts as no). */
  async #onChainAlready(epoch: number, root: Hex): Promise<boolean> {
    if (!this.#config.storedRoot) return false;
    try {
      return (await this.#config.storedRoot(this.#signer, epoch)).toLowerCase() === root.toLowerCase();
    } catch {
      return false;
    }
  }

  /** Keeps a closed epoch's heads for its paths, dropping the oldest epochs past the bound. */
  #keep(e: Epoch): void {
    this.#kept.set(e.epoch, e);
    this.#keptHeads += e.count;
    for (const [epoch, old] of this.#kept) {
      if (this.#keptHeads <= this.#config.keepHeads || old === e) break;
      if (old.status === "pending") break;
      this.#kept.delete(epoch);
      this.#keptHeads -= old.count;
      this.#trees.delete(epoch);
      if (this.#config.dir) rmSync(join(this.#config.dir, `${epoch}.heads`), { force: true });
    }
  }
}

/** Closes the open epoch's file, if it has one. */
function closeQuietly(e: Epoch): void {
  if (e.fd === undefined) return;
  try {
    closeSync(e.fd);
  } catch {
    // already closed
  }
  e.fd = undefined;
}

const shortError = (err: unknown) =>
  ((err as { shortMessage?: string }).shortMessage ?? (err instanceof Error ? err.message : String(err)))
    .split("\n")[0]
    ?.replace(/https?:\/\/\S+/g, "<rpc>")
    .slice(0, 300) ?? "";

/** Where `head` is among the epoch's heads, or −1 (a scan: a path is asked for rarely, heads are added often). */
function indexOf(e: Epoch, head: Uint8Array): number {
  if (head.length !== 32) return -1;
  const { heads } = e;
  outer: for (let i = 0, at = 0; i < e.count; i++, at += 32) {
    for (let b = 0; b < 32; b++) if (heads[at + b] !== head[b]) continue outer;
    return i;
  }
  return -1;
}

/** An RFC 9162 tree over `leaves`, keeping every inner node for the audit paths. */
function buildTree(leaves: Uint8Array[], hash: Sha256): { root: Uint8Array; nodes: Map<number, Uint8Array> } {
  const nodes = new Map<number, Uint8Array>();
  const build = (lo: number, hi: number): Uint8Array => {
    if (hi - lo === 1) return leaves[lo] as Uint8Array;
    const k = splitPoint(hi - lo);
    const n = node(build(lo, lo + k), build(lo + k, hi), hash);
    nodes.set(lo * SPAN + hi, n);
    return n;
  };
  return { root: build(0, leaves.length), nodes };
}

/** The audit path of leaf `index` in the epoch's tree, deepest first. */
function auditPath(e: Epoch, nodes: Map<number, Uint8Array>, index: number, hash: Sha256): Uint8Array[] {
  // Leaves are not kept: a path has at most one, recomputed from its head.
  const subtree = (lo: number, hi: number): Uint8Array =>
    hi - lo === 1
      ? anchorLeaf(e.heads.subarray(lo * 32, lo * 32 + 32), hash)
      : (nodes.get(lo * SPAN + hi) as Uint8Array);
  const path: Uint8Array[] = [];
  let lo = 0;
  let hi = e.count;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      path.unshift(subtree(lo + k, hi));
      hi = lo + k;
    } else {
      path.unshift(subtree(lo, lo + k));
      lo += k;
    }
  }
  return path;
}
