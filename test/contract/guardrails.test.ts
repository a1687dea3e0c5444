// Wallet guardrails (issue 30): the contract keeps, per wallet, the keccak256 of a guardrail
// document's exact bytes and the block whose WalletGuardrailSet event carries those bytes; it never
// parses the document. setWalletGuardrail is owner only (the master key through a payer, or a
// ChainSecured account's admin directly), for a wallet of the account, at most 16384 bytes; an
// empty document removes the guardrail. The access matrix (access.test.ts), the size limit
// (limits.test.ts), authorizeExecution's fourth output (authorizeExecution.test.ts) and the view's
// errors (views.test.ts) are tested beside their kind; this file is the write and the view.
import { keccak256, parseEventLogs, stringToHex, type Address, type Hex, type TransactionReceipt } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { abi, deployFixture, guardrailDocument, randomAddress, ZERO, type Fixture } from "./fixture.ts";

let f: Fixture;
beforeAll(async () => {
  f = await deployFixture();
});

const ZERO_HASH = `0x${"0".repeat(64)}` as Hex;
const hashOf = (document: string) => keccak256(stringToHex(document));

/** The one WalletGuardrailSet event of a receipt, with its topics. */
function guardrailEvent(receipt: TransactionReceipt) {
  const events = parseEventLogs({ abi, logs: receipt.logs, eventName: "WalletGuardrailSet" });
  expect(events).toHaveLength(1);
  return events[0]!;
}

