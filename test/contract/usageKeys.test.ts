// Usage keys: setUsageApiKey (create and full replace), expiration, the key hash space they share
// with masters (wallet aliases have a namespace of their own), metadata updates, removal, and
// resolveKey for usage keys. Sent by the payer
// with a managed account's master hash unless a test says otherwise (the access matrix is in
// access.test.ts).
import { parseEventLogs, type TransactionReceipt } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { abi, deployFixture, usageKeyArgs, type Fixture } from "./fixture.ts";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

function events(receipt: TransactionReceipt): [string, unknown][] {
  return parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args]);
}

function freshHash(): bigint {
  return apiKeyHash(generateApiKey());
}

async function listKeys(hash: bigint) {
  return f.read("listUsageApiKeys", [hash, 0n, 100n]);
}

describe("setUsageApiKey", () => {
  it("stores every field and emits UsageApiKeySet(master, keyHash) with both indexed", async () => {
    const { master } = await f.managedAccount();
    const g1 = await f.group(master);
    const g2 = await f.group(master);
    const hash = freshHash();
    const expiration = (await f.now()) + 10_000n;
    const receipt = await f.write(f.payer, "setUsageApiKey", [
      master,
      hash,
      expiration,
      1234n,
      "ci bot",
      "deploys on merge",
      true,
      false,
      true,
      [g1],
      [g2, 0n],
      [0n],
      [g1, g2],
    ]);
    expect(events(receipt)).toEqual([["UsageApiKeySet", { master, keyHash: hash }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);

    expect(await listKeys(master)).toEqual([
      [
        {
          keyHash: hash,
          expiration,
          balance: 1234n,
          name: "ci bot",
          description: "deploys on merge",
          canCreateGroups: true,
          canDeleteGroups: false,
          canCreatePkps: true,
          manageIpfsIdsInGroups: [g1],
          addPkpToGroups: [g2, 0n],
          removePkpFromGroups: [0n],
          executeInGroups: [g1, g2],
        },
      ],
      1n,
    ]);
    expect((await f.read("getAccount", [master])).usageKeyCount).toBe(1n);
  });

  it("resolveKey of a usage key of a managed account is (master, false, true, true)", async () => {
    const { master } = await f.managedAccount();
    const { hash } = await f.usageKey(master);
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
  });

  it("setting the same hash again replaces all permissions and metadata instead of merging", async () => {
    const { master } = await f.managedAccount();
    const g1 = await f.group(master);
    const g2 = await f.group(master);
    const hash = freshHash();
    await f.write(f.payer, "setUsageApiKey", [
      master,
      hash,
      0n,
      50n,
      "first",
      "one",
      true,
      true,
      true,
      [g1, 0n],
      [g1],
      [g2],
      [0n],
    ]);
    const expiration = (await f.now()) + 5_000n;
    const receipt = await f.write(f.payer, "setUsageApiKey", [
      master,
      hash,
      expiration,
      0n,
      "second",
      "",
      false,
      true,
      false,
      [g2],
      [],
      [],
      [g1],
    ]);
    expect(events(receipt)).toEqual([["UsageApiKeySet", { master, keyHash: hash }]]);
    expect(await listKeys(master)).toEqual([
      [
        {
          keyHash: hash,
          expiration,
          balance: 0n,
          name: "second",
          description: "",
          canCreateGroups: false,
          canDeleteGroups: true,
          canCreatePkps: false,
          manageIpfsIdsInGroups: [g2],
          addPkpToGroups: [],
          removePkpFromGroups: [],
          executeInGroups: [g1],
        },
      ],
      1n,
    ]);
    expect((await f.read("getAccount", [master])).usageKeyCount).toBe(1n);
  });

  it("rejects a zero usage key hash with InvalidRequest", async () => {
    const { master } = await f.managedAccount();
    expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, 0n))).toEqual({
      errorName: "InvalidRequest",
      args: ["usage key hash is zero"],
    });
  });

  it("rejects a hash already in use as an API key: its own master, another account's master, another account's usage key", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const otherUsage = await f.usageKey(other.master);
    for (const hash of [master, other.master, otherUsage.hash]) {
      expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, hash))).toEqual({
        errorName: "InvalidRequest",
        args: ["usage key hash is already in use"],
      });
    }
    // Nothing changed for the owner of that key.
    expect(await f.read("resolveKey", [otherUsage.hash])).toEqual([other.master, false, true, true]);
  });

  // Wallet lookup hashes live in their own namespace: a usage key may carry one as its hash (the
  // contract cannot tell a hash's origin), but it never takes the wallet's place.
  it("takes a wallet's lookup hash, which still names the wallet's account everywhere a wallet is looked up", async () => {
    const { master, amw } = await f.managedAccount();
    const other = await f.managedAccount();
    const sovereign = await f.chainSecuredAccount(await f.impersonate());
    for (const [wallet, owner] of [
      [amw, master],
      [other.amw, other.master],
      [sovereign.admin, sovereign.master],
    ] as const) {
      const hash = walletLookupHash(wallet);
      await f.setUsageKey(master, hash, { executeInGroups: [0n] });
      expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
      expect((await f.read("accountOfWallet", [wallet]))[0]).toBe(owner);
      expect((await f.read("getAccount", [hash])).master).toBe(owner);
    }
  });

  it("requires every group id in the four lists to exist in the account (or be 0), else GroupDoesNotExist(id)", async () => {
    const { master } = await f.managedAccount();
    const g = await f.group(master);
    const removed = await f.group(master);
    await f.write(f.payer, "removeGroup", [master, removed]);
    const other = await f.managedAccount();
    await f.group(other.master);
    await f.group(other.master);
    const otherOnly = await f.group(other.master); // id 3: exists in the other account only
    const hash = freshHash();
    for (const missing of [99n, removed, otherOnly]) {
      for (const list of [
        "manageIpfsIdsInGroups",
        "addPkpToGroups",
        "removePkpFromGroups",
        "executeInGroups",
      ] as const) {
        expect(
          await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, hash, { [list]: [0n, g, missing] })),
        ).toEqual({
          errorName: "GroupDoesNotExist",
          args: [missing],
        });
      }
    }
    // 0 and existing ids are fine in every list.
    await f.setUsageKey(master, hash, {
      manageIpfsIdsInGroups: [0n, g],
      addPkpToGroups: [g],
      removePkpFromGroups: [0n],
      executeInGroups: [g, 0n],
    });
    expect((await listKeys(master))[1]).toBe(1n);
  });
});

