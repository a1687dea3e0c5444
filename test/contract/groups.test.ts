// Groups, the actions and wallets in them, wallet registration and the actions registry: happy
// paths, events with their indexed topics, and each function's own reverts. (The access matrix is
// in access.test.ts; here everything is sent by the payer with a managed account's master hash.)
import { encodeFunctionData, pad, parseEventLogs, type Address, type Hex, type TransactionReceipt } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import { abi, deployFixture, randomAddress, ZERO, type Fixture } from "./fixture.ts";

/** The id `listWalletsInGroup` reports for the address(0) ("any wallet of the account") entry. */
const ANY_WALLET_ID = 2n ** 256n - 1n;

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

/** Every event of a receipt as [name, args], in log order. */
function events(receipt: TransactionReceipt): [string, unknown][] {
  return parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args]);
}

/** An address as a 32-byte topic (lowercase, left-padded). */
function addressTopic(a: Address): Hex {
  return pad(a.toLowerCase() as Hex, { size: 32 });
}

let cidCounter = 0;
/** A fresh CID string and its hash. */
function newCid(): { cid: string; hash: bigint } {
  const cid = `bafkreitest${++cidCounter}x${Math.random().toString(36).slice(2)}`;
  return { cid, hash: cidHash(cid) };
}

describe("addGroup", () => {
  it("returns sequential ids from 1 per account, each account starting at 1", async () => {
    const a = await f.managedAccount();
    const b = await f.managedAccount();
    // The function's return value, by simulation, is the id the GroupAdded event then carries.
    const { result } = await f.publicClient.simulateContract({
      address: f.address,
      abi,
      functionName: "addGroup",
      args: [a.master, "g", "", [], []],
      account: f.payer,
    });
    expect(result).toBe(1n);
    expect(await f.group(a.master)).toBe(1n);
    expect(await f.group(a.master)).toBe(2n);
    expect(await f.group(b.master)).toBe(1n);
    expect(await f.group(a.master)).toBe(3n);
    expect(await f.group(b.master)).toBe(2n);
  });

  it("stores name, description, cid hashes and wallets, and emits GroupAdded(master, groupId) with both indexed", async () => {
    const { master, amw } = await f.managedAccount();
    const w = await f.wallet(master);
    const [c1, c2] = (await f.actions(master, 2)) as [bigint, bigint];
    const receipt = await f.write(f.payer, "addGroup", [master, "Ops", "deploy things", [c1, c2], [amw, w.address]]);
    const logs = parseEventLogs({ abi, logs: receipt.logs });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.eventName).toBe("GroupAdded");
    expect(logs[0]!.args).toEqual({ master, groupId: 1n });
    expect(logs[0]!.topics[1]).toBe(toHash32(master));
    expect(logs[0]!.topics[1]).toMatch(/^0x[0-9a-f]{64}$/);
    expect(logs[0]!.topics[2]).toBe(toHash32(1n));
    expect(logs[0]!.address.toLowerCase()).toBe(f.address.toLowerCase());

    expect(await f.read("getGroup", [master, 1n])).toEqual({
      id: 1n,
      name: "Ops",
      description: "deploy things",
      cidHashes: [c1, c2],
      wallets: [amw, w.address],
    });
  });

  it("rejects a wallet registered to another account with WalletNotRegistered", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const otherWallet = await f.wallet(other.master);
    for (const w of [other.amw, otherWallet.address]) {
      expect(await f.revert(f.payer, "addGroup", [master, "g", "", [], [w]])).toEqual({
        errorName: "WalletNotRegistered",
        args: [w],
      });
    }
  });

  it("rejects an address registered to no account with WalletNotRegistered", async () => {
    const { master, amw } = await f.managedAccount();
    const stray = randomAddress();
    expect(await f.revert(f.payer, "addGroup", [master, "g", "", [], [amw, stray]])).toEqual({
      errorName: "WalletNotRegistered",
      args: [stray],
    });
  });

  it("accepts address(0) as 'any wallet of the account' and cid hash 0 as 'any action'", async () => {
    const { master } = await f.managedAccount();
    const id = await f.group(master, [0n], [ZERO]);
    expect(await f.read("getGroup", [master, id])).toMatchObject({ cidHashes: [0n], wallets: [ZERO] });
  });

  it("collapses duplicate cid hashes and wallets in its input (set semantics)", async () => {
    const { master, amw } = await f.managedAccount();
    const w = await f.wallet(master);
    const [c] = (await f.actions(master)) as [bigint];
    const id = await f.group(master, [c, 0n, c, 0n, c], [amw, w.address, amw, ZERO, w.address, ZERO]);
    expect(await f.read("getGroup", [master, id])).toMatchObject({
      cidHashes: [c, 0n],
      wallets: [amw, w.address, ZERO],
    });
  });
});