describe("setWalletGuardrail", () => {
  it("keeps keccak256 of the document's bytes and the block, and emits the document in the event", async () => {
    const { master } = await f.managedAccount();
    const { address: w } = await f.wallet(master);
    const document = guardrailDocument();
    expect(new TextEncoder().encode(document).length).toBeGreaterThan(document.length); // bytes, not characters
    const receipt = await f.write(f.payer, "setWalletGuardrail", [master, w, document]);
    const event = guardrailEvent(receipt);
    expect(event.args).toEqual({ master, wallet: w, guardrailHash: hashOf(document), document });
    expect(event.topics[1]).toBe(toHash32(master)); // the master hash first, as every account event
    expect(await f.read("getWalletGuardrail", [master, w])).toEqual([hashOf(document), receipt.blockNumber]);
  });

  it("replaces a guardrail, and setting the same document again moves the block", async () => {
    const { master } = await f.managedAccount();
    const { address: w } = await f.wallet(master);
    const first = guardrailDocument("first");
    const second = guardrailDocument("second");
    await f.write(f.payer, "setWalletGuardrail", [master, w, first]);
    const replaced = await f.write(f.payer, "setWalletGuardrail", [master, w, second]);
    expect(guardrailEvent(replaced).args).toMatchObject({ guardrailHash: hashOf(second), document: second });
    expect(await f.read("getWalletGuardrail", [master, w])).toEqual([hashOf(second), replaced.blockNumber]);
    const again = await f.write(f.payer, "setWalletGuardrail", [master, w, second]);
    expect(again.blockNumber).toBeGreaterThan(replaced.blockNumber);
    expect(await f.read("getWalletGuardrail", [master, w])).toEqual([hashOf(second), again.blockNumber]);
  });

  it("removes it with an empty document: hash 0 and block 0, and the event says so with hash 0 and ''", async () => {
    const { master } = await f.managedAccount();
    const { address: w } = await f.wallet(master);
    await f.write(f.payer, "setWalletGuardrail", [master, w, guardrailDocument()]);
    const removed = await f.write(f.payer, "setWalletGuardrail", [master, w, ""]);
    expect(guardrailEvent(removed).args).toEqual({ master, wallet: w, guardrailHash: ZERO_HASH, document: "" });
    expect(await f.read("getWalletGuardrail", [master, w])).toEqual([ZERO_HASH, 0n]);
    // Removing what is not there is no error, and still says so.
    const again = await f.write(f.payer, "setWalletGuardrail", [master, w, ""]);
    expect(guardrailEvent(again).args.guardrailHash).toBe(ZERO_HASH);
  });

  it("hashes the bytes exactly as given: whitespace or key order make another hash", async () => {
    const { master } = await f.managedAccount();
    const { address: w } = await f.wallet(master);
    for (const document of ['{"version":1}', '{ "version": 1 }', '{"version":1}\n']) {
      const receipt = await f.write(f.payer, "setWalletGuardrail", [master, w, document]);
      expect(guardrailEvent(receipt).args.guardrailHash).toBe(hashOf(document));
      expect((await f.read("getWalletGuardrail", [master, w]))[0]).toBe(hashOf(document));
    }
  });

  it("sets one wallet's guardrail only: the account's other wallets, its AMW included, keep theirs", async () => {
    const { master, amw } = await f.managedAccount();
    const { address: a } = await f.wallet(master);
    const { address: b } = await f.wallet(master);
    await f.write(f.payer, "setWalletGuardrail", [master, a, guardrailDocument("a")]);
    const onB = await f.write(f.payer, "setWalletGuardrail", [master, b, guardrailDocument("b")]);
    await f.write(f.payer, "setWalletGuardrail", [master, a, ""]);
    expect(await f.read("getWalletGuardrail", [master, a])).toEqual([ZERO_HASH, 0n]);
    expect(await f.read("getWalletGuardrail", [master, b])).toEqual([hashOf(guardrailDocument("b")), onB.blockNumber]);
    expect(await f.read("getWalletGuardrail", [master, amw])).toEqual([ZERO_HASH, 0n]);
    // The AMW may have one too.
    const onAmw = await f.write(f.payer, "setWalletGuardrail", [master, amw, guardrailDocument("amw")]);
    expect(await f.read("getWalletGuardrail", [master, amw])).toEqual([
      hashOf(guardrailDocument("amw")),
      onAmw.blockNumber,
    ]);
  });

  describe("whose wallet", () => {
    it("refuses another account's wallet, an unregistered address and address(0) with WalletNotRegistered", async () => {
      const { master } = await f.managedAccount();
      const other = await f.managedAccount();
      const { address: theirs } = await f.wallet(other.master);
      for (const w of [theirs, other.amw, randomAddress(), ZERO]) {
        expect(await f.revert(f.payer, "setWalletGuardrail", [master, w, guardrailDocument()])).toEqual({
          errorName: "WalletNotRegistered",
          args: [w],
        });
        // Removing is a write of the guardrail too.
        expect((await f.revert(f.payer, "setWalletGuardrail", [master, w, ""])).errorName).toBe("WalletNotRegistered");
      }
      // And the other account's wallet kept nothing from the attempt.
      expect(await f.read("getWalletGuardrail", [other.master, theirs])).toEqual([ZERO_HASH, 0n]);
    });

    it("refuses a ChainSecured admin naming a managed account's wallet from its own account", async () => {
      const admin = await f.impersonate();
      const sovereign = await f.chainSecuredAccount(admin);
      const { amw } = await f.managedAccount();
      expect(await f.revert(admin, "setWalletGuardrail", [sovereign.master, amw, "{}"])).toEqual({
        errorName: "WalletNotRegistered",
        args: [amw],
      });
    });
  });

  describe("who", () => {
    it("a ChainSecured account's admin sets it directly, by the master hash or its own alias; a payer may not", async () => {
      const admin = await f.impersonate();
      const { master, amw } = await f.chainSecuredAccount(admin);
      const document = guardrailDocument("sovereign");
      const receipt = await f.write(admin, "setWalletGuardrail", [walletLookupHash(admin), amw, document]);
      expect(guardrailEvent(receipt).args).toMatchObject({ master, wallet: amw, guardrailHash: hashOf(document) });
      expect(await f.read("getWalletGuardrail", [master, amw])).toEqual([hashOf(document), receipt.blockNumber]);
      expect(await f.revert(f.payer, "setWalletGuardrail", [master, amw, ""])).toEqual({
        errorName: "NoAccountAccess",
        args: [master, f.payer],
      });
      await f.write(admin, "setWalletGuardrail", [master, amw, ""]);
      expect(await f.read("getWalletGuardrail", [master, amw])).toEqual([ZERO_HASH, 0n]);
    });

    it("a usage key is never the owner, whatever it holds: NotOwner", async () => {
      const { master, amw } = await f.managedAccount();
      const usage = await f.usageKey(master, {
        canCreateGroups: true,
        canDeleteGroups: true,
        canCreatePkps: true,
        manageIpfsIdsInGroups: [0n],
        addPkpToGroups: [0n],
        removePkpFromGroups: [0n],
        executeInGroups: [0n],
      });
      expect(await f.revert(f.payer, "setWalletGuardrail", [usage.hash, amw, guardrailDocument()])).toEqual({
        errorName: "NotOwner",
        args: [],
      });
    });

    it("nobody but a payer writes for a managed account: the AMW, a stranger and the contract owner → NoAccountAccess", async () => {
      const { master, amw } = await f.managedAccount();
      for (const sender of [await f.impersonate(amw), f.stranger, f.owner]) {
        expect(await f.revert(sender, "setWalletGuardrail", [master, amw, "{}"])).toEqual({
          errorName: "NoAccountAccess",
          args: [master, sender],
        });
      }
    });

    it("survives conversion: the guardrail stays, the new admin replaces it, the old master key no longer can", async () => {
      const { master, amw } = await f.managedAccount();
      const set = await f.write(f.payer, "setWalletGuardrail", [master, amw, guardrailDocument("before")]);
      const admin = await f.impersonate();
      await f.write(f.payer, "convertToChainSecuredAccount", [master, admin]);
      expect(await f.read("getWalletGuardrail", [master, amw])).toEqual([
        hashOf(guardrailDocument("before")),
        set.blockNumber,
      ]);
      expect((await f.revert(f.payer, "setWalletGuardrail", [master, amw, ""])).errorName).toBe("NoAccountAccess");
      await f.write(admin, "setWalletGuardrail", [master, amw, guardrailDocument("after")]);
      expect((await f.read("getWalletGuardrail", [master, amw]))[0]).toBe(hashOf(guardrailDocument("after")));
    });
  });
});