describe("usage key expiration", () => {
  it("a key is live until its expiration; afterwards resolveKey says not live and reads through it revert KeyExpired(hash)", async () => {
    const { master } = await f.managedAccount();
    await f.group(master);
    const expiration = (await f.now()) + 100n;
    const { hash } = await f.usageKey(master, { expiration });
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
    expect((await f.read("listGroups", [hash, 0n, 10n]))[1]).toBe(1n);

    await f.advance(200);
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, false]);
    expect(await f.readRevert("listGroups", [hash, 0n, 10n])).toEqual({ errorName: "KeyExpired", args: [hash] });
    expect(await f.readRevert("getAccount", [hash])).toEqual({ errorName: "KeyExpired", args: [hash] });
    // The key is still listed for the owner, with its expiration.
    const [keys] = await listKeys(master);
    expect(keys.map((k) => [k.keyHash, k.expiration])).toEqual([[hash, expiration]]);
  });

  it("an expired key can be renewed by setting it again with a later expiration", async () => {
    const { master } = await f.managedAccount();
    const { hash } = await f.usageKey(master, { expiration: (await f.now()) + 50n });
    await f.advance(100);
    expect((await f.read("resolveKey", [hash]))[3]).toBe(false);
    await f.setUsageKey(master, hash, { expiration: (await f.now()) + 1_000n });
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
  });

  it("rejects an expiration already in the past (or now) at set time with InvalidRequest", async () => {
    const { master } = await f.managedAccount();
    const now = await f.now();
    for (const expiration of [1n, now - 1n, now]) {
      expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, freshHash(), { expiration }))).toEqual({
        errorName: "InvalidRequest",
        args: ["expiration is in the past"],
      });
    }
  });

  it("expiration 0 never expires", async () => {
    const { master } = await f.managedAccount();
    const { hash } = await f.usageKey(master, { expiration: 0n });
    await f.advance(10 * 365 * 24 * 3600);
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
    expect((await f.read("getAccount", [hash])).master).toBe(master);
  });
});

