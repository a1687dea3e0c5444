// The one access rule (docs/design/contract.md, "Who may write"), checked against every write function that
// takes a key or account hash. A table describes each function: how to prepare an account so the
// call would succeed, the call itself (parameterised by the hash it is sent with), how to see that
// it took effect, and which usage-key permissions grant or lack the scope it needs. The matrix
// below turns every row into separately named tests; the payer and stale-group-id cases follow.
import {
  encodeFunctionData,
  keccak256,
  parseEventLogs,
  stringToHex,
  type Address,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey } from "viem/accounts";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, cidHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import {
  abi,
  deployFixture,
  guardrailDocument,
  randomAddress,
  randomCid,
  usageKeyArgs,
  ZERO,
  type Fixture,
  type Perms,
  type Revert,
  type WriteArgs,
  type WriteName,
} from "./fixture.ts";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

// ─── helpers ─────────────────────────────────────────────────────────────────────────────

/** One prepared write, ready to be sent (or simulated) from any sender. */
type Call = {
  fn: WriteName;
  write(from: Address): Promise<TransactionReceipt>;
  revert(from: Address): Promise<Revert>;
  /** Simulates the call; rejects if it would revert. */
  simulate(from: Address): Promise<void>;
};

function call<N extends WriteName>(fn: N, args: WriteArgs<N>): Call {
  return {
    fn,
    write: (from) => f.write(from, fn, args),
    revert: (from) => f.revert(from, fn, args),
    async simulate(from) {
      await f.publicClient.simulateContract({
        address: f.address,
        abi,
        functionName: fn,
        args,
        account: from,
      } as never);
    },
  };
}

const noAccess = (hash: bigint, sender: Address): Revert => ({ errorName: "NoAccountAccess", args: [hash, sender] });
const notAllowed = (scope: string, groupId: bigint): Revert => ({ errorName: "NotAllowed", args: [scope, groupId] });
const noAccount = (hash: bigint): Revert => ({ errorName: "AccountDoesNotExist", args: [hash] });
const keyExpired = (hash: bigint): Revert => ({ errorName: "KeyExpired", args: [hash] });
const NOT_OWNER: Revert = { errorName: "NotOwner", args: [] };
const ownableUnauthorized = (sender: Address): Revert => ({ errorName: "OwnableUnauthorizedAccount", args: [sender] });

/** Every scope a usage key can hold, group lists as the wildcard 0. */
const ALL: Perms = {
  canCreateGroups: true,
  canDeleteGroups: true,
  canCreatePkps: true,
  manageIpfsIdsInGroups: [0n],
  addPkpToGroups: [0n],
  removePkpFromGroups: [0n],
  executeInGroups: [0n],
};
const allBut = (p: Perms): Perms => ({ ...ALL, ...p });

const randomHash = () => apiKeyHash(generateApiKey());

/** The account a test writes for, and the sender + hash that may set it up. */
type Acct = { master: bigint; by: Address };

/** A prepared write: its target group `g` (0 when the function has none) and another group `h`. */
type Prepared = {
  g: bigint;
  h: bigint;
  call(keyHash: bigint): Call;
  /** Asserts the write took effect (read back through views). */
  verify(receipt: TransactionReceipt): Promise<void>;
};

/** A usage key that must be refused: a label for the test name, its permissions, the revert. */
type Denial = { label: string; perms: Perms; error: Revert };

type Case = {
  fn: WriteName;
  /** The event every successful call emits, its first topic the master hash. */
  event: string;
  /** Owner-only (usage-key management, wallet guardrails): a usage key never suffices. */
  ownerOnly?: boolean;
  prepare(a: Acct): Promise<Prepared>;
  /** b: a usage key with exactly the needed scope (for the specific group where it is per group). */
  exact?: { label: string; perms(p: Prepared): Perms };
  /** c: the scope through the wildcard 0. */
  wildcard?: Perms;
  /** d: holding every other scope but not the needed one. */
  missing?(p: Prepared): Denial[];
  /** e: the per-group scope for a different group only. */
  otherGroup?(p: Prepared): Denial[];
};

async function twoGroups({ master, by }: Acct, cids: bigint[] = [], wallets: Address[] = []) {
  const g = await f.group(master, cids, wallets, by);
  const h = await f.group(master, [], [], by);
  return { g, h };
}

async function groupOf(master: bigint, groupId: bigint) {
  return f.read("getGroup", [master, groupId]);
}

async function actionsOf(master: bigint) {
  const [items] = await f.read("listActions", [master, 0n, 100n]);
  return items;
}

async function usageKeysOf(master: bigint) {
  const [items] = await f.read("listUsageApiKeys", [master, 0n, 100n]);
  return items;
}

/** Sends the call, checks its event names the master hash as the first topic, and verifies it. */
async function succeeds(c: Case, p: Prepared, from: Address, keyHash: bigint, master: bigint) {
  const receipt = await p.call(keyHash).write(from);
  const events = parseEventLogs({ abi, logs: receipt.logs }).filter((e) => e.eventName === c.event);
  expect(events.length, `${c.fn} emits ${c.event}`).toBeGreaterThan(0);
  expect(events[0]!.topics[1]).toBe(toHash32(master));
  await p.verify(receipt);
}

