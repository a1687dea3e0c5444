// API keys: standard, padded, canonical base64 of 32 random bytes (docs/design/keys-and-authz.md, API keys).
import { describe, expect, it } from "vitest";
import { generateApiKey, isApiKeyFormat, keyRefusal } from "./apiKey.ts";
import { apiKeyHash, toHash32 } from "./hashing.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const STANDARD_BASE64_KEY = /^[A-Za-z0-9+/]{43}=$/;

/** A key built from known bytes, encoded by Node's Buffer rather than the code under test. */
const keyOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64");

/** Replaces the character at `index`. */
const withChar = (key: string, index: number, char: string): string =>
  key.slice(0, index) + char + key.slice(index + 1);

describe("generateApiKey", () => {
  it("gives 44 characters of standard base64 ending in a single '='", () => {
    const key = generateApiKey();
    expect(key).toHaveLength(44);
    expect(key).toMatch(STANDARD_BASE64_KEY);
    expect(key.endsWith("=")).toBe(true);
    expect(key.endsWith("==")).toBe(false);
  });

  it("decodes to exactly 32 bytes and is their canonical encoding", () => {
    const key = generateApiKey();
    const decoded = Buffer.from(key, "base64");
    expect(decoded).toHaveLength(32);
    expect(decoded.toString("base64")).toBe(key);
  });

  it("gives 200 distinct keys that all pass isApiKeyFormat", () => {
    const keys = Array.from({ length: 200 }, () => generateApiKey());
    expect(new Set(keys).size).toBe(200);
    for (const key of keys) expect(isApiKeyFormat(key), key).toBe(true);
  });
});

describe("isApiKeyFormat", () => {
  const valid = keyOf(Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 3));

  it("accepts the canonical base64 of 32 bytes", () => {
    expect(valid).toHaveLength(44);
    expect(isApiKeyFormat(valid)).toBe(true);
    expect(isApiKeyFormat(keyOf(new Uint8Array(32)))).toBe(true);
  });

  it("accepts a valid key with surrounding whitespace", () => {
    expect(isApiKeyFormat(`  ${valid}`)).toBe(true);
    expect(isApiKeyFormat(`${valid}\n`)).toBe(true);
    expect(isApiKeyFormat(`\t ${valid} \r\n`)).toBe(true);
  });

  it("accepts keys using '+' and '/' from the standard alphabet", () => {
    const plusSlash = keyOf(new Uint8Array(32).fill(0xfb));
    expect(plusSlash).toContain("+");
    expect(plusSlash).toContain("/");
    expect(isApiKeyFormat(plusSlash)).toBe(true);
  });

  it("rejects 43 characters", () => {
    const short = valid.slice(0, 10) + valid.slice(11);
    expect(short).toHaveLength(43);
    expect(isApiKeyFormat(short)).toBe(false);
  });

  it("rejects 45 characters", () => {
    const long = `A${valid}`;
    expect(long).toHaveLength(45);
    expect(isApiKeyFormat(long)).toBe(false);
  });

  it("rejects the URL-safe alphabet ('-' and '_')", () => {
    const standard = keyOf(new Uint8Array(32).fill(0xfb));
    const urlSafe = standard.replaceAll("+", "-").replaceAll("/", "_");
    expect(urlSafe).not.toBe(standard);
    expect(urlSafe).toMatch(/[-_]/);
    expect(isApiKeyFormat(standard)).toBe(true);
    expect(isApiKeyFormat(urlSafe)).toBe(false);
  });

  it("rejects a key without its '=' padding", () => {
    expect(isApiKeyFormat(valid.slice(0, 43))).toBe(false);
    // 44 characters, but the padding replaced by a data character.
    expect(isApiKeyFormat(withChar(valid, 43, "A"))).toBe(false);
  });

  it("rejects '==' padding (31 decoded bytes)", () => {
    const thirtyOne = keyOf(new Uint8Array(31).fill(9));
    expect(thirtyOne).toHaveLength(44);
    expect(thirtyOne.endsWith("==")).toBe(true);
    expect(isApiKeyFormat(thirtyOne)).toBe(false);
  });

  it("rejects a public key hash (0x + 64 hex), with or without its prefix", () => {
    const hash = toHash32(apiKeyHash(valid));
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(isApiKeyFormat(hash)).toBe(false);
    expect(isApiKeyFormat(hash.slice(2))).toBe(false);
  });

  it("rejects non-canonical base64 whose last data character has padding bits set", () => {
    // 32 bytes = 256 bits in 43 characters (258 bits): the 43rd character's two low bits are
    // padding, so its alphabet index is a multiple of 4 in canonical base64.
    const base = keyOf(new Uint8Array(32));
    const lastIndex = ALPHABET.indexOf(base[42]!);
    expect(base[42]).toBe("A");
    expect(lastIndex % 4).toBe(0);
    for (const bits of [1, 2, 3]) {
      const nonCanonical = withChar(base, 42, ALPHABET[lastIndex + bits]!);
      // It still has the key's shape and decodes (leniently) to the same 32 bytes...
      expect(nonCanonical).toMatch(STANDARD_BASE64_KEY);
      expect(Buffer.from(nonCanonical, "base64")).toEqual(Buffer.from(base, "base64"));
      // ...but it is not the canonical encoding.
      expect(isApiKeyFormat(nonCanonical), nonCanonical).toBe(false);
    }
  });

  it("rejects non-canonical variants of a generated key", () => {
    const key = generateApiKey();
    const lastIndex = ALPHABET.indexOf(key[42]!);
    expect(lastIndex % 4).toBe(0);
    const nonCanonical = withChar(key, 42, ALPHABET[lastIndex | 1]!);
    expect(isApiKeyFormat(key)).toBe(true);
    expect(isApiKeyFormat(nonCanonical)).toBe(false);
  });

  it("rejects the empty string and whitespace only", () => {
    expect(isApiKeyFormat("")).toBe(false);
    expect(isApiKeyFormat("   \n")).toBe(false);
  });

  it("rejects whitespace or other characters inside the key", () => {
    expect(isApiKeyFormat(withChar(valid, 20, " "))).toBe(false);
    expect(isApiKeyFormat(withChar(valid, 20, "."))).toBe(false);
    expect(isApiKeyFormat(withChar(valid, 20, "="))).toBe(false);
  });
});

describe("keyRefusal", () => {
  it("lets a live key act and names why any other may not", () => {
    expect(keyRefusal({ known: true, isMaster: true, live: true })).toBeUndefined();
    expect(keyRefusal({ known: true, isMaster: false, live: true })).toBeUndefined();
    expect(keyRefusal({ known: false, isMaster: false, live: false })?.code).toBe("invalid_api_key");
    expect(keyRefusal({ known: true, isMaster: true, live: false })?.code).toBe("chain_secured_account");
    expect(keyRefusal({ known: true, isMaster: false, live: false })?.code).toBe("invalid_api_key");
  });
});
