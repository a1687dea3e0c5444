// Receipts anchored on chain (issue 34, part 2; docs/guides/receipts.md, "Anchored receipts"): the
// one definition of what an enclave instance anchors, what a receipt says about it, and how a
// verifier checks it, for the enclave (receipts/anchors.ts), the SDK and `sigil verify-receipt
// --anchored`. viem only, so the SDK bundles it.
//
// - An instance signs its receipts in batches, each with a 32-byte head (receipt.ts). The heads it
//   signs while one epoch is open make a Merkle tree (RFC 9162, as a batch's: leaf = SHA-256(0x00 ‖
//   head)); when the epoch closes — SIGIL_RECEIPT_ANCHOR_INTERVAL_S after it opened, or at
//   SIGIL_RECEIPT_ANCHOR_MAX_HEADS heads — the receipt key signs the tree's root and one payer
//   transaction writes it into the ReceiptAnchor contract (contracts/ReceiptAnchor.sol), once, under
//   (receipt key address, epoch).
// - An epoch is named by the unix second it opened, strictly increasing per instance (also across
//   its restarts: the key is the same, the clock has moved on). Every receipt of a batch names the
//   open epoch in its signed body (`anchor`), so it cannot be shown later as part of another.
// - Checking: the receipt leads to its batch's head; the instance serves the head's path in the
//   epoch's tree (GET /attestation/receipt-anchor); the path leads to the root the contract holds
//   for (receipt key, epoch), with that many heads.
import {
  encodeAbiParameters,
  hexToBytes,
  keccak256,
  parseAbi,
  sha256,
  stringToBytes,
  toHex,
  type Address,
  type Hex,
} from "viem";
import { batchHead, receiptLeaf, rootFromProof, type RunReceipt, type Sha256 } from "./receipt.ts";

/** ReceiptAnchor's ABI (contracts/ReceiptAnchor.sol; contracts/abi.test.ts checks it against the compiled one). */
export const receiptAnchorAbi = /* @__PURE__ */ parseAbi([
  "function anchor(uint64 epoch, bytes32 root, uint32 heads, bytes signature)",
  "function anchorDigest(uint64 epoch, bytes32 root, uint32 heads) view returns (bytes32)",
  "function anchors(address signer, uint64 epoch) view returns (bytes32 root, uint32 heads, uint64 anchoredAt)",
  "function lastEpoch(address signer) view returns (uint64 epoch)",
  "event Anchored(address indexed signer, uint64 indexed epoch, bytes32 root, uint32 heads)",
  "error AlreadyAnchored(address signer, uint64 epoch)",
  "error EmptyAnchor()",
  "error ECDSAInvalidSignature()",
  "error ECDSAInvalidSignatureLength(uint256 length)",
  "error ECDSAInvalidSignatureS(bytes32 s)",
]);

/** The most heads one epoch's tree holds (its paths at most 20 hashes). */
export const MAX_ANCHOR_HEADS = 1_000_000;

const defaultSha256: Sha256 = (bytes) => sha256(bytes, "bytes");

/** A head's leaf in its epoch's tree: SHA-256(0x00 ‖ head). */
export function anchorLeaf(head: Uint8Array, hash: Sha256 = defaultSha256): Uint8Array {
  const input = new Uint8Array(1 + head.length);
  input.set(head, 1);
  return hash(input);
}

/** Computed when first needed: a module of the SDK does no work on import (bundlers drop it unused). */
let domain: Hex | undefined;
const DOMAIN = () => (domain ??= keccak256(stringToBytes("sigil-receipt-anchor-v1")));

/** What the receipt key signs (EIP-191 over these 32 bytes), as the contract's `anchorDigest`. */
export function anchorDigest(
  anchor: { chain_id: number; contract: Address },
  epoch: number,
  root: Hex,
  heads: number,
): Hex {
  return keccak256(
    encodeAbiParameters(
      [
        { type: "bytes32" },
        { type: "uint256" },
        { type: "address" },
        { type: "uint64" },
        { type: "bytes32" },
        { type: "uint32" },
      ],
      [DOMAIN(), BigInt(anchor.chain_id), anchor.contract, BigInt(epoch), root, heads],
    ),
  );
}

/** The batch head a receipt leads to (its leaf, index, size and path): what its epoch's tree holds. */
export function receiptHead(receipt: RunReceipt, hash: Sha256 = defaultSha256): Hex | undefined {
  const proof = receipt.batch.proof.map((p) => hexToBytes(p));
  const root = rootFromProof(receiptLeaf(receipt, hash), receipt.batch.index, receipt.batch.size, proof, hash);
  return root && toHex(batchHead(root, receipt.batch.size, hash));
}

/** What GET /attestation/receipt-anchor answers for a head of an epoch. */
export type AnchorProof = {
  instance_id: string;
  /** The receipt key's address: the contract keys anchors by it. */
  signer: Address;
  chain_id: number;
  contract: Address;
  epoch: number;
  head: Hex;
  /**
   * `open`: the epoch still takes heads (no root yet); `pending`: closed, its transaction not mined
   * yet; `anchored`: on chain; `failed`: it could not be anchored (`error` says why).
   */
  status: "open" | "pending" | "anchored" | "failed";
  /** The unix second the epoch closes (open), or closed. */
  closes_at: number;
  /** Once closed: the head's place in the epoch's tree and its audit path, the root and the size. */
  index?: number;
  size?: number;
  proof?: Hex[];
  root?: Hex;
  transaction_hash?: Hex | null;
  block_number?: string | null;
  error?: string;
};

