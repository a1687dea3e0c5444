// A run's receipt (issue 14, point 4): what one `sigil_action` did, signed inside the enclave with a
// key bound to its attestation, so that anyone holding the answer can check it offline. The enclave
// makes it (enclave/receipts/), the SDK's `verifyReceipt` and `sigil verify-receipt` check it; this
// file is the one definition of its fields, of the bytes signed and of the hashes, for all three.
// It uses viem and WebCrypto only, so the SDK bundles it without any other dependency.
//
// - Version 2 (what the enclave makes): receipts are signed in batches. Each receipt is a leaf of a
//   Merkle tree (RFC 9162 §2.1: SHA-256, leaf = H(0x00 ‖ message), node = H(0x01 ‖ left ‖ right))
//   whose message is `receiptMessage(receipt)`: the receipt without `signature` and `batch`, as
//   canonical JSON (keys sorted, no whitespace: canonicalJson.ts). The receipt key signs the batch's
//   head once — head = SHA-256("sigil-receipt-batch-v2" ‖ root ‖ size as 8 bytes, big-endian): an
//   inclusion path does not fix the tree's size by itself (RFC 9162 verifies against a signed size
//   too), so the size is signed with the root — EIP-191 (`personal_sign` of the 32 raw bytes,
//   OpenZeppelin's `toEthSignedMessageHash(bytes32)`), and each receipt carries `batch`: its index,
//   the batch's size and its audit path. The enclave signs whatever receipts are ready together (one signature
//   for a batch of one when runs are few), which takes the signature — a third of a run's cost on
//   the enclave's service thread — off all but one run of each batch. Every field — and any field
//   added or removed — is in the leaf, and any change to the leaf, the index, the size or the path
//   leads to another root, so a changed byte anywhere fails.
// - Version 1 (before batches): the signature is EIP-191 over `receiptMessage(receipt)` itself.
//   `verifyReceipt` still checks such receipts.
// - The receipt key is a secp256k1 key the enclave derives from its root key and its instance id;
//   a TDX quote binds it with report_data = SHA-512("sigil-receipt-v1:" ‖ its 65-byte uncompressed
//   public key), served at `GET /attestation/receipt-key`.
// - The SHA-256s are over exactly what the client gets: `params_sha256` over canonicalJson of the
//   `js_params` sent (null when absent), `response_sha256` over canonicalJson of the answer's
//   `response`, `logs_sha256` over the UTF-8 bytes of `logs`.
import { sha256, stringToBytes, type Address, type Hex } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import { canonicalJson } from "./canonicalJson.ts";

export const RECEIPT_VERSION = 2;
/** The label of the receipt key's report data: a quote made for the channel or a nonce never passes for it. */
export const RECEIPT_KEY_LABEL = "sigil-receipt-v1:";

/**
 * What a wallet signed: an EIP-191 message, EIP-712 typed data, a transaction, or a raw 32-byte hash
 * with its EVM key; a message or a transaction's message with its Solana key.
 */
export const SIGNED_KINDS = [
  "message",
  "typed_data",
  "transaction",
  "hash",
  "solana_message",
  "solana_transaction",
] as const;
export type SignedKind = (typeof SIGNED_KINDS)[number];

/**
 * One signature a script made: its kind and the 32-byte digest the key signed (the EIP-191 hash of
 * the message, the EIP-712 hash of the typed data, keccak256 of the unsigned serialized
 * transaction, the hash itself) — or, for a Solana signature, which signs bytes and not a digest,
 * SHA-256 of the bytes signed (the message; the transaction's message). Never the key.
 */
export type SignedDigest = {
  kind: SignedKind;
  digest: Hex;
  /** With a guardrail: the rule that allowed it (a path into the document, docs/design/guardrails.md). */
  rule?: string;
};

/** A signature (or the key's export) the wallet's guardrail refused: what was asked, and the rule that refused it. */
export type RefusedUse = { kind: SignedKind | "export"; digest?: Hex; rule: string };

/**
 * A key a run used: a wallet (PKP) of the account, or the action identity of the run's code
 * (`action: true`). `signed` lists its signatures in the order they were made; `key_exported` is
 * true when the script read the private key itself (getPrivateKey / getActionPrivateKey), after
 * which the receipt cannot speak for what else was signed with it.
 */
export type ReceiptWallet = {
  address: Address;
  action: boolean;
  signed: SignedDigest[];
  key_exported: boolean;
  /**
   * Present only for a wallet with a guardrail: its hash (keccak256 of the document, as AccountConfig
   * keeps it), and what it refused, in order. A receipt of a run without guarded wallets is the same
   * bytes as before guardrails.
   */
  guardrail?: Hex;
  refused?: RefusedUse[];
};

