// The batch signature of a receipt, checked against the attested public key it must be by
// (receipt.ts): a plain ECDSA verification, u1·G + u2·Q, with Q — the instance's receipt key, the
// same for every receipt of that instance — given a precomputed window table once, as G has. On
// the machines the benchmarks run on that is about 0.8 ms, where recovering the signer from the
// signature (what an address alone allows) is 2.6–3.4 ms: the difference between a lone receipt
// checked in more or less than a millisecond (npm run bench:receipts).
//
// Equivalent to recovering the signer and comparing it with the key's address: a signature (r, s)
// verifies under Q exactly when one of its two recoveries is Q, and `v` (R's y parity) says which —
// so it is checked too. Any s in [1, n) is taken, as recovery takes it.
import { invert, mod } from "@noble/curves/abstract/modular";
import { secp256k1 } from "@noble/curves/secp256k1";
import { hashMessage, hexToBytes, type Hex } from "viem";

type Point = InstanceType<typeof secp256k1.ProjectivePoint>;

/** Receipt keys with their table, by uncompressed public key (a client meets a few instances). */
const tables = new Map<string, Point>();
const MAX_TABLES = 64;
/** Window bits of a key's table: 2^(w−1)·⌈256/w⌉ points, about 4 000 for 8, made once per key (~15 ms). */
const WINDOW = 8;

function pointOf(publicKey: Hex): Point {
  const key = publicKey.toLowerCase();
  let point = tables.get(key);
  if (!point) {
    point = secp256k1.ProjectivePoint.fromHex(key.slice(2));
    point._setWindowSize(WINDOW);
    if (tables.size >= MAX_TABLES) tables.clear();
    tables.set(key, point);
  }
  return point;
}

/**
 * Whether `signature` (65 bytes, r ‖ s ‖ v) is the key `publicKey`'s EIP-191 signature of the raw
 * bytes `message`. A malformed key or signature is false.
 */
export function signedBy(publicKey: Hex, message: Hex, signature: Hex): boolean {
  const { n } = secp256k1.CURVE;
  try {
    const bytes = hexToBytes(signature);
    if (bytes.length !== 65) return false;
    const r = BigInt(`0x${signature.slice(2, 66)}`);
    const s = BigInt(`0x${signature.slice(66, 130)}`);
    if (r <= 0n || r >= n || s <= 0n || s >= n) return false;
    const h = mod(BigInt(hashMessage({ raw: message })), n);
    const w = invert(s, n);
    // u2 = r/s is never 0; u1 = h/s is 0 only for a digest of 0 mod n (G's part is then nothing).
    const u1 = mod(h * w, n);
    const { BASE, ZERO } = secp256k1.ProjectivePoint;
    const R = (u1 === 0n ? ZERO : BASE.multiply(u1)).add(pointOf(publicKey).multiply(mod(r * w, n))).toAffine();
    // The recovery id (v) names R's y parity: a signature with the other v recovers another key,
    // so it is not this key's signature to ecrecover, nor here.
    const v = bytes[64] as number;
    const parity = v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : -1;
    return R.x === r && parity === Number(R.y & 1n);
  } catch {
    return false;
  }
}
