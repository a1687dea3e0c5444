// The three on-chain hashes, each checked against an independent keccak (@noble/hashes), not viem.
import { keccak_256 } from "@noble/hashes/sha3";
import type { Address } from "viem";
import { describe, expect, it } from "vitest";
import { apiKeyHash, cidHash, toHash32, walletLookupHash } from "./hashing.ts";

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
/** uint256 of a 32-byte digest, computed without viem. */
const uint256 = (digest: Uint8Array): bigint => BigInt(`0x${hex(digest)}`);
/** The 20 raw bytes of an address, parsed by hand. */
const addressBytes = (address: string): Uint8Array => {
  const digits = address.slice(2);
  expect(digits).toMatch(/^[0-9a-fA-F]{40}$/);
  return Uint8Array.from({ length: 20 }, (_, i) => parseInt(digits.slice(2 * i, 2 * i + 2), 16));
};

// base64 of the bytes 0x00..0x1f: a fixed, well-formed 44-character key.
const KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const CID = "QmXoMqm4sckyYxbqarxfyfY36qj9bvmVFihXEYNqK4Uri6";
// The EIP-55 example address, checksummed.
const CHECKSUMMED: Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";

describe("the reference keccak", () => {
  it("is Keccak-256 (the Ethereum variant), not SHA3-256", () => {
    expect(hex(keccak_256(new Uint8Array()))).toBe("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  });
});

describe("apiKeyHash", () => {
  it("is uint256(keccak256(utf8(key))) of a 44-character key", () => {
    expect(KEY).toHaveLength(44);
    expect(apiKeyHash(KEY)).toBe(uint256(keccak_256(utf8(KEY))));
  });

  it("trims surrounding whitespace before hashing", () => {
    const expected = uint256(keccak_256(utf8(KEY)));
    expect(apiKeyHash(`  ${KEY}`)).toBe(expected);
    expect(apiKeyHash(`${KEY}\n`)).toBe(expected);
    expect(apiKeyHash(`\t ${KEY} \r\n`)).toBe(expected);
  });

  it("hashes the key's text, not its base64-decoded 32 bytes", () => {
    const decoded = new Uint8Array(Buffer.from(KEY, "base64"));
    expect(decoded).toHaveLength(32);
    expect(apiKeyHash(KEY)).not.toBe(uint256(keccak_256(decoded)));
  });

  it("gives different hashes for keys that differ in one character", () => {
    const other = `B${KEY.slice(1)}`;
    expect(apiKeyHash(other)).not.toBe(apiKeyHash(KEY));
    expect(apiKeyHash(other)).toBe(uint256(keccak_256(utf8(other))));
  });
});

describe("walletLookupHash", () => {
  it("is keccak256 of the 20 raw address bytes (abi.encodePacked(address))", () => {
    const bytes = addressBytes(CHECKSUMMED);
    expect(bytes).toHaveLength(20);
    expect(walletLookupHash(CHECKSUMMED)).toBe(uint256(keccak_256(bytes)));
  });

  it("does not hash the address's text", () => {
    expect(walletLookupHash(CHECKSUMMED)).not.toBe(uint256(keccak_256(utf8(CHECKSUMMED))));
    expect(walletLookupHash(CHECKSUMMED)).not.toBe(uint256(keccak_256(utf8(CHECKSUMMED.toLowerCase()))));
  });

  it("does not depend on the address's letter case", () => {
    const lower = CHECKSUMMED.toLowerCase() as Address;
    const upper = `0x${CHECKSUMMED.slice(2).toUpperCase()}` as Address;
    const expected = walletLookupHash(CHECKSUMMED);
    expect(walletLookupHash(lower)).toBe(expected);
    expect(walletLookupHash(upper)).toBe(expected);
  });

  it("hashes the zero address as 20 zero bytes", () => {
    expect(walletLookupHash("0x0000000000000000000000000000000000000000")).toBe(
      uint256(keccak_256(new Uint8Array(20))),
    );
  });
});

describe("cidHash", () => {
  it("is uint256(keccak256(utf8(cid)))", () => {
    expect(cidHash(CID)).toBe(uint256(keccak_256(utf8(CID))));
  });

  it("does not trim or normalize the CID text", () => {
    expect(cidHash(` ${CID}`)).toBe(uint256(keccak_256(utf8(` ${CID}`))));
    expect(cidHash(` ${CID}`)).not.toBe(cidHash(CID));
  });
});

describe("toHash32", () => {
  it("gives 0x and 64 hex digits, zero-padded on the left, for a small value", () => {
    expect(toHash32(1n)).toBe(`0x${"0".repeat(63)}1`);
    expect(toHash32(0n)).toBe(`0x${"0".repeat(64)}`);
  });

  it("uses lowercase hex digits", () => {
    expect(toHash32(0xabcdefn)).toBe(`0x${"0".repeat(58)}abcdef`);
    expect(toHash32(2n ** 256n - 1n)).toBe(`0x${"f".repeat(64)}`);
  });

  it("round-trips a hash to the digest's hex", () => {
    expect(toHash32(apiKeyHash(KEY))).toBe(`0x${hex(keccak_256(utf8(KEY)))}`);
    expect(toHash32(cidHash(CID))).toBe(`0x${hex(keccak_256(utf8(CID)))}`);
  });

  it("refuses a value that does not fit in 256 bits", () => {
    expect(() => toHash32(2n ** 256n)).toThrow();
  });
});
