// Shared by the contract test files: a fresh AccountConfig deployment on the run's anvil, named
// actors, and helpers that send a write (after simulating it), decode a revert, and set up accounts.
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  getAddress,
  hexToBigInt,
  keccak256,
  stringToHex,
  http,
  parseEther,
  parseEventLogs,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { foundry } from "viem/chains";
import { inject } from "vitest";
import { deployAccountConfig, type Deployment } from "../../contracts/deploy.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";

export const abi = accountConfigAbi;
type Abi = typeof accountConfigAbi;
export type WriteName = ContractFunctionName<Abi, "nonpayable" | "payable">;
export type ReadName = ContractFunctionName<Abi, "view" | "pure">;
export type WriteArgs<N extends WriteName> = ContractFunctionArgs<Abi, "nonpayable" | "payable", N>;
export type ReadArgs<N extends ReadName> = ContractFunctionArgs<Abi, "view" | "pure", N>;

export const ZERO = "0x0000000000000000000000000000000000000000" as Address;

/** A decoded custom-error revert: its name and arguments. */
export type Revert = { errorName: string; args: readonly unknown[] };

/** Permissions of a usage key, as `setUsageApiKey` takes them after name and description. */
export type Perms = {
  canCreateGroups?: boolean;
  canDeleteGroups?: boolean;
  canCreatePkps?: boolean;
  manageIpfsIdsInGroups?: bigint[];
  addPkpToGroups?: bigint[];
  removePkpFromGroups?: bigint[];
  executeInGroups?: bigint[];
  expiration?: bigint;
  balance?: bigint;
};

export function randomAddress(): Address {
  return privateKeyToAddress(generatePrivateKey());
}

/** A fresh CID-shaped string (the contract takes any non-empty CID of at most 128 bytes). */
export function randomCid(): string {
  return `bafkrei${generatePrivateKey().slice(2, 54)}`;
}

/**
 * A guardrail document as a client would send it (shared/guardrails/schema.ts; the contract never
 * parses it): compact JSON of about 1 KiB (1,029 bytes for the default label), with non-ASCII text
 * so its length in bytes differs from its length in characters. `label` makes documents differ; the same label, the same bytes.
 */
export function guardrailDocument(label = "treasury"): string {
  const usdc = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
  const permit2 = "0x000000000022d473030f116ddee9f6b43ac78ba3";
  return JSON.stringify({
    version: 1,
    name: `${label} hot wallet`,
    description: "Pays suppliers in USDC on mainnet and Base; signs in to the dashboard — nothing else.",
    transactions: {
      chains: [1, 8453],
      max_value_wei: "0",
      contracts: [
        {
          address: usdc,
          functions: [
            {
              signature: "function transfer(address to, uint256 amount)",
              args: {
                to: {
                  in: ["0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"],
                },
                amount: { lte: "250000000000" },
              },
            },
            {
              signature: "function approve(address spender, uint256 amount)",
              args: { spender: { eq: permit2 }, amount: { lte: "1000000000000" } },
            },
          ],
        },
      ],
    },
    typed_data: [
      {
        domain: { name: "Permit2", chain_id: 1, verifying_contract: permit2 },
        primary_type: "PermitSingle",
        fields: {
          spender: { eq: "0x3333333333333333333333333333333333333333" },
          "details.amount": { lte: "1000000000000" },
        },
      },
    ],
    messages: { pattern: "Sign in to dashboard.example.com*" },
    raw_digests: false,
    key_export: false,
  });
}

