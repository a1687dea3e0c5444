// Accounts: creation in both modes, conversion, the ownership-transfer table, aliases, resolveKey,
// and the two namespaces (API-key hashes, wallet lookup hashes) that a usage key cannot cross.
import { parseEventLogs, toHex, type Address } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, walletLookupHash } from "../../shared/hashing.ts";
import { abi, aliasSlot, deployFixture, randomAddress, ZERO, type Fixture } from "./fixture.ts";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

describe("newAccount", () => {
  it("creates a managed account whose admin and wallet 0 are the Account Master Wallet", async () => {
    const { master, amw, receipt } = await f.managedAccount("Acme");
    const account = await f.read("getAccount", [master]);
    expect(account).toMatchObject({ master, admin: amw, managed: true, name: "Acme", walletCount: 1n, groupCount: 0n });
    const [wallets, total] = await f.read("listWallets", [master, 0n, 10n]);
    expect(total).toBe(1n);
    expect(wallets[0]).toMatchObject({ id: 0n, wallet: amw });
    expect(await f.read("getWalletDerivation", [master, amw])).toBe(master);
    expect(await f.read("resolveKey", [master])).toEqual([master, true, true, true]);
    // The AMW is the admin: its lookup hash is an alias, which is not an API key.
    expect(await f.read("accountOfWallet", [amw])).toEqual([master, amw, true]);
    expect(await f.read("resolveKey", [walletLookupHash(amw)])).toEqual([0n, false, false, false]);

    const events = parseEventLogs({ abi, logs: receipt.logs });
    expect(events.map((e) => e.eventName)).toEqual(["AccountCreated", "WalletRegistered"]);
    expect(events[0]!.args).toEqual({ master, admin: amw, managed: true });
    expect(events[1]!.args).toEqual({ master, wallet: amw, walletId: 0n });
  });

  it("is refused to anyone but a payer, the contract owner included", async () => {
    const key = apiKeyHash(generateApiKey());
    for (const sender of [f.owner, f.stranger, f.alice]) {
      expect(await f.revert(sender, "newAccount", [key, "n", "", randomAddress(), key])).toEqual({
        errorName: "NoAccountAccess",
        args: [key, sender],
      });
    }
  });

  it("cannot take a master hash, a wallet or an admin's alias twice", async () => {
    const { master, amw } = await f.managedAccount();
    const fresh = apiKeyHash(generateApiKey());
    expect(await f.revert(f.payer, "newAccount", [master, "n", "", randomAddress(), master])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [master],
    });
    expect(await f.revert(f.payer, "newAccount", [fresh, "n", "", amw, fresh])).toEqual({
      errorName: "WalletAlreadyRegistered",
      args: [amw],
    });
    // alice was never a wallet, but once she administers an account she cannot be an AMW.
    await f.chainSecuredAccount(f.alice);
    // Nor can a managed account be made under her account's master hash (her wallet lookup hash):
    // that account exists only in the alias namespace, and newAccount would overwrite it.
    const aliceMaster = walletLookupHash(f.alice);
    expect(await f.revert(f.payer, "newAccount", [aliceMaster, "n", "", randomAddress(), aliceMaster])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [aliceMaster],
    });
    expect(await f.revert(f.payer, "newAccount", [fresh, "n", "", f.alice, fresh])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(f.alice)],
    });
  });

  it("rejects a zero hash, wallet or derivation", async () => {
    const key = apiKeyHash(generateApiKey());
    expect((await f.revert(f.payer, "newAccount", [0n, "n", "", randomAddress(), 1n])).errorName).toBe(
      "InvalidRequest",
    );
    expect((await f.revert(f.payer, "newAccount", [key, "n", "", ZERO, 1n])).errorName).toBe("InvalidRequest");
    expect((await f.revert(f.payer, "newAccount", [key, "n", "", randomAddress(), 0n])).errorName).toBe(
      "InvalidRequest",
    );
  });
});

