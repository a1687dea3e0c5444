// authorizeExecution: one call decides whether a key may run an action and which wallets the run
// may touch. The truth table below is built on one set of accounts, groups, keys and wallets:
//
//   account A (managed, master mA): wallets w1, w2, w3
//     g1: actions [C1]       wallets [w1]
//     g2: actions [C2]       wallets [any wallet of A]
//     g3: actions [any]      wallets [w2]
//   account B (managed, master mB): wallet wb;  gB: actions [C1] wallets [any wallet of B]
//   account D (managed, converted to ChainSecured): wallet wd; gD: actions [any] wallets [any]
//   account S (ChainSecured from the start): wallet ws; gS: actions [C1] wallets [ws]
//
// w1, w3, wb and ws have guardrails (setWalletGuardrail); w2 and wd have none. A wallet's fourth
// output, its guardrail hash, comes back only where the wallet is allowed, as its derivation does.
import { encodeFunctionData, keccak256, stringToHex, type Address, type Hex } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";
import { abi, deployFixture, guardrailDocument, randomAddress, ZERO, type Fixture } from "./fixture.ts";

const CIDS = [
  "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o",
  "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD",
  "QmXoMqm4sckyYxbqarxfyfY36qj9bvmVFihXEYNqK4Uri6",
];
const [C1, C2, C3] = CIDS.map(cidHash) as [bigint, bigint, bigint]; // C3 is listed by no group by name

let f: Fixture;
const keys: Record<string, bigint> = {};
const wallets: Record<string, Address> = {};
const derivations = new Map<Address, bigint>();
const guardrails = new Map<Address, Hex>();
const NO_GUARDRAIL = `0x${"0".repeat(64)}` as Hex;

/** Gives the wallet a guardrail of its own (by the account's owner) and remembers its hash. */
async function guard(wallet: Address, ownerHash: bigint, sender: Address = f.payer): Promise<void> {
  const document = guardrailDocument(wallet);
  await f.write(sender, "setWalletGuardrail", [ownerHash, wallet, document]);
  guardrails.set(wallet, keccak256(stringToHex(document)));
}

/** Registers the three actions with the account, which groups may then list. */
async function registerActions(keyHash: bigint, sender: Address = f.payer): Promise<void> {
  await f.write(sender, "registerActions", [keyHash, 0n, CIDS]);
}

async function registerWallet(name: string, keyHash: bigint, sender: Address): Promise<Address> {
  const address = randomAddress();
  const derivation = BigInt(Object.keys(wallets).length + 1) * 1_000_003n;
  await f.write(sender, "registerWalletDerivation", [keyHash, address, derivation, name, ""]);
  wallets[name] = address;
  derivations.set(address, derivation);
  return address;
}

