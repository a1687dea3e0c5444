// The contract's limits: exactly at each limit succeeds, one over reverts LimitExceeded(what, max).
// 64 CIDs and 64 wallets per group, 64 ids per usage-key list, names ≤ 128 bytes, descriptions
// ≤ 1024 bytes, a cid ≤ 128 bytes, at most 256 payers, a wallet's guardrail document ≤ 16384 bytes.
// Lengths are UTF-8 bytes, not characters.
import { keccak256, stringToHex, type Address } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";
import { deployFixture, randomAddress, usageKeyArgs, ZERO, type Fixture } from "./fixture.ts";

let f: Fixture;
let master: bigint;
/** 65 wallets registered to `master` (besides its AMW). */
let wallets: Address[];

beforeAll(async () => {
  f = await deployFixture();
  ({ master } = await f.managedAccount());
  wallets = [];
  for (let i = 0; i < 65; i++) wallets.push((await f.wallet(master)).address);
});

function limit(what: string, max: bigint) {
  return { errorName: "LimitExceeded", args: [what, max] };
}

let cidCounter = 0;
/** `n` CIDs registered with `master` (groups list only registered actions); their hashes. */
async function cids(n: number): Promise<bigint[]> {
  const all = Array.from({ length: n }, () => `bafklimit${++cidCounter}`);
  for (let i = 0; i < n; i += 64) await f.write(f.payer, "registerActions", [master, 0n, all.slice(i, i + 64)]);
  return all.map(cidHash);
}

function freshHash(): bigint {
  return apiKeyHash(generateApiKey());
}

describe("cids per group (64)", () => {
  it("addGroup takes 64 cid hashes and refuses 65", async () => {
    const sixtyFour = await cids(64);
    const id = await f.group(master, sixtyFour);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual(sixtyFour);
    expect(await f.revert(f.payer, "addGroup", [master, "g", "", await cids(65), []])).toEqual(limit("cids", 64n));
  });

  it("addActionToGroup refuses to push a group from 64 to 65 cids, but re-adding one already there is fine", async () => {
    const full = await cids(64);
    const id = await f.group(master, full);
    const [extra] = await cids(1);
    expect(await f.revert(f.payer, "addActionToGroup", [master, id, extra!])).toEqual(limit("cids", 64n));
    expect(await f.revert(f.payer, "addActionToGroup", [master, id, 0n])).toEqual(limit("cids", 64n));
    await f.write(f.payer, "addActionToGroup", [master, id, full[10]!]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toHaveLength(64);
    // One out, another in: back at the limit.
    await f.write(f.payer, "removeActionFromGroup", [master, id, full[0]!]);
    await f.write(f.payer, "addActionToGroup", [master, id, extra!]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toHaveLength(64);
  });

  it("updateGroup takes 64 cid hashes and refuses 65", async () => {
    const id = await f.group(master);
    const sixtyFour = await cids(64);
    await f.write(f.payer, "updateGroup", [master, id, "g", "", sixtyFour, []]);
    expect((await f.read("getGroup", [master, id])).cidHashes).toEqual(sixtyFour);
    expect(await f.revert(f.payer, "updateGroup", [master, id, "g", "", await cids(65), []])).toEqual(
      limit("cids", 64n),
    );
  });
});

describe("wallets per group (64)", () => {
  it("addGroup takes 64 registered wallets and refuses 65", async () => {
    const id = await f.group(master, [], wallets.slice(0, 64));
    expect((await f.read("getGroup", [master, id])).wallets).toEqual(wallets.slice(0, 64));
    expect(await f.revert(f.payer, "addGroup", [master, "g", "", [], wallets])).toEqual(limit("wallets", 64n));
  });

  it("addPkpToGroup refuses to push a group from 64 to 65 wallets, address(0) included", async () => {
    const id = await f.group(master, [], wallets.slice(0, 64));
    expect(await f.revert(f.payer, "addPkpToGroup", [master, id, wallets[64]!])).toEqual(limit("wallets", 64n));
    expect(await f.revert(f.payer, "addPkpToGroup", [master, id, ZERO])).toEqual(limit("wallets", 64n));
    // Re-adding one already there does not grow the set.
    await f.write(f.payer, "addPkpToGroup", [master, id, wallets[3]!]);
    await f.write(f.payer, "removePkpFromGroup", [master, id, wallets[0]!]);
    await f.write(f.payer, "addPkpToGroup", [master, id, wallets[64]!]);
    expect((await f.read("getGroup", [master, id])).wallets).toHaveLength(64);
  });

  it("updateGroup takes 64 wallets (with 64 cids) and refuses 65", async () => {
    const id = await f.group(master);
    await f.write(f.payer, "updateGroup", [master, id, "g", "", await cids(64), wallets.slice(1, 65)]);
    expect((await f.read("getGroup", [master, id])).wallets).toEqual(wallets.slice(1, 65));
    expect(await f.revert(f.payer, "updateGroup", [master, id, "g", "", [], wallets])).toEqual(limit("wallets", 64n));
  });
});

describe("group ids per usage-key list (64)", () => {
  const lists = ["manageIpfsIdsInGroups", "addPkpToGroups", "removePkpFromGroups", "executeInGroups"] as const;

  it("setUsageApiKey takes 64 ids in each list", async () => {
    const sixtyFour = Array.from({ length: 64 }, () => 0n);
    const hash = freshHash();
    await f.setUsageKey(master, hash, {
      manageIpfsIdsInGroups: sixtyFour,
      addPkpToGroups: sixtyFour,
      removePkpFromGroups: sixtyFour,
      executeInGroups: sixtyFour,
    });
    const [keys] = await f.read("listUsageApiKeys", [master, 0n, 100n]);
    const key = keys.find((k) => k.keyHash === hash)!;
    for (const list of lists) expect(key[list]).toEqual(sixtyFour);
  });

  it("setUsageApiKey refuses 65 ids in any one list", async () => {
    const sixtyFive = Array.from({ length: 65 }, () => 0n);
    for (const list of lists) {
      expect(
        await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, freshHash(), { [list]: sixtyFive })),
      ).toEqual(limit("group ids", 64n));
    }
  });
});