describe("updateGroup", () => {
  it("fully replaces name, description, cids and wallets, and emits GroupUpdated(master, groupId)", async () => {
    const { master, amw } = await f.managedAccount();
    const w1 = await f.wallet(master);
    const w2 = await f.wallet(master);
    const [c1, c2, c3] = (await f.actions(master, 3)) as [bigint, bigint, bigint];
    const id = await f.group(master, [c1, c2, 0n], [amw, w1.address, ZERO]);

    const receipt = await f.write(f.payer, "updateGroup", [master, id, "renamed", "new words", [c3, c1], [w2.address]]);
    expect(events(receipt)).toEqual([["GroupUpdated", { master, groupId: id }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics[1]).toBe(toHash32(master));
    expect(log!.topics[2]).toBe(toHash32(id));
    // c2, 0, the AMW, w1 and address(0) are gone; only the new entries remain.
    expect(await f.read("getGroup", [master, id])).toEqual({
      id,
      name: "renamed",
      description: "new words",
      cidHashes: [c3, c1],
      wallets: [w2.address],
    });

    // Replacing with empty lists empties the group.
    await f.write(f.payer, "updateGroup", [master, id, "", "", [], []]);
    expect(await f.read("getGroup", [master, id])).toEqual({
      id,
      name: "",
      description: "",
      cidHashes: [],
      wallets: [],
    });
  });

  it("checks the new wallets like addGroup does", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const id = await f.group(master);
    expect(await f.revert(f.payer, "updateGroup", [master, id, "g", "", [], [other.amw]])).toEqual({
      errorName: "WalletNotRegistered",
      args: [other.amw],
    });
  });

  it("reverts GroupDoesNotExist(id) for a group that never existed or was removed", async () => {
    const { master } = await f.managedAccount();
    expect(await f.revert(f.payer, "updateGroup", [master, 42n, "g", "", [], []])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [42n],
    });
    // Group id 0 is the wildcard, never a group.
    expect(await f.revert(f.payer, "updateGroup", [master, 0n, "g", "", [], []])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [0n],
    });
    const id = await f.group(master);
    await f.write(f.payer, "removeGroup", [master, id]);
    expect(await f.revert(f.payer, "updateGroup", [master, id, "g", "", [], []])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [id],
    });
  });
});

