// Ed25519 for a wallet's Solana key (docs/design/keys-and-authz.md, Root key and derivation), with
// Node's crypto (OpenSSL): a 32-byte seed, as RFC 8032 and Solana's keypairs take it, its public key
// (which, base58, is the wallet's Solana address) and deterministic signatures over any bytes — the
// same bytes @solana/kit's signers and @noble/curves make (tests compare them). The seed is wrapped
// in a PKCS#8 structure only to hand it to OpenSSL; the caller zeroes its copy, and OpenSSL clears its
// own when the key object is freed.
import { createPrivateKey, createPublicKey, sign as nodeSign, type KeyObject } from "node:crypto";
import { getAddressDecoder, type Address } from "@solana/addresses";

/** PKCS#8 (RFC 8410) for an Ed25519 private key: this prefix, then the 32-byte seed. */
const PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);
/** SPKI for an Ed25519 public key: this prefix, then the 32-byte key. */
const SPKI_PREFIX_LENGTH = 12;

function keyObject(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new RangeError("an Ed25519 seed is 32 bytes");
  const der = new Uint8Array(PKCS8_PREFIX.length + 32);
  der.set(PKCS8_PREFIX);
  der.set(seed, PKCS8_PREFIX.length);
  try {
    return createPrivateKey({ key: Buffer.from(der.buffer), format: "der", type: "pkcs8" });
  } finally {
    der.fill(0);
  }
}

/** The 32-byte public key of `seed`. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const spki = createPublicKey(keyObject(seed)).export({ format: "der", type: "spki" });
  return new Uint8Array(spki.subarray(SPKI_PREFIX_LENGTH));
}

/** The 64-byte Ed25519 signature of `message` by `seed` (pure Ed25519: the message itself, not a hash of it). */
export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return new Uint8Array(nodeSign(null, message, keyObject(seed)));
}

const base58Address = getAddressDecoder();

/** The Solana address of an Ed25519 seed: its public key in base58. */
export function solanaAddressOf(seed: Uint8Array): Address {
  return base58Address.decode(ed25519PublicKey(seed));
}