// Per-group denials of updateGroup, which needs all three group scopes.
const GROUP_SCOPES = [
  ["group:manageActions", "manageIpfsIdsInGroups"],
  ["group:addPkp", "addPkpToGroups"],
  ["group:removePkp", "removePkpFromGroups"],
] as const;

// ─── the table ───────────────────────────────────────────────────────────────────────────

const CASES: Case[] = [
  {
    fn: "registerWalletDerivation",
    event: "WalletRegistered",
    async prepare({ master }) {
      const wallet = randomAddress();
      const derivation = BigInt(generatePrivateKey());
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("registerWalletDerivation", [k, wallet, derivation, "pkp", ""]),
        async verify() {
          expect(await f.read("getWalletDerivation", [master, wallet])).toBe(derivation);
          const [wallets] = await f.read("listWallets", [master, 0n, 100n]);
          expect(wallets.map((w) => w.wallet)).toContain(wallet);
        },
      };
    },
    exact: { label: "pkp:create", perms: () => ({ canCreatePkps: true }) },
    missing: () => [
      { label: "without pkp:create", perms: allBut({ canCreatePkps: false }), error: notAllowed("pkp:create", 0n) },
    ],
  },
  {
    fn: "addGroup",
    event: "GroupAdded",
    async prepare({ master }) {
      const name = `added ${randomCid().slice(-8)}`;
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("addGroup", [k, name, "", [], []]),
        async verify(receipt) {
          const [added] = parseEventLogs({ abi, logs: receipt.logs, eventName: "GroupAdded" });
          expect((await groupOf(master, added!.args.groupId)).name).toBe(name);
        },
      };
    },
    exact: { label: "group:create", perms: () => ({ canCreateGroups: true }) },
    missing: () => [
      {
        label: "without group:create",
        perms: allBut({ canCreateGroups: false }),
        error: notAllowed("group:create", 0n),
      },
    ],
  },
  {
    fn: "updateGroup",
    event: "GroupUpdated",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      const [x] = (await f.actions(a.master, 1, a.by)) as [bigint];
      return {
        g,
        h,
        call: (k) => call("updateGroup", [k, g, "updated", "replaced", [x], [ZERO]]),
        async verify() {
          expect(await groupOf(a.master, g)).toMatchObject({
            name: "updated",
            description: "replaced",
            cidHashes: [x],
            wallets: [ZERO],
          });
        },
      };
    },
    exact: {
      label: "group:manageActions + group:addPkp + group:removePkp of that group",
      perms: ({ g }) => ({ manageIpfsIdsInGroups: [g], addPkpToGroups: [g], removePkpFromGroups: [g] }),
    },
    wildcard: { manageIpfsIdsInGroups: [0n], addPkpToGroups: [0n], removePkpFromGroups: [0n] },
    missing: ({ g }) =>
      GROUP_SCOPES.map(([scope, list]) => ({
        label: `without ${scope}`,
        perms: allBut({ [list]: [] }),
        error: notAllowed(scope, g),
      })),
    otherGroup: ({ g, h }) => [
      ...GROUP_SCOPES.map(([scope, list]) => ({
        label: `with ${scope} for another group only (the other two for the group)`,
        perms: { manageIpfsIdsInGroups: [g], addPkpToGroups: [g], removePkpFromGroups: [g], [list]: [h] },
        error: notAllowed(scope, g),
      })),
      {
        label: "with all three group scopes for another group only",
        perms: allBut({ manageIpfsIdsInGroups: [h], addPkpToGroups: [h], removePkpFromGroups: [h] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
  },
  {
    fn: "removeGroup",
    event: "GroupRemoved",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      return {
        g,
        h,
        call: (k) => call("removeGroup", [k, g]),
        async verify() {
          expect(await f.readRevert("getGroup", [a.master, g])).toEqual({ errorName: "GroupDoesNotExist", args: [g] });
          const [groups] = await f.read("listGroups", [a.master, 0n, 100n]);
          expect(groups.map((x) => x.id)).toEqual([h]);
        },
      };
    },
    exact: { label: "group:delete", perms: () => ({ canDeleteGroups: true }) },
    missing: () => [
      {
        label: "without group:delete",
        perms: allBut({ canDeleteGroups: false }),
        error: notAllowed("group:delete", 0n),
      },
    ],
  },
  {
    fn: "addActionToGroup",
    event: "ActionAddedToGroup",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      const [x] = (await f.actions(a.master, 1, a.by)) as [bigint];
      return {
        g,
        h,
        call: (k) => call("addActionToGroup", [k, g, x]),
        async verify() {
          expect((await groupOf(a.master, g)).cidHashes).toEqual([x]);
        },
      };
    },
    exact: { label: "group:manageActions for that group", perms: ({ g }) => ({ manageIpfsIdsInGroups: [g] }) },
    wildcard: { manageIpfsIdsInGroups: [0n] },
    missing: ({ g }) => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
    otherGroup: ({ g, h }) => [
      {
        label: "with group:manageActions for another group only",
        perms: allBut({ manageIpfsIdsInGroups: [h] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
  },
  {
    fn: "removeActionFromGroup",
    event: "ActionRemovedFromGroup",
    async prepare(a) {
      const [x] = (await f.actions(a.master, 1, a.by)) as [bigint];
      const { g, h } = await twoGroups(a, [x]);
      return {
        g,
        h,
        call: (k) => call("removeActionFromGroup", [k, g, x]),
        async verify() {
          expect((await groupOf(a.master, g)).cidHashes).toEqual([]);
        },
      };
    },
    exact: { label: "group:manageActions for that group", perms: ({ g }) => ({ manageIpfsIdsInGroups: [g] }) },
    wildcard: { manageIpfsIdsInGroups: [0n] },
    missing: ({ g }) => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
    otherGroup: ({ g, h }) => [
      {
        label: "with group:manageActions for another group only",
        perms: allBut({ manageIpfsIdsInGroups: [h] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
  },
  {
    fn: "addPkpToGroup",
    event: "PkpAddedToGroup",
    async prepare(a) {
      const { address: w } = await f.wallet(a.master, a.by);
      const { g, h } = await twoGroups(a);
      return {
        g,
        h,
        call: (k) => call("addPkpToGroup", [k, g, w]),
        async verify() {
          expect((await groupOf(a.master, g)).wallets).toEqual([w]);
        },
      };
    },
    exact: { label: "group:addPkp for that group", perms: ({ g }) => ({ addPkpToGroups: [g] }) },
    wildcard: { addPkpToGroups: [0n] },
    missing: ({ g }) => [
      { label: "without group:addPkp", perms: allBut({ addPkpToGroups: [] }), error: notAllowed("group:addPkp", g) },
    ],
    otherGroup: ({ g, h }) => [
      {
        label: "with group:addPkp for another group only",
        perms: allBut({ addPkpToGroups: [h] }),
        error: notAllowed("group:addPkp", g),
      },
    ],
  },
  {
    fn: "removePkpFromGroup",
    event: "PkpRemovedFromGroup",
    async prepare(a) {
      const { address: w } = await f.wallet(a.master, a.by);
      const { g, h } = await twoGroups(a, [], [w]);
      return {
        g,
        h,
        call: (k) => call("removePkpFromGroup", [k, g, w]),
        async verify() {
          expect((await groupOf(a.master, g)).wallets).toEqual([]);
        },
      };
    },
    exact: { label: "group:removePkp for that group", perms: ({ g }) => ({ removePkpFromGroups: [g] }) },
    wildcard: { removePkpFromGroups: [0n] },
    missing: ({ g }) => [
      {
        label: "without group:removePkp",
        perms: allBut({ removePkpFromGroups: [] }),
        error: notAllowed("group:removePkp", g),
      },
    ],
    otherGroup: ({ g, h }) => [
      {
        label: "with group:removePkp for another group only",
        perms: allBut({ removePkpFromGroups: [h] }),
        error: notAllowed("group:removePkp", g),
      },
    ],
  },
  {
    fn: "addAction",
    event: "ActionAdded",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      const cid = randomCid();
      const x = cidHash(cid);
      return {
        g,
        h,
        call: (k) => call("addAction", [k, x, cid, "action", "what it does"]),
        async verify() {
          expect(await actionsOf(a.master)).toEqual([{ cidHash: x, cid, name: "action", description: "what it does" }]);
        },
      };
    },
    // "group:manageActions in some group": one group's id is enough, whichever group it is.
    exact: { label: "group:manageActions for one group", perms: ({ g }) => ({ manageIpfsIdsInGroups: [g] }) },
    wildcard: { manageIpfsIdsInGroups: [0n] },
    missing: () => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", 0n),
      },
    ],
  },
  {
    fn: "registerActions",
    event: "ActionAdded",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      const cid = randomCid();
      return {
        g,
        h,
        call: (k) => call("registerActions", [k, g, [cid]]),
        async verify() {
          expect(await actionsOf(a.master)).toEqual([{ cidHash: cidHash(cid), cid, name: "", description: "" }]);
        },
      };
    },
    // The CIDs are for group g: it needs what adding them to g needs.
    exact: { label: "group:manageActions for that group", perms: ({ g }) => ({ manageIpfsIdsInGroups: [g] }) },
    wildcard: { manageIpfsIdsInGroups: [0n] },
    missing: ({ g }) => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
    otherGroup: ({ g, h }) => [
      {
        label: "with group:manageActions for another group only",
        perms: allBut({ manageIpfsIdsInGroups: [h] }),
        error: notAllowed("group:manageActions", g),
      },
    ],
  },
  {
    fn: "updateActionMetadata",
    event: "ActionMetadataUpdated",
    async prepare(a) {
      const { g, h } = await twoGroups(a);
      const cid = randomCid();
      const x = cidHash(cid);
      await f.write(a.by, "addAction", [a.master, x, cid, "before", ""]);
      return {
        g,
        h,
        call: (k) => call("updateActionMetadata", [k, x, "after", "renamed"]),
        async verify() {
          expect(await actionsOf(a.master)).toEqual([{ cidHash: x, cid, name: "after", description: "renamed" }]);
        },
      };
    },
    exact: { label: "group:manageActions for one group", perms: ({ g }) => ({ manageIpfsIdsInGroups: [g] }) },
    wildcard: { manageIpfsIdsInGroups: [0n] },
    missing: () => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", 0n),
      },
    ],
  },
  {
    fn: "removeAction",
    event: "ActionRemoved",
    async prepare(a) {
      const cid = randomCid();
      const x = cidHash(cid);
      await f.write(a.by, "addAction", [a.master, x, cid, "doomed", ""]);
      const { g, h } = await twoGroups(a, [x]);
      return {
        g,
        h,
        call: (k) => call("removeAction", [k, x]),
        async verify() {
          expect(await actionsOf(a.master)).toEqual([]);
          expect((await groupOf(a.master, g)).cidHashes).toEqual([]);
        },
      };
    },
    // The scope it needs *is* the wildcard, so (b) and (c) are the same key.
    exact: { label: "group:manageActions via wildcard 0", perms: () => ({ manageIpfsIdsInGroups: [0n] }) },
    missing: ({ g, h }) => [
      {
        label: "without group:manageActions",
        perms: allBut({ manageIpfsIdsInGroups: [] }),
        error: notAllowed("group:manageActions", 0n),
      },
      {
        label: "with group:manageActions for every group by id but not wildcard 0",
        perms: allBut({ manageIpfsIdsInGroups: [g, h] }),
        error: notAllowed("group:manageActions", 0n),
      },
    ],
  },
  {
    fn: "setUsageApiKey",
    event: "UsageApiKeySet",
    ownerOnly: true,
    async prepare({ master }) {
      const u = randomHash();
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("setUsageApiKey", usageKeyArgs(k, u, { executeInGroups: [0n] }, "new key")),
        async verify() {
          expect((await usageKeysOf(master)).find((k) => k.keyHash === u)).toMatchObject({
            name: "new key",
            executeInGroups: [0n],
          });
          expect((await f.read("resolveKey", [u]))[0]).toBe(master);
        },
      };
    },
  },
  {
    fn: "updateUsageApiKeyMetadata",
    event: "UsageApiKeyMetadataUpdated",
    ownerOnly: true,
    async prepare({ master, by }) {
      const { hash: u } = await f.usageKey(master, {}, by);
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("updateUsageApiKeyMetadata", [k, u, "renamed", "new description"]),
        async verify() {
          expect((await usageKeysOf(master)).find((k) => k.keyHash === u)).toMatchObject({
            name: "renamed",
            description: "new description",
          });
        },
      };
    },
  },
  {
    fn: "setWalletGuardrail",
    event: "WalletGuardrailSet",
    ownerOnly: true,
    async prepare({ master, by }) {
      const { address: w } = await f.wallet(master, by);
      const document = guardrailDocument();
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("setWalletGuardrail", [k, w, document]),
        async verify(receipt) {
          expect(await f.read("getWalletGuardrail", [master, w])).toEqual([
            keccak256(stringToHex(document)),
            receipt.blockNumber,
          ]);
        },
      };
    },
  },
  {
    fn: "removeUsageApiKey",
    event: "UsageApiKeyRemoved",
    ownerOnly: true,
    async prepare({ master, by }) {
      const { hash: u } = await f.usageKey(master, {}, by);
      return {
        g: 0n,
        h: 0n,
        call: (k) => call("removeUsageApiKey", [k, u]),
        async verify() {
          expect(await f.read("resolveKey", [u])).toEqual([0n, false, false, false]);
          expect((await usageKeysOf(master)).map((k) => k.keyHash)).not.toContain(u);
        },
      };
    },
  },
];