describe("names (128 bytes)", () => {
  it("addGroup takes a 128-byte name and refuses 129 bytes, counting UTF-8 bytes", async () => {
    for (const name of ["a".repeat(128), "é".repeat(64)]) {
      await f.write(f.payer, "addGroup", [master, name, "", [], []]);
    }
    const [groups] = await f.read("listGroups", [master, 0n, 100n]);
    expect(groups.map((g) => g.name)).toEqual(expect.arrayContaining(["a".repeat(128), "é".repeat(64)]));
    for (const name of ["a".repeat(129), `${"é".repeat(64)}a`, "é".repeat(65)]) {
      expect(await f.revert(f.payer, "addGroup", [master, name, "", [], []])).toEqual(limit("name", 128n));
    }
  });

  it("every write that takes a name refuses 129 bytes", async () => {
    const long = "n".repeat(129);
    const id = await f.group(master);
    const cid = "bafknamelimit";
    await f.write(f.payer, "addAction", [master, cidHash(cid), cid, "", ""]);
    const usage = await f.usageKey(master);
    const fresh = freshHash();
    expect(await f.revert(f.payer, "newAccount", [fresh, long, "", randomAddress(), fresh])).toEqual(
      limit("name", 128n),
    );
    expect(await f.revert(await f.impersonate(), "newChainSecuredAccount", [long, "", randomAddress()])).toEqual(
      limit("name", 128n),
    );
    expect(await f.revert(f.payer, "updateGroup", [master, id, long, "", [], []])).toEqual(limit("name", 128n));
    expect(await f.revert(f.payer, "registerWalletDerivation", [master, randomAddress(), 1n, long, ""])).toEqual(
      limit("name", 128n),
    );
    expect(await f.revert(f.payer, "addAction", [master, cidHash(cid), cid, long, ""])).toEqual(limit("name", 128n));
    expect(await f.revert(f.payer, "updateActionMetadata", [master, cidHash(cid), long, ""])).toEqual(
      limit("name", 128n),
    );
    expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, freshHash(), {}, long))).toEqual(
      limit("name", 128n),
    );
    expect(await f.revert(f.payer, "updateUsageApiKeyMetadata", [master, usage.hash, long, ""])).toEqual(
      limit("name", 128n),
    );
    // And takes exactly 128.
    await f.write(f.payer, "updateUsageApiKeyMetadata", [master, usage.hash, "n".repeat(128), ""]);
  });
});