export async function deployFixture() {
  const transport = http(inject("rpcUrl"));
  // anvil mines at once; viem's default 4 s receipt polling would only slow the suite down.
  const publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 });
  const walletClient = createWalletClient({ chain: foundry, transport });
  const testClient = createTestClient({ chain: foundry, mode: "anvil", transport });
  // Checksummed, as viem decodes addresses from events and errors.
  const accounts = (await walletClient.getAddresses()).map((a) => getAddress(a));
  const actor = (i: number): Address => {
    const a = accounts[i];
    if (!a) throw new Error(`anvil must unlock at least ${i + 1} accounts`);
    return a;
  };
  const [owner, payer, otherPayer, alice, bob, carol, dave, stranger] = [0, 1, 2, 3, 4, 5, 6, 7].map(actor) as [
    Address,
    Address,
    Address,
    Address,
    Address,
    Address,
    Address,
    Address,
  ];

  const deployment: Deployment = await deployAccountConfig(
    { publicClient, walletClient, account: owner },
    { owner: owner },
  );
  const address = deployment.proxy;

  async function read<N extends ReadName>(
    functionName: N,
    args: ReadArgs<N>,
  ): Promise<ContractFunctionReturnType<Abi, "view" | "pure", N>> {
    // viem's generic overloads cannot follow N through a wrapper; the result type is restored above.
    return (await publicClient.readContract({ address, abi, functionName, args } as never)) as never;
  }

  /**
   * Simulates then sends a write from `from`; fails the test if it reverts. The gas limit has the
   * enclave's headroom over the estimate (enclave/payers/pool.ts): the estimate runs at the latest
   * block's number, and a write that stores `block.number` over the one stored in that block
   * (setWalletGuardrail twice in a row) costs more in the next. Gas used does not depend on it.
   */
  async function write<N extends WriteName>(
    from: Address,
    functionName: N,
    args: WriteArgs<N>,
  ): Promise<TransactionReceipt> {
    const call = { address, abi, functionName, args, account: from } as never;
    const { request } = await publicClient.simulateContract(call);
    const gas = await publicClient.estimateContractGas(call);
    const hash = await walletClient.writeContract({
      ...(request as object),
      gas: (gas * 12n) / 10n + 10_000n,
    } as never);
    const receipt = await receiptOf(hash);
    if (receipt.status !== "success") throw new Error(`${functionName} reverted on chain`);
    return receipt;
  }

  /**
   * The receipt of a transaction just sent. anvil mines it a few milliseconds after it answers the
   * send, so the receipt is asked for every 2 ms until it is there: viem's wait would poll every
   * pollingInterval (most of the suite's time at 50 ms over its thousand writes; a shorter interval
   * keeps a block watcher polling, which costs more CPU than the suite saves).
   */
  async function receiptOf(hash: Hex): Promise<TransactionReceipt> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        return await publicClient.getTransactionReceipt({ hash });
      } catch (err) {
        if (!(err instanceof TransactionReceiptNotFoundError) || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
  }

  /** The custom error a write from `from` reverts with (by simulation); throws if it would succeed. */
  async function revert<N extends WriteName>(from: Address, functionName: N, args: WriteArgs<N>): Promise<Revert> {
    try {
      await publicClient.simulateContract({ address, abi, functionName, args, account: from } as never);
    } catch (err) {
      return decodeRevert(err);
    }
    throw new Error(`${functionName} from ${from} was expected to revert but would succeed`);
  }

  /** The custom error a read reverts with. */
  async function readRevert<N extends ReadName>(functionName: N, args: ReadArgs<N>): Promise<Revert> {
    try {
      await read(functionName, args);
    } catch (err) {
      return decodeRevert(err);
    }
    throw new Error(`${functionName} was expected to revert`);
  }

  /** An address that is not an anvil dev account, impersonated and funded so it can send. */
  async function impersonate(who: Address = randomAddress()): Promise<Address> {
    await testClient.impersonateAccount({ address: who });
    await testClient.setBalance({ address: who, value: parseEther("10") });
    return who;
  }

  /** A managed account created by the payer: its master key, master hash and Account Master Wallet. */
  async function managedAccount(name = "acct") {
    const key = generateApiKey();
    const master = apiKeyHash(key);
    const amw = randomAddress();
    const receipt = await write(payer, "newAccount", [master, name, "", amw, master]);
    return { key, master, amw, receipt };
  }

  /**
   * A ChainSecured account created on chain by `admin`; its master hash is the admin's lookup hash
   * and `amw` (a stand-in for the enclave's derived address) its wallet 0.
   */
  async function chainSecuredAccount(admin: Address, name = "sovereign") {
    const amw = randomAddress();
    const receipt = await write(admin, "newChainSecuredAccount", [name, "", amw]);
    return { master: walletLookupHash(admin), admin, amw, receipt };
  }

  /** Creates (or replaces) a usage key of `master` through the payer; returns its key and hash. */
  async function usageKey(master: bigint, perms: Perms = {}, sender: Address = payer) {
    const key = generateApiKey();
    const hash = apiKeyHash(key);
    await setUsageKey(master, hash, perms, sender);
    return { key, hash };
  }

  async function setUsageKey(master: bigint, hash: bigint, perms: Perms = {}, sender: Address = payer) {
    return write(sender, "setUsageApiKey", usageKeyArgs(master, hash, perms));
  }

  /** A registered wallet of the account (through the payer and master key of a managed account). */
  async function wallet(keyHash: bigint, sender: Address = payer, name = "w") {
    const w = randomAddress();
    const receipt = await write(sender, "registerWalletDerivation", [
      keyHash,
      w,
      BigInt(generatePrivateKey()),
      name,
      "",
    ]);
    return { address: w, receipt };
  }

  /** Registers `n` fresh CIDs with the account (groups list only registered actions); their hashes. */
  async function actions(keyHash: bigint, n = 1, sender: Address = payer): Promise<bigint[]> {
    const cids = Array.from({ length: n }, () => randomCid());
    await write(sender, "registerActions", [keyHash, 0n, cids]);
    return cids.map(cidHash);
  }

  /** Adds a group and returns its id, decoded from the GroupAdded event. */
  async function group(keyHash: bigint, cids: bigint[] = [], wallets: Address[] = [], sender: Address = payer) {
    const receipt = await write(sender, "addGroup", [keyHash, "g", "", cids, wallets]);
    const [added] = parseEventLogs({ abi, logs: receipt.logs, eventName: "GroupAdded" });
    if (!added) throw new Error("addGroup emitted no GroupAdded");
    return added.args.groupId;
  }

  async function now(): Promise<bigint> {
    return (await publicClient.getBlock()).timestamp;
  }

  /** Moves chain time forward and mines a block, so views see the new time. */
  async function advance(seconds: number): Promise<void> {
    await testClient.increaseTime({ seconds });
    await testClient.mine({ blocks: 1 });
  }

  await write(owner, "setApiPayers", [[payer, otherPayer]]);

  return {
    publicClient,
    walletClient,
    testClient,
    deployment,
    address,
    owner,
    payer,
    otherPayer,
    alice,
    bob,
    carol,
    dave,
    stranger,
    read,
    write,
    revert,
    readRevert,
    impersonate,
    managedAccount,
    chainSecuredAccount,
    usageKey,
    setUsageKey,
    wallet,
    actions,
    group,
    now,
    advance,
  };
}

