// The delegated keys' token algebra (delegation.ts): a chain checks only under the secret it started
// from; any byte changed, a block removed, reordered or swapped for another chain's fails; a child
// cannot be wider than its chain in any dimension (expiry, groups, actions, wallets, uses, budget), and
// whatever blocks a forged-looking chain carries, what it allows is their intersection; a key that
// forbids delegating cannot be extended (nor checked when a block is forced after it offline), nor
// can a chain repeat a block id; the key's text round-trips and nothing else decodes.
import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils";
import { canonicalJson } from "./canonicalJson.ts";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import {
  attenuate,
  blockProblem,
  check,
  delegationBlockSchema,
  type delegationTokenSchema,
  decodeDelegatedKey,
  DelegationError,
  effective,
  encodeDelegatedKey,
  MAX_DEPTH,
  mint,
  mintKeys,
  verify,
  type DelegationBlock,
  type DelegationToken,
} from "./delegation.ts";

const ROOT = `0x${"ab".repeat(32)}`;
const OTHER_ROOT = `0x${"cd".repeat(32)}`;
const DELEGATION_ROOT = randomBytes(32);
/** A chain's secret per root, as the enclave's keyring makes one (any keyed function of the root will do here). */
const chainSecret = (key: Uint8Array, root: string) => hmac(sha256, key, utf8ToBytes(root));
const secretOf = (root: string) => chainSecret(DELEGATION_ROOT, root);
const secret = secretOf(ROOT);
const W1 = `0x${"11".repeat(20)}`;
const W2 = `0x${"22".repeat(20)}`;
const T = 2_000_000_000;

const parent = () =>
  mint(secret, ROOT, {
    expires_at: T,
    max_uses: 10,
    groups: ["1", "2"],
    actions: ["QmA", "QmB"],
    wallets: [W1, W2],
    budget: { window_seconds: 86_400, max_value_wei: "1000", max_signatures: 5 },
  });

const refused = (work: () => unknown): DelegationError => {
  try {
    work();
  } catch (err) {
    if (err instanceof DelegationError) return err;
    throw err;
  }
  throw new Error("not refused");
};

