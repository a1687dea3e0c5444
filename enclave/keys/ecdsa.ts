// secp256k1 signatures and public keys for the enclave's keys, with libsecp256k1 (tiny-secp256k1,
// bitcoinjs's WebAssembly build of it): about twice as fast here as @noble/curves (a signature
// 0.14 ms against 0.28 ms; a public key 0.14 ms against 0.25 ms), which matters because every run
// signs its receipt and a signing run signs again. Signatures are RFC 6979 deterministic and low-s,
// so they are byte for byte the ones viem and @noble make (tests compare them).
import * as secp from "tiny-secp256k1";
import { bytesToHex, type Hex } from "viem";

/** A signature as viem gives it: r and s (0x + 64 hex), the recovery bit, and v = 27 + yParity. */
export type Signature = { r: Hex; s: Hex; yParity: 0 | 1; v: bigint };

/** Signs a 32-byte digest with a 32-byte private key. */
export function signDigest(digest: Uint8Array, privateKey: Uint8Array): Signature {
  const { signature, recoveryId } = secp.signRecoverable(digest, privateKey);
  // libsecp256k1 normalizes to low s, so the recovery bit is 0 or 1 (never the x-overflow ids 2, 3).
  const yParity = (recoveryId & 1) as 0 | 1;
  return { r: bytesToHex(signature.subarray(0, 32)), s: bytesToHex(signature.subarray(32, 64)), yParity, v: BigInt(27 + yParity) };
}

/** The 65-byte signature r ‖ s ‖ v (v 27 or 28), hex: EIP-191's and viem's serialization. */
export function serializeSignature(sig: Signature): Hex {
  return `${sig.r}${sig.s.slice(2)}${sig.v === 27n ? "1b" : "1c"}`;
}

/** The public key of a private key: uncompressed (65 bytes, 0x04 ‖ x ‖ y) unless asked otherwise. */
export function publicKeyOf(privateKey: Uint8Array, compressed = false): Uint8Array {
  const point = secp.pointFromScalar(privateKey, compressed);
  if (!point) throw new Error("the private key is not a valid secp256k1 scalar");
  return point;
}