beforeAll(async () => {
  f = await deployFixture();

  const a = await f.managedAccount("A");
  keys.mA = a.master;
  keys.amwAliasA = walletLookupHash(a.amw);
  const w1 = await registerWallet("w1", a.master, f.payer);
  const w2 = await registerWallet("w2", a.master, f.payer);
  const w3 = await registerWallet("w3", a.master, f.payer);
  await guard(w1, a.master);
  await guard(w3, a.master);
  await registerActions(a.master);
  const g1 = await f.group(a.master, [C1], [w1]);
  const g2 = await f.group(a.master, [C2], [ZERO]);
  const g3 = await f.group(a.master, [0n], [w2]);
  keys.k1 = (await f.usageKey(a.master, { executeInGroups: [g1] })).hash;
  keys.k2 = (await f.usageKey(a.master, { executeInGroups: [0n] })).hash;
  keys.k3 = (await f.usageKey(a.master, { executeInGroups: [g2] })).hash;
  keys.k13 = (await f.usageKey(a.master, { executeInGroups: [g1, g3] })).hash;
  keys.kNone = (await f.usageKey(a.master, {})).hash;
  // Every scope except execute: holding them grants no execution.
  keys.kAdminOnly = (
    await f.usageKey(a.master, {
      canCreateGroups: true,
      canDeleteGroups: true,
      canCreatePkps: true,
      manageIpfsIdsInGroups: [0n],
      addPkpToGroups: [0n],
      removePkpFromGroups: [0n],
    })
  ).hash;
  keys.kExpired = (await f.usageKey(a.master, { executeInGroups: [0n], expiration: (await f.now()) + 100n })).hash;
  keys.kRemoved = (await f.usageKey(a.master, { executeInGroups: [0n] })).hash;
  await f.write(f.payer, "removeUsageApiKey", [a.master, keys.kRemoved]);

  const b = await f.managedAccount("B");
  keys.mB = b.master;
  const wb = await registerWallet("wb", b.master, f.payer);
  await guard(wb, b.master);
  await registerActions(b.master);
  await f.group(b.master, [C1], [ZERO, wb]);
  keys.kB = (await f.usageKey(b.master, { executeInGroups: [0n] })).hash;

  const d = await f.managedAccount("D");
  keys.mD = d.master;
  await registerWallet("wd", d.master, f.payer);
  await f.group(d.master, [0n], [ZERO]);
  keys.kD = (await f.usageKey(d.master, { executeInGroups: [0n] })).hash;
  await f.write(f.payer, "convertToChainSecuredAccount", [d.master, await f.impersonate()]);

  const sAdmin = await f.impersonate();
  const s = await f.chainSecuredAccount(sAdmin);
  keys.mS = s.master;
  const ws = await registerWallet("ws", s.master, sAdmin);
  await guard(ws, s.master, sAdmin);
  await registerActions(s.master, sAdmin);
  await f.group(s.master, [C1], [ws], sAdmin);
  keys.kS = (await f.usageKey(s.master, { executeInGroups: [0n] }, sAdmin)).hash;

  keys.unknown = apiKeyHash(generateApiKey());
  await f.advance(200); // kExpired is now past its expiration
});

type Row = { name: string; key: string; cid: bigint; ask: string[]; can: boolean; allowed: string[] };