describe("removeGroup", () => {
  it("removes the group, emits GroupRemoved(master, groupId), and the group no longer reads", async () => {
    const { master, amw } = await f.managedAccount();
    const keep = await f.group(master);
    const id = await f.group(master, await f.actions(master), [amw]);
    expect((await f.read("listGroups", [master, 0n, 10n]))[1]).toBe(2n);

    const receipt = await f.write(f.payer, "removeGroup", [master, id]);
    expect(events(receipt)).toEqual([["GroupRemoved", { master, groupId: id }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics[1]).toBe(toHash32(master));
    expect(log!.topics[2]).toBe(toHash32(id));

    expect(await f.readRevert("getGroup", [master, id])).toEqual({ errorName: "GroupDoesNotExist", args: [id] });
    const [groups, total] = await f.read("listGroups", [master, 0n, 10n]);
    expect(total).toBe(1n);
    expect(groups.map((g) => g.id)).toEqual([keep]);
    expect((await f.read("getAccount", [master])).groupCount).toBe(1n);
    // Removing it again: it does not exist.
    expect(await f.revert(f.payer, "removeGroup", [master, id])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [id],
    });
  });

  it("never reuses ids: the next group after removing the last one gets a higher id", async () => {
    const { master } = await f.managedAccount();
    expect(await f.group(master)).toBe(1n);
    expect(await f.group(master)).toBe(2n);
    await f.write(f.payer, "removeGroup", [master, 2n]);
    expect(await f.group(master)).toBe(3n);
    await f.write(f.payer, "removeGroup", [master, 1n]);
    await f.write(f.payer, "removeGroup", [master, 3n]);
    expect((await f.read("listGroups", [master, 0n, 10n]))[1]).toBe(0n);
    expect(await f.group(master)).toBe(4n);
  });

  it("a group re-created after removal starts empty (no entries leak from the removed one)", async () => {
    const { master, amw } = await f.managedAccount();
    const id = await f.group(master, [...(await f.actions(master)), 0n], [amw, ZERO]);
    await f.write(f.payer, "removeGroup", [master, id]);
    const next = await f.group(master);
    expect(await f.read("getGroup", [master, next])).toEqual({
      id: next,
      name: "g",
      description: "",
      cidHashes: [],
      wallets: [],
    });
  });
});

describe("actions in groups", () => {
  it("addActionToGroup adds the cid and emits ActionAddedToGroup(master, groupId, cidHash) with three indexed topics", async () => {
    const { master } = await f.managedAccount();
    const id = await f.group(master);
    const [c] = (await f.actions(master)) as [bigint];
    const receipt = await f.write(f.payer, "addActionToGroup", [master, id, c]);
    expect(events(receipt)).toEqual([["ActionAddedToGroup", { master, groupId: id, cidHash: c }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics).toEqual([log!.topics[0], toHash32(master), toHash32(id), toHash32(c)]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([c]);
  });

  it("adding a cid already in the group succeeds and leaves it there once", async () => {
    const { master } = await f.managedAccount();
    const [c] = (await f.actions(master)) as [bigint];
    const id = await f.group(master, [c]);
    await f.write(f.payer, "addActionToGroup", [master, id, c]);
    await f.write(f.payer, "addActionToGroup", [master, id, 0n]);
    await f.write(f.payer, "addActionToGroup", [master, id, 0n]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([c, 0n]);
  });

  it("removeActionFromGroup removes the cid and emits ActionRemovedFromGroup(master, groupId, cidHash)", async () => {
    const { master } = await f.managedAccount();
    const [c1, c2] = (await f.actions(master, 2)) as [bigint, bigint];
    const id = await f.group(master, [c1, c2]);
    const receipt = await f.write(f.payer, "removeActionFromGroup", [master, id, c1]);
    expect(events(receipt)).toEqual([["ActionRemovedFromGroup", { master, groupId: id, cidHash: c1 }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(id), toHash32(c1)]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([c2]);
  });

  it("removing a cid that is not in the group reverts ActionDoesNotExist(cidHash)", async () => {
    const { master } = await f.managedAccount();
    const [inGroup, inOther] = (await f.actions(master, 2)) as [bigint, bigint];
    const id = await f.group(master, [inGroup]);
    await f.group(master, [inOther]);
    for (const c of [newCid().hash, inOther, 0n]) {
      expect(await f.revert(f.payer, "removeActionFromGroup", [master, id, c])).toEqual({
        errorName: "ActionDoesNotExist",
        args: [c],
      });
    }
  });

  it("both revert GroupDoesNotExist(id) on a nonexistent group", async () => {
    const { master } = await f.managedAccount();
    const c = newCid().hash;
    expect(await f.revert(f.payer, "addActionToGroup", [master, 7n, c])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [7n],
    });
    expect(await f.revert(f.payer, "removeActionFromGroup", [master, 7n, c])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [7n],
    });
    // Another account's group id is not this account's group.
    const other = await f.managedAccount();
    const otherId = await f.group(other.master, await f.actions(other.master));
    expect(await f.revert(f.payer, "addActionToGroup", [master, otherId, c])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [otherId],
    });
  });
});

// Issue 11, point 7: a group lists only actions its account registered (or 0, any action), so
// every hash a group permits has its CID on chain.
describe("only registered actions go into groups", () => {
  it("addActionToGroup, addGroup and updateGroup refuse an unregistered cid hash with ActionDoesNotExist(cidHash)", async () => {
    const { master } = await f.managedAccount();
    const id = await f.group(master);
    const [registered] = (await f.actions(master)) as [bigint];
    const { hash: unregistered } = newCid();
    expect(await f.revert(f.payer, "addActionToGroup", [master, id, unregistered])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [unregistered],
    });
    expect(await f.revert(f.payer, "addGroup", [master, "g", "", [registered, unregistered], []])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [unregistered],
    });
    expect(await f.revert(f.payer, "updateGroup", [master, id, "g", "", [0n, unregistered], []])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [unregistered],
    });
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([]);
  });

  it("another account's registration does not count", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const id = await f.group(master);
    const [theirs] = (await f.actions(other.master)) as [bigint];
    expect(await f.revert(f.payer, "addActionToGroup", [master, id, theirs])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [theirs],
    });
  });

  it("a ChainSecured admin is held to it too", async () => {
    const admin = await f.impersonate();
    const { master } = await f.chainSecuredAccount(admin);
    const id = await f.group(master, [], [], admin);
    const { cid, hash } = newCid();
    expect(await f.revert(admin, "addActionToGroup", [master, id, hash])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [hash],
    });
    await f.write(admin, "addAction", [master, hash, cid, "mine", ""]);
    await f.write(admin, "addActionToGroup", [master, id, hash]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([hash]);
  });

  it("an action removed with removeAction cannot be put back without registering it again", async () => {
    const { master } = await f.managedAccount();
    const [c] = (await f.actions(master)) as [bigint];
    const id = await f.group(master, [c]);
    await f.write(f.payer, "removeAction", [master, c]);
    expect(await f.revert(f.payer, "addActionToGroup", [master, id, c])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [c],
    });
  });
});