export type Fixture = Awaited<ReturnType<typeof deployFixture>>;

export function usageKeyArgs(
  master: bigint,
  hash: bigint,
  p: Perms = {},
  name = "key",
  description = "",
): WriteArgs<"setUsageApiKey"> {
  return [
    master,
    hash,
    p.expiration ?? 0n,
    p.balance ?? 0n,
    name,
    description,
    p.canCreateGroups ?? false,
    p.canDeleteGroups ?? false,
    p.canCreatePkps ?? false,
    p.manageIpfsIdsInGroups ?? [],
    p.addPkpToGroups ?? [],
    p.removePkpFromGroups ?? [],
    p.executeInGroups ?? [],
  ];
}

/** AccountConfig's ERC-7201 storage root: keccak256(abi.encode(uint256(keccak256(id)) - 1)) & ~0xff. */
export function layoutSlot(): bigint {
  const namespace = hexToBigInt(keccak256(stringToHex("sigil.storage.AccountConfig"))) - 1n;
  return hexToBigInt(keccak256(encodeAbiParameters([{ type: "uint256" }], [namespace]))) & ~0xffn;
}

/** Storage slot of `Layout.hashes[hash]` (the first member): `master` here, `kind` at the next slot. */
export function hashEntrySlot(hash: bigint): bigint {
  return hexToBigInt(keccak256(encodeAbiParameters([{ type: "uint256" }, { type: "uint256" }], [hash, layoutSlot()])));
}

/** Storage slot of `Layout.aliases[hash]`, member 7 (after payers' two slots and adminPayer). */
export function aliasSlot(hash: bigint): bigint {
  return hexToBigInt(
    keccak256(encodeAbiParameters([{ type: "uint256" }, { type: "uint256" }], [hash, layoutSlot() + 7n])),
  );
}

export function decodeRevert(err: unknown): Revert {
  if (err instanceof BaseError) {
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError && reverted.data) {
      return { errorName: reverted.data.errorName, args: reverted.data.args ?? [] };
    }
  }
  throw err;
}
