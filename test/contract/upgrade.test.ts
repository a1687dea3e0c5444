// The proxy: upgrades by the owner only with state preserved, initialization locked, the ERC-7201
// storage location, the fallback to the views, and the code-size limit.
import {
  encodeAbiParameters,
  getAddress,
  hexToBigInt,
  keccak256,
  parseEventLogs,
  size,
  stringToHex,
  toHex,
  type Address,
  type Hex,
} from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { deployImplementation } from "../../contracts/deploy.ts";
import { abi, decodeRevert, deployFixture, hashEntrySlot, layoutSlot, type Fixture } from "./fixture.ts";

const EIP170_LIMIT = 24_576;
const IMPLEMENTATION_SLOT: Hex = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

async function implementationOf(proxy: Address): Promise<Address> {
  const word = await f.publicClient.getStorageAt({ address: proxy, slot: IMPLEMENTATION_SLOT });
  return getAddress(`0x${word!.slice(-40)}`);
}

function clients() {
  return { publicClient: f.publicClient, walletClient: f.walletClient, account: f.owner };
}

describe("code size", () => {
  it("keeps the implementation and the views under the 24 576-byte limit", async () => {
    for (const address of [f.deployment.implementation, f.deployment.views]) {
      const code = await f.publicClient.getCode({ address });
      expect(code).toBeDefined();
      expect(size(code!)).toBeGreaterThan(0);
      expect(size(code!)).toBeLessThan(EIP170_LIMIT);
    }
  });
});

describe("storage layout", () => {
  it("keeps its state at the ERC-7201 location of sigil.storage.AccountConfig", async () => {
    // The root from the ERC-7201 formula, written out here independently of the fixture's helper.
    const namespace = hexToBigInt(keccak256(stringToHex("sigil.storage.AccountConfig"))) - 1n;
    const slot = hexToBigInt(keccak256(encodeAbiParameters([{ type: "uint256" }], [namespace]))) & ~0xffn;
    expect(slot).toBe(layoutSlot());
    const { master } = await f.managedAccount();
    // Layout.hashes is the first member: hashes[master] = {master, kind = Master (1)}.
    const entry = hashEntrySlot(master);
    const stored = await f.publicClient.getStorageAt({ address: f.address, slot: toHex(entry, { size: 32 }) });
    const kind = await f.publicClient.getStorageAt({ address: f.address, slot: toHex(entry + 1n, { size: 32 }) });
    expect(hexToBigInt(stored!)).toBe(master);
    expect(hexToBigInt(kind!)).toBe(1n);
  });
});

describe("initialization", () => {
  it("cannot initialize the proxy a second time", async () => {
    expect(await f.revert(f.stranger, "initialize", [f.stranger])).toEqual({
      errorName: "InvalidInitialization",
      args: [],
    });
  });

  it("cannot initialize the bare implementation", async () => {
    try {
      await f.publicClient.simulateContract({
        address: f.deployment.implementation,
        abi,
        functionName: "initialize",
        args: [f.stranger],
        account: f.stranger,
      });
      expect.unreachable("initialize on the implementation should revert");
    } catch (err) {
      expect(decodeRevert(err).errorName).toBe("InvalidInitialization");
    }
  });

  it("records the deployer-chosen owner", async () => {
    expect(await f.read("owner", [])).toBe(f.owner);
  });
});

describe("views fallback", () => {
  it("answers the read views through the proxy and reverts an unknown selector", async () => {
    const { master } = await f.managedAccount("via fallback");
    expect((await f.read("getAccount", [master])).name).toBe("via fallback");
    await expect(f.publicClient.call({ to: f.address, data: "0xdeadbeef" })).rejects.toThrow();
  });
});

describe("upgrades", () => {
  it("are refused to anyone but the owner, payers included", async () => {
    const { implementation } = await deployImplementation(clients(), { implementationName: "AccountConfigNext" });
    for (const sender of [f.stranger, f.payer]) {
      expect(await f.revert(sender, "upgradeToAndCall", [implementation, "0x"])).toEqual({
        errorName: "OwnableUnauthorizedAccount",
        args: [sender],
      });
    }
    expect(await implementationOf(f.address)).toBe(getAddress(f.deployment.implementation));
  });

  it("refuse a target that is not a UUPS implementation", async () => {
    // The views contract has code but no proxiableUUID: upgrading to it would brick the proxy.
    expect(await f.revert(f.owner, "upgradeToAndCall", [f.deployment.views, "0x"])).toEqual({
      errorName: "ERC1967InvalidImplementation",
      args: [f.deployment.views],
    });
  });

  it("by the owner run the new code and keep every account, key, wallet, group and action", async () => {
    const a = await f.managedAccount("before upgrade");
    const wallet = await f.wallet(a.master);
    const [action] = (await f.actions(a.master)) as [bigint];
    const groupId = await f.group(a.master, [action], [wallet.address]);
    const usage = await f.usageKey(a.master, { executeInGroups: [groupId], canCreateGroups: true });
    const sovereign = await f.impersonate();
    const s = await f.chainSecuredAccount(sovereign);
    const snapshot = async () => ({
      account: await f.read("getAccount", [a.master]),
      wallets: await f.read("listWallets", [a.master, 0n, 100n]),
      groups: await f.read("listGroups", [a.master, 0n, 100n]),
      keys: await f.read("listUsageApiKeys", [a.master, 0n, 100n]),
      resolveUsage: await f.read("resolveKey", [usage.hash]),
      sovereign: await f.read("getAccount", [s.master]),
      authorized: await f.read("authorizeExecution", [usage.hash, action, [wallet.address]]),
      payers: await f.read("apiPayers", []),
    });
    const before = await snapshot();
    expect(await f.read("version", [])).toBe("2");

    const next = await deployImplementation(clients(), { implementationName: "AccountConfigNext" });
    const receipt = await f.write(f.owner, "upgradeToAndCall", [next.implementation, "0x"]);
    expect(parseEventLogs({ abi, logs: receipt.logs, eventName: "Upgraded" })[0]!.args.implementation).toBe(
      getAddress(next.implementation),
    );
    expect(await implementationOf(f.address)).toBe(getAddress(next.implementation));
    expect(await f.read("version", [])).toBe("next");
    expect(await snapshot()).toEqual(before);

    // Writes keep working on the old state: the usage key still creates groups.
    await f.write(f.payer, "addGroup", [usage.hash, "after upgrade", "", [], []]);
    expect((await f.read("getAccount", [a.master])).groupCount).toBe(before.account.groupCount + 1n);
  });

  it("move to a new owner only once the new owner accepts (two-step ownership)", async () => {
    const g = await deployFixture();
    const newOwner = g.alice;
    await g.write(g.owner, "transferOwnership", [newOwner]);
    expect(await g.read("owner", [])).toBe(g.owner);
    expect(await g.read("pendingOwner", [])).toBe(newOwner);
    await g.write(newOwner, "acceptOwnership", []);
    expect(await g.read("owner", [])).toBe(newOwner);
    const next = await deployImplementation({
      publicClient: g.publicClient,
      walletClient: g.walletClient,
      account: g.owner,
    });
    expect((await g.revert(g.owner, "upgradeToAndCall", [next.implementation, "0x"])).errorName).toBe(
      "OwnableUnauthorizedAccount",
    );
    await g.write(newOwner, "upgradeToAndCall", [next.implementation, "0x"]);
    const word = await g.publicClient.getStorageAt({ address: g.address, slot: IMPLEMENTATION_SLOT });
    expect(getAddress(`0x${word!.slice(-40)}`)).toBe(getAddress(next.implementation));
  });
});
