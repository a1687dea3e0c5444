// Receipts anchored on chain (shared/receiptAnchor.ts; docs/guides/receipts.md, "Anchored
// receipts"): the heads of the receipt batches this instance signs, gathered by epoch; each epoch's
// Merkle root signed with the receipt key and written into the ReceiptAnchor contract by one payer
// transaction when the epoch closes (an interval after it opened, or at a number of heads); and the
// path of any head of a kept epoch to its root, for GET /attestation/receipt-anchor.
//
// An epoch opens with the first batch after the last one closed, named by the unix second it opened
// (strictly increasing, and after the last epoch the contract holds for this key, read at start: a
// restarted instance never reuses one). Epochs are anchored one at a time, in order, each retried
// with backoff; one that still fails is `failed` and its receipts can never pass an anchored check —
// which is what such a check is for. The heads of closed epochs are kept in memory, oldest dropped
// first past SIGIL_RECEIPT_ANCHOR_KEEP_HEADS: a verifier fetches a receipt's path within that time
// (and may keep it with the receipt).
import { bytesToHex, encodeFunctionData, type Address, type Hex } from "viem";
import { anchorDigest, anchorLeaf, receiptAnchorAbi, type AnchorProof } from "../../shared/receiptAnchor.ts";
import type { ReceiptAnchorRef, Sha256 } from "../../shared/receipt.ts";
import type { Logger } from "../../shared/log.ts";

/** Sends one transaction to the contract from a payer and waits for it to be mined (PayerPool.sendCall). */
export type AnchorSender = (call: { to: Address; data: Hex }) => Promise<{ transactionHash: Hex; blockNumber: bigint }>;

export type AnchoringConfig = {
  chainId: number;
  contract: Address;
  /** An epoch closes this long after it opened… */
  intervalMs: number;
  /** …or when it has this many heads. */
  maxHeads: number;
  /** Heads of closed epochs kept for their paths (oldest epochs dropped first). */
  keepHeads: number;
  send: AnchorSender;
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
  closesAt: number;
  heads: Uint8Array[];
  /** A head's place, by its hex. */
  places: Map<string, number>;
  status: AnchorProof["status"];
  root?: Uint8Array;
  /** Every inner node of the closed epoch's tree, by its span (lo · 2²¹ + hi). */
  nodes?: Map<number, Uint8Array>;
  transactionHash?: Hex;
  blockNumber?: bigint;
  error?: string;
};

