// Mapping AccountConfig's reverts to the errors clients see (docs/design/api.md), with real viem errors: each
// custom error is produced by simulating a reverting call against the contract on a local anvil.
import { createServer, type AddressInfo } from "node:net";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  http,
  keccak256,
  parseEther,
  stringToHex,
  type Address,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../bin/stack/anvil.ts";
import { deployAccountConfig } from "../contracts/deploy.ts";
import { generateApiKey } from "./apiKey.ts";
import { findRevert, mapContractError } from "./contractErrors.ts";
import { accountConfigAbi } from "./generated/accountConfigAbi.ts";
import { apiKeyHash } from "./hashing.ts";

let anvil: Anvil;
let publicClient: PublicClient;
let walletClient: ReturnType<typeof createWalletClient>;
let contract: Address;
let owner: Address;
let stranger: Address;

// One managed account with a group, a registered wallet and two usage keys.
let master: bigint;
let amw: Address;
let groupId: bigint;
let otherWallet: Address;
let weakKey: bigint; // a usage key with no permissions
let expiredKey: bigint; // a usage key that has expired

const randomAddress = () => privateKeyToAddress(generatePrivateKey());
const randomHash = () => apiKeyHash(generateApiKey());
const cidHash = (cid: string) => BigInt(keccak256(stringToHex(cid)));

type Args = readonly unknown[];

/** Sends a write (simulated first); fails the setup if it reverts. */
async function send(functionName: string, args: Args, from: Address = owner) {
  const { request, result } = await publicClient.simulateContract({
    address: contract,
    abi: accountConfigAbi,
    functionName,
    args,
    account: from,
  } as never);
  const hash = await walletClient.writeContract(request as never);
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
  return result as unknown;
}

/** The viem error a simulated write from `from` reverts with. */
async function simulateError(functionName: string, args: Args, from: Address = owner): Promise<unknown> {
  try {
    await publicClient.simulateContract({
      address: contract,
      abi: accountConfigAbi,
      functionName,
      args,
      account: from,
    } as never);
  } catch (err) {
    return err;
  }
  throw new Error(`${functionName} was expected to revert`);
}

/** The raw revert data (selector + ABI-encoded arguments) inside a viem error. */
function revertData(err: unknown): string {
  const reverted = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null;
  if (!(reverted instanceof ContractFunctionRevertedError) || !reverted.raw)
    throw new Error("no revert data in the error");
  return reverted.raw;
}

const usageKeyArgs = (accountHash: bigint, keyHash: bigint, expiration = 0n) =>
  [accountHash, keyHash, expiration, 0n, "k", "", false, false, false, [], [], [], []] as const;

beforeAll(async () => {
  anvil = await startAnvil({ accounts: 2 });
  const transport = http(anvil.rpcUrl);
  publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 }) as PublicClient;
  walletClient = createWalletClient({ chain: foundry, transport });
  const testClient = createTestClient({ chain: foundry, mode: "anvil", transport });
  const [first, second] = await walletClient.getAddresses();
  if (!first || !second) throw new Error("anvil unlocked too few accounts");
  owner = getAddress(first);
  stranger = getAddress(second);
  contract = (await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner })).proxy;
  await send("setApiPayers", [[owner]]);

  master = randomHash();
  amw = randomAddress();
  await send("newAccount", [master, "acct", "", amw, master]);
  otherWallet = randomAddress();
  await send("registerWalletDerivation", [master, otherWallet, 12345n, "w", ""]);
  groupId = (await send("addGroup", [master, "g", "", [], [amw]])) as bigint;
  weakKey = randomHash();
  await send("setUsageApiKey", usageKeyArgs(master, weakKey));

  expiredKey = randomHash();
  const { timestamp } = await publicClient.getBlock();
  await send("setUsageApiKey", usageKeyArgs(master, expiredKey, timestamp + 10n));
  await testClient.increaseTime({ seconds: 60 });
  await testClient.mine({ blocks: 1 });
  await testClient.setBalance({ address: stranger, value: parseEther("1") });
}, 60_000);