describe("registerActions and multicall", () => {
  it("registers each new CID without metadata, keeps a registered one's metadata, and emits ActionAdded for the new ones only", async () => {
    const { master } = await f.managedAccount();
    const known = newCid();
    await f.write(f.payer, "addAction", [master, known.hash, known.cid, "Known", "kept"]);
    const fresh = newCid();
    const receipt = await f.write(f.payer, "registerActions", [master, 0n, [known.cid, fresh.cid, fresh.cid]]);
    expect(events(receipt)).toEqual([["ActionAdded", { master, cidHash: fresh.hash }]]);
    expect(await f.read("listActions", [master, 0n, 10n])).toEqual([
      [
        { cidHash: known.hash, cid: known.cid, name: "Known", description: "kept" },
        { cidHash: fresh.hash, cid: fresh.cid, name: "", description: "" },
      ],
      2n,
    ]);
  });

  it("refuses an empty or over-long CID and more than 64 CIDs", async () => {
    const { master } = await f.managedAccount();
    expect(await f.revert(f.payer, "registerActions", [master, 0n, [""]])).toEqual({
      errorName: "InvalidRequest",
      args: ["cid is empty"],
    });
    expect(await f.revert(f.payer, "registerActions", [master, 0n, ["b".repeat(129)]])).toEqual({
      errorName: "LimitExceeded",
      args: ["cid", 128n],
    });
    const many = Array.from({ length: 65 }, () => newCid().cid);
    expect(await f.revert(f.payer, "registerActions", [master, 0n, many])).toEqual({
      errorName: "LimitExceeded",
      args: ["cids", 64n],
    });
  });

  it("refuses a group id the account does not have (0 stands for a group about to be created)", async () => {
    const { master } = await f.managedAccount();
    expect(await f.revert(f.payer, "registerActions", [master, 5n, [newCid().cid]])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [5n],
    });
  });

  it("multicall registers raw CIDs and puts them in a group in one transaction, all or nothing", async () => {
    const { master, amw } = await f.managedAccount();
    const id = await f.group(master);
    const a = newCid();
    const b = newCid();
    const receipt = await f.write(f.payer, "multicall", [
      [
        encodeFunctionData({ abi, functionName: "registerActions", args: [master, 0n, [a.cid, b.cid]] }),
        encodeFunctionData({ abi, functionName: "addActionToGroup", args: [master, id, a.hash] }),
        encodeFunctionData({ abi, functionName: "addGroup", args: [master, "both", "", [a.hash, b.hash], [amw]] }),
      ],
    ]);
    expect(events(receipt).map(([name]) => name)).toEqual([
      "ActionAdded",
      "ActionAdded",
      "ActionAddedToGroup",
      "GroupAdded",
    ]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual([a.hash]);
    expect((await f.read("getGroup", [master, id + 1n])).cidHashes).toEqual([a.hash, b.hash]);
    // A failing call reverts the batch with its own custom error, and the registration with it.
    const c = newCid();
    expect(
      await f.revert(f.payer, "multicall", [
        [
          encodeFunctionData({ abi, functionName: "registerActions", args: [master, 0n, [c.cid]] }),
          encodeFunctionData({ abi, functionName: "addActionToGroup", args: [master, 99n, c.hash] }),
        ],
      ]),
    ).toEqual({ errorName: "GroupDoesNotExist", args: [99n] });
  });

  it("multicall keeps the sender: a stranger's batch is refused like its calls", async () => {
    const { master } = await f.managedAccount();
    expect(
      await f.revert(f.stranger, "multicall", [
        [encodeFunctionData({ abi, functionName: "registerActions", args: [master, 0n, [newCid().cid]] })],
      ]),
    ).toEqual({
      errorName: "NoAccountAccess",
      args: [master, f.stranger],
    });
  });
});