describe("newChainSecuredAccount", () => {
  it("creates an unmanaged account whose master hash is the sender's wallet lookup hash and whose wallet 0 is the named AMW", async () => {
    const { master, amw, receipt } = await f.chainSecuredAccount(f.bob, "Bob's");
    expect(master).toBe(walletLookupHash(f.bob));
    expect(await f.read("getAccount", [master])).toMatchObject({
      master,
      admin: f.bob,
      managed: false,
      name: "Bob's",
      walletCount: 1n,
    });
    // Wallet 0 is the Account Master Wallet: the PKP whose derivation is the master hash.
    expect(await f.read("listWallets", [master, 0n, 10n])).toEqual([
      [{ id: 0n, wallet: amw, name: "", description: "" }],
      1n,
    ]);
    expect(await f.read("getWalletDerivation", [master, amw])).toBe(master);
    // The master of a wallet-created account is the wallet's alias, never an API key.
    expect(await f.read("accountOfWallet", [f.bob])).toEqual([master, f.bob, false]);
    expect(await f.read("resolveKey", [master])).toEqual([0n, false, false, false]);
    expect(parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args])).toEqual([
      ["AccountCreated", { master, admin: f.bob, managed: false }],
      ["WalletRegistered", { master, wallet: amw, walletId: 0n }],
    ]);
  });

  it("refuses a zero AMW address and a wallet already registered to any account", async () => {
    const { amw: taken } = await f.managedAccount();
    const admin = await f.impersonate();
    expect(await f.revert(admin, "newChainSecuredAccount", ["n", "", ZERO])).toEqual({
      errorName: "InvalidRequest",
      args: ["wallet is the zero address"],
    });
    expect(await f.revert(admin, "newChainSecuredAccount", ["n", "", taken])).toEqual({
      errorName: "WalletAlreadyRegistered",
      args: [taken],
    });
  });

  it("refuses a second account from the same wallet", async () => {
    const admin = await f.impersonate();
    await f.chainSecuredAccount(admin);
    expect(await f.revert(admin, "newChainSecuredAccount", ["again", "", randomAddress()])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(admin)],
    });
  });

  it("refuses a wallet that ever was an admin, even after it handed its account on", async () => {
    const first = await f.impersonate();
    const second = await f.impersonate();
    const { master } = await f.chainSecuredAccount(first);
    await f.write(first, "transferChainSecuredAccountOwnership", [master, second]);
    expect(await f.revert(first, "newChainSecuredAccount", ["n", "", randomAddress()])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(first)],
    });
  });

  it("refuses the Account Master Wallet of a managed account", async () => {
    const { amw } = await f.managedAccount();
    await f.impersonate(amw);
    expect(await f.revert(amw, "newChainSecuredAccount", ["n", "", randomAddress()])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(amw)],
    });
  });
});

describe("convertToChainSecuredAccount", () => {
  it("makes the account unmanaged under the new admin, keeping its master hash, keys, wallets and groups", async () => {
    const { master, amw } = await f.managedAccount();
    const usage = await f.usageKey(master, { executeInGroups: [0n] });
    const [action] = await f.actions(master);
    const groupId = await f.group(master, [action!], [amw]);
    const newAdmin = await f.impersonate();

    const receipt = await f.write(f.payer, "convertToChainSecuredAccount", [master, newAdmin]);
    expect(parseEventLogs({ abi, logs: receipt.logs }).map((e) => [e.eventName, e.args])).toEqual([
      ["AccountConvertedToChainSecured", { master, newAdmin }],
    ]);
    expect(await f.read("getAccount", [master])).toMatchObject({
      master,
      admin: newAdmin,
      managed: false,
      walletCount: 1n,
      groupCount: 1n,
      usageKeyCount: 1n,
    });
    // The old master key still resolves (reads) but is no longer live; the usage key still is.
    expect(await f.read("resolveKey", [master])).toEqual([master, true, false, false]);
    expect(await f.read("resolveKey", [usage.hash])).toEqual([master, false, false, true]);
    expect(await f.read("accountOfWallet", [newAdmin])).toEqual([master, newAdmin, false]);
    expect((await f.read("getGroup", [master, groupId])).wallets).toEqual([amw]);
    // The new admin writes directly, with any hash that resolves to the account.
    await f.write(newAdmin, "addGroup", [walletLookupHash(newAdmin), "after", "", [], []]);
  });

  it("may be sent by the contract owner as well as a payer", async () => {
    const { master } = await f.managedAccount();
    await f.write(f.owner, "convertToChainSecuredAccount", [master, await f.impersonate()]);
    expect((await f.read("getAccount", [master])).managed).toBe(false);
  });

  it("is refused to anyone else, the account's own AMW included", async () => {
    const { master, amw } = await f.managedAccount();
    await f.impersonate(amw);
    for (const sender of [f.stranger, amw]) {
      expect(await f.revert(sender, "convertToChainSecuredAccount", [master, randomAddress()])).toEqual({
        errorName: "NoAccountAccess",
        args: [master, sender],
      });
    }
  });

  it("takes the master hash only, never a usage key or an alias", async () => {
    const { master, amw } = await f.managedAccount();
    const usage = await f.usageKey(master);
    for (const hash of [usage.hash, walletLookupHash(amw)]) {
      expect(await f.revert(f.payer, "convertToChainSecuredAccount", [hash, randomAddress()])).toEqual({
        errorName: "NotOwner",
        args: [],
      });
    }
  });

  it("rejects the zero address, unknown accounts and accounts already unmanaged", async () => {
    const { master } = await f.managedAccount();
    expect((await f.revert(f.payer, "convertToChainSecuredAccount", [master, ZERO])).errorName).toBe("InvalidRequest");
    const unknown = apiKeyHash(generateApiKey());
    expect(await f.revert(f.payer, "convertToChainSecuredAccount", [unknown, randomAddress()])).toEqual({
      errorName: "AccountDoesNotExist",
      args: [unknown],
    });
    await f.write(f.payer, "convertToChainSecuredAccount", [master, await f.impersonate()]);
    expect(await f.revert(f.payer, "convertToChainSecuredAccount", [master, randomAddress()])).toEqual({
      errorName: "InvalidRequest",
      args: ["account is not managed"],
    });
  });

  it("refuses a new admin that ever was an admin or whose alias is taken", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    const pastAdmin = await f.impersonate();
    await f.chainSecuredAccount(pastAdmin);
    for (const newAdmin of [pastAdmin, other.amw]) {
      expect(await f.revert(f.payer, "convertToChainSecuredAccount", [master, newAdmin])).toEqual({
        errorName: "AccountAlreadyExists",
        args: [walletLookupHash(newAdmin)],
      });
    }
  });
});