describe("delegated keys", () => {
  it("a chain checks under its own secret only, through any number of narrower blocks", () => {
    const p = parent();
    expect(verify(secret, p)).toBe(true);
    const c = attenuate(p, { groups: ["1"], max_uses: 1, expires_at: T - 60 });
    const g = attenuate(c, { wallets: [W1] });
    expect(verify(secret, c)).toBe(true);
    expect(verify(secret, g)).toBe(true);
    expect(verify(chainSecret(DELEGATION_ROOT, OTHER_ROOT), g)).toBe(false);
    expect(verify(chainSecret(randomBytes(32), ROOT), g)).toBe(false);
    expect(effective(g.blocks)).toMatchObject({
      expires_at: T - 60,
      groups: ["1"],
      actions: ["QmA", "QmB"],
      wallets: [W1],
      uses: [
        { id: p.blocks[0]?.id, max_uses: 10 },
        { id: c.blocks[1]?.id, max_uses: 1 },
      ],
      delegable: true,
    });
  });

  it("any change, a block taken out, reordered or swapped in from another chain fails the check", () => {
    const c = attenuate(attenuate(parent(), { groups: ["1"] }), { wallets: [W1] });
    const tampered: DelegationToken[] = [
      { ...c, root: OTHER_ROOT },
      { ...c, blocks: c.blocks.slice(0, 2) },
      { ...c, blocks: [c.blocks[0]!, c.blocks[2]!, c.blocks[1]!] },
      { ...c, blocks: [{ ...c.blocks[0]!, groups: ["1", "2", "3"] }, ...c.blocks.slice(1)] },
      { ...c, blocks: [...c.blocks.slice(0, 2), { ...c.blocks[2]!, wallets: [W2] }] },
      { ...c, blocks: [...c.blocks.slice(0, 2), attenuate(parent(), { wallets: [W1] }).blocks[1]!] },
      { ...c, tag: c.tag.replace(/^./, (x) => (x === "0" ? "1" : "0")) },
    ];
    expect(check(secretOf, c)).toBe(true);
    for (const t of tampered) expect(check(secretOf, t)).toBe(false);
  });

  it("a child wider than its chain is refused, in every dimension", () => {
    const p = parent();
    expect(refused(() => attenuate(p, { expires_at: T + 1 })).dimension).toBe("expires_at");
    expect(refused(() => attenuate(p, { groups: ["1", "3"] })).dimension).toBe("groups");
    expect(refused(() => attenuate(p, { actions: ["QmC"] })).dimension).toBe("actions");
    expect(refused(() => attenuate(p, { wallets: [`0x${"33".repeat(20)}`] })).dimension).toBe("wallets");
    expect(refused(() => attenuate(p, { max_uses: 11 })).dimension).toBe("max_uses");
    expect(refused(() => attenuate(p, { budget: { window_seconds: 3_600, max_signatures: 6 } })).dimension).toBe(
      "budget",
    );
    expect(refused(() => attenuate(p, { budget: { window_seconds: 3_600, max_value_wei: "1001" } })).dimension).toBe(
      "budget",
    );
    // A child that leaves a field out keeps the chain's: no wider.
    expect(effective(attenuate(p, {}).blocks)).toMatchObject({ expires_at: T, groups: ["1", "2"], wallets: [W1, W2] });
  });

  it("what a chain allows is every block's caveats at once, whatever a later block says", () => {
    // A chain put together by hand (its tag is not checked here): a later, wider block changes nothing.
    const p = parent();
    const wide = {
      ...p.blocks[0]!,
      id: "f".repeat(32),
      groups: ["1", "2", "3"],
      wallets: [W1, W2],
      expires_at: T + 100,
    };
    expect(effective([p.blocks[0]!, wide])).toMatchObject({ groups: ["1", "2"], expires_at: T });
    expect(
      effective([
        { id: "0".repeat(32), groups: [] },
        { id: "1".repeat(32), groups: ["1"] },
      ]).groups,
    ).toEqual([]);
  });

  it("a key that forbids delegating cannot be extended; a chain stops at its depth", () => {
    const sealed = attenuate(parent(), { expires_at: T, delegate: false });
    expect(refused(() => attenuate(sealed, { expires_at: T })).dimension).toBe("delegate");
    // A block a holder tagged offline after the seal: its tag is right, the chain is refused.
    const extra = { id: "e".repeat(32) };
    const forced = {
      ...sealed,
      blocks: [...sealed.blocks, extra],
      tag: bytesToHex(hmac(sha256, hexToBytes(sealed.tag), utf8ToBytes(canonicalJson(extra)))),
    };
    expect(verify(secret, forced)).toBe(true);
    expect(check(secretOf, sealed)).toBe(true);
    expect(check(secretOf, forced)).toBe(false);
    // A block that repeats an earlier block's id (to stand in for its counters) is refused the same way.
    const p = parent();
    const twin = { id: p.blocks[0]!.id, max_uses: 1000 };
    const doubled = {
      ...p,
      blocks: [...p.blocks, twin],
      tag: bytesToHex(hmac(sha256, hexToBytes(p.tag), utf8ToBytes(canonicalJson(twin)))),
    };
    expect(verify(secret, doubled)).toBe(true);
    expect(check(secretOf, doubled)).toBe(false);
    let t = mint(secret, ROOT, {});
    for (let i = 1; i < MAX_DEPTH; i++) t = attenuate(t, {});
    expect(t.blocks).toHaveLength(MAX_DEPTH);
    expect(verify(secret, t)).toBe(true);
    expect(refused(() => attenuate(t, {})).dimension).toBe("depth");
  });

  it("bad caveats are refused naming the field; the key's text round-trips and nothing else decodes", () => {
    expect(refused(() => mint(secret, ROOT, { wallets: ["0xABC"] })).dimension).toBe("wallets");
    expect(refused(() => mint(secret, ROOT, { budget: { window_seconds: 60 } })).dimension).toBe("budget");
    const key = encodeDelegatedKey(attenuate(parent(), { expires_at: T, groups: ["2"] }));
    expect(key).toMatch(/^sgd_[A-Za-z0-9_-]+$/);
    const back = decodeDelegatedKey(key);
    expect(verify(secret, back)).toBe(true);
    for (const bad of ["sgd_", "sgd_!!!", `sgd_${btoa("{}")}`, key.slice(4), `${key.slice(0, -2)}A`])
      expect(() => decodeDelegatedKey(bad)).toThrow(DelegationError);
  });
});