describe("wallets in groups", () => {
  it("addPkpToGroup adds a registered wallet and emits PkpAddedToGroup(master, groupId, wallet) with the wallet as a topic", async () => {
    const { master, amw } = await f.managedAccount();
    const w = await f.wallet(master);
    const id = await f.group(master);
    const receipt = await f.write(f.payer, "addPkpToGroup", [master, id, w.address]);
    expect(events(receipt)).toEqual([["PkpAddedToGroup", { master, groupId: id, wallet: w.address }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(id), addressTopic(w.address)]);

    await f.write(f.payer, "addPkpToGroup", [master, id, amw]);
    await f.write(f.payer, "addPkpToGroup", [master, id, ZERO]);
    // Adding one already there is a no-op.
    await f.write(f.payer, "addPkpToGroup", [master, id, amw]);
    expect((await f.read("getGroup", [master, id])).wallets).toEqual([w.address, amw, ZERO]);
  });

  it("removePkpFromGroup removes it and emits PkpRemovedFromGroup(master, groupId, wallet)", async () => {
    const { master, amw } = await f.managedAccount();
    const w = await f.wallet(master);
    const id = await f.group(master, [], [amw, w.address, ZERO]);
    const receipt = await f.write(f.payer, "removePkpFromGroup", [master, id, w.address]);
    expect(events(receipt)).toEqual([["PkpRemovedFromGroup", { master, groupId: id, wallet: w.address }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(id), addressTopic(w.address)]);
    await f.write(f.payer, "removePkpFromGroup", [master, id, ZERO]);
    expect((await f.read("getGroup", [master, id])).wallets).toEqual([amw]);
  });

  it("refuses another account's wallet or an unregistered one with WalletNotRegistered", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const id = await f.group(master);
    const stray = randomAddress();
    for (const w of [other.amw, stray]) {
      expect(await f.revert(f.payer, "addPkpToGroup", [master, id, w])).toEqual({
        errorName: "WalletNotRegistered",
        args: [w],
      });
      expect(await f.revert(f.payer, "removePkpFromGroup", [master, id, w])).toEqual({
        errorName: "WalletNotRegistered",
        args: [w],
      });
    }
  });

  it("removing a wallet of the account that is not in the group reverts InvalidRequest('wallet is not in the group')", async () => {
    const { master, amw } = await f.managedAccount();
    const w = await f.wallet(master);
    const id = await f.group(master, [], [amw]);
    for (const x of [w.address, ZERO]) {
      expect(await f.revert(f.payer, "removePkpFromGroup", [master, id, x])).toEqual({
        errorName: "InvalidRequest",
        args: ["wallet is not in the group"],
      });
    }
  });

  it("both revert GroupDoesNotExist(id) on a nonexistent group", async () => {
    const { master, amw } = await f.managedAccount();
    expect(await f.revert(f.payer, "addPkpToGroup", [master, 3n, amw])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [3n],
    });
    expect(await f.revert(f.payer, "removePkpFromGroup", [master, 3n, amw])).toEqual({
      errorName: "GroupDoesNotExist",
      args: [3n],
    });
  });
});