describe("transferChainSecuredAccountOwnership", () => {
  async function sovereign() {
    const admin = await f.impersonate();
    const { master } = await f.chainSecuredAccount(admin);
    return { admin, master };
  }

  it("hands the account to the new admin, emits the event with the master hash, and adds the alias", async () => {
    const { admin, master } = await sovereign();
    const next = await f.impersonate();
    const receipt = await f.write(admin, "transferChainSecuredAccountOwnership", [master, next]);
    const [event] = parseEventLogs({ abi, logs: receipt.logs });
    expect(event!.eventName).toBe("ChainSecuredAccountOwnershipTransferred");
    expect(event!.args).toEqual({ master, previousAdmin: admin, newAdmin: next });
    expect(event!.topics[1]).toBe(`0x${master.toString(16).padStart(64, "0")}`);
    expect((await f.read("getAccount", [master])).admin).toBe(next);
    // Both wallets' lookup hashes resolve to the account; only the new admin may write.
    expect(await f.read("accountOfWallet", [next])).toEqual([master, next, false]);
    expect(await f.read("accountOfWallet", [admin])).toEqual([master, next, false]);
    expect(await f.revert(admin, "addGroup", [master, "g", "", [], []])).toEqual({
      errorName: "NoAccountAccess",
      args: [master, admin],
    });
    await f.write(next, "addGroup", [master, "g", "", [], []]);
  });

  it("accepts an alias hash in place of the master hash", async () => {
    const { admin, master } = await sovereign();
    const next = await f.impersonate();
    await f.write(admin, "transferChainSecuredAccountOwnership", [master, next]);
    const third = await f.impersonate();
    // The new admin names the account by its own lookup hash (an alias).
    const receipt = await f.write(next, "transferChainSecuredAccountOwnership", [walletLookupHash(next), third]);
    const [event] = parseEventLogs({ abi, logs: receipt.logs, eventName: "ChainSecuredAccountOwnershipTransferred" });
    expect(event!.args.master).toBe(master);
  });

  // The specification's table, row by row, each condition alone.
  it("reverts InvalidRequest when the new admin is the zero address", async () => {
    const { admin, master } = await sovereign();
    expect(await f.revert(admin, "transferChainSecuredAccountOwnership", [master, ZERO])).toEqual({
      errorName: "InvalidRequest",
      args: ["new admin is the zero address"],
    });
  });

  it("reverts AccountDoesNotExist when nothing resolves from the hash", async () => {
    const unknown = apiKeyHash(generateApiKey());
    expect(await f.revert(f.alice, "transferChainSecuredAccountOwnership", [unknown, randomAddress()])).toEqual({
      errorName: "AccountDoesNotExist",
      args: [unknown],
    });
  });

  it("reverts InvalidRequest for a managed account, even from its AMW or a payer", async () => {
    const { master, amw } = await f.managedAccount();
    await f.impersonate(amw);
    for (const sender of [amw, f.payer]) {
      expect(await f.revert(sender, "transferChainSecuredAccountOwnership", [master, randomAddress()])).toEqual({
        errorName: "InvalidRequest",
        args: ["account is managed"],
      });
    }
  });

  it("reverts NoAccountAccess when the caller is not the current admin (payers have no authority)", async () => {
    const { master } = await sovereign();
    for (const sender of [f.payer, f.owner, f.stranger]) {
      expect(await f.revert(sender, "transferChainSecuredAccountOwnership", [master, randomAddress()])).toEqual({
        errorName: "NoAccountAccess",
        args: [master, sender],
      });
    }
  });

  it("reverts InvalidRequest when the new admin is the current admin", async () => {
    const { admin, master } = await sovereign();
    expect(await f.revert(admin, "transferChainSecuredAccountOwnership", [master, admin])).toEqual({
      errorName: "InvalidRequest",
      args: ["new admin is the current admin"],
    });
  });

  it("reverts AccountAlreadyExists when the new admin owns an account, past admins and the one just left included", async () => {
    const { admin, master } = await sovereign();
    const owner = await sovereign();
    expect(await f.revert(admin, "transferChainSecuredAccountOwnership", [master, owner.admin])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(owner.admin)],
    });
    // Transfer away, then try to hand it back to the wallet just transferred away from.
    const next = await f.impersonate();
    await f.write(admin, "transferChainSecuredAccountOwnership", [master, next]);
    expect(await f.revert(next, "transferChainSecuredAccountOwnership", [master, admin])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(admin)],
    });
  });

  it("checks the rows in the table's order when several fail at once", async () => {
    const { admin, master } = await sovereign();
    const managed = await f.managedAccount();
    // zero address beats an unknown hash
    expect((await f.revert(f.stranger, "transferChainSecuredAccountOwnership", [12345n, ZERO])).errorName).toBe(
      "InvalidRequest",
    );
    // managed beats a caller that is not the admin
    expect((await f.revert(f.stranger, "transferChainSecuredAccountOwnership", [managed.master, admin])).args).toEqual([
      "account is managed",
    ]);
    // not the admin beats new admin == current admin and new admin already an admin
    expect((await f.revert(f.stranger, "transferChainSecuredAccountOwnership", [master, admin])).errorName).toBe(
      "NoAccountAccess",
    );
    // same admin beats "already an admin" (the current admin is, of course, an admin)
    expect((await f.revert(admin, "transferChainSecuredAccountOwnership", [master, admin])).errorName).toBe(
      "InvalidRequest",
    );
  });
});