// `ask` names wallets (ZERO = address(0), stranger = an address registered nowhere); `allowed`
// lists those that must come back allowed, every other one must come back refused with derivation 0
// and guardrail 0.
const rows: Row[] = [
  // master key of a managed account: every group of the account
  {
    name: "master, action in g1 and (by wildcard) g3: the wallets those groups list",
    key: "mA",
    cid: C1,
    ask: ["w1", "w2", "w3"],
    can: true,
    allowed: ["w1", "w2"],
  },
  {
    name: "master, action of g2 (any wallet of A) and g3: every wallet of A",
    key: "mA",
    cid: C2,
    ask: ["w1", "w2", "w3"],
    can: true,
    allowed: ["w1", "w2", "w3"],
  },
  {
    name: "master, an action only g3's wildcard covers: only g3's wallet",
    key: "mA",
    cid: C3,
    ask: ["w1", "w2", "w3"],
    can: true,
    allowed: ["w2"],
  },
  {
    name: "master, wallets of other accounts are refused even where the group allows any wallet",
    key: "mA",
    cid: C2,
    ask: ["wb", "wd", "ws"],
    can: true,
    allowed: [],
  },
  {
    name: "master, address(0) and an unregistered address are never wallets",
    key: "mA",
    cid: C2,
    ask: ["ZERO", "stranger"],
    can: true,
    allowed: [],
  },
  {
    name: "master, asking for the same wallet twice answers both",
    key: "mA",
    cid: C1,
    ask: ["w1", "w1"],
    can: true,
    allowed: ["w1"],
  },
  { name: "master, the run may execute with no wallets asked", key: "mA", cid: C1, ask: [], can: true, allowed: [] },
  {
    name: "cid hash 0 is never an action, even where a group allows any action",
    key: "mA",
    cid: 0n,
    ask: ["w1", "w2"],
    can: false,
    allowed: [],
  },
  // usage keys: only the groups in executeInGroups
  {
    name: "usage key for g1: g1's action and wallet, not g3's",
    key: "k1",
    cid: C1,
    ask: ["w1", "w2"],
    can: true,
    allowed: ["w1"],
  },
  { name: "usage key for g1: an action g1 does not list", key: "k1", cid: C2, ask: ["w1"], can: false, allowed: [] },
  {
    name: "usage key for g2 (any wallet of A): every wallet of A, none of B",
    key: "k3",
    cid: C2,
    ask: ["w1", "w3", "wb"],
    can: true,
    allowed: ["w1", "w3"],
  },
  {
    name: "usage key for g1 and g3: the union of what both groups allow",
    key: "k13",
    cid: C1,
    ask: ["w1", "w2", "w3"],
    can: true,
    allowed: ["w1", "w2"],
  },
  {
    name: "usage key with wildcard 0: every group of its account",
    key: "k2",
    cid: C3,
    ask: ["w1", "w2"],
    can: true,
    allowed: ["w2"],
  },
  { name: "usage key with no execute groups", key: "kNone", cid: C1, ask: ["w1"], can: false, allowed: [] },
  {
    name: "usage key holding every other scope but not execute",
    key: "kAdminOnly",
    cid: C1,
    ask: ["w1"],
    can: false,
    allowed: [],
  },
  {
    name: "expired usage key authorizes nothing",
    key: "kExpired",
    cid: C1,
    ask: ["w1", "w2"],
    can: false,
    allowed: [],
  },
  { name: "removed usage key authorizes nothing", key: "kRemoved", cid: C1, ask: ["w1"], can: false, allowed: [] },
  // keys of other accounts
  {
    name: "another account's key may run its own groups' action but never A's wallets",
    key: "kB",
    cid: C1,
    ask: ["w1", "wb"],
    can: true,
    allowed: ["wb"],
  },
  {
    name: "another account's master key never touches A's wallets",
    key: "mB",
    cid: C1,
    ask: ["w1", "w2", "w3", "wb"],
    can: true,
    allowed: ["wb"],
  },
  // converted and ChainSecured accounts
  { name: "master key after conversion authorizes nothing", key: "mD", cid: C1, ask: ["wd"], can: false, allowed: [] },
  {
    name: "a usage key of a converted account still executes",
    key: "kD",
    cid: C3,
    ask: ["wd"],
    can: true,
    allowed: ["wd"],
  },
  {
    name: "master hash of a ChainSecured account is not a key",
    key: "mS",
    cid: C1,
    ask: ["ws"],
    can: false,
    allowed: [],
  },
  {
    name: "a usage key of a ChainSecured account executes in its groups",
    key: "kS",
    cid: C1,
    ask: ["ws", "w1"],
    can: true,
    allowed: ["ws"],
  },
  // hashes that are not keys
  {
    name: "an admin wallet's alias hash is not a key",
    key: "amwAliasA",
    cid: C1,
    ask: ["w1"],
    can: false,
    allowed: [],
  },
  { name: "an unknown hash authorizes nothing", key: "unknown", cid: C1, ask: ["w1"], can: false, allowed: [] },
];

describe("authorizeExecution truth table", () => {
  it.each(rows)("$name", async (row) => {
    const ask = row.ask.map((n) => (n === "ZERO" ? ZERO : n === "stranger" ? f.stranger : wallets[n]!));
    const [canExecute, allowed, derived, guarded] = await f.read("authorizeExecution", [keys[row.key]!, row.cid, ask]);
    expect(canExecute).toBe(row.can);
    const expectedAllowed = row.ask.map((n) => row.allowed.includes(n));
    expect(allowed).toEqual(expectedAllowed);
    expect(derived).toEqual(ask.map((w, i) => (expectedAllowed[i] ? derivations.get(w)! : 0n)));
    expect(guarded).toEqual(
      ask.map((w, i) => (expectedAllowed[i] ? (guardrails.get(w) ?? NO_GUARDRAIL) : NO_GUARDRAIL)),
    );
  });
});