describe("descriptions (1024 bytes)", () => {
  it("addGroup takes a 1024-byte description and refuses 1025 bytes", async () => {
    const receipt = await f.write(f.payer, "addGroup", [master, "g", "d".repeat(1024), [], []]);
    expect(receipt.status).toBe("success");
    await f.write(f.payer, "addGroup", [master, "g", "é".repeat(512), [], []]);
    for (const description of ["d".repeat(1025), `${"é".repeat(512)}d`]) {
      expect(await f.revert(f.payer, "addGroup", [master, "g", description, [], []])).toEqual(
        limit("description", 1024n),
      );
    }
  });

  it("newChainSecuredAccount takes a 1024-byte description and refuses 1025 bytes", async () => {
    const refused = await f.impersonate();
    expect(await f.revert(refused, "newChainSecuredAccount", ["n", "d".repeat(1025), randomAddress()])).toEqual(
      limit("description", 1024n),
    );
    const other = await f.impersonate();
    await f.write(other, "newChainSecuredAccount", ["n", "d".repeat(1024), randomAddress()]);
    expect((await f.read("getAccount", [walletLookupHash(other)])).description).toBe("d".repeat(1024));
  });
});

describe("descriptions on every other write (1024 bytes)", () => {
  it("every write that takes a description refuses 1025 bytes", async () => {
    const long = "d".repeat(1025);
    const id = await f.group(master);
    const cid = "bafkdesclimit";
    await f.write(f.payer, "addAction", [master, cidHash(cid), cid, "", ""]);
    const usage = await f.usageKey(master);
    const fresh = freshHash();
    expect(await f.revert(f.payer, "newAccount", [fresh, "n", long, randomAddress(), fresh])).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "updateGroup", [master, id, "n", long, [], []])).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "registerWalletDerivation", [master, randomAddress(), 1n, "n", long])).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "addAction", [master, cidHash(cid), cid, "n", long])).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "updateActionMetadata", [master, cidHash(cid), "n", long])).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "setUsageApiKey", usageKeyArgs(master, freshHash(), {}, "n", long))).toEqual(
      limit("description", 1024n),
    );
    expect(await f.revert(f.payer, "updateUsageApiKeyMetadata", [master, usage.hash, "n", long])).toEqual(
      limit("description", 1024n),
    );
    await f.write(f.payer, "updateUsageApiKeyMetadata", [master, usage.hash, "n", "d".repeat(1024)]);
  });
});

describe("cid (128 bytes)", () => {
  it("addAction takes a 128-byte cid and refuses 129 bytes (with a matching cid hash)", async () => {
    const at = `b${"a".repeat(127)}`;
    const { master } = await f.managedAccount(); // the shared one holds more actions than a page
    await f.write(f.payer, "addAction", [master, cidHash(at), at, "long", ""]);
    expect(await f.read("listActions", [master, 0n, 100n])).toEqual([
      [{ cidHash: cidHash(at), cid: at, name: "long", description: "" }],
      1n,
    ]);
    const over = `b${"a".repeat(128)}`;
    expect(await f.revert(f.payer, "addAction", [master, cidHash(over), over, "long", ""])).toEqual(limit("cid", 128n));
  });
});

describe("payers (256)", () => {
  it("setApiPayers from the owner takes 256 payers and refuses 257", async () => {
    const many = [f.payer, f.otherPayer, ...Array.from({ length: 254 }, () => randomAddress())];
    await f.write(f.owner, "setApiPayers", [many]);
    expect(await f.read("apiPayers", [])).toEqual(many);
    expect(await f.revert(f.owner, "setApiPayers", [[...many, randomAddress()]])).toEqual(limit("payers", 256n));
    await f.write(f.owner, "setApiPayers", [[f.payer, f.otherPayer]]);
    expect(await f.read("apiPayers", [])).toEqual([f.payer, f.otherPayer]);
  });
});

describe("guardrail documents (16384 bytes)", () => {
  it("setWalletGuardrail takes a 16384-byte document and refuses 16385 bytes, counting UTF-8 bytes", async () => {
    const w = wallets[0]!;
    const at = `{"description":"${"a".repeat(16366)}"}`;
    expect(at.length).toBe(16384);
    const receipt = await f.write(f.payer, "setWalletGuardrail", [master, w, at]);
    expect(await f.read("getWalletGuardrail", [master, w])).toEqual([keccak256(stringToHex(at)), receipt.blockNumber]);
    // 16383 characters, one of them two bytes long: 16384 bytes, taken.
    const multiByte = `{"description":"é${"a".repeat(16364)}"}`;
    expect([multiByte.length, new TextEncoder().encode(multiByte).length]).toEqual([16383, 16384]);
    await f.write(f.payer, "setWalletGuardrail", [master, w, multiByte]);
    for (const over of [`${at} `, `{"description":"é${"a".repeat(16365)}"}`]) {
      expect(new TextEncoder().encode(over).length).toBe(16385);
      expect(await f.revert(f.payer, "setWalletGuardrail", [master, w, over])).toEqual(
        limit("guardrail bytes", 16384n),
      );
    }
  });
});