describe("registerWalletDerivation", () => {
  it("returns sequential wallet ids after the AMW's 0 and emits WalletRegistered(master, wallet, walletId)", async () => {
    const { master, amw } = await f.managedAccount();
    const ids: bigint[] = [];
    const registered: Address[] = [];
    for (let i = 0; i < 3; i++) {
      const w = randomAddress();
      const args = [master, w, BigInt(generatePrivateKey()), `wallet ${i}`, `desc ${i}`] as const;
      const { result } = await f.publicClient.simulateContract({
        address: f.address,
        abi,
        functionName: "registerWalletDerivation",
        args,
        account: f.payer,
      });
      const receipt = await f.write(f.payer, "registerWalletDerivation", args);
      expect(events(receipt)).toEqual([["WalletRegistered", { master, wallet: w, walletId: result }]]);
      const [log] = parseEventLogs({ abi, logs: receipt.logs });
      expect(log!.topics.slice(1)).toEqual([toHash32(master), addressTopic(w)]);
      ids.push(result);
      registered.push(w);
    }
    expect(ids).toEqual([1n, 2n, 3n]);
    const [wallets, total] = await f.read("listWallets", [master, 0n, 10n]);
    expect(total).toBe(4n);
    expect(wallets).toEqual([
      { id: 0n, wallet: amw, name: "", description: "" },
      ...registered.map((wallet, i) => ({ id: BigInt(i + 1), wallet, name: `wallet ${i}`, description: `desc ${i}` })),
    ]);
  });

  it("rejects derivation 0 and wallet address(0) with InvalidRequest", async () => {
    const { master } = await f.managedAccount();
    expect(await f.revert(f.payer, "registerWalletDerivation", [master, randomAddress(), 0n, "w", ""])).toEqual({
      errorName: "InvalidRequest",
      args: ["derivation is zero"],
    });
    expect(await f.revert(f.payer, "registerWalletDerivation", [master, ZERO, 5n, "w", ""])).toEqual({
      errorName: "InvalidRequest",
      args: ["wallet is the zero address"],
    });
  });

  it("rejects a wallet already registered to this or any other account with WalletAlreadyRegistered", async () => {
    const { master, amw } = await f.managedAccount();
    const other = await f.managedAccount();
    const mine = await f.wallet(master);
    const theirs = await f.wallet(other.master);
    for (const w of [amw, mine.address, other.amw, theirs.address]) {
      expect(await f.revert(f.payer, "registerWalletDerivation", [master, w, 9n, "w", ""])).toEqual({
        errorName: "WalletAlreadyRegistered",
        args: [w],
      });
    }
  });

  it("getWalletDerivation returns the derivation to the owning account and 0 through any other account", async () => {
    const { master, amw } = await f.managedAccount();
    const other = await f.managedAccount();
    const w = randomAddress();
    const derivation = BigInt(generatePrivateKey());
    await f.write(f.payer, "registerWalletDerivation", [master, w, derivation, "w", ""]);
    expect(await f.read("getWalletDerivation", [master, w])).toBe(derivation);
    expect(await f.read("getWalletDerivation", [master, amw])).toBe(master);
    expect(await f.read("getWalletDerivation", [other.master, w])).toBe(0n);
    expect(await f.read("getWalletDerivation", [other.master, amw])).toBe(0n);
    expect(await f.read("getWalletDerivation", [master, randomAddress()])).toBe(0n);
    expect(await f.read("getWalletDerivation", [master, ZERO])).toBe(0n);
  });
});

