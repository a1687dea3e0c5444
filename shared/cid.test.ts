// CIDv0 exactly as `ipfs add` computes it with its defaults (fixed vectors from go-ipfs / kubo).
import { describe, expect, it } from "vitest";
import { CID } from "multiformats/cid";
import { base36 } from "multiformats/bases/base36";
import { base58btc } from "multiformats/bases/base58";
import { sha512 } from "multiformats/hashes/sha2";
import { create as digestOf } from "multiformats/hashes/digest";
import { canonicalCid, computeCid, isCidV0 } from "./cid.ts";
import { SigilError } from "./errors.ts";

const HELLO_WORLD_NL = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o";
const EMPTY = "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH";
const HELLO_WORLD = "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD";
const ONE_CHUNK_OF_A = "Qma81h2ZqbvJW2EQkiVUZ17aSvNWqAtvUPhh8mQBPU8W7c";
const ONE_CHUNK_PLUS_ONE_OF_A = "QmTaxvXcxpzzaatSEEAYr7t3knkJ6DmTVbr8MjJJWLRWpV";
const MILLION_COUNTING = "QmdYtJPxn8AScSVjvuj7SEZPk4tPfmZUnfAFHppFWPR2DS";
const MAIN_SCRIPT_SOURCE = 'async function main() { return "hello"; }';
const MAIN_SCRIPT = "QmXoMqm4sckyYxbqarxfyfY36qj9bvmVFihXEYNqK4Uri6";

const VECTORS = [
  HELLO_WORLD_NL,
  EMPTY,
  HELLO_WORLD,
  ONE_CHUNK_OF_A,
  ONE_CHUNK_PLUS_ONE_OF_A,
  MILLION_COUNTING,
  MAIN_SCRIPT,
];

describe("computeCid", () => {
  it('gives QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o for "hello world\\n"', async () => {
    expect(await computeCid("hello world\n")).toBe(HELLO_WORLD_NL);
  });

  it("gives QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH for empty content", async () => {
    expect(await computeCid("")).toBe(EMPTY);
    expect(await computeCid(new Uint8Array())).toBe(EMPTY);
  });

  it('gives Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD for "hello world"', async () => {
    expect(await computeCid("hello world")).toBe(HELLO_WORLD);
  });

  it('gives Qma81h2ZqbvJW2EQkiVUZ17aSvNWqAtvUPhh8mQBPU8W7c for 262144 bytes of "a" (exactly one chunk)', async () => {
    expect(await computeCid(new Uint8Array(262_144).fill(0x61))).toBe(ONE_CHUNK_OF_A);
  });

  it('gives QmTaxvXcxpzzaatSEEAYr7t3knkJ6DmTVbr8MjJJWLRWpV for 262145 bytes of "a" (two chunks)', async () => {
    expect(await computeCid(new Uint8Array(262_145).fill(0x61))).toBe(ONE_CHUNK_PLUS_ONE_OF_A);
  });

  it("gives QmdYtJPxn8AScSVjvuj7SEZPk4tPfmZUnfAFHppFWPR2DS for the bytes i % 256, i < 1 000 000", async () => {
    const bytes = Uint8Array.from({ length: 1_000_000 }, (_, i) => i % 256);
    expect(await computeCid(bytes)).toBe(MILLION_COUNTING);
  });

  it(`gives QmXoMqm4sckyYxbqarxfyfY36qj9bvmVFihXEYNqK4Uri6 for ${MAIN_SCRIPT_SOURCE}`, async () => {
    expect(await computeCid(MAIN_SCRIPT_SOURCE)).toBe(MAIN_SCRIPT);
  });

  it("gives a string the CID of its UTF-8 bytes", async () => {
    for (const text of [MAIN_SCRIPT_SOURCE, "héllo wörld ✓ 🚀\n", "hello world\n"]) {
      const bytes = new TextEncoder().encode(text);
      expect(await computeCid(text)).toBe(await computeCid(bytes));
    }
    expect(await computeCid(new TextEncoder().encode(MAIN_SCRIPT_SOURCE))).toBe(MAIN_SCRIPT);
  });

  it("does not trim whitespace", async () => {
    expect(await computeCid(" x")).not.toBe(await computeCid("x"));
    expect(await computeCid("x\n")).not.toBe(await computeCid("x"));
    expect(await computeCid("hello world\n")).not.toBe(await computeCid("hello world"));
  });

  it("gives a CIDv0 for every input", async () => {
    for (const content of ["", "x", new Uint8Array(262_145)]) expect(isCidV0(await computeCid(content))).toBe(true);
  });
});