afterAll(async () => {
  await anvil?.stop();
});

/** Maps and checks what every mapped revert shares: not internal, no revert data in the message. */
function mapped(err: unknown, context: { keyHash?: bigint } = {}) {
  const result = mapContractError(err, context);
  const raw = revertData(err);
  expect(result.internal).toBe(false);
  expect(result.error.message).not.toContain(raw.slice(2, 10)); // the selector
  expect(result.error.message).not.toContain(raw.slice(2));
  expect(result.error.message).not.toMatch(/0x[0-9a-fA-F]{64}/);
  expect(result.error.message).not.toMatch(/[0-9a-fA-F]{64}/);
  return result.error;
}

describe("mapContractError: custom errors from real reverts", () => {
  it("AccountDoesNotExist of the caller's own key → invalid_api_key (401)", async () => {
    const unknown = randomHash();
    const err = await simulateError("addGroup", [unknown, "g", "", [], []]);
    expect(findRevert(err)).toEqual({ name: "AccountDoesNotExist", args: [unknown] });
    const e = mapped(err, { keyHash: unknown });
    expect(e.code).toBe("invalid_api_key");
    expect(e.status).toBe(401);
  });

  it("AccountDoesNotExist without a caller context → invalid_api_key", async () => {
    const err = await simulateError("addGroup", [randomHash(), "g", "", [], []]);
    expect(mapped(err).code).toBe("invalid_api_key");
  });

  it("AccountDoesNotExist of another hash (the usage key being managed) → not_found (404)", async () => {
    const missing = randomHash();
    const err = await simulateError("removeUsageApiKey", [master, missing]);
    expect(findRevert(err)?.name).toBe("AccountDoesNotExist");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("not_found");
    expect(e.status).toBe(404);
  });

  it("KeyExpired → invalid_api_key, saying the key has expired", async () => {
    const err = await simulateError("addGroup", [expiredKey, "g", "", [], []]);
    expect(findRevert(err)?.name).toBe("KeyExpired");
    const e = mapped(err, { keyHash: expiredKey });
    expect(e.code).toBe("invalid_api_key");
    expect(e.message).toMatch(/expired/);
  });

  it("NoAccountAccess → chain_secured_account (403)", async () => {
    const err = await simulateError("addGroup", [master, "g", "", [], []], stranger);
    expect(findRevert(err)?.name).toBe("NoAccountAccess");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("chain_secured_account");
    expect(e.status).toBe(403);
    expect(e.message).not.toContain(stranger.slice(2).toLowerCase());
  });

  it("NotOwner → account_key_required (403)", async () => {
    const err = await simulateError("setUsageApiKey", usageKeyArgs(weakKey, randomHash()));
    expect(findRevert(err)?.name).toBe("NotOwner");
    const e = mapped(err, { keyHash: weakKey });
    expect(e.code).toBe("account_key_required");
    expect(e.status).toBe(403);
  });

  it('NotAllowed without a group → permission_denied with details {scope, group_id: "0"}', async () => {
    const err = await simulateError("addGroup", [weakKey, "g", "", [], []]);
    expect(findRevert(err)).toEqual({ name: "NotAllowed", args: ["group:create", 0n] });
    const e = mapped(err, { keyHash: weakKey });
    expect(e.code).toBe("permission_denied");
    expect(e.status).toBe(403);
    expect(e.details).toEqual({ scope: "group:create", group_id: "0" });
    expect(e.message).toContain("group:create");
    expect(e.message).not.toMatch(/for group/);
  });

  it("NotAllowed in a group → permission_denied naming the scope and the group id (as a decimal string)", async () => {
    const err = await simulateError("addActionToGroup", [weakKey, groupId, cidHash("QmX")]);
    expect(findRevert(err)).toEqual({ name: "NotAllowed", args: ["group:manageActions", groupId] });
    const e = mapped(err, { keyHash: weakKey });
    expect(e.code).toBe("permission_denied");
    expect(e.details).toEqual({ scope: "group:manageActions", group_id: groupId.toString() });
    expect(e.message).toContain(`for group ${groupId}`);
  });

  it("GroupDoesNotExist → group_not_found (404)", async () => {
    const err = await simulateError("addActionToGroup", [master, 999n, cidHash("QmX")]);
    expect(findRevert(err)?.name).toBe("GroupDoesNotExist");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("group_not_found");
    expect(e.status).toBe(404);
    expect(e.message).toContain("999");
  });

  it("ActionDoesNotExist → action_not_found (404)", async () => {
    const err = await simulateError("removeActionFromGroup", [master, groupId, cidHash("QmNotThere")]);
    expect(findRevert(err)?.name).toBe("ActionDoesNotExist");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("action_not_found");
    expect(e.status).toBe(404);
  });

  it("ActionDoesNotExist from a group write naming an unregistered action → action_not_found (404)", async () => {
    for (const [fn, args] of [
      ["addActionToGroup", [master, groupId, cidHash("QmNeverRegistered")]],
      ["addGroup", [master, "g", "", [cidHash("QmNeverRegistered")], []]],
    ] as const) {
      const err = await simulateError(fn, args);
      expect(findRevert(err)).toEqual({ name: "ActionDoesNotExist", args: [cidHash("QmNeverRegistered")] });
      const e = mapped(err, { keyHash: master });
      expect(e.code).toBe("action_not_found");
      expect(e.status).toBe(404);
    }
  });

  it("NotAllowed for a new group's content (group:create alone) → permission_denied (403) naming the missing scope", async () => {
    const createOnly = randomHash();
    await send("setUsageApiKey", [master, createOnly, 0n, 0n, "k", "", true, false, false, [], [], [], [0n]]);
    const err = await simulateError("addGroup", [createOnly, "g", "", [0n], [amw]]);
    expect(findRevert(err)).toEqual({ name: "NotAllowed", args: ["group:manageActions", 0n] });
    const e = mapped(err, { keyHash: createOnly });
    expect(e.code).toBe("permission_denied");
    expect(e.status).toBe(403);
    expect(e.message).toContain("group:manageActions");
  });

  it("a multicall's inner revert maps as the inner call's own (group_not_found, 404)", async () => {
    const data = [
      encodeFunctionData({ abi: accountConfigAbi, functionName: "registerActions", args: [master, 0n, ["QmInBatch"]] }),
      encodeFunctionData({
        abi: accountConfigAbi,
        functionName: "addActionToGroup",
        args: [master, 999n, cidHash("QmInBatch")],
      }),
    ];
    const err = await simulateError("multicall", [data]);
    expect(findRevert(err)?.name).toBe("GroupDoesNotExist");
    expect(mapped(err, { keyHash: master }).code).toBe("group_not_found");
  });

  it("WalletNotRegistered → wallet_not_found (404), naming the wallet in lowercase", async () => {
    const wallet = randomAddress();
    const err = await simulateError("addPkpToGroup", [master, groupId, wallet]);
    expect(findRevert(err)?.name).toBe("WalletNotRegistered");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("wallet_not_found");
    expect(e.status).toBe(404);
    expect(e.message).toContain(wallet.toLowerCase());
  });

  it("WalletAlreadyRegistered → already_exists (409)", async () => {
    const err = await simulateError("registerWalletDerivation", [master, otherWallet, 1n, "", ""]);
    expect(findRevert(err)?.name).toBe("WalletAlreadyRegistered");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("already_exists");
    expect(e.status).toBe(409);
  });

  it("AccountAlreadyExists → already_exists (409)", async () => {
    const err = await simulateError("newAccount", [master, "again", "", randomAddress(), master]);
    expect(findRevert(err)?.name).toBe("AccountAlreadyExists");
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("already_exists");
    expect(e.status).toBe(409);
  });

  it("InvalidRequest → invalid_request (400) with the contract's reason", async () => {
    const err = await simulateError("registerWalletDerivation", [
      master,
      "0x0000000000000000000000000000000000000000",
      1n,
      "",
      "",
    ]);
    expect(findRevert(err)).toEqual({ name: "InvalidRequest", args: ["wallet is the zero address"] });
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("invalid_request");
    expect(e.status).toBe(400);
    expect(e.message).toBe("wallet is the zero address");
  });

  it('InvalidRequest "wallet is not in the group" → wallet_not_found', async () => {
    const err = await simulateError("removePkpFromGroup", [master, groupId, otherWallet]);
    expect(findRevert(err)).toEqual({ name: "InvalidRequest", args: ["wallet is not in the group"] });
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("wallet_not_found");
    expect(e.status).toBe(404);
  });

  it("LimitExceeded → invalid_request naming what and the limit", async () => {
    const err = await simulateError("addGroup", [master, "n".repeat(129), "", [], []]);
    expect(findRevert(err)).toEqual({ name: "LimitExceeded", args: ["name", 128n] });
    const e = mapped(err, { keyHash: master });
    expect(e.code).toBe("invalid_request");
    expect(e.message).toContain("name");
    expect(e.message).toContain("128");
  });

  it("maps a revert met in gas estimation (not a simulation) the same way", async () => {
    let err: unknown;
    try {
      await publicClient.estimateContractGas({
        address: contract,
        abi: accountConfigAbi,
        functionName: "addGroup",
        args: [weakKey, "g", "", [], []],
        account: owner,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeDefined();
    expect(mapped(err, { keyHash: weakKey }).code).toBe("permission_denied");
  });

  it("an unmapped custom error (OwnableUnauthorizedAccount) → internal_error, flagged internal", async () => {
    const err = await simulateError("setApiPayers", [[stranger]], stranger);
    expect(findRevert(err)?.name).toBe("OwnableUnauthorizedAccount");
    const { error, internal } = mapContractError(err);
    expect(internal).toBe(true);
    expect(error.code).toBe("internal_error");
    expect(error.status).toBe(500);
    expect(error.message).not.toContain(revertData(err).slice(2, 10));
    expect(error.message).not.toMatch(/0x[0-9a-fA-F]{8}/);
  });
});

describe("mapContractError: errors that are not reverts", () => {
  it("an unreachable RPC → chain_unavailable (503) with retryAfterSeconds, flagged internal", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const dead = createPublicClient({ chain: foundry, transport: http(`http://127.0.0.1:${port}`, { retryCount: 0 }) });
    let err: unknown;
    try {
      await dead.readContract({ address: contract, abi: accountConfigAbi, functionName: "resolveKey", args: [master] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BaseError);
    expect(findRevert(err)).toBeUndefined();
    const { error, internal } = mapContractError(err);
    expect(internal).toBe(true);
    expect(error.code).toBe("chain_unavailable");
    expect(error.status).toBe(503);
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
    expect(error.message).not.toContain(String(port));
  });

  it("a non-viem error → internal_error (500), flagged internal, its message not passed on", () => {
    const { error, internal } = mapContractError(new Error("boom 0xdeadbeef secret detail"));
    expect(internal).toBe(true);
    expect(error.code).toBe("internal_error");
    expect(error.status).toBe(500);
    expect(error.message).not.toContain("boom");
    expect(error.message).not.toContain("0xdeadbeef");
    expect(findRevert(new Error("x"))).toBeUndefined();
  });

  it.each([undefined, null, "a string", 42])("a thrown non-error (%s) → internal_error", (thrown) => {
    expect(mapContractError(thrown).error.code).toBe("internal_error");
  });
});