describe("getWalletGuardrail", () => {
  let master: bigint;
  let amw: Address;
  let guarded: Address;
  let setAt: bigint;
  let theirs: Address;

  beforeAll(async () => {
    ({ master, amw } = await f.managedAccount());
    guarded = (await f.wallet(master)).address;
    setAt = (await f.write(f.payer, "setWalletGuardrail", [master, guarded, guardrailDocument()])).blockNumber;
    const other = await f.managedAccount();
    theirs = (await f.wallet(other.master)).address;
    await f.write(f.payer, "setWalletGuardrail", [other.master, theirs, guardrailDocument("theirs")]);
  });

  it("answers the same through the master hash, a usage key and the AMW's alias", async () => {
    const usage = await f.usageKey(master);
    for (const hash of [master, usage.hash, walletLookupHash(amw)]) {
      expect(await f.read("getWalletGuardrail", [hash, guarded])).toEqual([hashOf(guardrailDocument()), setAt]);
      expect(await f.read("getWalletGuardrail", [hash, amw])).toEqual([ZERO_HASH, 0n]);
    }
  });

  it("is (0, 0) for a wallet that is not the account's, even one that has a guardrail elsewhere", async () => {
    for (const w of [theirs, randomAddress(), ZERO]) {
      expect(await f.read("getWalletGuardrail", [master, w])).toEqual([ZERO_HASH, 0n]);
    }
  });
});

describe("setUsageKeyGuardrail", () => {
  const keyEvent = (receipt: TransactionReceipt) => {
    const events = parseEventLogs({ abi, logs: receipt.logs, eventName: "UsageKeyGuardrailSet" });
    expect(events).toHaveLength(1);
    return events[0]!;
  };

  it("keeps the document's hash and block for the key, emits it, and an empty document removes it", async () => {
    const { master } = await f.managedAccount();
    const usage = await f.usageKey(master);
    expect(await f.read("usageKeyGuardrail", [usage.hash])).toEqual([ZERO_HASH, 0n]);
    const document = guardrailDocument("key");
    const set = await f.write(f.payer, "setUsageKeyGuardrail", [master, usage.hash, document]);
    expect(keyEvent(set).args).toEqual({ master, usageKeyHash: usage.hash, guardrailHash: hashOf(document), document });
    expect(keyEvent(set).topics[1]).toBe(toHash32(master));
    expect(await f.read("usageKeyGuardrail", [usage.hash])).toEqual([hashOf(document), set.blockNumber]);
    const removed = await f.write(f.payer, "setUsageKeyGuardrail", [master, usage.hash, ""]);
    expect(keyEvent(removed).args).toMatchObject({ guardrailHash: ZERO_HASH, document: "" });
    expect(await f.read("usageKeyGuardrail", [usage.hash])).toEqual([ZERO_HASH, 0n]);
  });

  it("goes with the key: a removed key (and a master hash, an unknown hash) has none", async () => {
    const { master } = await f.managedAccount();
    const usage = await f.usageKey(master);
    await f.write(f.payer, "setUsageKeyGuardrail", [master, usage.hash, guardrailDocument()]);
    await f.write(f.payer, "removeUsageApiKey", [master, usage.hash]);
    expect(await f.read("usageKeyGuardrail", [usage.hash])).toEqual([ZERO_HASH, 0n]);
    expect(await f.read("usageKeyGuardrail", [master])).toEqual([ZERO_HASH, 0n]);
    expect(await f.read("usageKeyGuardrail", [123n])).toEqual([ZERO_HASH, 0n]);
  });

  it("is the owner's alone: a usage key may not set one, not even its own (NotOwner); another account's key is not its", async () => {
    const { master } = await f.managedAccount();
    const usage = await f.usageKey(master, { executeInGroups: [0n], canCreateGroups: true });
    expect(await f.revert(f.payer, "setUsageKeyGuardrail", [usage.hash, usage.hash, "{}"])).toEqual({
      errorName: "NotOwner",
      args: [],
    });
    const other = await f.managedAccount();
    const theirs = await f.usageKey(other.master);
    expect(await f.revert(f.payer, "setUsageKeyGuardrail", [master, theirs.hash, "{}"])).toEqual({
      errorName: "AccountDoesNotExist",
      args: [theirs.hash],
    });
  });

  it("refuses a document over 16384 bytes", async () => {
    const { master } = await f.managedAccount();
    const usage = await f.usageKey(master);
    expect(await f.revert(f.payer, "setUsageKeyGuardrail", [master, usage.hash, "x".repeat(16385)])).toEqual({
      errorName: "LimitExceeded",
      args: ["guardrail bytes", 16384n],
    });
  });
});