describe("updateUsageApiKeyMetadata", () => {
  it("changes only name and description and emits UsageApiKeyMetadataUpdated(master, keyHash)", async () => {
    const { master } = await f.managedAccount();
    const g = await f.group(master);
    const expiration = (await f.now()) + 100_000n;
    const { hash } = await f.usageKey(master, {
      expiration,
      balance: 99n,
      canCreateGroups: true,
      canCreatePkps: true,
      manageIpfsIdsInGroups: [g],
      addPkpToGroups: [0n],
      executeInGroups: [g, 0n],
    });
    const [[before]] = await listKeys(master);

    const receipt = await f.write(f.payer, "updateUsageApiKeyMetadata", [master, hash, "renamed", "now described"]);
    expect(events(receipt)).toEqual([["UsageApiKeyMetadataUpdated", { master, keyHash: hash }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);

    const [[after], total] = await listKeys(master);
    expect(total).toBe(1n);
    expect(after).toEqual({ ...before!, name: "renamed", description: "now described" });
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
  });

  it("reverts AccountDoesNotExist(hash) for a key the account does not have", async () => {
    const { master, amw } = await f.managedAccount();
    const other = await f.managedAccount();
    const theirs = await f.usageKey(other.master);
    const unknown = freshHash();
    for (const hash of [unknown, theirs.hash, master, walletLookupHash(amw)]) {
      expect(await f.revert(f.payer, "updateUsageApiKeyMetadata", [master, hash, "n", ""])).toEqual({
        errorName: "AccountDoesNotExist",
        args: [hash],
      });
    }
  });
});

describe("removeUsageApiKey", () => {
  it("stops the hash resolving, drops it from the list and emits UsageApiKeyRemoved(master, keyHash)", async () => {
    const { master } = await f.managedAccount();
    const keep = await f.usageKey(master);
    const { hash } = await f.usageKey(master, { canCreateGroups: true, executeInGroups: [0n] });
    expect((await listKeys(master))[1]).toBe(2n);

    const receipt = await f.write(f.payer, "removeUsageApiKey", [master, hash]);
    expect(events(receipt)).toEqual([["UsageApiKeyRemoved", { master, keyHash: hash }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);

    expect(await f.read("resolveKey", [hash])).toEqual([0n, false, false, false]);
    const [keys, total] = await listKeys(master);
    expect(total).toBe(1n);
    expect(keys.map((k) => k.keyHash)).toEqual([keep.hash]);
    expect((await f.read("getAccount", [master])).usageKeyCount).toBe(1n);
    // Reads through the removed key fail as for an unknown hash.
    expect(await f.readRevert("getAccount", [hash])).toEqual({ errorName: "AccountDoesNotExist", args: [hash] });
    expect(await f.readRevert("listGroups", [hash, 0n, 10n])).toEqual({
      errorName: "AccountDoesNotExist",
      args: [hash],
    });
    // Removing it again: the account no longer has it.
    expect(await f.revert(f.payer, "removeUsageApiKey", [master, hash])).toEqual({
      errorName: "AccountDoesNotExist",
      args: [hash],
    });
  });

  it("reverts AccountDoesNotExist(hash) for a key the account does not have", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const theirs = await f.usageKey(other.master);
    for (const hash of [freshHash(), theirs.hash, master]) {
      expect(await f.revert(f.payer, "removeUsageApiKey", [master, hash])).toEqual({
        errorName: "AccountDoesNotExist",
        args: [hash],
      });
    }
    expect(await f.read("resolveKey", [theirs.hash])).toEqual([other.master, false, true, true]);
  });

  it("lets the same account set the removed hash again, with fresh permissions", async () => {
    const { master } = await f.managedAccount();
    const g = await f.group(master);
    const { hash } = await f.usageKey(master, { canDeleteGroups: true, executeInGroups: [g] });
    await f.write(f.payer, "removeUsageApiKey", [master, hash]);
    await f.setUsageKey(master, hash, { addPkpToGroups: [g] });
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, true, true]);
    const [[k], total] = await listKeys(master);
    expect(total).toBe(1n);
    expect(k).toMatchObject({ keyHash: hash, canDeleteGroups: false, addPkpToGroups: [g], executeInGroups: [] });
  });

  it("never lets another account take a removed hash", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const { hash } = await f.usageKey(master);
    await f.write(f.payer, "removeUsageApiKey", [master, hash]);
    expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(other.master, hash))).toEqual({
      errorName: "InvalidRequest",
      args: ["usage key hash is already in use"],
    });
    // Not as a new account's master either.
    expect(await f.revert(f.payer, "newAccount", [hash, "n", "", await f.impersonate(), hash])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [hash],
    });
    expect(await f.read("resolveKey", [hash])).toEqual([0n, false, false, false]);
  });
});

describe("usage keys of a ChainSecured account", () => {
  it("the admin wallet sets, updates and removes usage keys directly", async () => {
    const admin = await f.impersonate();
    const { master } = await f.chainSecuredAccount(admin);
    const g = await f.group(master, [], [], admin);
    const hash = freshHash();

    const set = await f.write(
      admin,
      "setUsageApiKey",
      usageKeyArgs(master, hash, { canCreateGroups: true, executeInGroups: [g] }, "ops", "d"),
    );
    expect(events(set)).toEqual([["UsageApiKeySet", { master, keyHash: hash }]]);
    // A usage key of an unmanaged account is live (it reads), its account is not managed.
    expect(await f.read("resolveKey", [hash])).toEqual([master, false, false, true]);
    expect(await listKeys(master)).toEqual([
      [
        {
          keyHash: hash,
          expiration: 0n,
          balance: 0n,
          name: "ops",
          description: "d",
          canCreateGroups: true,
          canDeleteGroups: false,
          canCreatePkps: false,
          manageIpfsIdsInGroups: [],
          addPkpToGroups: [],
          removePkpFromGroups: [],
          executeInGroups: [g],
        },
      ],
      1n,
    ]);

    const updated = await f.write(admin, "updateUsageApiKeyMetadata", [master, hash, "ops2", ""]);
    expect(events(updated)).toEqual([["UsageApiKeyMetadataUpdated", { master, keyHash: hash }]]);
    expect((await listKeys(master))[0][0]).toMatchObject({ name: "ops2", description: "", canCreateGroups: true });

    const removed = await f.write(admin, "removeUsageApiKey", [master, hash]);
    expect(events(removed)).toEqual([["UsageApiKeyRemoved", { master, keyHash: hash }]]);
    expect(await f.read("resolveKey", [hash])).toEqual([0n, false, false, false]);
    expect((await listKeys(master))[1]).toBe(0n);
  });
});
