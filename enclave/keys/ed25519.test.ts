// Ed25519 with Node's crypto (ed25519.ts) against RFC 8032's own vector, @noble/curves and @solana/kit:
// the same public key and, Ed25519 being deterministic, the same signature byte for byte.
import { ed25519 } from "@noble/curves/ed25519";
import { createKeyPairFromPrivateKeyBytes, getAddressFromPublicKey, signBytes } from "@solana/kit";
import { bytesToHex, hexToBytes } from "viem";
import { describe, expect, it } from "vitest";
import { ed25519PublicKey, ed25519Sign, solanaAddressOf } from "./ed25519.ts";

describe("Ed25519 (a wallet's Solana key)", () => {
  it("RFC 8032, test 1: the public key and the signature of the empty message", () => {
    const seed = hexToBytes("0x9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
    expect(bytesToHex(ed25519PublicKey(seed))).toBe(
      "0xd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    );
    expect(bytesToHex(ed25519Sign(seed, new Uint8Array(0)))).toBe(
      "0xe5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    );
  });

  it("the same keys and signatures as @noble/curves, for random seeds and messages of every length up to 300 bytes", () => {
    for (let i = 0; i < 60; i++) {
      const seed = crypto.getRandomValues(new Uint8Array(32));
      const message = crypto.getRandomValues(new Uint8Array(i * 5));
      expect(ed25519PublicKey(seed)).toEqual(ed25519.getPublicKey(seed));
      expect(ed25519Sign(seed, message)).toEqual(ed25519.sign(message, seed));
    }
  });

  it("the address and signatures @solana/kit makes from the same private key bytes", async () => {
    const seed = crypto.getRandomValues(new Uint8Array(32));
    const pair = await createKeyPairFromPrivateKeyBytes(seed);
    expect(solanaAddressOf(seed)).toBe(await getAddressFromPublicKey(pair.publicKey));
    const message = new TextEncoder().encode("a message for Solana");
    expect(ed25519Sign(seed, message)).toEqual(new Uint8Array(await signBytes(pair.privateKey, message)));
  });

  it("refuses a seed that is not 32 bytes", () => {
    expect(() => ed25519PublicKey(new Uint8Array(31))).toThrow(/32 bytes/);
    expect(() => ed25519Sign(new Uint8Array(33), new Uint8Array(1))).toThrow(/32 bytes/);
  });
});
