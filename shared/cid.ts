// CIDv0 of a byte string exactly as `ipfs add` computes it with its defaults: dag-pb nodes,
// UnixFS file leaves (no raw leaves), 262 144-byte fixed-size chunks, balanced layout with at most
// 174 children per node, and a single-chunk file reduced to one node.
import { MemoryBlockstore } from "blockstore-core/memory";
import { importBytes } from "ipfs-unixfs-importer";
import { fixedSize } from "ipfs-unixfs-importer/chunker";
import { balanced } from "ipfs-unixfs-importer/layout";

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
