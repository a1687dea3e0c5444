// Every key the enclave uses, derived from the one root secret R (docs/design/keys-and-authz.md):
// HKDF-SHA256(ikm = R, salt = "sigil/v1", info = purpose ‖ inputs), 32 bytes, reduced to a valid
// secp256k1 scalar (a wallet's Solana key takes the 32 bytes as its Ed25519 seed). Nothing derived
// here is stored: callers zero the bytes when done.
import { createSecretKey, hkdfSync, type KeyObject } from "node:crypto";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { sha256 } from "@noble/hashes/sha2";
import { concatBytes as concat } from "@noble/hashes/utils";
import { bytesToHex, getAddress, type Address, type Hex } from "viem";
import type { Address as SolanaAddress } from "@solana/addresses";
import { publicKeyOf } from "./ecdsa.ts";
import { solanaAddressOf } from "./ed25519.ts";
import { Recent } from "../../shared/recent.ts";

const SALT = new TextEncoder().encode("sigil/v1");
const N = secp256k1.CURVE.n;
const text = (s: string) => new TextEncoder().encode(s);

function u256(value: bigint): Uint8Array {
  if (value < 0n || value >= 1n << 256n) throw new RangeError("a derivation input must be a uint256");
  // Big-endian, by way of its hex digits (one conversion, not 32 BigInt shifts).
  return Uint8Array.from(Buffer.from(value.toString(16).padStart(64, "0"), "hex"));
}

function u32(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) throw new RangeError("an index must be a uint32");
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

function toBigInt(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex") || "0"}`);
}

/**
 * The secp256k1 scalar for `info`: `okm(info)`, or on the rare output of 0 or ≥ n, `okm` of the info
 * with a counter byte appended (1, 2, …), so every input has exactly one key. Rejected outputs are
 * zeroed. A function of `okm` so that the re-derivation, which HKDF reaches with probability
 * ~2^-128, can be tested.
 */
export function firstValidScalar(okm: (info: Uint8Array) => Uint8Array, info: Uint8Array): Uint8Array {
  for (let counter = 0; counter < 256; counter++) {
    const candidate = okm(counter === 0 ? info : concat(info, Uint8Array.of(counter)));
    const k = toBigInt(candidate);
    if (k > 0n && k < N) return candidate;
    candidate.fill(0);
  }
  throw new Error("key derivation failed"); // unreachable with HKDF: 256 consecutive misses has probability ~2^-32768
}

/** The key material of one wallet: the signing scalar and its address. Zero `privateKey` after use. */
export type DerivedKey = { privateKey: Uint8Array; address: Address };

export function addressOf(privateKey: Uint8Array): Address {
  const publicKey = publicKeyOf(privateKey);
  return getAddress(bytesToHex(keccak_256(publicKey.subarray(1)).subarray(12)));
}

/** A wallet's Solana key: its Ed25519 seed and its address (the public key, base58). Zero `seed` after use. */
export type SolanaKey = { seed: Uint8Array; address: SolanaAddress };

/** Addresses remembered per derivation input; each is public, and recomputing one costs a curve multiplication. */
const ADDRESS_CACHE_MAX = 50_000;

/**
 * Derives every kind of key from the root secret. The root is copied in and never leaves this object;
 * `destroy()` drops it, and nothing is derived after.
 */
export class Keyring {
  /**
   * The root, copied into a key object of Node's (OpenSSL's) once: HKDF given bytes makes such an
   * object per call, about half of a derivation's time. destroy() drops it; Node clears its copy
   * when it frees it.
   */
  #rootKey: KeyObject | undefined;
  #destroyed = false;
  /**
   * info → address. The key itself is derived afresh at every use and never kept; only the
   * (public) address it maps to is remembered, which takes the elliptic-curve multiplication off
   * the per-operation path. Same root, same info → same key → same address, so this is exact.
   */
  readonly #addresses = new Recent<string, Address>(ADDRESS_CACHE_MAX);
  /** The same for wallets' Solana addresses (an Ed25519 multiplication each). */
  readonly #solanaAddresses = new Recent<string, SolanaAddress>(ADDRESS_CACHE_MAX);

  constructor(root: Uint8Array) {
    if (root.length !== 32) throw new RangeError("the root key must be 32 bytes");
    this.#rootKey = createSecretKey(root);
  }

