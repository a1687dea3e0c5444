// Key derivation (docs/design/keys-and-authz.md, "Root key and derivation"): pinned vectors under the fixed
// test root, an independent re-derivation of the HKDF info layout, and the Keyring's properties.
// The vectors were computed once from derive.ts and pasted here: if any of them changes, every
// wallet address users hold changes with it, so a failure here is never "just update the constant".
import { ed25519 } from "@noble/curves/ed25519";
import { secp256k1 } from "@noble/curves/secp256k1";
import { createKeyPairFromPrivateKeyBytes, getAddressFromPublicKey, getBase58Encoder } from "@solana/kit";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, hexToBytes, type Hex } from "viem";
import { privateKeyToAddress } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { apiKeyHash } from "../../shared/hashing.ts";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { addressOf, derivationPath, firstValidScalar, Keyring, newDerivation } from "./derive.ts";

const root = () => hexToBytes(TEST_ROOT_KEY);
const keyring = () => new Keyring(root());

const FIXED_API_KEY = `${"A".repeat(43)}=`;
const FIXED_CID = "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG";
/** A usage key as the enclave makes them: base64 of 32 bytes (here 32 × 0x55). */
const FIXED_USAGE_KEY = Buffer.alloc(32, 0x55).toString("base64");

// Pinned under TEST_ROOT_KEY.
const VECTORS = {
  fixedKeyHash: 0x7374b0e021a519c04e2fe19dbbe190b46507f73d8b7fd073d235ae1763c3daa2n,
  pkp_1_2: "0xAE033666ecE8A7f34DbF4aF9A424219DdC0e54c4",
  accountMasterWallet: "0xF9F146BacFe84f373e7b2d2b3216e77Fb0Eb8f48",
  action: "0xF34496f85b0fd5c9E784c212CE62765D7e4b13AA",
  payer0: "0x282fb2312282E890F8F29406E908F4814C9E920d",
  payer1: "0xe7753c79856B1633B1630e6318E2c55f2421b90E",
  pkpEncryption_1_2: "0x63891907f9cb0f83e6cb0941dfe7cb49842d97037d33adc2f7e0d3f8d5225a7d",
  fixedUsageKeyHash: 0x2331df065d93dcfb82098d09e344a2cc114e3daa71535ec9f740678096f13824n,
  /** The usage-key wallet of FIXED_USAGE_KEY under the fixed master key's account. */
  usageKeyWallet: "0xcA6c175B051e294f309e37c49DB0bF81Df1F41E2",
  /** The Solana address of wallet (1, 2). */
  solana_1_2: "DrieaSzgi7KzGJuJRtoVsf9TGmu3C8WfueZxVacMyuJG",
} as const;

// ── an independent implementation of the spec's layout, sharing no code with derive.ts ──
const utf8 = (s: string) => new TextEncoder().encode(s);
function be(value: bigint, bytes: number): Uint8Array {
  const hex = value.toString(16).padStart(bytes * 2, "0");
  expect(hex.length).toBe(bytes * 2);
  return hexToBytes(`0x${hex}`);
}
function cat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(parts.flatMap((p) => [...p]));
}
/** HKDF-SHA256(ikm = R, salt = "sigil/v1", info), 32 bytes; the vectors here need no counter byte. */
function specKey(info: Uint8Array): Hex {
  const okm = hkdf(sha256, root(), utf8("sigil/v1"), info, 32);
  const k = BigInt(bytesToHex(okm));
  expect(k > 0n && k < secp256k1.CURVE.n).toBe(true);
  return bytesToHex(okm);
}