// ─── the matrix ──────────────────────────────────────────────────────────────────────────

/** A managed account created by the payer, prepared for `c`. */
async function managed(c: Case) {
  const acct = await f.managedAccount();
  const p = await c.prepare({ master: acct.master, by: f.payer });
  return { ...acct, p };
}

/** An unmanaged account created on chain by a fresh wallet, prepared (by its admin) for `c`. */
async function unmanaged(c: Case) {
  const admin = await f.impersonate();
  const { master } = await f.chainSecuredAccount(admin);
  const p = await c.prepare({ master, by: admin });
  return { admin, master, p };
}

/** A managed account prepared for `c` with a usage key holding every scope, then converted. */
async function converted(c: Case) {
  const acct = await managed(c);
  const usage = await f.usageKey(acct.master, ALL);
  const newAdmin = await f.impersonate();
  await f.write(f.payer, "convertToChainSecuredAccount", [acct.master, newAdmin]);
  return { ...acct, usage, newAdmin };
}

for (const c of CASES) {
  describe(c.fn, () => {
    // a.
    it(`${c.fn}: payer + master key → succeeds`, async () => {
      const { master, p } = await managed(c);
      await succeeds(c, p, f.payer, master, master);
    });

    if (c.ownerOnly) {
      // l.
      it(`${c.fn}: payer + usage key holding every scope with wildcard lists → NotOwner`, async () => {
        const { master, p } = await managed(c);
        const usage = await f.usageKey(master, ALL);
        expect(await p.call(usage.hash).revert(f.payer)).toEqual(NOT_OWNER);
      });
    }

    const exact = c.exact;
    if (exact) {
      // b.
      it(`${c.fn}: payer + usage key with exactly ${exact.label} → succeeds`, async () => {
        const { master, p } = await managed(c);
        const usage = await f.usageKey(master, exact.perms(p));
        await succeeds(c, p, f.payer, usage.hash, master);
      });

      // f.
      it(`${c.fn}: payer + expired usage key that had ${exact.label} → KeyExpired`, async () => {
        const { master, p } = await managed(c);
        const usage = await f.usageKey(master, { ...exact.perms(p), expiration: (await f.now()) + 100n });
        await p.call(usage.hash).simulate(f.payer); // live: it would succeed
        await f.advance(200);
        expect(await p.call(usage.hash).revert(f.payer)).toEqual(keyExpired(usage.hash));
      });
    }

    const wildcard = c.wildcard;
    if (wildcard) {
      // c.
      it(`${c.fn}: payer + usage key with the scope via wildcard 0 → succeeds`, async () => {
        const { master, p } = await managed(c);
        const usage = await f.usageKey(master, wildcard);
        await succeeds(c, p, f.payer, usage.hash, master);
      });
    }

    // d. and e. The test names come from the table with placeholder group ids; each test takes
    // the same row again with the ids of the groups it prepared.
    const placeholder: Prepared = {
      g: 1n,
      h: 2n,
      call: () => {
        throw new Error("placeholder");
      },
      verify: async () => {},
    };
    for (const kind of ["missing", "otherGroup"] as const) {
      const make = c[kind];
      if (!make) continue;
      make(placeholder).forEach((d, i) => {
        const [scope, groupId] = d.error.args as [string, bigint];
        const other = kind === "missing" ? " (holding every other scope)" : "";
        it(`${c.fn}: payer + usage key ${d.label}${other} → NotAllowed(${scope}, ${groupId === 0n ? "0" : "that group"})`, async () => {
          const { master, p } = await managed(c);
          const denial = make(p)[i]!;
          const usage = await f.usageKey(master, denial.perms);
          expect(await p.call(usage.hash).revert(f.payer)).toEqual(denial.error);
        });
      });
    }

    // g.
    for (const who of ["stranger", "contract owner", "account's own AMW"] as const) {
      it(`${c.fn}: ${who} sending directly with the master hash → NoAccountAccess`, async () => {
        const { master, amw, p } = await managed(c);
        const sender = who === "stranger" ? f.stranger : who === "contract owner" ? f.owner : await f.impersonate(amw);
        expect(await p.call(master).revert(sender)).toEqual(noAccess(master, sender));
      });
    }

    it(`${c.fn}: stranger + usage key holding every scope → NoAccountAccess`, async () => {
      const { master, p } = await managed(c);
      const usage = await f.usageKey(master, ALL);
      expect(await p.call(usage.hash).revert(f.stranger)).toEqual(noAccess(usage.hash, f.stranger));
    });

    // h.
    it(`${c.fn}: payer + the AMW's alias hash → NoAccountAccess`, async () => {
      const { amw, p } = await managed(c);
      const alias = walletLookupHash(amw);
      expect(await p.call(alias).revert(f.payer)).toEqual(noAccess(alias, f.payer));
    });

    // i.
    it(`${c.fn}: payer + unknown hash → AccountDoesNotExist`, async () => {
      const { p } = await managed(c);
      const unknown = randomHash();
      expect(await p.call(unknown).revert(f.payer)).toEqual(noAccount(unknown));
    });

    it(`${c.fn}: payer + removed usage key (that held every scope) → AccountDoesNotExist`, async () => {
      const { master, p } = await managed(c);
      const usage = await f.usageKey(master, ALL);
      await f.write(f.payer, "removeUsageApiKey", [master, usage.hash]);
      expect(await p.call(usage.hash).revert(f.payer)).toEqual(noAccount(usage.hash));
    });

    // j.
    it(`${c.fn}: unmanaged account, admin + master hash → succeeds`, async () => {
      const { admin, master, p } = await unmanaged(c);
      await succeeds(c, p, admin, master, master);
    });

    it(`${c.fn}: unmanaged account, admin + a usage-key hash of the account (with no scopes) → succeeds`, async () => {
      const { admin, master, p } = await unmanaged(c);
      const usage = await f.usageKey(master, {}, admin);
      await succeeds(c, p, admin, usage.hash, master);
    });

    it(`${c.fn}: unmanaged account, admin + removed usage key → AccountDoesNotExist`, async () => {
      const { admin, master, p } = await unmanaged(c);
      const usage = await f.usageKey(master, ALL, admin);
      await f.write(admin, "removeUsageApiKey", [master, usage.hash]);
      expect(await p.call(usage.hash).revert(admin)).toEqual(noAccount(usage.hash));
    });

    it(`${c.fn}: unmanaged account, payer + master hash → NoAccountAccess`, async () => {
      const { master, p } = await unmanaged(c);
      expect(await p.call(master).revert(f.payer)).toEqual(noAccess(master, f.payer));
    });

    it(`${c.fn}: unmanaged account, payer + usage key holding every scope → NoAccountAccess`, async () => {
      const { admin, master, p } = await unmanaged(c);
      const usage = await f.usageKey(master, ALL, admin);
      expect(await p.call(usage.hash).revert(f.payer)).toEqual(noAccess(usage.hash, f.payer));
    });

    it(`${c.fn}: unmanaged account, another wallet → NoAccountAccess`, async () => {
      const { master, p } = await unmanaged(c);
      for (const sender of [f.stranger, f.owner]) {
        expect(await p.call(master).revert(sender)).toEqual(noAccess(master, sender));
      }
    });

    // k.
    it(`${c.fn}: converted account, payer + old master key → NoAccountAccess`, async () => {
      const { master, p } = await converted(c);
      expect(await p.call(master).revert(f.payer)).toEqual(noAccess(master, f.payer));
    });

    it(`${c.fn}: converted account, payer + usage key holding every scope → NoAccountAccess`, async () => {
      const { usage, p } = await converted(c);
      expect(await p.call(usage.hash).revert(f.payer)).toEqual(noAccess(usage.hash, f.payer));
    });

    it(`${c.fn}: converted account, the old AMW → NoAccountAccess`, async () => {
      const { master, amw, p } = await converted(c);
      await f.impersonate(amw);
      expect(await p.call(master).revert(amw)).toEqual(noAccess(master, amw));
    });

    it(`${c.fn}: converted account, new admin + old master hash → succeeds`, async () => {
      const { master, newAdmin, p } = await converted(c);
      await succeeds(c, p, newAdmin, master, master);
    });

    it(`${c.fn}: converted account, new admin + its own alias hash → succeeds`, async () => {
      const { master, newAdmin, p } = await converted(c);
      await succeeds(c, p, newAdmin, walletLookupHash(newAdmin), master);
    });
  });
}

