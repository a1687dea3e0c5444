// The upgrade from the deployed version (test/contract/fixtures/v1/, compiled here as solc compiles
// the build) through the existing proxy: a v1 deployment on anvil is given real state — managed,
// converted, wallet-created and transferred accounts, usage keys, wallets, a group that lists an
// unregistered action, and the squat of issue 11 point 3 — then upgraded by its owner. Everything
// reads back the same; v1's aliases and wallet-created masters (kept among the keys in v1) are read
// as aliases; and the squat that blocked its victim in v1 stops working.
import solc from "solc";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  http,
  keccak256,
  parseEther,
  parseEventLogs,
  stringToHex,
  type Abi,
  type Address,
  type Hex,
} from "viem";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { findImport, settings } from "../../contracts/compile.ts";
import { deployContract, deployImplementation } from "../../contracts/deploy.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";
import { decodeRevert, randomAddress, randomCid, ZERO, type Revert } from "./fixture.ts";

const V1 = "test/contract/fixtures/v1";
const NO_GUARDRAIL = `0x${"0".repeat(64)}`;

/** v1's AccountConfig and AccountConfigViews, and the ABI v1 answered at the proxy. */
function compileV1() {
  const sources: Record<string, { content: string }> = {};
  for (const f of ["AccountConfig.sol", "AccountConfigStorage.sol", "AccountConfigViews.sol"]) {
    const src = findImport(`${V1}/${f}`);
    if (!("contents" in src)) throw new Error(src.error);
    sources[`${V1}/${f}`] = { content: src.contents };
  }
  const output = JSON.parse(
    solc.compile(JSON.stringify({ language: "Solidity", sources, settings }), { import: findImport }),
  ) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const pick = (name: string) => {
    const c = output.contracts[`${V1}/${name}.sol`]![name]!;
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` as Hex };
  };
  const core = pick("AccountConfig");
  const views = pick("AccountConfigViews");
  return { core, views, abi: [...core.abi, ...views.abi] as Abi };
}

const transport = () => http(inject("rpcUrl"));
const publicClient = createPublicClient({ chain: foundry, transport: transport(), pollingInterval: 50 });
const walletClient = createWalletClient({ chain: foundry, transport: transport() });
const testClient = createTestClient({ chain: foundry, mode: "anvil", transport: transport() });

let proxy: Address;
let v1Abi: Abi;
let owner: Address;
let payer: Address;

async function send(abi: Abi, from: Address, functionName: string, args: readonly unknown[]) {
  const { request } = await publicClient.simulateContract({
    address: proxy,
    abi,
    functionName,
    args,
    account: from,
  } as never);
  const receipt = await publicClient.waitForTransactionReceipt({
    hash: await walletClient.writeContract(request as never),
  });
  if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
  return receipt;
}
async function refused(abi: Abi, from: Address, functionName: string, args: readonly unknown[]): Promise<Revert> {
  try {
    await publicClient.simulateContract({ address: proxy, abi, functionName, args, account: from } as never);
  } catch (err) {
    return decodeRevert(err);
  }
  throw new Error(`${functionName} was expected to revert`);
}
const read = (abi: Abi, functionName: string, args: readonly unknown[]) =>
  publicClient.readContract({ address: proxy, abi, functionName, args } as never) as Promise<unknown>;

// After the upgrade, through the ABI the edge and the enclave use now.
const v2 = {
  send: (from: Address, fn: string, args: readonly unknown[]) => send(accountConfigAbi as Abi, from, fn, args),
  refused: (from: Address, fn: string, args: readonly unknown[]) => refused(accountConfigAbi as Abi, from, fn, args),
  read: (fn: string, args: readonly unknown[]) => read(accountConfigAbi as Abi, fn, args),
};

async function wallet(): Promise<Address> {
  const who = randomAddress();
  await testClient.impersonateAccount({ address: who });
  await testClient.setBalance({ address: who, value: parseEther("10") });
  return who;
}

/** State written through v1. */
const s = {} as {
  a: {
    master: bigint;
    amw: Address;
    wallet: Address;
    derivation: bigint;
    group: bigint;
    usage: bigint;
    registered: bigint;
    unregistered: bigint;
  };
  converted: { master: bigint; amw: Address; admin: Address };
  sovereign: { master: bigint; creator: Address; admin: Address };
  squat: { attacker: Address; master: bigint; victim: Address; hash: bigint };
};
let before: Record<string, unknown>;
/** What v1 did with the squat, seen before the upgrade. */
let v1Squat: { victimCreates: Revert; victimLookup: unknown };

async function snapshot(abi: Abi) {
  const { a, converted, sovereign } = s;
  return {
    account: await read(abi, "getAccount", [a.master]),
    wallets: await read(abi, "listWallets", [a.master, 0n, 100n]),
    groups: await read(abi, "listGroups", [a.master, 0n, 100n]),
    keys: await read(abi, "listUsageApiKeys", [a.master, 0n, 100n]),
    actions: await read(abi, "listActions", [a.master, 0n, 100n]),
    actionsInGroup: await read(abi, "listActionsInGroup", [a.master, a.group, 0n, 100n]),
    resolveMaster: await read(abi, "resolveKey", [a.master]),
    resolveUsage: await read(abi, "resolveKey", [a.usage]),
    billingUsage: await read(abi, "billingOf", [a.usage]),
    authorized: await read(abi, "authorizeExecution", [a.usage, a.registered, [a.wallet, a.amw]]),
    authorizedUnregistered: await read(abi, "authorizeExecution", [a.usage, a.unregistered, [a.wallet]]),
    derivation: await read(abi, "getWalletDerivation", [a.master, a.wallet]),
    converted: await read(abi, "getAccount", [converted.master]),
    convertedByAlias: await read(abi, "getAccount", [walletLookupHash(converted.admin)]),
    sovereign: await read(abi, "getAccount", [sovereign.master]),
    sovereignByAlias: await read(abi, "getAccount", [walletLookupHash(sovereign.admin)]),
    payers: await read(abi, "apiPayers", []),
  };
}

beforeAll(async () => {
  const v1 = compileV1();
  v1Abi = v1.abi;
  const accounts = (await walletClient.getAddresses()).map((x) => getAddress(x));
  [owner, payer] = [accounts[0]!, accounts[9]!];
  const clients = { publicClient, walletClient, account: owner };
  const deploy = async (c: { abi: Abi; bytecode: Hex }, args: readonly unknown[]) => {
    const hash = await walletClient.deployContract({
      abi: c.abi,
      bytecode: c.bytecode,
      args,
      account: owner,
      chain: foundry,
    });
    return getAddress((await publicClient.waitForTransactionReceipt({ hash })).contractAddress!);
  };
  const views = await deploy(v1.views, []);
  const implementation = await deploy(v1.core, [views]);
  // The proxy is the same contract in both versions.
  proxy = (
    await deployContract(clients, "AccountConfigProxy", [
      implementation,
      encodeFunctionData({ abi: v1Abi, functionName: "initialize", args: [owner] }),
    ])
  ).address;
  await send(v1Abi, owner, "setApiPayers", [[payer]]);

  // A managed account with a wallet, a registered action, a group that also lists an action it
  // never registered (v1 allowed it) and the wildcard, and a usage key.
  const aMaster = apiKeyHash(generateApiKey());
  const amw = randomAddress();
  await send(v1Abi, payer, "newAccount", [aMaster, "A", "", amw, aMaster]);
  const w = randomAddress();
  const derivation = 4242n;
  await send(v1Abi, payer, "registerWalletDerivation", [aMaster, w, derivation, "w", ""]);
  const regCid = randomCid();
  await send(v1Abi, payer, "addAction", [aMaster, cidHash(regCid), regCid, "Registered", "kept"]);
  const unregistered = cidHash(randomCid());
  const receipt = await send(v1Abi, payer, "addGroup", [aMaster, "g", "", [cidHash(regCid), unregistered], [w, amw]]);
  const group = (
    parseEventLogs({ abi: v1Abi, logs: receipt.logs, eventName: "GroupAdded" })[0] as unknown as {
      args: { groupId: bigint };
    }
  ).args.groupId;
  const usage = apiKeyHash(generateApiKey());
  await send(v1Abi, payer, "setUsageApiKey", [
    aMaster,
    usage,
    0n,
    300n,
    "k",
    "",
    true,
    false,
    false,
    [],
    [],
    [],
    [group],
  ]);
  s.a = { master: aMaster, amw, wallet: w, derivation, group, usage, registered: cidHash(regCid), unregistered };

  // A managed account converted to ChainSecured (its admin's alias kept as v1's `Alias` kind).
  const cMaster = apiKeyHash(generateApiKey());
  const cAmw = randomAddress();
  await send(v1Abi, payer, "newAccount", [cMaster, "C", "", cAmw, cMaster]);
  const cAdmin = await wallet();
  await send(v1Abi, payer, "convertToChainSecuredAccount", [cMaster, cAdmin]);
  s.converted = { master: cMaster, amw: cAmw, admin: cAdmin };

  // A wallet-created account (v1's two-argument form, no wallet 0), then transferred.
  const creator = await wallet();
  await send(v1Abi, creator, "newChainSecuredAccount", ["S", ""]);
  const sAdmin = await wallet();
  await send(v1Abi, creator, "transferChainSecuredAccountOwnership", [walletLookupHash(creator), sAdmin]);
  s.sovereign = { master: walletLookupHash(creator), creator, admin: sAdmin };

  // The squat: a ChainSecured account registers the victim wallet's lookup hash as a usage key.
  const attacker = await wallet();
  await send(v1Abi, attacker, "newChainSecuredAccount", ["attacker", ""]);
  const victim = await wallet();
  const squatted = walletLookupHash(victim);
  await send(v1Abi, attacker, "setUsageApiKey", [
    walletLookupHash(attacker),
    squatted,
    0n,
    0n,
    "squat",
    "",
    false,
    false,
    false,
    [],
    [],
    [],
    [0n],
  ]);
  s.squat = { attacker, master: walletLookupHash(attacker), victim, hash: squatted };
  v1Squat = {
    victimCreates: await refused(v1Abi, victim, "newChainSecuredAccount", ["victim", ""]),
    // v1 had one lookup for keys and wallets; the enclave asked resolveKey for a signer's account.
    victimLookup: await read(v1Abi, "resolveKey", [squatted]),
  };

  before = await snapshot(v1Abi);
  const next = await deployImplementation(clients);
  await send(v1Abi, owner, "upgradeToAndCall", [next.implementation, "0x"]);
}, 240_000);

describe("version 1 as deployed (seen before the upgrade)", () => {
  it("was squattable: the victim could not create an account, and its lookup hash named the attacker's account", () => {
    expect(v1Squat.victimCreates).toEqual({ errorName: "AccountAlreadyExists", args: [s.squat.hash] });
    expect(v1Squat.victimLookup).toEqual([s.squat.master, false, false, true]);
  });
});

describe("the upgrade from version 1", () => {
  it("runs the new code and reads back every account, key, wallet, group and action v1 held", async () => {
    expect(await v2.read("version", [])).toBe("2");
    const after = await snapshot(accountConfigAbi as Abi);
    // authorizeExecution gained a fourth output, the wallets' guardrails: none in v1's state.
    for (const name of ["authorized", "authorizedUnregistered"] as const) {
      const answer = after[name] as unknown[];
      expect(answer[3]).toEqual((answer[1] as unknown[]).map(() => NO_GUARDRAIL));
      after[name] = answer.slice(0, 3);
    }
    expect(after).toEqual(before);
  });

  it("reads a v1 wallet's guardrail as none (v1's Wallet ends before it), and lets the owner set one", async () => {
    const { a } = s;
    for (const w of [a.wallet, a.amw]) {
      expect(await v2.read("getWalletGuardrail", [a.master, w])).toEqual([NO_GUARDRAIL, 0n]);
    }
    const document = '{"version":1,"raw_digests":false}';
    const receipt = await v2.send(payer, "setWalletGuardrail", [a.master, a.wallet, document]);
    const hash = keccak256(stringToHex(document));
    expect(await v2.read("getWalletGuardrail", [a.master, a.wallet])).toEqual([hash, receipt.blockNumber]);
    // The wallet's v1 fields are untouched by the appended ones.
    expect(await v2.read("getWalletDerivation", [a.master, a.wallet])).toBe(a.derivation);
    const [wallets] = (await v2.read("listWallets", [a.master, 0n, 10n])) as [{ wallet: Address; name: string }[]];
    expect(wallets.find((x) => x.wallet === a.wallet)).toMatchObject({ id: 1n, name: "w" });
    expect(await v2.read("authorizeExecution", [a.usage, a.registered, [a.wallet]])).toEqual([
      true,
      [true],
      [a.derivation],
      [hash],
    ]);
    await v2.send(payer, "setWalletGuardrail", [a.master, a.wallet, ""]);
  });

  it("reads v1's admin aliases and wallet-created masters as aliases, and no longer as API keys", async () => {
    const { a, converted, sovereign } = s;
    expect(await v2.read("accountOfWallet", [a.amw])).toEqual([a.master, a.amw, true]);
    expect(await v2.read("accountOfWallet", [converted.admin])).toEqual([converted.master, converted.admin, false]);
    expect(await v2.read("accountOfWallet", [converted.amw])).toEqual([converted.master, converted.admin, false]);
    expect(await v2.read("accountOfWallet", [sovereign.creator])).toEqual([sovereign.master, sovereign.admin, false]);
    expect(await v2.read("accountOfWallet", [sovereign.admin])).toEqual([sovereign.master, sovereign.admin, false]);
    for (const w of [a.amw, converted.admin, sovereign.admin]) {
      expect(await v2.read("resolveKey", [walletLookupHash(w)])).toEqual([0n, false, false, false]);
      expect(await v2.read("billingOf", [walletLookupHash(w)])).toEqual([0n, false, 0n]);
    }
    // And they still keep their wallets from taking a second account.
    for (const w of [converted.admin, sovereign.creator, sovereign.admin]) {
      expect(await v2.refused(w, "newChainSecuredAccount", ["again", "", randomAddress()])).toEqual({
        errorName: "AccountAlreadyExists",
        args: [walletLookupHash(w)],
      });
    }
  });

  it("ends v1's squat: the victim creates its account, is looked up as itself, and writes; the attacker cannot", async () => {
    const { victim, attacker, master: attackerMaster, hash } = s.squat;
    // In v1 the victim was refused and its lookup named the attacker's account.
    expect(((await v2.read("resolveKey", [hash])) as unknown[])[0]).toBe(attackerMaster);
    expect(await v2.read("accountOfWallet", [victim])).toEqual([0n, ZERO, false]);

    const amw = randomAddress();
    await v2.send(victim, "newChainSecuredAccount", ["victim", "", amw]);
    expect(await v2.read("accountOfWallet", [victim])).toEqual([hash, victim, false]);
    expect(await v2.read("listWallets", [hash, 0n, 10n])).toEqual([
      [{ id: 0n, wallet: amw, name: "", description: "" }],
      1n,
    ]);
    await v2.send(victim, "addGroup", [hash, "mine", "", [], []]);
    expect((await v2.read("getAccount", [hash])) as { admin: Address; groupCount: bigint }).toMatchObject({
      admin: victim,
      groupCount: 1n,
    });
    expect(await v2.refused(attacker, "addGroup", [hash, "x", "", [], []])).toEqual({
      errorName: "NoAccountAccess",
      args: [hash, attacker],
    });
  });

  it("keeps writes working on v1's state: payer + usage key, the converted and transferred accounts' admins", async () => {
    const { a, converted, sovereign } = s;
    await v2.send(payer, "addGroup", [a.usage, "by key", "", [], []]);
    await v2.send(converted.admin, "addGroup", [walletLookupHash(converted.admin), "by alias", "", [], []]);
    await v2.send(sovereign.admin, "addGroup", [sovereign.master, "by master", "", [], []]);
    const next = await wallet();
    await v2.send(sovereign.admin, "transferChainSecuredAccountOwnership", [walletLookupHash(sovereign.admin), next]);
    expect(await v2.read("accountOfWallet", [next])).toEqual([sovereign.master, next, false]);
    expect(await v2.refused(sovereign.admin, "addGroup", [sovereign.master, "g", "", [], []])).toEqual({
      errorName: "NoAccountAccess",
      args: [sovereign.master, sovereign.admin],
    });
  });

  it("keeps a v1 group's unregistered action: listed without a CID, still authorized, removable, and not addable again unregistered", async () => {
    const { a } = s;
    const [items] = (await v2.read("listActionsInGroup", [a.master, a.group, 0n, 10n])) as [
      { cidHash: bigint; cid: string }[],
    ];
    expect(items.find((x) => x.cidHash === a.unregistered)).toMatchObject({ cid: "" });
    expect(await v2.read("authorizeExecution", [a.usage, a.unregistered, [a.wallet]])).toEqual([
      true,
      [true],
      [a.derivation],
      [NO_GUARDRAIL],
    ]);
    const receipt = await v2.send(payer, "removeAction", [a.master, a.unregistered]);
    expect(parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs }).map((e) => e.eventName)).toEqual([
      "ActionRemovedFromGroup",
      "ActionRemoved",
    ]);
    expect(await v2.refused(payer, "addActionToGroup", [a.master, a.group, a.unregistered])).toEqual({
      errorName: "ActionDoesNotExist",
      args: [a.unregistered],
    });
  });

  it("leaves a v1 wallet-created account without a wallet 0, which its admin can register as the AMW", async () => {
    const { sovereign } = s;
    const admin = (await v2.read("getAccount", [sovereign.master])) as { admin: Address; walletCount: bigint };
    expect(admin.walletCount).toBe(0n);
    const amw = randomAddress();
    await v2.send(admin.admin, "registerWalletDerivation", [sovereign.master, amw, sovereign.master, "", ""]);
    expect(await v2.read("listWallets", [sovereign.master, 0n, 10n])).toEqual([
      [{ id: 0n, wallet: amw, name: "", description: "" }],
      1n,
    ]);
  });
});