describe("isCidV0", () => {
  it("accepts every CID of the fixed vectors", () => {
    for (const cid of VECTORS) expect(isCidV0(cid), cid).toBe(true);
  });

  it("rejects a CIDv1", () => {
    expect(isCidV0("bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi")).toBe(false);
    expect(isCidV0("bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e")).toBe(false);
  });

  it("rejects a Qm string of 45 or 47 characters", () => {
    expect(MAIN_SCRIPT).toHaveLength(46);
    expect(isCidV0(MAIN_SCRIPT.slice(0, 45))).toBe(false);
    expect(isCidV0(`${MAIN_SCRIPT}z`)).toBe(false);
  });

  it("rejects characters outside base58btc ('0', 'O', 'I', 'l')", () => {
    for (const bad of ["0", "O", "I", "l"]) {
      const cid = `${MAIN_SCRIPT.slice(0, 10)}${bad}${MAIN_SCRIPT.slice(11)}`;
      expect(cid).toHaveLength(46);
      expect(isCidV0(cid), cid).toBe(false);
    }
  });

  it("rejects a CID with surrounding whitespace, and the empty string", () => {
    expect(isCidV0(` ${MAIN_SCRIPT}`)).toBe(false);
    expect(isCidV0(`${MAIN_SCRIPT}\n`)).toBe(false);
    expect(isCidV0("")).toBe(false);
  });

  it("rejects a 46-character base58 string that does not start with Qm", () => {
    expect(isCidV0(`Qn${MAIN_SCRIPT.slice(2)}`)).toBe(false);
  });
});

describe("canonicalCid", () => {
  const v1 = CID.parse(MAIN_SCRIPT).toV1();

  it("keeps a CIDv0 as it is", () => {
    for (const cid of VECTORS) expect(canonicalCid(cid)).toBe(cid);
  });

  it("turns a dag-pb sha2-256 CIDv1 into its CIDv0, in base32 (bafy…), base58btc (z…) and base36 (k…)", () => {
    expect(v1.toString()).toMatch(/^bafy/);
    for (const form of [v1.toString(), v1.toString(base58btc), v1.toString(base36)])
      expect(canonicalCid(form), form).toBe(MAIN_SCRIPT);
  });

  function refusal(value: string): SigilError {
    try {
      canonicalCid(value);
    } catch (err) {
      expect(err).toBeInstanceOf(SigilError);
      return err as SigilError;
    }
    throw new Error(`${value} was accepted`);
  }

  it("refuses, with 400 invalid_request, a CID that can name no script: raw codec, another hash, a short sha2-256 digest", async () => {
    const raw = CID.createV1(0x55, v1.multihash).toString();
    expect(raw).toMatch(/^bafkrei/);
    const otherHash = CID.createV1(0x70, await sha512.digest(new TextEncoder().encode(MAIN_SCRIPT_SOURCE))).toString();
    const shortDigest = CID.createV1(0x70, digestOf(0x12, v1.multihash.digest.slice(0, 20))).toString();
    for (const cid of [raw, otherHash, shortDigest]) {
      const err = refusal(cid);
      expect(err.code).toBe("invalid_request");
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/cannot name a script/);
    }
  });

  it("refuses what is not a CID, or not one in a base it reads", () => {
    for (const value of [
      "not-a-cid",
      "",
      ` ${MAIN_SCRIPT}`,
      MAIN_SCRIPT.slice(0, 45),
      v1.toString().toUpperCase(),
      "0x1234",
    ]) {
      expect(refusal(value).message, value).toMatch(/not an IPFS CID/);
    }
  });
});