describe("pinned derivation vectors under TEST_ROOT_KEY", () => {
  it("uses the fixed API key's hash as the master of the Account Master Wallet vector", () => {
    expect(apiKeyHash(FIXED_API_KEY)).toBe(VECTORS.fixedKeyHash);
  });

  it("derives the PKP signing key of (master 1, derivation 2) at its pinned address", () => {
    expect(keyring().pkpKey(1n, 2n).address).toBe(VECTORS.pkp_1_2);
    // pkpAddress names the same wallet and hands out no key.
    expect(keyring().pkpAddress(1n, 2n)).toBe(VECTORS.pkp_1_2);
  });

  it("derives the Account Master Wallet of a fixed master key at its pinned address", () => {
    expect(keyring().accountMasterWallet(apiKeyHash(FIXED_API_KEY)).address).toBe(VECTORS.accountMasterWallet);
  });

  it("makes the Account Master Wallet the PKP whose derivation is the master hash itself", () => {
    const master = apiKeyHash(FIXED_API_KEY);
    expect(keyring().pkpKey(master, master).address).toBe(VECTORS.accountMasterWallet);
  });

  it("derives the usage-key wallet of a fixed usage key (the PKP whose derivation is keccak256(utf8(usageKey))) at its pinned address", () => {
    expect(FIXED_USAGE_KEY).toBe("VVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVVU=");
    expect(apiKeyHash(FIXED_USAGE_KEY)).toBe(VECTORS.fixedUsageKeyHash);
    expect(keyring().pkpKey(apiKeyHash(FIXED_API_KEY), VECTORS.fixedUsageKeyHash).address).toBe(VECTORS.usageKeyWallet);
  });

  it("derives the action identity key of a fixed CID at its pinned address", () => {
    expect(keyring().actionKey(FIXED_CID).address).toBe(VECTORS.action);
  });

  it("derives payer keys 0 and 1 at their pinned addresses", () => {
    const k = keyring();
    expect(k.payerKey(0).address).toBe(VECTORS.payer0);
    expect(k.payerKey(1).address).toBe(VECTORS.payer1);
  });

  it("derives the PKP encryption key of (master 1, derivation 2) as its pinned bytes", () => {
    expect(bytesToHex(keyring().pkpEncryptionKey(1n, 2n))).toBe(VECTORS.pkpEncryption_1_2);
  });

  it("returns each signing key's own address (the address is the private key's)", () => {
    const { privateKey, address } = keyring().pkpKey(1n, 2n);
    expect(privateKeyToAddress(bytesToHex(privateKey))).toBe(address);
    expect(addressOf(privateKey)).toBe(address);
  });
});