// ─── m. group ids in a key's lists are never reused ──────────────────────────────────────

describe("a usage key naming a removed group", () => {
  let master: bigint;
  let key: bigint;
  let removed: bigint;
  let fresh: bigint;
  let wallet: Address;
  let x: bigint;
  let cid: string;

  beforeAll(async () => {
    ({ master } = await f.managedAccount());
    wallet = (await f.wallet(master)).address;
    cid = randomCid();
    x = cidHash(cid);
    await f.write(f.payer, "addAction", [master, x, cid, "a", ""]);
    removed = await f.group(master);
    key = (
      await f.usageKey(master, {
        manageIpfsIdsInGroups: [removed],
        addPkpToGroups: [removed],
        removePkpFromGroups: [removed],
        executeInGroups: [removed],
      })
    ).hash;
    await f.write(f.payer, "removeGroup", [master, removed]);
    fresh = await f.group(master, [x], [wallet]);
  });

  it("the new group gets a new id", () => {
    expect(fresh).not.toBe(removed);
    expect(fresh).toBeGreaterThan(removed);
  });

  it("addActionToGroup on the new group → NotAllowed(group:manageActions)", async () => {
    expect(await f.revert(f.payer, "addActionToGroup", [key, fresh, cidHash(randomCid())])).toEqual(
      notAllowed("group:manageActions", fresh),
    );
  });

  it("removeActionFromGroup on the new group → NotAllowed(group:manageActions)", async () => {
    expect(await f.revert(f.payer, "removeActionFromGroup", [key, fresh, x])).toEqual(
      notAllowed("group:manageActions", fresh),
    );
  });

  it("addPkpToGroup on the new group → NotAllowed(group:addPkp)", async () => {
    expect(await f.revert(f.payer, "addPkpToGroup", [key, fresh, ZERO])).toEqual(notAllowed("group:addPkp", fresh));
  });

  it("removePkpFromGroup on the new group → NotAllowed(group:removePkp)", async () => {
    expect(await f.revert(f.payer, "removePkpFromGroup", [key, fresh, wallet])).toEqual(
      notAllowed("group:removePkp", fresh),
    );
  });

  it("updateGroup on the new group → NotAllowed(group:manageActions)", async () => {
    expect(await f.revert(f.payer, "updateGroup", [key, fresh, "n", "", [], []])).toEqual(
      notAllowed("group:manageActions", fresh),
    );
  });

  it("removeAction → NotAllowed(group:manageActions, 0)", async () => {
    expect(await f.revert(f.payer, "removeAction", [key, x])).toEqual(notAllowed("group:manageActions", 0n));
  });

  // docs/design/contract.md: addAction/updateActionMetadata need "group:manageActions in some group"; the key
  // names only a group that no longer exists, so it holds that scope in no group of the account
  // (AccountConfigStorage: "a stale group id in a key grants nothing").
  it("addAction (manageActions in some group) → NotAllowed(group:manageActions, 0)", async () => {
    const other = randomCid();
    expect(await f.revert(f.payer, "addAction", [key, cidHash(other), other, "n", ""])).toEqual(
      notAllowed("group:manageActions", 0n),
    );
  });

  it("updateActionMetadata (manageActions in some group) → NotAllowed(group:manageActions, 0)", async () => {
    expect(await f.revert(f.payer, "updateActionMetadata", [key, x, "renamed", ""])).toEqual(
      notAllowed("group:manageActions", 0n),
    );
  });
});

