// secp256k1 signatures and public keys for the enclave's keys, with libsecp256k1 (the `secp256k1`
// package's native binding, prebuilt in the package for Linux x64): a signature costs about 40 µs
// here against 280 µs with @noble/curves, and every run signs its receipt's batch while a signing
// run signs again. Where the binding cannot load (another platform, no prebuild), @noble/curves
// does the same work, slower: `ECDSA_BACKEND` says which, and the enclave logs it at start.
// Signatures are RFC 6979 deterministic and low-s either way, so byte for byte the ones viem makes
// (tests compare them). Only the binding is loaded, never the package's JavaScript fallback.
import { createRequire } from "node:module";
import { secp256k1 as noble } from "@noble/curves/secp256k1";
import type { Hex } from "viem";

/** The part of libsecp256k1's binding used here (secp256k1/lib/index.js wraps the same calls). */
type Binding = {
  ecdsaSign(
    output: { signature: Uint8Array; recid: number },
    message32: Uint8Array,
    seckey: Uint8Array,
    data: undefined,
    noncefn: undefined,
  ): number;
  publicKeyCreate(output: Uint8Array, seckey: Uint8Array): number;
};

function loadBinding(): Binding | undefined {
  try {
    const require = createRequire(import.meta.url);
    const addon = (require("node-gyp-build") as (dir: string) => { Secp256k1: new () => Binding })(
      require.resolve("secp256k1/package.json").replace(/package\.json$/, ""),
    );
    return new addon.Secp256k1();
  } catch {
    return undefined;
  }
}

const binding = loadBinding();

/** Which implementation signs: libsecp256k1's native binding, or @noble/curves where it cannot load. */
export const ECDSA_BACKEND: "libsecp256k1" | "noble" = binding ? "libsecp256k1" : "noble";

const bytesToHex = (bytes: Uint8Array): Hex =>
  `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;

/** A signature as viem gives it: r and s (0x + 64 hex), the recovery bit, and v = 27 + yParity. */
export type Signature = { r: Hex; s: Hex; yParity: 0 | 1; v: bigint };

function checkInputs(digest: Uint8Array, privateKey: Uint8Array): void {
  if (digest.length !== 32) throw new RangeError("a digest to sign must be 32 bytes");
  if (privateKey.length !== 32) throw new RangeError("a private key must be 32 bytes");
}

/** Signs a 32-byte digest with a 32-byte private key. */
export function signDigest(digest: Uint8Array, privateKey: Uint8Array): Signature {
  checkInputs(digest, privateKey);
  if (binding) {
    const out = { signature: new Uint8Array(64), recid: 0 };
    if (binding.ecdsaSign(out, digest, privateKey, undefined, undefined) !== 0)
      throw new Error("the private key is not a valid secp256k1 scalar");
    // libsecp256k1 normalizes to low s, so the recovery bit is 0 or 1 (never the x-overflow ids 2, 3).
    const yParity = (out.recid & 1) as 0 | 1;
    return {
      r: bytesToHex(out.signature.subarray(0, 32)),
      s: bytesToHex(out.signature.subarray(32, 64)),
      yParity,
      v: BigInt(27 + yParity),
    };
  }
  const sig = noble.sign(digest, privateKey, { lowS: true });
  const yParity = (sig.recovery & 1) as 0 | 1;
  return {
    r: `0x${sig.r.toString(16).padStart(64, "0")}`,
    s: `0x${sig.s.toString(16).padStart(64, "0")}`,
    yParity,
    v: BigInt(27 + yParity),
  };
}

/** The 65-byte signature r ‖ s ‖ v (v 27 or 28), hex: EIP-191's and viem's serialization. */
export function serializeSignature(sig: Signature): Hex {
  return `${sig.r}${sig.s.slice(2)}${sig.v === 27n ? "1b" : "1c"}`;
}

/** The uncompressed public key (65 bytes, 0x04 ‖ x ‖ y) of a private key. */
export function publicKeyOf(privateKey: Uint8Array): Uint8Array {
  if (privateKey.length !== 32) throw new RangeError("a private key must be 32 bytes");
  if (binding) {
    const out = new Uint8Array(65);
    if (binding.publicKeyCreate(out, privateKey) !== 0)
      throw new Error("the private key is not a valid secp256k1 scalar");
    return out;
  }
  return noble.getPublicKey(privateKey, false);
}