describe("actions registry", () => {
  it("addAction registers the cid with its metadata and emits ActionAdded(master, cidHash)", async () => {
    const { master } = await f.managedAccount();
    const { cid, hash } = newCid();
    const receipt = await f.write(f.payer, "addAction", [master, hash, cid, "Deploy", "ships the app"]);
    expect(events(receipt)).toEqual([["ActionAdded", { master, cidHash: hash }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);
    expect(await f.read("listActions", [master, 0n, 10n])).toEqual([
      [{ cidHash: hash, cid, name: "Deploy", description: "ships the app" }],
      1n,
    ]);
    expect((await f.read("getAccount", [master])).actionCount).toBe(1n);
  });

  it("rejects a cid hash that does not match keccak(cid), and an empty cid", async () => {
    const { master } = await f.managedAccount();
    const a = newCid();
    const b = newCid();
    expect(await f.revert(f.payer, "addAction", [master, b.hash, a.cid, "n", ""])).toEqual({
      errorName: "InvalidRequest",
      args: ["cid hash does not match cid"],
    });
    expect(await f.revert(f.payer, "addAction", [master, 0n, a.cid, "n", ""])).toEqual({
      errorName: "InvalidRequest",
      args: ["cid hash does not match cid"],
    });
    expect(await f.revert(f.payer, "addAction", [master, cidHash(""), "", "n", ""])).toEqual({
      errorName: "InvalidRequest",
      args: ["cid is empty"],
    });
  });

  it("calling addAction again for the same cid replaces its metadata", async () => {
    const { master } = await f.managedAccount();
    const { cid, hash } = newCid();
    await f.write(f.payer, "addAction", [master, hash, cid, "first", "one"]);
    const receipt = await f.write(f.payer, "addAction", [master, hash, cid, "second", ""]);
    expect(events(receipt)).toEqual([["ActionAdded", { master, cidHash: hash }]]);
    expect(await f.read("listActions", [master, 0n, 10n])).toEqual([
      [{ cidHash: hash, cid, name: "second", description: "" }],
      1n,
    ]);
  });

  it("updateActionMetadata changes name and description only and emits ActionMetadataUpdated(master, cidHash)", async () => {
    const { master } = await f.managedAccount();
    const { cid, hash } = newCid();
    await f.write(f.payer, "addAction", [master, hash, cid, "old", "old words"]);
    const receipt = await f.write(f.payer, "updateActionMetadata", [master, hash, "new", "new words"]);
    expect(events(receipt)).toEqual([["ActionMetadataUpdated", { master, cidHash: hash }]]);
    const [log] = parseEventLogs({ abi, logs: receipt.logs });
    expect(log!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);
    expect(await f.read("listActions", [master, 0n, 10n])).toEqual([
      [{ cidHash: hash, cid, name: "new", description: "new words" }],
      1n,
    ]);
  });

  it("updateActionMetadata on an action that is not registered reverts ActionDoesNotExist(cidHash)", async () => {
    const { master } = await f.managedAccount();
    const { hash } = newCid();
    expect(await f.revert(f.payer, "updateActionMetadata", [master, hash, "n", ""])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [hash],
    });
    // Another account's registered action is not this account's.
    const other = await f.managedAccount();
    const theirs = newCid();
    await f.write(f.payer, "addAction", [other.master, theirs.hash, theirs.cid, "n", ""]);
    expect(await f.revert(f.payer, "updateActionMetadata", [master, theirs.hash, "n", ""])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [theirs.hash],
    });
  });

  it("removeAction unregisters it and drops it from every group, emitting ActionRemovedFromGroup per group then ActionRemoved", async () => {
    const { master } = await f.managedAccount();
    const { cid, hash } = newCid();
    const [keep] = (await f.actions(master)) as [bigint];
    await f.write(f.payer, "addAction", [master, hash, cid, "n", "d"]);
    const g1 = await f.group(master, [hash, keep]);
    const g2 = await f.group(master, [keep]);
    const g3 = await f.group(master, [0n, hash]);

    const receipt = await f.write(f.payer, "removeAction", [master, hash]);
    expect(events(receipt)).toEqual([
      ["ActionRemovedFromGroup", { master, groupId: g1, cidHash: hash }],
      ["ActionRemovedFromGroup", { master, groupId: g3, cidHash: hash }],
      ["ActionRemoved", { master, cidHash: hash }],
    ]);
    const logs = parseEventLogs({ abi, logs: receipt.logs });
    expect(logs[2]!.topics.slice(1)).toEqual([toHash32(master), toHash32(hash)]);

    expect((await f.read("listActions", [master, 0n, 10n]))[0].map((a) => a.cidHash)).toEqual([keep]);
    expect((await f.read("getGroup", [master, g1])).cidHashes).toEqual([keep]);
    expect((await f.read("getGroup", [master, g2])).cidHashes).toEqual([keep]);
    expect((await f.read("getGroup", [master, g3])).cidHashes).toEqual([0n]);
    // And it is gone: removing again finds nothing.
    expect(await f.revert(f.payer, "removeAction", [master, hash])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [hash],
    });
  });

  it("removeAction of a registered action in no group emits only ActionRemoved", async () => {
    const { master } = await f.managedAccount();
    const { cid, hash } = newCid();
    await f.write(f.payer, "addAction", [master, hash, cid, "n", ""]);
    await f.group(master, await f.actions(master));
    const receipt = await f.write(f.payer, "removeAction", [master, hash]);
    expect(events(receipt)).toEqual([["ActionRemoved", { master, cidHash: hash }]]);
    expect((await f.read("listActions", [master, 0n, 10n]))[0].map((a) => a.cidHash)).not.toContain(hash);
  });

  it("removeAction of an action neither registered nor in any group reverts ActionDoesNotExist(cidHash)", async () => {
    const { master } = await f.managedAccount();
    await f.group(master, await f.actions(master));
    const { hash } = newCid();
    expect(await f.revert(f.payer, "removeAction", [master, hash])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [hash],
    });
    // Registered by another account does not count for this one.
    const other = await f.managedAccount();
    const theirs = newCid();
    await f.write(f.payer, "addAction", [other.master, theirs.hash, theirs.cid, "n", ""]);
    expect(await f.revert(f.payer, "removeAction", [master, theirs.hash])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [theirs.hash],
    });
  });
});