const HEX32 = /^0x[0-9a-fA-F]{64}$/;

/** An anchor as the contract holds it (root zero: none). */
export type OnChainAnchor = { root: Hex; heads: number; anchoredAt: number };

/** Why an anchored check failed: which check, and what it found. */
export class AnchorCheckError extends Error {
  /**
   * `pending`: the epoch is not on chain yet and the instance says it is still to be (open, or its
   * transaction not mined): ask again later. `not_anchored`: no root on chain, and none coming.
   * `chain`: the chain could not be read. `time`: the receipt says it ended after its anchor.
   */
  readonly check: "no_anchor" | "batch" | "proof" | "pending" | "not_anchored" | "root" | "size" | "chain" | "time";
  constructor(check: AnchorCheckError["check"], message: string) {
    super(message);
    this.name = "AnchorCheckError";
    this.check = check;
  }
}

/**
 * Checks that `receipt` is in the tree anchored on chain for its epoch: its batch's head is the
 * proof's, the proof's path leads from that head to the root `onChain` holds (as `readAnchor`
 * reads it for the receipt key `signer` and the epoch), with the size anchored. The receipt's own
 * signature and key are the receipt check's (verifyReceipt). Throws AnchorCheckError; answers the
 * anchor.
 */
export async function checkAnchored(
  receipt: RunReceipt,
  signer: Address,
  proof: AnchorProof,
  readAnchor: (signer: Address, epoch: number) => Promise<OnChainAnchor>,
  hash: Sha256 = defaultSha256,
): Promise<OnChainAnchor & { epoch: number }> {
  const anchor = receipt.anchor;
  if (!anchor) throw new AnchorCheckError("no_anchor", "the receipt names no anchor (its instance anchors nothing)");
  const head = receiptHead(receipt, hash);
  if (!head) throw new AnchorCheckError("batch", "the receipt's batch path leads to no root");
  if (proof.epoch !== anchor.epoch || proof.head.toLowerCase() !== head)
    throw new AnchorCheckError("proof", "the anchor proof is for another head or epoch than the receipt's");
  if (proof.chain_id !== anchor.chain_id || proof.contract.toLowerCase() !== anchor.contract.toLowerCase())
    throw new AnchorCheckError("proof", "the anchor proof names another chain or contract than the receipt");
  const coming = proof.status === "open" || proof.status === "pending";
  if (proof.root === undefined || proof.proof === undefined || proof.index === undefined || proof.size === undefined)
    throw new AnchorCheckError(
      coming ? "pending" : "not_anchored",
      `epoch ${anchor.epoch} is ${proof.status}: its root is not anchored${coming ? " yet" : ""}`,
    );
  const path = proof.proof;
  if (!HEX32.test(proof.root) || !Array.isArray(path) || !path.every((p) => HEX32.test(p)))
    throw new AnchorCheckError("proof", "the anchor proof's root or path is not 32-byte hex");
  const root = rootFromProof(
    anchorLeaf(hexToBytes(head), hash),
    proof.index,
    proof.size,
    path.map((p) => hexToBytes(p)),
    hash,
  );
  if (!root || toHex(root) !== proof.root.toLowerCase())
    throw new AnchorCheckError("proof", "the head's path in the epoch's tree does not lead to the proof's root");
  let onChain: OnChainAnchor;
  try {
    onChain = await readAnchor(signer, anchor.epoch);
  } catch (err) {
    const message = ((err as { shortMessage?: string }).shortMessage ?? String((err as Error).message ?? err)).split(
      "\n",
    )[0];
    throw new AnchorCheckError("chain", `the anchor could not be read from chain ${anchor.chain_id}: ${message}`);
  }
  if (/^0x0{64}$/.test(onChain.root))
    throw new AnchorCheckError(
      coming ? "pending" : "not_anchored",
      `no root is anchored on chain ${anchor.chain_id} for epoch ${anchor.epoch} of ${signer}${coming ? ` yet (the instance says it is ${proof.status})` : ""}`,
    );
  if (onChain.root.toLowerCase() !== proof.root.toLowerCase())
    throw new AnchorCheckError("root", `the root anchored for epoch ${anchor.epoch} is not the tree the receipt is in`);
  if (onChain.heads !== proof.size)
    throw new AnchorCheckError(
      "size",
      `epoch ${anchor.epoch} was anchored with ${onChain.heads} heads, not ${proof.size}`,
    );
  // The anchor bounds the run from above: a receipt that says it ended after its anchor's block, or
  // an epoch opened after it, is not the receipt that was anchored.
  const endedAt = Date.parse(receipt.ended_at);
  if (!(endedAt < (onChain.anchoredAt + 1) * 1000) || anchor.epoch > onChain.anchoredAt)
    throw new AnchorCheckError(
      "time",
      `the receipt ended at ${receipt.ended_at} (epoch ${anchor.epoch}), after its anchor's block time ${new Date(onChain.anchoredAt * 1000).toISOString()}`,
    );
  return { ...onChain, epoch: anchor.epoch };
}
