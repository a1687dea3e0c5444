// The ABI callers use at the proxy address exposes everything docs/design/contract.md names, so the edge and
// the enclave can rely on one module for every call, view, event and error.
import { describe, expect, it } from "vitest";
import { accountConfigAbi } from "../shared/generated/accountConfigAbi.ts";

const names = (type: string) =>
  new Set(accountConfigAbi.filter((x) => x.type === type).map((x) => ("name" in x ? x.name : "")));

describe("AccountConfig ABI", () => {
  it("has every write and view of contract.md", () => {
    const functions = names("function");
    for (const fn of [
      "newAccount",
      "newChainSecuredAccount",
      "convertToChainSecuredAccount",
      "transferChainSecuredAccountOwnership",
      "setUsageApiKey",
      "updateUsageApiKeyMetadata",
      "removeUsageApiKey",
      "registerWalletDerivation",
      "addGroup",
      "updateGroup",
      "removeGroup",
      "addActionToGroup",
      "removeActionFromGroup",
      "addPkpToGroup",
      "removePkpFromGroup",
      "addAction",
      "updateActionMetadata",
      "removeAction",
      "setApiPayers",
      "setAdminApiPayer",
      "resolveKey",
      "getAccount",
      "listUsageApiKeys",
      "listGroups",
      "listWallets",
      "listWalletsInGroup",
      "listActions",
      "listActionsInGroup",
      "getGroup",
      "authorizeExecution",
      "getWalletDerivation",
      "apiPayers",
      "adminApiPayer",
      "owner",
      // issue 11: the alias namespace's view, registering raw CIDs, and batching writes
      "accountOfWallet",
      "registerActions",
      "multicall",
      "billingOf",
      "usageKeyExpiration",
    ]) {
      expect(functions, fn).toContain(fn);
    }
  });

  it("has every event of contract.md, each with the master hash as its first indexed input", () => {
    const events = accountConfigAbi.filter((x) => x.type === "event");
    const accountEvents = [
      "AccountCreated",
      "AccountConvertedToChainSecured",
      "ChainSecuredAccountOwnershipTransferred",
      "UsageApiKeySet",
      "UsageApiKeyMetadataUpdated",
      "UsageApiKeyRemoved",
      "WalletRegistered",
      "GroupAdded",
      "GroupUpdated",
      "GroupRemoved",
      "ActionAddedToGroup",
      "ActionRemovedFromGroup",
      "PkpAddedToGroup",
      "PkpRemovedFromGroup",
      "ActionAdded",
      "ActionRemoved",
      "ActionMetadataUpdated",
    ];
    for (const name of accountEvents) {
      const event = events.find((e) => e.name === name);
      expect(event, name).toBeDefined();
      expect(event!.inputs[0]).toMatchObject({ name: "master", type: "uint256", indexed: true });
    }
    expect(names("event")).toContain("ApiPayersSet");
    expect(names("event")).toContain("AdminApiPayerSet");
  });

  it("creates a wallet-owned account with its Account Master Wallet: newChainSecuredAccount(name, description, amwAddress)", () => {
    const forms = accountConfigAbi.filter((x) => x.type === "function" && x.name === "newChainSecuredAccount");
    expect(forms.map((f) => ("inputs" in f ? f.inputs.map((i) => i.type) : []))).toEqual([
      ["string", "string", "address"],
    ]);
  });

  it("has every custom error of contract.md", () => {
    const errors = names("error");
    for (const e of [
      "NoAccountAccess",
      "NotAllowed",
      "NotOwner",
      "AccountDoesNotExist",
      "AccountAlreadyExists",
      "GroupDoesNotExist",
      "WalletNotRegistered",
      "WalletAlreadyRegistered",
      "InvalidRequest",
      "KeyExpired",
      "LimitExceeded",
    ]) {
      expect(errors, e).toContain(e);
    }
  });
});
