// CIDv0 of a byte string exactly as `ipfs add` computes it with its defaults: dag-pb nodes,
// UnixFS file leaves (no raw leaves), 262 144-byte fixed-size chunks, balanced layout with at most
// 174 children per node, and a single-chunk file reduced to one node.
import { MemoryBlockstore } from "blockstore-core/memory";
import { importBytes } from "ipfs-unixfs-importer";
import { fixedSize } from "ipfs-unixfs-importer/chunker";
import { balanced } from "ipfs-unixfs-importer/layout";
import { CID } from "multiformats/cid";
import { SigilError } from "./errors.ts";

const IPFS_ADD_DEFAULTS = {
  cidVersion: 0,
  rawLeaves: false,
  leafType: "file",
  reduceSingleLeafToSelf: true,
  chunker: fixedSize({ chunkSize: 262_144 }),
  layout: balanced({ maxChildrenPerNode: 174 }),
} as const;

/** The CIDv0 (`Qm…`) of `content`; a string is taken as its UTF-8 bytes, exactly, without trimming. */
export async function computeCid(content: Uint8Array | string): Promise<string> {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  const entry = await importBytes(bytes, new MemoryBlockstore(), IPFS_ADD_DEFAULTS);
  return entry.cid.toString();
}

const CID_V0 = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/;

/** Whether `value` has the form of a CIDv0 (base58btc sha2-256 multihash, 46 characters). */
export function isCidV0(value: string): boolean {
  return CID_V0.test(value);
}

const DAG_PB = 0x70;
const SHA2_256 = 0x12;

/**
 * The one form of a CID that Sigil hashes and derives from (`cidHash`, the action identity key):
 * the CIDv0 string (`Qm…`). Execution names code by the CIDv0 of its bytes, so a CIDv1 of the
 * same dag-pb/sha2-256 node (`bafy…`, in base32, base36 or base58btc) is the same script and
 * becomes that CIDv0; hashing it as sent would give a grant that never matches a run. A CID with
 * no CIDv0 form (another codec, such as raw `bafkrei…`, or another hash function) can never be the
 * CID of a script, so it is refused (400 `invalid_request`) instead of being stored as a grant
 * that silently authorizes nothing.
 */
export function canonicalCid(value: string): string {
  let cid: CID;
  try {
    cid = CID.parse(value);
  } catch {
    throw new SigilError("invalid_request", "not an IPFS CID: give the script's CIDv0 (Qm…) or its CIDv1 (bafy…)");
  }
  if (cid.version === 0) return cid.toString();
  if (cid.code !== DAG_PB || cid.multihash.code !== SHA2_256 || cid.multihash.digest.length !== 32) {
    throw new SigilError(
      "invalid_request",
      "this CID cannot name a script: a script is named by the CID `ipfs add` gives its bytes (dag-pb, sha2-256; get_sigil_action_ipfs_id computes it), and this one has another codec or hash",
    );
  }
  return cid.toV0().toString();
}