describe("info layout, re-derived from first principles with @noble/hashes", () => {
  it('PKP signing key: info = "pkp" ‖ uint256(master) ‖ uint256(derivation)', () => {
    const expected = specKey(cat(utf8("pkp"), be(1n, 32), be(2n, 32)));
    const derived = keyring().pkpKey(1n, 2n);
    expect(bytesToHex(derived.privateKey)).toBe(expected);
    expect(privateKeyToAddress(expected)).toBe(VECTORS.pkp_1_2);
  });

  it('Solana key: info = "pkp-sol" ‖ uint256(master) ‖ uint256(derivation), HKDF output as the Ed25519 seed, its public key in base58', async () => {
    const seed = hkdf(sha256, root(), utf8("sigil/v1"), cat(utf8("pkp-sol"), be(1n, 32), be(2n, 32)), 32);
    const derived = keyring().solanaKey(1n, 2n);
    expect(derived.seed).toEqual(seed);
    expect(derived.address).toBe(
      await getAddressFromPublicKey((await createKeyPairFromPrivateKeyBytes(seed)).publicKey),
    );
    expect(derived.address).toBe(VECTORS.solana_1_2);
    expect(getBase58Encoder().encode(derived.address)).toEqual(ed25519.getPublicKey(seed));
    expect(keyring().solanaAddress(1n, 2n)).toBe(VECTORS.solana_1_2);
  });

  it("a wallet's Solana seed is neither its signing key nor its encryption key, and differs per account and derivation", () => {
    const k = keyring();
    const seed = k.solanaKey(1n, 2n).seed;
    expect(seed).not.toEqual(k.pkpKey(1n, 2n).privateKey);
    expect(seed).not.toEqual(k.pkpEncryptionKey(1n, 2n));
    expect(k.solanaAddress(2n, 2n)).not.toBe(VECTORS.solana_1_2);
    expect(k.solanaAddress(1n, 3n)).not.toBe(VECTORS.solana_1_2);
  });

  it('PKP encryption key: info = "pkp-enc" ‖ uint256(master) ‖ uint256(derivation), HKDF output as-is', () => {
    const okm = hkdf(sha256, root(), utf8("sigil/v1"), cat(utf8("pkp-enc"), be(1n, 32), be(2n, 32)), 32);
    expect(bytesToHex(okm)).toBe(VECTORS.pkpEncryption_1_2);
  });

  it('payer key: info = "payer" ‖ uint32be(i)', () => {
    expect(privateKeyToAddress(specKey(cat(utf8("payer"), be(0n, 4))))).toBe(VECTORS.payer0);
    expect(privateKeyToAddress(specKey(cat(utf8("payer"), be(1n, 4))))).toBe(VECTORS.payer1);
    // big-endian: index 1 is 00 00 00 01, not 01 00 00 00
    expect(privateKeyToAddress(specKey(cat(utf8("payer"), Uint8Array.of(1, 0, 0, 0))))).not.toBe(VECTORS.payer1);
  });

  it('action key: info = "action" ‖ keccak256(utf8(cid))', () => {
    expect(privateKeyToAddress(specKey(cat(utf8("action"), keccak_256(utf8(FIXED_CID)))))).toBe(VECTORS.action);
  });

  it("usage-key wallet: the PKP layout with derivation = keccak256(utf8(usage key)), the key's text and not its decoded bytes", () => {
    const derivation = keccak_256(utf8(FIXED_USAGE_KEY));
    expect(bytesToHex(derivation)).toBe(`0x${VECTORS.fixedUsageKeyHash.toString(16).padStart(64, "0")}`);
    const m = be(VECTORS.fixedKeyHash, 32);
    expect(privateKeyToAddress(specKey(cat(utf8("pkp"), m, derivation)))).toBe(VECTORS.usageKeyWallet);
    const ofDecodedBytes = keccak_256(Uint8Array.from(Buffer.from(FIXED_USAGE_KEY, "base64")));
    expect(privateKeyToAddress(specKey(cat(utf8("pkp"), m, ofDecodedBytes)))).not.toBe(VECTORS.usageKeyWallet);
  });

  it("Account Master Wallet: the PKP layout with derivation = master", () => {
    const m = be(VECTORS.fixedKeyHash, 32);
    expect(privateKeyToAddress(specKey(cat(utf8("pkp"), m, m)))).toBe(VECTORS.accountMasterWallet);
  });
});