/** Attempts to anchor one epoch, and the wait before each retry (doubling). */
const ATTEMPTS = 6;
const FIRST_RETRY_MS = 1_000;
const SPAN = 2 ** 21;

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
    if (!this.#config.lastAnchored) return;
    try {
      this.#last = Math.max(this.#last, await this.#config.lastAnchored(this.#signer));
    } catch (err) {
      // The clock still names new epochs after any earlier one of this key.
      this.#config.log.warn("could not read the last anchored epoch", { error: shortError(err) });
    }
  }

  /** Where the batch being signed now is anchored: the open epoch, opened now if none is. */
  ref(): ReceiptAnchorRef {
    if (!this.#open) {
      const epoch = Math.max(this.#last + 1, Math.floor(Date.now() / 1000));
      this.#last = epoch;
      this.#open = {
        epoch,
        closesAt: epoch + Math.ceil(this.#config.intervalMs / 1000),
        heads: [],
        places: new Map(),
        status: "open",
      };
      this.#timer = setTimeout(() => this.#close(), this.#config.intervalMs);
      this.#timer.unref();
    }
    return { chain_id: this.#config.chainId, contract: this.#config.contract, epoch: this.#open.epoch };
  }

  /** The head of a batch just signed under `ref()`'s epoch. */
  add(epoch: number, head: Uint8Array): void {
    const open = this.#open;
    if (!open || open.epoch !== epoch) throw new Error(`epoch ${epoch} is not open`);
    open.places.set(bytesToHex(head), open.heads.length);
    open.heads.push(head);
    this.stats.heads++;
    if (open.heads.length >= this.#config.maxHeads) this.#close();
  }

  /** The path of `head` in `epoch`'s tree, as far as it is known; undefined for an epoch or head not kept. */
  proof(epoch: number, head: Hex): AnchorProof | undefined {
    const e = this.#open?.epoch === epoch ? this.#open : this.#kept.get(epoch);
    const index = e?.places.get(head.toLowerCase());
    if (!e || index === undefined) return undefined;
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
    if (!e.root || !e.nodes) return base;
    return {
      ...base,
      index,
      size: e.heads.length,
      proof: auditPath(e, index, this.#hash).map((p) => bytesToHex(p)),
      root: bytesToHex(e.root),
      transaction_hash: e.transactionHash ?? null,
      block_number: e.blockNumber?.toString() ?? null,
      ...(e.error ? { error: e.error } : {}),
    };
  }

  /** Closes the open epoch and waits until every closed epoch is anchored or has failed. */
  async flush(): Promise<void> {
    this.#close();
    await this.#queue;
  }

  #close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const e = this.#open;
    this.#open = undefined;
    if (!e || e.heads.length === 0) return;
    e.closesAt = Math.max(Math.floor(Date.now() / 1000), e.epoch);
    const { root, nodes } = buildTree(
      e.heads.map((h) => anchorLeaf(h, this.#hash)),
      this.#hash,
    );
    e.root = root;
    e.nodes = nodes;
    e.status = "pending";
    this.stats.epochs++;
    this.#keep(e);
    this.#queue = this.#queue.then(() => this.#anchor(e));
  }

  async #anchor(e: Epoch): Promise<void> {
    const { log } = this.#config;
    const root = bytesToHex(e.root as Uint8Array);
    const signature = this.#sign(
      anchorDigest({ chain_id: this.#config.chainId, contract: this.#config.contract }, e.epoch, root, e.heads.length),
    );
    const data = encodeFunctionData({
      abi: receiptAnchorAbi,
      functionName: "anchor",
      args: [BigInt(e.epoch), root, e.heads.length, signature],
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
          heads: e.heads.length,
          root,
          tx: sent.transactionHash,
          block: sent.blockNumber.toString(),
        });
        return;
      } catch (err) {
        if (await this.#onChainAlready(e.epoch, root)) {
          e.status = "anchored";
          this.stats.anchored++;
          log.warn("receipts anchored, though the send that anchored them did not say so", {
            epoch: e.epoch,
            heads: e.heads.length,
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
            heads: e.heads.length,
            error: e.error,
          });
          return;
        }
        log.warn("anchoring receipts failed; retrying", { epoch: e.epoch, attempt, error: shortError(err) });
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
    this.#keptHeads += e.heads.length;
    for (const [epoch, old] of this.#kept) {
      if (this.#keptHeads <= this.#config.keepHeads || old === e) break;
      if (old.status === "pending") break;
      this.#kept.delete(epoch);
      this.#keptHeads -= old.heads.length;
    }
  }
}

const shortError = (err: unknown) =>
  ((err as { shortMessage?: string }).shortMessage ?? (err instanceof Error ? err.message : String(err)))
    .split("\n")[0]
    ?.replace(/https?:\/\/\S+/g, "<rpc>")
    .slice(0, 300) ?? "";

/** The largest power of two below n (n ≥ 2), RFC 9162's split. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** An RFC 9162 tree over `leaves`, keeping every inner node for the audit paths. */
function buildTree(leaves: Uint8Array[], hash: Sha256): { root: Uint8Array; nodes: Map<number, Uint8Array> } {
  const nodes = new Map<number, Uint8Array>();
  const build = (lo: number, hi: number): Uint8Array => {
    if (hi - lo === 1) return leaves[lo] as Uint8Array;
    const k = splitPoint(hi - lo);
    const left = build(lo, lo + k);
    const right = build(lo + k, hi);
    const input = new Uint8Array(1 + left.length + right.length);
    input[0] = 1;
    input.set(left, 1);
    input.set(right, 1 + left.length);
    const n = hash(input);
    nodes.set(lo * SPAN + hi, n);
    return n;
  };
  return { root: build(0, leaves.length), nodes };
}

/** The audit path of leaf `index` in the epoch's tree, deepest first. */
function auditPath(e: Epoch, index: number, hash: Sha256): Uint8Array[] {
  const nodes = e.nodes as Map<number, Uint8Array>;
  // Leaves are not kept: a path has at most one, recomputed from its head.
  const subtree = (lo: number, hi: number): Uint8Array =>
    hi - lo === 1 ? anchorLeaf(e.heads[lo] as Uint8Array, hash) : (nodes.get(lo * SPAN + hi) as Uint8Array);
  const path: Uint8Array[] = [];
  let lo = 0;
  let hi = e.heads.length;
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
