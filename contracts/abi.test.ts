// The ABI callers use at the proxy address exposes everything docs/design/contract.md names, so the edge and
// the enclave can rely on one module for every call, view, event and error.
import { describe, expect, it } from "vitest";
import { accountConfigAbi } from "../shared/generated/accountConfigAbi.ts";
import { receiptAnchorAbi } from "../shared/receiptAnchor.ts";
import { loadArtifact } from "./deploy.ts";

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
      // issue 30: wallet guardrails
      "setWalletGuardrail",
      "getWalletGuardrail",
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
      "WalletGuardrailSet",
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

  it("has the guardrail interface others code against: the write, its event, the view and authorizeExecution's fourth output", () => {
    type Param = { type: string; name: string; indexed?: boolean };
    type Item = {
      type: string;
      name?: string;
      inputs?: readonly Param[];
      outputs?: readonly Param[];
      stateMutability?: string;
    };
    const signature = (type: "function" | "event", name: string) =>
      (accountConfigAbi as readonly Item[])
        .filter((x) => x.type === type && x.name === name)
        .map((x) => ({
          inputs: (x.inputs ?? []).map((i) => `${i.type} ${i.name}${i.indexed ? " indexed" : ""}`),
          outputs: (x.outputs ?? []).map((o) => `${o.type} ${o.name}`),
          ...(x.stateMutability ? { stateMutability: x.stateMutability } : {}),
        }));
    expect(signature("function", "setWalletGuardrail")).toEqual([
      {
        inputs: ["uint256 keyHash", "address wallet", "string document"],
        outputs: [],
        stateMutability: "nonpayable",
      },
    ]);
    expect(signature("event", "WalletGuardrailSet")).toEqual([
      {
        inputs: ["uint256 master indexed", "address wallet indexed", "bytes32 guardrailHash", "string document"],
        outputs: [],
      },
    ]);
    expect(signature("function", "getWalletGuardrail")).toEqual([
      {
        inputs: ["uint256 hash", "address wallet"],
        outputs: ["bytes32 guardrailHash", "uint256 blockNumber"],
        stateMutability: "view",
      },
    ]);
    expect(signature("function", "authorizeExecution")).toEqual([
      {
        inputs: ["uint256 keyHash", "uint256 cidHash", "address[] wallets"],
        outputs: ["bool canExecute", "bool[] walletAllowed", "uint256[] derivations", "bytes32[] guardrails"],
        stateMutability: "view",
      },
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

describe("ReceiptAnchor ABI (shared/receiptAnchor.ts)", () => {
  type Param = { type: string; indexed?: boolean; components?: readonly Param[] };
  type Entry = {
    type: string;
    name?: string;
    inputs?: readonly Param[];
    outputs?: readonly Param[];
    stateMutability?: string;
  };
  const param = (p: Param): string =>
    `${p.components ? `(${p.components.map(param).join(",")})${p.type.replace(/^tuple/, "")}` : p.type}${p.indexed ? " indexed" : ""}`;
  /** An entry by what a call, log or revert depends on: kind, name, input and output types, mutability. */
  const signature = (e: Entry): string =>
    `${e.type} ${e.name ?? ""}(${(e.inputs ?? []).map(param).join(",")})` +
    (e.type === "function" ? ` ${e.stateMutability} returns (${(e.outputs ?? []).map(param).join(",")})` : "");
  const signatures = (abi: readonly unknown[]) => (abi as readonly Entry[]).map(signature).sort();

  it("has exactly the compiled contract's functions, events and errors (OpenZeppelin's ECDSA errors too)", () => {
    const compiled = signatures(loadArtifact("ReceiptAnchor").abi);
    const written = signatures(receiptAnchorAbi);
    expect(written).toEqual(compiled);
    expect(new Set(written).size).toBe(written.length);
    expect(compiled).toEqual(
      expect.arrayContaining([
        "function anchor(uint64,bytes32,uint32,bytes) nonpayable returns ()",
        "function anchors(address,uint64) view returns (bytes32,uint32,uint64)",
        "event Anchored(address indexed,uint64 indexed,bytes32,uint32)",
        "error AlreadyAnchored(address,uint64)",
        "error ECDSAInvalidSignature()",
        "error ECDSAInvalidSignatureLength(uint256)",
        "error ECDSAInvalidSignatureS(bytes32)",
      ]),
    );
    // Any change of kind, type, indexing or mutability shows.
    const anchored = (receiptAnchorAbi as readonly Entry[]).find((e) => e.name === "Anchored")!;
    const unindexed = { ...anchored, inputs: anchored.inputs!.map((i) => ({ ...i, indexed: false })) };
    expect(compiled).not.toContain(signature(unindexed));
    const digest = (receiptAnchorAbi as readonly Entry[]).find((e) => e.name === "anchorDigest")!;
    expect(compiled).not.toContain(signature({ ...digest, stateMutability: "pure" }));
    expect(compiled).not.toContain(
      signature({ ...digest, inputs: digest.inputs!.map((i) => ({ ...i, type: i.type.replace("uint32", "uint64") })) }),
    );
  });
});