// ─── o. what a new group may hold (issue 11, point 7) ─────────────────────────────────────
// Filling a group is adding actions and wallets to it. A usage key that may only create groups
// used to create {cids: [0], wallets: [0]} and, with execute_in_groups [0], run any code with every
// wallet of the account, its master wallet included. Now a new group's actions need
// group:manageActions and its wallets group:addPkp, and since the group does not exist yet, only
// a list's wildcard 0 covers it. The owner (master key, ChainSecured admin) is not limited.

describe("addGroup with content, by a usage key", () => {
  let master: bigint;
  let amw: Address;
  let existing: bigint;
  let action: bigint;

  beforeAll(async () => {
    ({ master, amw } = await f.managedAccount());
    existing = await f.group(master);
    [action] = (await f.actions(master)) as [bigint];
  });

  const createOnly: Perms = { canCreateGroups: true, executeInGroups: [0n] };
  // Functions, because `existing`, `action` and `amw` exist only once beforeAll has run.
  const refusals: {
    label: string;
    perms: () => Perms;
    cids: () => bigint[];
    wallets: () => Address[];
    scope: string;
  }[] = [
    {
      label: "create-only: the wildcard action and the wildcard wallet",
      perms: () => createOnly,
      cids: () => [0n],
      wallets: () => [ZERO],
      scope: "group:manageActions",
    },
    {
      label: "create-only: the wildcard action",
      perms: () => createOnly,
      cids: () => [0n],
      wallets: () => [],
      scope: "group:manageActions",
    },
    {
      label: "create-only: a registered action",
      perms: () => createOnly,
      cids: () => [action],
      wallets: () => [],
      scope: "group:manageActions",
    },
    {
      label: "create-only: the wildcard wallet",
      perms: () => createOnly,
      cids: () => [],
      wallets: () => [ZERO],
      scope: "group:addPkp",
    },
    {
      label: "create-only: the master wallet by address",
      perms: () => createOnly,
      cids: () => [],
      wallets: () => [amw],
      scope: "group:addPkp",
    },
    {
      label: "group:manageActions and group:addPkp for an existing group only",
      perms: () => ({ ...createOnly, manageIpfsIdsInGroups: [existing], addPkpToGroups: [existing] }),
      cids: () => [0n],
      wallets: () => [amw],
      scope: "group:manageActions",
    },
    {
      label: "group:manageActions [0] but no group:addPkp: an action and the master wallet",
      perms: () => ({ ...createOnly, manageIpfsIdsInGroups: [0n] }),
      cids: () => [action],
      wallets: () => [amw],
      scope: "group:addPkp",
    },
  ];
  for (const r of refusals) {
    it(`${r.label} → NotAllowed(${r.scope}, 0)`, async () => {
      const usage = await f.usageKey(master, r.perms());
      expect(await f.revert(f.payer, "addGroup", [usage.hash, "mine", "", r.cids(), r.wallets()])).toEqual(
        notAllowed(r.scope, 0n),
      );
    });
  }

  it("create-only with execute [0] never gets to run its code with the master wallet", async () => {
    const usage = await f.usageKey(master, createOnly);
    const code = cidHash(randomCid());
    // It may create an empty group, and nothing it can put there lets it use a wallet.
    await f.write(f.payer, "addGroup", [usage.hash, "empty", "", [], []]);
    for (const [cids, wallets] of [
      [[0n], [ZERO]],
      [[0n], [amw]],
      [[action], [amw]],
    ] as [bigint[], Address[]][]) {
      expect((await f.revert(f.payer, "addGroup", [usage.hash, "g", "", cids, wallets])).errorName).toBe("NotAllowed");
    }
    const [canExecute, walletAllowed] = await f.read("authorizeExecution", [usage.hash, code, [amw]]);
    expect(canExecute).toBe(false);
    expect(walletAllowed).toEqual([false]);
  });

  it("group:create with group:manageActions [0] and group:addPkp [0] may create {cids: [0], wallets: [0]}", async () => {
    const usage = await f.usageKey(master, {
      canCreateGroups: true,
      manageIpfsIdsInGroups: [0n],
      addPkpToGroups: [0n],
    });
    const id = await f.group(usage.hash, [0n, action], [ZERO, amw]);
    expect(await f.read("getGroup", [master, id])).toMatchObject({ cidHashes: [0n, action], wallets: [ZERO, amw] });
  });

  it("group:create with group:manageActions [0] alone may create a group of actions without wallets", async () => {
    const usage = await f.usageKey(master, { canCreateGroups: true, manageIpfsIdsInGroups: [0n] });
    const id = await f.group(usage.hash, [action]);
    expect(await f.read("getGroup", [master, id])).toMatchObject({ cidHashes: [action], wallets: [] });
  });

  it("the owner is not limited: master key, and a ChainSecured admin", async () => {
    const id = await f.group(master, [0n], [ZERO, amw]);
    expect(await f.read("getGroup", [master, id])).toMatchObject({ cidHashes: [0n], wallets: [ZERO, amw] });
    const admin = await f.impersonate();
    const sovereign = await f.chainSecuredAccount(admin);
    const sid = await f.group(sovereign.master, [0n], [ZERO, sovereign.amw], admin);
    expect(await f.read("getGroup", [sovereign.master, sid])).toMatchObject({
      cidHashes: [0n],
      wallets: [ZERO, sovereign.amw],
    });
  });

  it("registerActions for a group about to be created (group id 0) needs group:manageActions [0], like the group's actions", async () => {
    const cid = randomCid();
    const g = await f.group(master);
    const byId = await f.usageKey(master, { canCreateGroups: true, manageIpfsIdsInGroups: [g] });
    expect(await f.revert(f.payer, "registerActions", [byId.hash, 0n, [cid]])).toEqual(
      notAllowed("group:manageActions", 0n),
    );
    const wildcard = await f.usageKey(master, { canCreateGroups: true, manageIpfsIdsInGroups: [0n] });
    await f.write(f.payer, "multicall", [
      [
        encodeFunctionData({ abi, functionName: "registerActions", args: [wildcard.hash, 0n, [cid]] }),
        encodeFunctionData({ abi, functionName: "addGroup", args: [wildcard.hash, "g", "", [cidHash(cid)], []] }),
      ],
    ]);
  });

  it("an existing group's own scopes still cover its wildcards (addActionToGroup 0, addPkpToGroup address(0))", async () => {
    const g = await f.group(master);
    const usage = await f.usageKey(master, { manageIpfsIdsInGroups: [g], addPkpToGroups: [g] });
    await f.write(f.payer, "addActionToGroup", [usage.hash, g, 0n]);
    await f.write(f.payer, "addPkpToGroup", [usage.hash, g, ZERO]);
    expect(await f.read("getGroup", [master, g])).toMatchObject({ cidHashes: [0n], wallets: [ZERO] });
  });
});