describe("firstValidScalar: reducing HKDF output to a secp256k1 scalar", () => {
  const N = secp256k1.CURVE.n;
  const INFO = utf8("pkp-info");
  /** An okm that answers `outputs` in turn and records the info it was asked for. */
  function scripted(outputs: bigint[]) {
    const asked: Hex[] = [];
    const given: Uint8Array[] = [];
    const okm = (info: Uint8Array) => {
      asked.push(bytesToHex(info));
      const next = outputs[given.length];
      if (next === undefined) throw new Error("asked for more outputs than scripted");
      const out = be(next, 32);
      given.push(out);
      return out;
    };
    return { okm, asked, given };
  }

  it("takes the first output when it is a valid scalar (1 and n − 1 are), asking only for the info itself", () => {
    for (const valid of [1n, N - 1n]) {
      const s = scripted([valid]);
      expect(BigInt(bytesToHex(firstValidScalar(s.okm, INFO)))).toBe(valid);
      expect(s.asked).toEqual([bytesToHex(INFO)]);
    }
  });

  it("on an output of n re-derives with counter byte 1 appended to the info, and zeroes the rejected output", () => {
    const s = scripted([N, 42n]);
    expect(BigInt(bytesToHex(firstValidScalar(s.okm, INFO)))).toBe(42n);
    expect(s.asked).toEqual([bytesToHex(INFO), bytesToHex(cat(INFO, Uint8Array.of(1)))]);
    expect(s.given[0]).toEqual(new Uint8Array(32));
  });

  it("skips 0, n and 2^256 − 1 in turn with counters 1, 2, 3 (each appended to the original info, not accumulated)", () => {
    const s = scripted([0n, N, (1n << 256n) - 1n, 7n]);
    expect(BigInt(bytesToHex(firstValidScalar(s.okm, INFO)))).toBe(7n);
    expect(s.asked).toEqual([0, 1, 2, 3].map((c) => bytesToHex(c === 0 ? INFO : cat(INFO, Uint8Array.of(c)))));
    for (const rejected of s.given.slice(0, 3)) expect(rejected).toEqual(new Uint8Array(32));
  });

  it("throws after 256 invalid outputs instead of returning one", () => {
    const s = scripted(Array.from({ length: 256 }, () => N));
    expect(() => firstValidScalar(s.okm, INFO)).toThrow(/key derivation failed/);
    expect(s.asked).toHaveLength(256);
  });
});