export type RunReceiptBody = {
  version: typeof RECEIPT_VERSION;
  /** The request id the client got (X-Request-Id). */
  request_id: string;
  /** The master hash of the caller's account, 0x + 64 hex. */
  account: Hex;
  /** The code's CIDv0. */
  cid: string;
  params_sha256: Hex;
  response_sha256: Hex;
  logs_sha256: Hex;
  has_error: boolean;
  wallets: ReceiptWallet[];
  /** ISO 8601 (UTC, milliseconds): when the sandbox was asked to run the script, and when it answered. */
  started_at: string;
  ended_at: string;
  /** The run's duration as the answer's duration_ms (what it is charged by). */
  duration_ms: number;
  /** What the ledger charges for the run: 0 while billing is off (shared/fees.ts). */
  charged_cents: number;
  /** The enclave instance that ran it and the compose hash it runs, as its quotes' RTMR3 claims them. */
  instance_id: string;
  compose_hash: string;
  /** A dry run (nothing was signed; `wallets` lists no signatures): absent from a real run's receipt. */
  dry_run?: true;
  /** A run through a delegated key: the usage key it descends from and its chain's block ids (docs/design/delegation.md). */
  delegation?: { root: Hex; blocks: string[] };
  /**
   * Where the receipt's batch will be anchored (receiptAnchor.ts): the chain, the ReceiptAnchor
   * contract, and the epoch of the instance's receipt key it belongs to. Absent when the instance
   * anchors nothing.
   */
  anchor?: ReceiptAnchorRef;
};

/** What a receipt says of its anchor: the chain and contract, and the epoch its batch belongs to. */
export type ReceiptAnchorRef = { chain_id: number; contract: Address; epoch: number };

/** Where a receipt sits in the batch whose root was signed: its leaf's index, the batch's size, and the leaf's audit path (0x-hex SHA-256s, deepest first). */
export type ReceiptBatch = { index: number; size: number; proof: Hex[] };

export type RunReceipt = RunReceiptBody & { batch: ReceiptBatch; signature: Hex };

/** A receipt made before batches: its signature is over its own message. */
export type RunReceiptV1 = Omit<RunReceiptBody, "version"> & { version: 1; signature: Hex };

/** The most receipts one signature covers (an audit path of at most 10 hashes). */
export const MAX_RECEIPT_BATCH = 1024;

/** The receipt's message: the receipt without `signature` and `batch`, as canonical JSON. */
export function receiptMessage(
  receipt: RunReceiptBody | RunReceipt | RunReceiptV1 | Omit<RunReceiptV1, "signature">,
): string {
  const { signature: _signature, batch: _batch, ...body } = receipt as RunReceipt;
  return canonicalJson(body);
}

/** A SHA-256 function (the SDK uses viem's; the enclave passes Node's, which is faster). */
export type Sha256 = (bytes: Uint8Array) => Uint8Array;
const defaultSha256: Sha256 = (bytes) => sha256(bytes, "bytes");

const utf8 = new TextEncoder();