describe("aliases and resolveKey", () => {
  it("resolves nothing for an unknown hash or a wallet that administers nothing", async () => {
    expect(await f.read("resolveKey", [apiKeyHash(generateApiKey())])).toEqual([0n, false, false, false]);
    expect(await f.read("accountOfWallet", [randomAddress()])).toEqual([0n, ZERO, false]);
  });

  it("keeps every admin's alias after conversion and transfers, each resolving to the one master", async () => {
    const { master, amw } = await f.managedAccount();
    const a1 = await f.impersonate();
    const a2 = await f.impersonate();
    await f.write(f.payer, "convertToChainSecuredAccount", [master, a1]);
    await f.write(a1, "transferChainSecuredAccountOwnership", [master, a2]);
    for (const w of [amw, a1, a2]) {
      expect(await f.read("accountOfWallet", [w])).toEqual([master, a2, false]);
    }
    expect((await f.read("getAccount", [walletLookupHash(a1)])).master).toBe(master);
  });

  it("computes the wallet lookup hash exactly as the TypeScript side does", async () => {
    const admin = await f.impersonate();
    await f.chainSecuredAccount(admin);
    // newChainSecuredAccount makes keccak256(abi.encodePacked(sender)) the master.
    expect((await f.read("getAccount", [walletLookupHash(admin)])).admin).toBe(admin);
  });
});

// Every wallet that becomes an admin also gets an alias entry, and that entry alone already refuses
// it as a new admin. `everAdmin` is the second, independent guard; these tests erase the alias entry
// from storage so that the guard has to stand on its own.
describe("everAdmin, on its own", () => {
  async function forgetAlias(wallet: Address): Promise<void> {
    const slot = toHex(aliasSlot(walletLookupHash(wallet)), { size: 32 });
    await f.testClient.setStorageAt({ address: f.address, index: slot, value: toHex(0n, { size: 32 }) });
    expect((await f.read("accountOfWallet", [wallet]))[0]).toBe(0n);
  }

  it("keeps a former admin from creating a ChainSecured account", async () => {
    const { amw } = await f.managedAccount();
    await f.impersonate(amw);
    await forgetAlias(amw);
    expect(await f.revert(amw, "newChainSecuredAccount", ["n", "", randomAddress()])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(amw)],
    });
  });

  it("keeps a former admin from receiving a transferred account", async () => {
    const admin = await f.impersonate();
    const { master } = await f.chainSecuredAccount(admin);
    const { amw } = await f.managedAccount();
    await forgetAlias(amw);
    expect(await f.revert(admin, "transferChainSecuredAccountOwnership", [master, amw])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(amw)],
    });
  });

  it("keeps a former admin from becoming the admin of a converted account", async () => {
    const { master } = await f.managedAccount();
    const other = await f.managedAccount();
    await forgetAlias(other.amw);
    expect(await f.revert(f.payer, "convertToChainSecuredAccount", [master, other.amw])).toEqual({
      errorName: "AccountAlreadyExists",
      args: [walletLookupHash(other.amw)],
    });
  });
});