describe("Keyring properties", () => {
  it("gives the same derivation under two different masters two different addresses", () => {
    const k = keyring();
    const a = k.pkpKey(1n, 42n).address;
    const b = k.pkpKey(2n, 42n).address;
    expect(a).not.toBe(b);
  });

  it("does not swap master and derivation (the order is part of the layout)", () => {
    const k = keyring();
    expect(k.pkpKey(1n, 2n).address).not.toBe(k.pkpKey(2n, 1n).address);
  });

  it("is deterministic: two keyrings on the same root derive the same keys", () => {
    expect(keyring().pkpKey(7n, 9n).address).toBe(keyring().pkpKey(7n, 9n).address);
  });

  it("derives different keys under a different root", () => {
    const other = new Keyring(new Uint8Array(32).fill(7));
    expect(other.pkpKey(1n, 2n).address).not.toBe(VECTORS.pkp_1_2);
    expect(other.payerKey(0).address).not.toBe(VECTORS.payer0);
  });

  it("never uses a wallet's signing key as its encryption key", () => {
    const k = keyring();
    const signing = k.pkpKey(1n, 2n).privateKey;
    const encryption = k.pkpEncryptionKey(1n, 2n);
    expect(encryption).toHaveLength(32);
    expect(bytesToHex(encryption)).not.toBe(bytesToHex(signing));
  });

  it("keeps purposes apart: payer, action and PKP keys differ", () => {
    const k = keyring();
    const addresses = new Set([
      k.payerKey(0).address,
      k.actionKey(FIXED_CID).address,
      k.pkpKey(0n, 0n).address,
      k.pkpKey(1n, 2n).address,
    ]);
    expect(addresses.size).toBe(4);
  });

  it("copies the root in: changing the caller's buffer afterwards changes nothing", () => {
    const buffer = root();
    const k = new Keyring(buffer);
    buffer.fill(0);
    expect(k.pkpKey(1n, 2n).address).toBe(VECTORS.pkp_1_2);
  });

  it("refuses to derive anything after destroy() (the root is dropped)", () => {
    const k = keyring();
    expect(k.pkpKey(1n, 2n).address).toBe(VECTORS.pkp_1_2);
    k.destroy();
    expect(() => k.pkpKey(1n, 2n)).toThrow(/destroyed/);
    expect(() => k.pkpEncryptionKey(1n, 2n)).toThrow(/destroyed/);
    expect(() => k.solanaKey(1n, 2n)).toThrow(/destroyed/);
    expect(() => k.payerKey(0)).toThrow(/destroyed/);
    expect(() => k.actionKey(FIXED_CID)).toThrow(/destroyed/);
    expect(() => k.accountMasterWallet(1n)).toThrow(/destroyed/);
  });

  it.each([0, 16, 31, 33, 64])("rejects a root of %i bytes", (n) => {
    expect(() => new Keyring(new Uint8Array(n))).toThrow(RangeError);
  });

  it.each([
    ["negative", -1n],
    ["2^256", 1n << 256n],
  ])("throws RangeError on a %s uint256 input (master or derivation)", (_label, bad) => {
    const k = keyring();
    expect(() => k.pkpKey(bad, 1n)).toThrow(RangeError);
    expect(() => k.pkpKey(1n, bad)).toThrow(RangeError);
    expect(() => k.pkpEncryptionKey(bad, 1n)).toThrow(RangeError);
    expect(() => k.accountMasterWallet(bad)).toThrow(RangeError);
  });

  it("accepts the largest uint256 as an input", () => {
    const max = (1n << 256n) - 1n;
    expect(keyring().pkpKey(max, max).address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  });

  it.each([-1, 1.5, 2 ** 32, Number.NaN])("throws RangeError on payer index %s (not a uint32)", (i) => {
    expect(() => keyring().payerKey(i)).toThrow(RangeError);
  });

  it("accepts the largest uint32 payer index", () => {
    expect(keyring().payerKey(0xffff_ffff).address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  });
});

describe("derivationPath", () => {
  it("formats as 0x + 64 lowercase hex digits, zero-padded", () => {
    expect(derivationPath(0n)).toBe(`0x${"0".repeat(64)}`);
    expect(derivationPath(1n)).toBe(`0x${"0".repeat(63)}1`);
    expect(derivationPath(0xabcdefn)).toBe(`0x${"0".repeat(58)}abcdef`);
    expect(derivationPath((1n << 256n) - 1n)).toBe(`0x${"f".repeat(64)}`);
  });

  it("round-trips a random derivation", () => {
    const d = newDerivation();
    const path = derivationPath(d);
    expect(path).toMatch(/^0x[0-9a-f]{64}$/);
    expect(BigInt(path)).toBe(d);
  });
});

describe("newDerivation", () => {
  it("is a nonzero value of at most 32 bytes, and fresh on every call", () => {
    const seen = new Set<bigint>();
    for (let i = 0; i < 200; i++) {
      const d = newDerivation();
      expect(d).toBeGreaterThan(0n);
      expect(d < 1n << 256n).toBe(true);
      seen.add(d);
    }
    expect(seen.size).toBe(200);
  });

  it("uses the full 32 bytes (some of 200 draws exceed 2^248)", () => {
    // P(all 200 under 2^248) = 2^-1600.
    const draws = Array.from({ length: 200 }, () => newDerivation());
    expect(draws.some((d) => d >= 1n << 248n)).toBe(true);
  });
});

describe("remembered addresses", () => {
  it("a derivation asked for again gives the same key, and the address it reports is that key's, for every kind of key", () => {
    const k = keyring();
    const kinds = [
      () => k.pkpKey(7n, 8n),
      () => k.pkpKey(8n, 7n),
      () => k.accountMasterWallet(7n),
      () => k.actionKey("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"),
      () => k.payerKey(3),
    ];
    const first = kinds.map((derive) => derive());
    const second = kinds.map((derive) => derive());
    for (let i = 0; i < kinds.length; i++) {
      const [a, b] = [first[i], second[i]] as [
        { privateKey: Uint8Array; address: string },
        { privateKey: Uint8Array; address: string },
      ];
      expect(bytesToHex(b.privateKey)).toBe(bytesToHex(a.privateKey));
      expect(b.address).toBe(addressOf(b.privateKey));
    }
    // Different inputs never share a remembered address.
    expect(new Set(second.map((d) => d.address)).size).toBe(kinds.length);
  });
});