// A group of version 1 may list an unregistered hash; upgradeV1.test.ts reads one back.
describe("listActionsInGroup", () => {
  it("shows registered metadata for the group's cids, and the wildcard 0", async () => {
    const { master } = await f.managedAccount();
    const reg = newCid();
    await f.write(f.payer, "addAction", [master, reg.hash, reg.cid, "Registered", "has metadata"]);
    const id = await f.group(master, [reg.hash, 0n]);
    expect(await f.read("listActionsInGroup", [master, id, 0n, 10n])).toEqual([
      [
        { cidHash: reg.hash, cid: reg.cid, name: "Registered", description: "has metadata" },
        { cidHash: 0n, cid: "", name: "", description: "" },
      ],
      2n,
    ]);
  });
});

describe("listWalletsInGroup", () => {
  it("reports address(0) with id 2**256-1 (ANY_WALLET_ID) and real wallets with their ids and names", async () => {
    const { master, amw } = await f.managedAccount();
    const w = randomAddress();
    await f.write(f.payer, "registerWalletDerivation", [master, w, 77n, "Treasury", "cold"]);
    const id = await f.group(master, [], [amw, ZERO, w]);
    expect(await f.read("ANY_WALLET_ID", [])).toBe(ANY_WALLET_ID);
    expect(await f.read("listWalletsInGroup", [master, id, 0n, 10n])).toEqual([
      [
        { id: 0n, wallet: amw, name: "", description: "" },
        { id: ANY_WALLET_ID, wallet: ZERO, name: "", description: "" },
        { id: 1n, wallet: w, name: "Treasury", description: "cold" },
      ],
      3n,
    ]);
  });
});