  /** 32 bytes of HKDF output for `info`, as-is (for symmetric keys). */
  #okm(info: Uint8Array): Uint8Array {
    // After destroy() the root is gone: nothing may be derived.
    if (this.#destroyed || !this.#rootKey) throw new Error("the keyring has been destroyed");
    // Node's HKDF (OpenSSL): the same RFC 5869 output as @noble's, a few times faster; every signing
    // run derives its wallet's key here.
    return new Uint8Array(hkdfSync("sha256", this.#rootKey, SALT, info, 32));
  }

  #scalar(info: Uint8Array): Uint8Array {
    return firstValidScalar((i) => this.#okm(i), info);
  }

  #keyFor(info: Uint8Array): DerivedKey {
    const privateKey = this.#scalar(info);
    const id = Buffer.from(info).toString("hex");
    return { privateKey, address: this.#addresses.getOrMake(id, () => addressOf(privateKey)) };
  }

  /** A wallet's (PKP's) signing key, bound to its account: `"pkp" ‖ master ‖ derivation`. */
  pkpKey(master: bigint, derivation: bigint): DerivedKey {
    return this.#keyFor(concat(text("pkp"), u256(master), u256(derivation)));
  }

  /**
   * A wallet's address alone: for what only names a wallet (creating, registering, listing it), so
   * that its private key is zeroed here and never reaches the caller.
   */
  pkpAddress(master: bigint, derivation: bigint): Address {
    const key = this.pkpKey(master, derivation);
    key.privateKey.fill(0);
    return key.address;
  }

  /**
   * A wallet's Solana key: the Ed25519 seed `"pkp-sol" ‖ master ‖ derivation` (its own label, so
   * neither of a wallet's keys says anything about the other) and its address, the public key in
   * base58. Zero `seed` after use.
   */
  solanaKey(master: bigint, derivation: bigint): SolanaKey {
    const info = concat(text("pkp-sol"), u256(master), u256(derivation));
    const seed = this.#okm(info);
    const id = Buffer.from(info).toString("hex");
    return { seed, address: this.#solanaAddresses.getOrMake(id, () => solanaAddressOf(seed)) };
  }

  /** A wallet's Solana address alone (its seed zeroed here). */
  solanaAddress(master: bigint, derivation: bigint): SolanaAddress {
    const key = this.solanaKey(master, derivation);
    key.seed.fill(0);
    return key.address;
  }

  /** A wallet's AES-256-GCM key for encrypt/decrypt — never its signing key. */
  pkpEncryptionKey(master: bigint, derivation: bigint): Uint8Array {
    return this.#okm(concat(text("pkp-enc"), u256(master), u256(derivation)));
  }

  /** The Account Master Wallet: the PKP whose derivation is the master hash itself. */
  accountMasterWallet(master: bigint): DerivedKey {
    return this.pkpKey(master, master);
  }

  /** The identity key of an action: the same for every account that runs this exact code. */
  actionKey(cid: string): DerivedKey {
    return this.#keyFor(concat(text("action"), keccak_256(text(cid))));
  }

  /** Payer key `i`; instance k owns indices [k·N, (k+1)·N). */
  payerKey(index: number): DerivedKey {
    return this.#keyFor(concat(text("payer"), u32(index)));
  }

  /**
   * The key that signs this instance's run receipts: `"sigil-receipt-v1" ‖ SHA-256(instance id)`. The
   * same for one instance across its restarts (same root, same instance id), another for every other
   * instance; a quote binds its public key (enclave/receipts/). It signs receipts and nothing else.
   */
  receiptKey(instanceId: string): DerivedKey {
    if (instanceId.length === 0) throw new RangeError("the receipt key needs the instance id");
    return this.#keyFor(concat(text("sigil-receipt-v1"), sha256(text(instanceId))));
  }

  /**
   * The secret a delegated key's chain from usage key `root` starts from (docs/design/delegation.md):
   * `"sigil-delegation-v1" ‖ root`. The same for every instance of a deployment (one root key), so a
   * key minted by one is checked by any; another for every root key hash. It tags delegation chains
   * and nothing else, and never leaves the enclave.
   */
  delegationSecret(root: bigint): Uint8Array {
    return this.#okm(concat(text("sigil-delegation-v1"), u256(root)));
  }

  destroy(): void {
    this.#destroyed = true;
    this.#rootKey = undefined;
    this.#addresses.clear();
    this.#solanaAddresses.clear();
  }
}

/** A new random derivation: 32 bytes from the CSPRNG, never 0. */
export function newDerivation(): bigint {
  for (;;) {
    const v = toBigInt(crypto.getRandomValues(new Uint8Array(32)));
    if (v !== 0n) return v;
  }
}

/** `derivation_path` as responses show it: `0x` + 64 lowercase hex digits. */
export function derivationPath(derivation: bigint): Hex {
  return `0x${derivation.toString(16).padStart(64, "0")}`;
}