// Issue 11, point 3. Usage-key hashes are whatever the account's owner supplies, so an account can
// register `keccak256(abi.encodePacked(victim))` — the victim wallet's lookup hash — as a usage key.
// Version 1 kept keys and aliases in one mapping: the victim could then never create an account
// (AccountAlreadyExists) and every wallet lookup of the victim found the squatter's account. Keys
// and aliases now live apart; wallets are looked up only among aliases.
describe("a usage key registered as a wallet's lookup hash (squatting)", () => {
  async function squat(victim: Address, by: "admin" | "payer" = "admin") {
    const squatted = walletLookupHash(victim);
    if (by === "payer") {
      const { master } = await f.managedAccount();
      await f.setUsageKey(master, squatted, { executeInGroups: [0n] });
      return { attacker: f.payer, master, squatted };
    }
    const attacker = await f.impersonate();
    const { master } = await f.chainSecuredAccount(attacker);
    await f.setUsageKey(master, squatted, { executeInGroups: [0n] }, attacker);
    return { attacker, master, squatted };
  }

  for (const by of ["admin", "payer"] as const) {
    it(`does not keep the wallet from creating its account, whose master is that hash (squatter's ${by})`, async () => {
      const victim = await f.impersonate();
      const { master: attackerMaster, squatted } = await squat(victim, by);
      // The squatter's key is a key, in the key namespace; no wallet is looked up there.
      expect((await f.read("resolveKey", [squatted]))[0]).toBe(attackerMaster);
      expect(await f.read("accountOfWallet", [victim])).toEqual([0n, ZERO, false]);

      const { master } = await f.chainSecuredAccount(victim);
      expect(master).toBe(squatted);
      expect(await f.read("accountOfWallet", [victim])).toEqual([master, victim, false]);
      expect((await f.read("getAccount", [master])).admin).toBe(victim);
      // The victim writes with its master hash as every ChainSecured admin does.
      await f.write(victim, "addGroup", [master, "mine", "", [], []]);
      expect((await f.read("getAccount", [master])).groupCount).toBe(1n);
    });
  }

  it("gives the squatter no write access to the wallet's account through that hash", async () => {
    const victim = await f.impersonate();
    const { attacker, squatted } = await squat(victim);
    await f.chainSecuredAccount(victim);
    expect(await f.revert(attacker, "addGroup", [squatted, "x", "", [], []])).toEqual({
      errorName: "NoAccountAccess",
      args: [squatted, attacker],
    });
    expect(await f.revert(attacker, "transferChainSecuredAccountOwnership", [squatted, randomAddress()])).toEqual({
      errorName: "NoAccountAccess",
      args: [squatted, attacker],
    });
  });

  it("does not keep the wallet from becoming a converted account's admin, a transferred account's admin or an AMW", async () => {
    const convertedTo = await f.impersonate();
    await squat(convertedTo);
    const managed = await f.managedAccount();
    await f.write(f.payer, "convertToChainSecuredAccount", [managed.master, convertedTo]);
    expect(await f.read("accountOfWallet", [convertedTo])).toEqual([managed.master, convertedTo, false]);

    const transferredTo = await f.impersonate();
    await squat(transferredTo);
    const owner = await f.impersonate();
    const sovereign = await f.chainSecuredAccount(owner);
    await f.write(owner, "transferChainSecuredAccountOwnership", [sovereign.master, transferredTo]);
    expect(await f.read("accountOfWallet", [transferredTo])).toEqual([sovereign.master, transferredTo, false]);

    const amw = randomAddress();
    await squat(amw, "payer");
    const key = apiKeyHash(generateApiKey());
    await f.write(f.payer, "newAccount", [key, "n", "", amw, key]);
    expect(await f.read("accountOfWallet", [amw])).toEqual([key, amw, true]);
  });
});