// ─── n. who sets the payers ──────────────────────────────────────────────────────────────

describe("payers", () => {
  afterEach(async () => {
    // Put the fixture's payer set back for the next test.
    await f.write(f.owner, "setApiPayers", [[f.payer, f.otherPayer]]);
    await f.write(f.owner, "setAdminApiPayer", [ZERO]);
  });

  it("setApiPayers: the contract owner may", async () => {
    await f.write(f.owner, "setApiPayers", [[f.carol]]);
    expect(await f.read("apiPayers", [])).toEqual([f.carol]);
  });

  it("setApiPayers: the admin payer (set by the owner with setAdminApiPayer) may", async () => {
    await f.write(f.owner, "setAdminApiPayer", [f.dave]);
    expect(await f.read("adminApiPayer", [])).toBe(f.dave);
    await f.write(f.dave, "setApiPayers", [[f.payer, f.carol]]);
    expect(await f.read("apiPayers", [])).toEqual([f.payer, f.carol]);
  });

  it("setApiPayers: stranger → OwnableUnauthorizedAccount", async () => {
    expect(await f.revert(f.stranger, "setApiPayers", [[f.stranger]])).toEqual(ownableUnauthorized(f.stranger));
  });

  it("setApiPayers: a plain payer → OwnableUnauthorizedAccount", async () => {
    expect(await f.revert(f.payer, "setApiPayers", [[f.payer]])).toEqual(ownableUnauthorized(f.payer));
  });

  it("setApiPayers: a former admin payer → OwnableUnauthorizedAccount", async () => {
    await f.write(f.owner, "setAdminApiPayer", [f.dave]);
    await f.write(f.owner, "setAdminApiPayer", [f.carol]);
    expect(await f.revert(f.dave, "setApiPayers", [[f.dave]])).toEqual(ownableUnauthorized(f.dave));
  });

  it("setAdminApiPayer: the contract owner may", async () => {
    await f.write(f.owner, "setAdminApiPayer", [f.carol]);
    expect(await f.read("adminApiPayer", [])).toBe(f.carol);
  });

  it("setAdminApiPayer: stranger, a plain payer and the admin payer itself → OwnableUnauthorizedAccount", async () => {
    await f.write(f.owner, "setAdminApiPayer", [f.dave]);
    for (const sender of [f.stranger, f.payer, f.dave]) {
      expect(await f.revert(sender, "setAdminApiPayer", [sender])).toEqual(ownableUnauthorized(sender));
    }
  });

  it("every payer in the set may write for a managed account", async () => {
    const { master } = await f.managedAccount();
    await f.write(f.otherPayer, "addGroup", [master, "by the other payer", "", [], []]);
    expect((await f.read("getAccount", [master])).groupCount).toBe(1n);
  });

  it("the admin payer, not itself in the payer set, cannot write for an account → NoAccountAccess", async () => {
    const { master } = await f.managedAccount();
    await f.write(f.owner, "setAdminApiPayer", [f.dave]);
    expect(await f.revert(f.dave, "addGroup", [master, "g", "", [], []])).toEqual(noAccess(master, f.dave));
  });

  it("after setApiPayers([otherPayer]) the removed payer loses write access (master and usage key) and the kept one keeps it", async () => {
    const { master } = await f.managedAccount();
    const usage = await f.usageKey(master, ALL);
    await f.write(f.owner, "setApiPayers", [[f.otherPayer]]);
    expect(await f.revert(f.payer, "addGroup", [master, "g", "", [], []])).toEqual(noAccess(master, f.payer));
    expect(await f.revert(f.payer, "addGroup", [usage.hash, "g", "", [], []])).toEqual(noAccess(usage.hash, f.payer));
    expect(await f.revert(f.payer, "newAccount", [randomHash(), "n", "", randomAddress(), 1n])).toMatchObject({
      errorName: "NoAccountAccess",
    });
    await f.write(f.otherPayer, "addGroup", [usage.hash, "g", "", [], []]);
    expect((await f.read("getAccount", [master])).groupCount).toBe(1n);
  });
});