describe("mintKeys", () => {
  it("makes the keys mint and encodeDelegatedKey make, each with its own id, all checking", () => {
    const caveats = {
      expires_at: T,
      max_uses: 2,
      wallets: [W1],
      actions: ["QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"],
    };
    const { keys, ids } = mintKeys(secret, ROOT, caveats, 200);
    expect(new Set(ids).size).toBe(200);
    for (const [i, key] of keys.entries()) {
      const token = decodeDelegatedKey(key);
      expect(token.blocks).toEqual([{ ...caveats, id: ids[i] }]);
      expect(encodeDelegatedKey(token)).toBe(key);
      expect(check(secretOf, token)).toBe(true);
    }
    expect(check((r) => chainSecret(DELEGATION_ROOT, `${r}0`), decodeDelegatedKey(keys[0] as string))).toBe(false);
  });

  it("refuses caveats that do not hold together, as mint does", () => {
    expect(() => mintKeys(secret, ROOT, { max_uses: 0 }, 3)).toThrow(DelegationError);
  });
});

describe("the token module's own check of a block", () => {
  const id = "0".repeat(32);
  const good: unknown[] = [
    { id },
    { id, expires_at: 1, max_uses: 1_000_000_000, delegate: false },
    { id, groups: ["0", "12"], actions: ["Qm…"], wallets: [W1] },
    { id, budget: { window_seconds: 1, max_signatures: 1 } },
    { id, budget: { window_seconds: 2_592_000, max_value_wei: "0" } },
    { id, groups: ["18446744073709551615"] },
    { id, groups: Array.from({ length: 64 }, (_, i) => String(i)) },
  ];
  const bad: unknown[] = [
    null,
    [],
    "block",
    {},
    { id: "A".repeat(32) },
    { id, extra: 1 },
    { id, expires_at: 0 },
    { id, expires_at: 1.5 },
    { id, max_uses: 0 },
    { id, max_uses: 1_000_000_001 },
    { id, groups: ["01"] },
    { id, groups: [1] },
    { id, groups: Array.from({ length: 65 }, (_, i) => String(i)) },
    { id, actions: [""] },
    { id, actions: ["x".repeat(129)] },
    { id, wallets: [`0x${"aB".repeat(20)}`] },
    { id, wallets: "0x" },
    { id, budget: { window_seconds: 60 } },
    { id, budget: { window_seconds: 0, max_signatures: 1 } },
    { id, budget: { window_seconds: 2_592_001, max_signatures: 1 } },
    { id, groups: ["18446744073709551616"] },
    { id, groups: ["1".repeat(21)] },
    { id, budget: { window_seconds: 60, max_signatures: 1, per: "wallet" } },
    { id, budget: { window_seconds: 60, max_value_wei: "1e18" } },
    { id, budget: { window_seconds: 60, max_signatures: 0 } },
    { id, delegate: true },
  ];

  it("accepts and refuses what the API's schema does, case by case", () => {
    for (const block of [...good, ...bad])
      expect(blockProblem(block) === undefined, JSON.stringify(block)).toBe(
        delegationBlockSchema.safeParse(block).success,
      );
    for (const block of good) expect(blockProblem(block), JSON.stringify(block)).toBeUndefined();
    for (const block of bad) expect(blockProblem(block), JSON.stringify(block)).toBeDefined();
  });

  it("has the schemas' types", () => {
    expectTypeOf<z.infer<typeof delegationBlockSchema>>().toEqualTypeOf<DelegationBlock>();
    expectTypeOf<z.infer<typeof delegationTokenSchema>>().toEqualTypeOf<DelegationToken>();
  });
});