function prefixed(prefix: number, ...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(1 + parts.reduce((n, p) => n + p.length, 0));
  out[0] = prefix;
  let at = 1;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A receipt's leaf in its batch's tree: SHA-256(0x00 ‖ UTF-8 of its message). */
export function receiptLeaf(receipt: RunReceiptBody | RunReceipt, hash: Sha256 = defaultSha256): Uint8Array {
  return hash(prefixed(0, utf8.encode(receiptMessage(receipt))));
}

/** RFC 9162's inner node: SHA-256(0x01 ‖ left ‖ right) (also the anchored epochs' trees: receiptAnchor.ts). */
export const merkleNode = (left: Uint8Array, right: Uint8Array, hash: Sha256 = defaultSha256): Uint8Array =>
  hash(prefixed(1, left, right));
const node = merkleNode;

/** The largest power of two below n (n ≥ 2): where RFC 9162 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The Merkle tree of `leaves` (RFC 9162 §2.1.1): its root, and every leaf's audit path (§2.1.3.1). */
export function merkleBatch(
  leaves: Uint8Array[],
  hash: Sha256 = defaultSha256,
): { root: Uint8Array; proofs: Uint8Array[][] } {
  if (leaves.length === 0) throw new RangeError("a batch needs at least one leaf");
  const proofs: Uint8Array[][] = leaves.map(() => []);
  const build = (lo: number, hi: number): Uint8Array => {
    if (hi - lo === 1) return leaves[lo] as Uint8Array;
    const k = splitPoint(hi - lo);
    const left = build(lo, lo + k);
    const right = build(lo + k, hi);
    for (let i = lo; i < lo + k; i++) (proofs[i] as Uint8Array[]).push(right);
    for (let i = lo + k; i < hi; i++) (proofs[i] as Uint8Array[]).push(left);
    return node(left, right, hash);
  };
  return { root: build(0, leaves.length), proofs };
}

const BATCH_HEAD_LABEL = utf8.encode("sigil-receipt-batch-v2");

/** What the receipt key signs for a batch: SHA-256("sigil-receipt-batch-v2" ‖ root ‖ size as 8 bytes, big-endian). */
export function batchHead(root: Uint8Array, size: number, hash: Sha256 = defaultSha256): Uint8Array {
  const input = new Uint8Array(BATCH_HEAD_LABEL.length + root.length + 8);
  input.set(BATCH_HEAD_LABEL);
  input.set(root, BATCH_HEAD_LABEL.length);
  new DataView(input.buffer).setBigUint64(BATCH_HEAD_LABEL.length + root.length, BigInt(size));
  return hash(input);
}

/**
 * The root that `leaf`, at `index` of a tree of `size` leaves, leads to with `proof` (RFC 9162
 * §2.1.3.2), or undefined when the path cannot belong to such a tree (wrong length, index past size).
 */
export function rootFromProof(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: Uint8Array[],
  hash: Sha256 = defaultSha256,
): Uint8Array | undefined {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r, hash);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = node(r, p, hash);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/** SHA-256 of `text`'s UTF-8 bytes, 0x-hex (`hash`: another implementation of SHA-256 to 0x-hex, the enclave's Node one). */
export function textSha256(text: string, hash: (bytes: Uint8Array) => Hex = sha256): Hex {
  return hash(stringToBytes(text));
}

/** SHA-256 of `value` as canonical JSON (undefined counts as null, as an absent js_params does). */
export function jsonSha256(value: unknown, hash?: (bytes: Uint8Array) => Hex): Hex {
  return textSha256(canonicalJson(value === undefined ? null : value), hash);
}

/** The receipt key's report data: SHA-512("sigil-receipt-v1:" ‖ uncompressed public key bytes). */
export async function receiptKeyReportData(publicKey: Uint8Array): Promise<Uint8Array> {
  const label = stringToBytes(RECEIPT_KEY_LABEL);
  const input = new Uint8Array(label.length + publicKey.length);
  input.set(label);
  input.set(publicKey, label.length);
  return new Uint8Array(await crypto.subtle.digest("SHA-512", input));
}

/** The address of an uncompressed secp256k1 public key (0x04 ‖ x ‖ y), lowercase. */
export function receiptKeyAddress(publicKey: Hex): Address {
  return publicKeyToAddress(publicKey).toLowerCase() as Address;
}

/**
 * What `GET /attestation/receipt-key` serves: the receipt key (address and public key), the quote
 * that binds it and its event log, and the instance and compose hash it belongs to.
 */
export type ReceiptKeyAttestation = {
  address: Address;
  public_key: Hex;
  quote: string;
  event_log: string;
  vm_config?: string;
  instance_id: string;
  compose_hash: string;
  simulated?: true;
};

/** TDX quote header: version (u16 LE) at 0; the TD report follows the 48-byte header. */
const QUOTE_HEADER_BYTES = 48;
/** report_data within a v4 TD report (TDREPORT 1.0): bytes 520–584 of it, 568–632 of the quote; v5 adds a 6-byte body header. */
const REPORT_DATA_OFFSET_V4 = 568;
const REPORT_DATA_OFFSET_V5 = 574;

/**
 * The 64 bytes of report_data inside a TDX quote (hex), read at its fixed offset — without checking
 * the quote's signature: that needs Intel's collateral (`sigil verify-receipt` does it).
 */
export function quoteReportData(quoteHex: string): Uint8Array {
  const hex = quoteHex.replace(/^0x/i, "");
  if (!/^([0-9a-fA-F]{2})+$/.test(hex)) throw new Error("the quote is not hex");
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  if (bytes.length < QUOTE_HEADER_BYTES) throw new Error("the quote is too short");
  const version = (bytes[0] as number) | ((bytes[1] as number) << 8);
  const offset = version === 4 ? REPORT_DATA_OFFSET_V4 : version === 5 ? REPORT_DATA_OFFSET_V5 : undefined;
  if (offset === undefined) throw new Error(`quote version ${version} is not a TDX quote (4 or 5)`);
  if (bytes.length < offset + 64) throw new Error("the quote is too short to hold report_data");
  return bytes.slice(offset, offset + 64);
}
