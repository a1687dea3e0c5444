// The read views: pagination edges, the hashes they accept (master, usage key, alias), their
// errors, getAccount's counts, and the payer views.
import { keccak256, parseEventLogs, stringToHex, type Address } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";
import { abi, deployFixture, guardrailDocument, randomAddress, ZERO, type Fixture } from "./fixture.ts";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

const PAGE_SIZE_ERROR = { errorName: "InvalidRequest", args: ["page size must be 1 to 100"] };
const HUGE_PAGE = 2n ** 255n;
const MAX_UINT = 2n ** 256n - 1n;

describe("pagination", () => {
  let master: bigint;
  let groupIds: bigint[];
  let wallets: Address[];

  beforeAll(async () => {
    const acct = await f.managedAccount();
    master = acct.master;
    groupIds = [];
    for (let i = 0; i < 7; i++) {
      const receipt = await f.write(f.payer, "addGroup", [master, `group ${i}`, "", [], []]);
      const [added] = parseEventLogs({ abi, logs: receipt.logs, eventName: "GroupAdded" });
      groupIds.push(added!.args.groupId);
    }
    // The AMW is wallet 0; six more make seven.
    wallets = [acct.amw];
    for (let i = 0; i < 6; i++) wallets.push((await f.wallet(master, f.payer, `wallet ${i + 1}`)).address);
  });

  it("pages listGroups: page 0 and 2 of size 3 hold 3 and 1 items, page 3 is empty, the total is always 7", async () => {
    expect(groupIds).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n]);
    const page = async (p: bigint, size: bigint) => {
      const [items, total] = await f.read("listGroups", [master, p, size]);
      return { ids: items.map((g) => g.id), total };
    };
    expect(await page(0n, 3n)).toEqual({ ids: [1n, 2n, 3n], total: 7n });
    expect(await page(1n, 3n)).toEqual({ ids: [4n, 5n, 6n], total: 7n });
    expect(await page(2n, 3n)).toEqual({ ids: [7n], total: 7n });
    expect(await page(3n, 3n)).toEqual({ ids: [], total: 7n });
    expect(await page(0n, 100n)).toEqual({ ids: groupIds, total: 7n });
    expect(await page(0n, 7n)).toEqual({ ids: groupIds, total: 7n });
    expect(await page(1n, 7n)).toEqual({ ids: [], total: 7n });
    expect(await page(6n, 1n)).toEqual({ ids: [7n], total: 7n });
    expect(await page(7n, 1n)).toEqual({ ids: [], total: 7n });
    // A page number so large that page * size would overflow returns empty rather than reverting.
    expect(await page(HUGE_PAGE, 3n)).toEqual({ ids: [], total: 7n });
    expect(await page(HUGE_PAGE, 100n)).toEqual({ ids: [], total: 7n });
    expect(await page(MAX_UINT, 100n)).toEqual({ ids: [], total: 7n });
  });

  it("pages listWallets the same way, wallet ids matching positions", async () => {
    const page = async (p: bigint, size: bigint) => {
      const [items, total] = await f.read("listWallets", [master, p, size]);
      return { items: items.map((w) => [w.id, w.wallet]), total };
    };
    const all = wallets.map((w, i) => [BigInt(i), w]);
    expect(await page(0n, 3n)).toEqual({ items: all.slice(0, 3), total: 7n });
    expect(await page(1n, 3n)).toEqual({ items: all.slice(3, 6), total: 7n });
    expect(await page(2n, 3n)).toEqual({ items: all.slice(6), total: 7n });
    expect(await page(3n, 3n)).toEqual({ items: [], total: 7n });
    expect(await page(0n, 100n)).toEqual({ items: all, total: 7n });
    expect(await page(HUGE_PAGE, 3n)).toEqual({ items: [], total: 7n });
    expect(await page(MAX_UINT, 1n)).toEqual({ items: [], total: 7n });
  });

  it("keeps insertion order, and the pages of any size concatenate to the full list", async () => {
    const [full] = await f.read("listGroups", [master, 0n, 100n]);
    expect(full.map((g) => g.name)).toEqual(groupIds.map((_, i) => `group ${i}`));
    const [fullWallets] = await f.read("listWallets", [master, 0n, 100n]);
    expect(fullWallets.map((w) => w.wallet)).toEqual(wallets);
    expect(fullWallets.slice(1).map((w) => w.name)).toEqual(wallets.slice(1).map((_, i) => `wallet ${i + 1}`));
    for (const size of [1n, 2n, 3n, 4n, 6n]) {
      const groups: bigint[] = [];
      const ws: Address[] = [];
      for (let p = 0n; p * size < 7n; p++) {
        groups.push(...(await f.read("listGroups", [master, p, size]))[0].map((g) => g.id));
        ws.push(...(await f.read("listWallets", [master, p, size]))[0].map((w) => w.wallet));
      }
      expect(groups).toEqual(groupIds);
      expect(ws).toEqual(wallets);
    }
    // Reading again gives the same order.
    expect((await f.read("listGroups", [master, 0n, 100n]))[0]).toEqual(full);
  });

  it("rejects page size 0 and 101 in every paged view, while 1 and 100 are fine", async () => {
    const g = groupIds[0]!;
    for (const size of [0n, 101n, MAX_UINT]) {
      expect(await f.readRevert("listGroups", [master, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      expect(await f.readRevert("listWallets", [master, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      expect(await f.readRevert("listUsageApiKeys", [master, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      expect(await f.readRevert("listActions", [master, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      expect(await f.readRevert("listWalletsInGroup", [master, g, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      expect(await f.readRevert("listActionsInGroup", [master, g, 0n, size])).toEqual(PAGE_SIZE_ERROR);
      // Also far past the end: the size is checked regardless of the page.
      expect(await f.readRevert("listGroups", [master, HUGE_PAGE, size])).toEqual(PAGE_SIZE_ERROR);
    }
    for (const size of [1n, 100n]) {
      expect((await f.read("listGroups", [master, 0n, size]))[1]).toBe(7n);
      expect((await f.read("listWalletsInGroup", [master, g, 0n, size]))[1]).toBe(0n);
    }
  });

  it("returns empty pages and zero totals for an empty account (a managed one still has its AMW)", async () => {
    const { master: empty, amw } = await f.managedAccount();
    expect(await f.read("listGroups", [empty, 0n, 10n])).toEqual([[], 0n]);
    expect(await f.read("listUsageApiKeys", [empty, 0n, 10n])).toEqual([[], 0n]);
    expect(await f.read("listActions", [empty, 0n, 10n])).toEqual([[], 0n]);
    expect(await f.read("listWallets", [empty, 0n, 10n])).toEqual([
      [{ id: 0n, wallet: amw, name: "", description: "" }],
      1n,
    ]);
    expect(await f.read("listWallets", [empty, 1n, 10n])).toEqual([[], 1n]);
    expect(await f.read("listGroups", [empty, HUGE_PAGE, 10n])).toEqual([[], 0n]);

    const admin = await f.impersonate();
    const sovereign = await f.chainSecuredAccount(admin);
    // Every account starts with wallet 0, a wallet-created one too.
    expect(await f.read("listWallets", [sovereign.master, 0n, 10n])).toEqual([
      [{ id: 0n, wallet: sovereign.amw, name: "", description: "" }],
      1n,
    ]);
    expect(await f.read("getAccount", [sovereign.master])).toMatchObject({
      walletCount: 1n,
      groupCount: 0n,
      usageKeyCount: 0n,
      actionCount: 0n,
    });

    // An empty group pages like an empty list.
    const id = await f.group(empty);
    expect(await f.read("listWalletsInGroup", [empty, id, 0n, 10n])).toEqual([[], 0n]);
    expect(await f.read("listActionsInGroup", [empty, id, 0n, 10n])).toEqual([[], 0n]);
  });

  it("pages listWalletsInGroup and listActionsInGroup too", async () => {
    const cids = await f.actions(master, 5);
    const id = await f.group(master, cids, wallets.slice(0, 5));
    const w = await f.read("listWalletsInGroup", [master, id, 1n, 2n]);
    expect([w[0].map((x) => x.wallet), w[1]]).toEqual([wallets.slice(2, 4), 5n]);
    const last = await f.read("listWalletsInGroup", [master, id, 2n, 2n]);
    expect([last[0].map((x) => x.wallet), last[1]]).toEqual([wallets.slice(4, 5), 5n]);
    const a = await f.read("listActionsInGroup", [master, id, 2n, 2n]);
    expect([a[0].map((x) => x.cidHash), a[1]]).toEqual([cids.slice(4), 5n]);
    expect((await f.read("listActionsInGroup", [master, id, 3n, 2n]))[0]).toEqual([]);
    await f.write(f.payer, "removeGroup", [master, id]);
  });
});

describe("views accept any hash of the account", () => {
  it("returns the same data through the master hash, a usage key hash and an admin alias, with the right counts", async () => {
    const { master, amw } = await f.managedAccount("Viewed");
    const w = await f.wallet(master, f.payer, "second");
    const cid = "bafkviewsaction";
    const c = cidHash(cid);
    await f.write(f.payer, "addAction", [master, c, cid, "Act", "an action"]);
    const g1 = await f.group(master, [c, 0n], [amw, ZERO, w.address]);
    await f.group(master);
    const usage = await f.usageKey(master, { executeInGroups: [g1] });
    await f.usageKey(master);
    const alias = walletLookupHash(amw);
    const document = guardrailDocument();
    const guarded = await f.write(f.payer, "setWalletGuardrail", [master, w.address, document]);

    const views = async (hash: bigint) => ({
      account: await f.read("getAccount", [hash]),
      keys: await f.read("listUsageApiKeys", [hash, 0n, 10n]),
      wallets: await f.read("listWallets", [hash, 0n, 10n]),
      walletsInGroup: await f.read("listWalletsInGroup", [hash, g1, 0n, 10n]),
      groups: await f.read("listGroups", [hash, 0n, 10n]),
      group: await f.read("getGroup", [hash, g1]),
      actions: await f.read("listActions", [hash, 0n, 10n]),
      actionsInGroup: await f.read("listActionsInGroup", [hash, g1, 0n, 10n]),
      derivation: await f.read("getWalletDerivation", [hash, amw]),
      otherDerivation: await f.read("getWalletDerivation", [hash, w.address]),
      guardrail: await f.read("getWalletGuardrail", [hash, amw]),
      otherGuardrail: await f.read("getWalletGuardrail", [hash, w.address]),
    });
    const byMaster = await views(master);
    expect(byMaster.account).toEqual({
      master,
      admin: amw,
      managed: true,
      name: "Viewed",
      description: "",
      walletCount: 2n,
      groupCount: 2n,
      usageKeyCount: 2n,
      actionCount: 1n,
    });
    expect(byMaster.keys[1]).toBe(2n);
    expect(byMaster.wallets[1]).toBe(2n);
    expect(byMaster.walletsInGroup[1]).toBe(3n);
    expect(byMaster.groups[1]).toBe(2n);
    expect(byMaster.group).toMatchObject({ id: g1, cidHashes: [c, 0n], wallets: [amw, ZERO, w.address] });
    expect(byMaster.actions).toEqual([[{ cidHash: c, cid, name: "Act", description: "an action" }], 1n]);
    expect(byMaster.actionsInGroup[1]).toBe(2n);
    expect(byMaster.derivation).toBe(master);
    expect(byMaster.otherDerivation).not.toBe(0n);
    expect(byMaster.guardrail).toEqual([`0x${"0".repeat(64)}`, 0n]);
    expect(byMaster.otherGuardrail).toEqual([keccak256(stringToHex(document)), guarded.blockNumber]);

    expect(await views(usage.hash)).toEqual(byMaster);
    expect(await views(alias)).toEqual(byMaster);
  });

  it("also through the aliases of a converted account's admins", async () => {
    const { master, amw } = await f.managedAccount();
    await f.group(master);
    const admin = await f.impersonate();
    await f.write(f.payer, "convertToChainSecuredAccount", [master, admin]);
    for (const hash of [walletLookupHash(amw), walletLookupHash(admin)]) {
      expect(await f.read("getAccount", [hash])).toEqual(await f.read("getAccount", [master]));
      expect(await f.read("listGroups", [hash, 0n, 10n])).toEqual(await f.read("listGroups", [master, 0n, 10n]));
    }
  });

  it("getAccount counts follow additions and removals", async () => {
    const { master } = await f.managedAccount();
    const counts = async () => {
      const a = await f.read("getAccount", [master]);
      return [a.walletCount, a.groupCount, a.usageKeyCount, a.actionCount];
    };
    expect(await counts()).toEqual([1n, 0n, 0n, 0n]);
    const cid = "bafkcounts";
    await f.write(f.payer, "addAction", [master, cidHash(cid), cid, "", ""]);
    const g = await f.group(master, [cidHash(cid)]);
    await f.group(master);
    const k = await f.usageKey(master);
    await f.wallet(master);
    expect(await counts()).toEqual([2n, 2n, 1n, 1n]);
    await f.write(f.payer, "removeGroup", [master, g]);
    await f.write(f.payer, "removeUsageApiKey", [master, k.hash]);
    await f.write(f.payer, "removeAction", [master, cidHash(cid)]);
    expect(await counts()).toEqual([2n, 1n, 0n, 0n]);
  });
});

describe("view errors", () => {
  it("every view reverts AccountDoesNotExist(hash) for an unknown hash, zero included", async () => {
    for (const unknown of [apiKeyHash(generateApiKey()), 0n, walletLookupHash(randomAddress())]) {
      const expected = { errorName: "AccountDoesNotExist", args: [unknown] };
      expect(await f.readRevert("getAccount", [unknown])).toEqual(expected);
      expect(await f.readRevert("listUsageApiKeys", [unknown, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("listWallets", [unknown, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("listWalletsInGroup", [unknown, 1n, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("listGroups", [unknown, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("getGroup", [unknown, 1n])).toEqual(expected);
      expect(await f.readRevert("listActions", [unknown, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("listActionsInGroup", [unknown, 1n, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("getWalletDerivation", [unknown, randomAddress()])).toEqual(expected);
      expect(await f.readRevert("getWalletGuardrail", [unknown, randomAddress()])).toEqual(expected);
    }
  });

  it("a removed usage key reads like an unknown hash", async () => {
    const { master } = await f.managedAccount();
    const { hash } = await f.usageKey(master);
    await f.write(f.payer, "removeUsageApiKey", [master, hash]);
    const expected = { errorName: "AccountDoesNotExist", args: [hash] };
    expect(await f.readRevert("getAccount", [hash])).toEqual(expected);
    expect(await f.readRevert("listWallets", [hash, 0n, 10n])).toEqual(expected);
    expect(await f.readRevert("getWalletDerivation", [hash, randomAddress()])).toEqual(expected);
    expect(await f.readRevert("getWalletGuardrail", [hash, randomAddress()])).toEqual(expected);
  });

  it("getWalletGuardrail reverts KeyExpired for an expired usage key, as every view that takes a hash", async () => {
    const { master, amw } = await f.managedAccount();
    const { hash } = await f.usageKey(master, { expiration: (await f.now()) + 100n });
    expect(await f.read("getWalletGuardrail", [hash, amw])).toEqual([`0x${"0".repeat(64)}`, 0n]);
    await f.advance(200);
    expect(await f.readRevert("getWalletGuardrail", [hash, amw])).toEqual({ errorName: "KeyExpired", args: [hash] });
    expect(await f.readRevert("getWalletDerivation", [hash, amw])).toEqual({ errorName: "KeyExpired", args: [hash] });
  });

  it("the group views revert GroupDoesNotExist(id) for a missing, removed or wildcard group id", async () => {
    const { master } = await f.managedAccount();
    const removed = await f.group(master);
    await f.write(f.payer, "removeGroup", [master, removed]);
    for (const id of [0n, removed, 99n, MAX_UINT]) {
      const expected = { errorName: "GroupDoesNotExist", args: [id] };
      expect(await f.readRevert("getGroup", [master, id])).toEqual(expected);
      expect(await f.readRevert("listWalletsInGroup", [master, id, 0n, 10n])).toEqual(expected);
      expect(await f.readRevert("listActionsInGroup", [master, id, 0n, 10n])).toEqual(expected);
    }
  });
});

describe("usageKeyExpiration", () => {
  it("is a usage key's expiration, 0 for one that never expires, and 0 for anything that is not a live usage key", async () => {
    const { master } = await f.managedAccount();
    const expiration = (await f.now()) + 3_600n;
    const { hash: expiring } = await f.usageKey(master, { expiration });
    const { hash: forever } = await f.usageKey(master);
    expect(await f.read("usageKeyExpiration", [expiring])).toBe(expiration);
    expect(await f.read("usageKeyExpiration", [forever])).toBe(0n);
    expect(await f.read("usageKeyExpiration", [master])).toBe(0n);
    expect(await f.read("usageKeyExpiration", [apiKeyHash(generateApiKey())])).toBe(0n);
    await f.write(f.payer, "removeUsageApiKey", [master, expiring]);
    expect(await f.read("usageKeyExpiration", [expiring])).toBe(0n);
  });
});

describe("billingOf", () => {
  it("names a key's account (its ledger), whether the key is live and its spend cap; nothing for what is not a key", async () => {
    const { master } = await f.managedAccount();
    const { hash: capped } = await f.usageKey(master, { balance: 250n });
    // Ahead of the next block's time by more than a wall-clock second (the chain may be that far behind), then past it.
    const { hash: expired } = await f.usageKey(master, { expiration: (await f.now()) + 30n });
    await f.advance(60);
    expect(await f.read("billingOf", [master])).toEqual([master, true, 0n]);
    expect(await f.read("billingOf", [capped])).toEqual([master, true, 250n]);
    expect(await f.read("billingOf", [expired])).toEqual([master, false, 0n]);
    expect(await f.read("billingOf", [apiKeyHash(generateApiKey())])).toEqual([0n, false, 0n]);
    await f.write(f.payer, "removeUsageApiKey", [master, capped]);
    expect(await f.read("billingOf", [capped])).toEqual([0n, false, 0n]);
  });

  it("reads API-key hashes only: a wallet's lookup hash names no ledger, even where a usage key squats on it", async () => {
    const { master, amw } = await f.managedAccount();
    const admin = await f.impersonate();
    const sovereign = await f.chainSecuredAccount(admin);
    for (const hash of [walletLookupHash(amw), sovereign.master]) {
      expect(await f.read("billingOf", [hash])).toEqual([0n, false, 0n]);
    }
    // A usage key registered as a wallet's lookup hash bills its own account, as the key it is.
    const victim = randomAddress();
    await f.setUsageKey(master, walletLookupHash(victim), { balance: 7n });
    expect(await f.read("billingOf", [walletLookupHash(victim)])).toEqual([master, true, 7n]);
  });
});

describe("accountOfWallet", () => {
  it("names the account a wallet administers or did, with the current admin and mode, looking among aliases only", async () => {
    const { master, amw } = await f.managedAccount();
    expect(await f.read("accountOfWallet", [amw])).toEqual([master, amw, true]);
    const admin = await f.impersonate();
    await f.write(f.payer, "convertToChainSecuredAccount", [master, admin]);
    expect(await f.read("accountOfWallet", [amw])).toEqual([master, admin, false]);
    expect(await f.read("accountOfWallet", [admin])).toEqual([master, admin, false]);
    // A wallet the account merely holds administers nothing.
    const w = await f.wallet(master, admin);
    expect(await f.read("accountOfWallet", [w.address])).toEqual([0n, ZERO, false]);
  });
});

describe("payer views", () => {
  it("apiPayers() returns the set the owner gave, and setApiPayers replaces it emitting ApiPayersSet", async () => {
    expect(await f.read("apiPayers", [])).toEqual([f.payer, f.otherPayer]);
    const extra = randomAddress();
    const receipt = await f.write(f.owner, "setApiPayers", [[f.payer, f.otherPayer, extra]]);
    expect(parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args])).toEqual([
      ["ApiPayersSet", { payers: [f.payer, f.otherPayer, extra] }],
    ]);
    expect(await f.read("apiPayers", [])).toEqual([f.payer, f.otherPayer, extra]);
    await f.write(f.owner, "setApiPayers", [[f.payer, f.otherPayer]]);
    expect(await f.read("apiPayers", [])).toEqual([f.payer, f.otherPayer]);
  });

  it("adminApiPayer() is the zero address until the owner sets one", async () => {
    expect(await f.read("adminApiPayer", [])).toBe(ZERO);
    const receipt = await f.write(f.owner, "setAdminApiPayer", [f.carol]);
    expect(parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args])).toEqual([
      ["AdminApiPayerSet", { payer: f.carol }],
    ]);
    expect(await f.read("adminApiPayer", [])).toBe(f.carol);
    await f.write(f.owner, "setAdminApiPayer", [ZERO]);
    expect(await f.read("adminApiPayer", [])).toBe(ZERO);
  });
});