describe("authorizeExecution follows changes", () => {
  it("stops allowing a wallet once it leaves the group, and the action once the group is removed", async () => {
    const a = await f.managedAccount();
    const w = randomAddress();
    await f.write(f.payer, "registerWalletDerivation", [a.master, w, 7n, "", ""]);
    await registerActions(a.master);
    const g = await f.group(a.master, [C1], [w]);
    const key = (await f.usageKey(a.master, { executeInGroups: [g] })).hash;
    expect(await f.read("authorizeExecution", [key, C1, [w]])).toEqual([true, [true], [7n], [NO_GUARDRAIL]]);

    await f.write(f.payer, "removePkpFromGroup", [a.master, g, w]);
    expect(await f.read("authorizeExecution", [key, C1, [w]])).toEqual([true, [false], [0n], [NO_GUARDRAIL]]);

    await f.write(f.payer, "removeGroup", [a.master, g]);
    expect(await f.read("authorizeExecution", [key, C1, [w]])).toEqual([false, [false], [0n], [NO_GUARDRAIL]]);
    // A new group gets a new id, so the key's stale group id grants nothing there.
    await f.group(a.master, [C1], [w]);
    expect((await f.read("authorizeExecution", [key, C1, [w]]))[0]).toBe(false);
  });
});

describe("authorizeExecution follows a wallet's guardrail", () => {
  it("answers the hash set last, 0 once removed, and nothing for a wallet not allowed however guarded", async () => {
    const a = await f.managedAccount();
    const w = randomAddress();
    const outside = randomAddress();
    await f.write(f.payer, "registerWalletDerivation", [a.master, w, 9n, "", ""]);
    await f.write(f.payer, "registerWalletDerivation", [a.master, outside, 10n, "", ""]);
    await registerActions(a.master);
    const g = await f.group(a.master, [C1], [w]);
    const key = (await f.usageKey(a.master, { executeInGroups: [g] })).hash;
    const hashOf = (label: string) => keccak256(stringToHex(guardrailDocument(label)));

    await f.write(f.payer, "setWalletGuardrail", [a.master, w, guardrailDocument("one")]);
    await f.write(f.payer, "setWalletGuardrail", [a.master, outside, guardrailDocument("outside")]);
    expect(await f.read("authorizeExecution", [key, C1, [w, outside]])).toEqual([
      true,
      [true, false],
      [9n, 0n],
      [hashOf("one"), NO_GUARDRAIL],
    ]);
    await f.write(f.payer, "setWalletGuardrail", [a.master, w, guardrailDocument("two")]);
    expect((await f.read("authorizeExecution", [key, C1, [w]]))[3]).toEqual([hashOf("two")]);
    // A run that may not execute answers no guardrail either.
    expect((await f.read("authorizeExecution", [key, C2, [w]]))[3]).toEqual([NO_GUARDRAIL]);
    await f.write(f.payer, "setWalletGuardrail", [a.master, w, ""]);
    expect(await f.read("authorizeExecution", [key, C1, [w]])).toEqual([true, [true], [9n], [NO_GUARDRAIL]]);
  });
});

describe("authorizeExecution reads groups only until its answer is whole", () => {
  it("costs the same whether 0 or 60 groups follow the one that grants everything, and still finds a wallet only a later group allows", async () => {
    const a = await f.managedAccount();
    const w = randomAddress();
    const late = randomAddress();
    await f.write(f.payer, "registerWalletDerivation", [a.master, w, 11n, "", ""]);
    await f.write(f.payer, "registerWalletDerivation", [a.master, late, 12n, "", ""]);
    await registerActions(a.master);
    await f.group(a.master, [C1], [w]);
    const gas = async (ask: Address[]) =>
      f.publicClient.estimateGas({
        to: f.address,
        data: encodeFunctionData({ abi, functionName: "authorizeExecution", args: [a.master, C1, ask] }),
        account: f.payer,
      });
    const alone = { run: await gas([]), wallet: await gas([w]) };
    for (let i = 0; i < 59; i++) await f.group(a.master, [C2], []);
    await f.group(a.master, [C1], [late]);
    // The master key reads every group of the account; the first gives the whole answer.
    expect(await gas([])).toBeLessThan(alone.run + 5_000n);
    expect(await gas([w])).toBeLessThan(alone.wallet + 5_000n);
    // A wallet only the last group allows: every group is read, and the answer is the whole one.
    expect(await f.read("authorizeExecution", [a.master, C1, [w, late]])).toEqual([
      true,
      [true, true],
      [11n, 12n],
      [NO_GUARDRAIL, NO_GUARDRAIL],
    ]);
    expect(await gas([w, late])).toBeGreaterThan(alone.wallet + 60_000n);
  });
});
