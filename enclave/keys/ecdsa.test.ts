// The enclave's secp256k1 (ecdsa.ts): on this platform libsecp256k1's native binding, whose
// signatures and public keys must be byte for byte what viem and @noble/curves make — RFC 6979,
// low s, the recovery bit — for any key and digest; and bad input is refused, not signed.
import { secp256k1 } from "@noble/curves/secp256k1";
import { randomBytes } from "node:crypto";
import { bytesToHex, recoverAddress, type Hex } from "viem";
import { privateKeyToAddress, sign } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { ECDSA_BACKEND, publicKeyOf, serializeSignature, signDigest } from "./ecdsa.ts";

describe("secp256k1 (enclave/keys/ecdsa.ts)", () => {
  it("uses libsecp256k1's native binding on Linux x64", () => {
    expect(process.platform === "linux" && process.arch === "x64" ? ECDSA_BACKEND : "libsecp256k1").toBe(
      "libsecp256k1",
    );
  });

  it("signs 200 random digests with 200 random keys exactly as viem does, and each recovers to the key's address", async () => {
    for (let i = 0; i < 200; i++) {
      const key = randomBytes(32);
      const digest = randomBytes(32);
      const mine = signDigest(digest, key);
      const theirs = await sign({ hash: bytesToHex(digest), privateKey: bytesToHex(key) });
      expect(mine).toEqual({ r: theirs.r, s: theirs.s, yParity: theirs.yParity, v: theirs.v });
      expect(await recoverAddress({ hash: bytesToHex(digest), signature: serializeSignature(mine) })).toBe(
        privateKeyToAddress(bytesToHex(key)),
      );
      expect(publicKeyOf(key)).toEqual(secp256k1.getPublicKey(key, false));
    }
  });

  it("serializes as r ‖ s ‖ v with v 27 or 28", () => {
    const sig = signDigest(new Uint8Array(32).fill(1), new Uint8Array(32).fill(7));
    const hex: Hex = serializeSignature(sig);
    expect(hex).toMatch(/^0x[0-9a-f]{128}(1b|1c)$/);
    expect(hex.slice(2, 66)).toBe(sig.r.slice(2));
  });

  it("refuses a key that is no scalar (0, the group order) and inputs of the wrong size", () => {
    const digest = new Uint8Array(32).fill(1);
    expect(() => signDigest(digest, new Uint8Array(32))).toThrow();
    expect(() => signDigest(digest, hexBytes(secp256k1.CURVE.n.toString(16).padStart(64, "0")))).toThrow();
    expect(() => signDigest(new Uint8Array(31), new Uint8Array(32).fill(7))).toThrow(RangeError);
    expect(() => signDigest(digest, new Uint8Array(33).fill(7))).toThrow(RangeError);
    expect(() => publicKeyOf(new Uint8Array(32))).toThrow();
  });
});

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, "hex"));
}
