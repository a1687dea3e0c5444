// Deploys AccountConfig: the views contract, the implementation that forwards to it, and the
// ERC-1967 proxy initialized with the owner. Used by `npm start`, the tests and, as a command,
// against any RPC URL:
//
//   node contracts/deploy.ts --rpc-url http://127.0.0.1:8545 [--owner 0x…]
//   node contracts/deploy.ts --rpc-url URL --upgrade 0x<proxy>
//   node contracts/deploy.ts --rpc-url URL --receipt-anchor   (ReceiptAnchor, the release's SIGIL_RECEIPT_ANCHOR)
//
// With --upgrade it deploys a new implementation (views + core) and moves the existing proxy to it,
// keeping its state: sent when the sender owns the proxy, else printed as the call the owner (a
// multisig in production) must send. The storage layout is checked against the deployed version
// by test/contract/storageLayout.test.ts.
//
// The sender is SIGIL_DEPLOYER_PRIVATE_KEY when set, else the node's first unlocked account
// (anvil's dev accounts), so no key is needed for a local chain and none is kept in the repo.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  http,
  isAddress,
  type Account,
  type Address,
  type Hex,
  type PublicClient,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { accountConfigAbi } from "../shared/generated/accountConfigAbi.ts";
import type { Artifact } from "./compile.ts";

const outDir = join(dirname(fileURLToPath(import.meta.url)), "out");

/** A compiled contract from contracts/out (run `npm run build` first). */
export function loadArtifact(contractName: string): Artifact {
  try {
    return JSON.parse(readFileSync(join(outDir, `${contractName}.json`), "utf8")) as Artifact;
  } catch {
    throw new Error(`contracts/out/${contractName}.json is missing: run \`npm run build\` first`);
  }
}

export type Deployment = {
  proxy: Address;
  implementation: Address;
  views: Address;
  owner: Address;
  chainId: number;
  blockNumber: bigint;
};

export type DeployClients = { publicClient: PublicClient; walletClient: WalletClient; account: Account | Address };

/** Deploys one contract from its artifact and waits for the receipt; returns its address. */
export async function deployContract(
  { publicClient, walletClient, account }: DeployClients,
  contractName: string,
  args: readonly unknown[] = [],
): Promise<{ address: Address; blockNumber: bigint }> {
  const artifact = loadArtifact(contractName);
  const hash = await walletClient.deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args,
    account,
    chain: walletClient.chain ?? null,
  });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success" || !receipt.contractAddress) {
    throw new Error(`deploying ${contractName} failed in transaction ${hash}`);
  }
  return { address: getAddress(receipt.contractAddress), blockNumber: receipt.blockNumber };
}

/** Deploys a new implementation (views + core) without touching any proxy, for upgrades. */
export async function deployImplementation(
  clients: DeployClients,
  { implementationName = "AccountConfig" }: { implementationName?: string } = {},
): Promise<{ implementation: Address; views: Address }> {
  const views = await deployContract(clients, "AccountConfigViews");
  const implementation = await deployContract(clients, implementationName, [views.address]);
  return { implementation: implementation.address, views: views.address };
}

export async function deployAccountConfig(clients: DeployClients, { owner }: { owner: Address }): Promise<Deployment> {
  const { implementation, views } = await deployImplementation(clients);
  const initData: Hex = encodeFunctionData({ abi: accountConfigAbi, functionName: "initialize", args: [owner] });
  const proxy = await deployContract(clients, "AccountConfigProxy", [implementation, initData]);
  const chainId = await clients.publicClient.getChainId();
  return { proxy: proxy.address, implementation, views, owner, chainId, blockNumber: proxy.blockNumber };
}

export type Upgrade = {
  implementation: Address;
  views: Address;
  previousVersion: string;
  /** Sent when the sender owns the proxy. */
  transactionHash?: Hex;
  /** Otherwise the owner's call, for the owner to send. */
  ownerCall?: { from: Address; to: Address; data: Hex };
};

/** Deploys a new implementation and moves `proxy` to it (upgradeToAndCall, no initializer call). */
export async function upgradeAccountConfig(clients: DeployClients, proxy: Address): Promise<Upgrade> {
  const { publicClient, walletClient, account } = clients;
  const read = <T>(functionName: "owner" | "version") =>
    publicClient.readContract({ address: proxy, abi: accountConfigAbi, functionName }) as Promise<T>;
  const [owner, previousVersion] = await Promise.all([read<Address>("owner"), read<string>("version")]);
  const { implementation, views } = await deployImplementation(clients);
  const data = encodeFunctionData({
    abi: accountConfigAbi,
    functionName: "upgradeToAndCall",
    args: [implementation, "0x"],
  });
  const sender = typeof account === "string" ? account : account.address;
  if (getAddress(sender) !== getAddress(owner))
    return { implementation, views, previousVersion, ownerCall: { from: owner, to: proxy, data } };
  const hash = await walletClient.sendTransaction({ account, to: proxy, data, chain: walletClient.chain ?? null });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`upgradeToAndCall failed in transaction ${hash}`);
  return { implementation, views, previousVersion, transactionHash: hash };
}

/** The deploying account: a private key from the environment, else the node's first unlocked account. */
export async function deployerAccount(walletClient: WalletClient, privateKey?: string): Promise<Account | Address> {
  if (privateKey) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey))
      throw new Error("SIGIL_DEPLOYER_PRIVATE_KEY must be 0x followed by 64 hex digits");
    return privateKeyToAccount(privateKey as Hex);
  }
  const [first] = await walletClient.getAddresses();
  if (!first) throw new Error("the node has no unlocked account: set SIGIL_DEPLOYER_PRIVATE_KEY");
  return first;
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const rpcUrl = argValue("--rpc-url") ?? process.env.SIGIL_RPC_URL;
  if (!rpcUrl)
    throw new Error(
      "usage: node contracts/deploy.ts --rpc-url URL [--owner ADDRESS | --upgrade PROXY | --receipt-anchor]",
    );
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ transport });
  const walletClient = createWalletClient({ transport });
  const account = await deployerAccount(walletClient, process.env.SIGIL_DEPLOYER_PRIVATE_KEY);
  if (process.argv.includes("--receipt-anchor")) {
    // The enclaves' SIGIL_RECEIPT_ANCHOR (a release value): no owner, nothing to upgrade.
    const anchor = await deployContract({ publicClient, walletClient, account }, "ReceiptAnchor");
    console.log(`ReceiptAnchor   ${anchor.address}`);
    console.log(`deployed block  ${anchor.blockNumber}`);
    return;
  }
  const upgrade = argValue("--upgrade");
  if (upgrade !== undefined) {
    if (!isAddress(upgrade)) throw new Error(`--upgrade is not an address: ${upgrade}`);
    const u = await upgradeAccountConfig({ publicClient, walletClient, account }, getAddress(upgrade));
    console.log(`implementation  ${u.implementation}`);
    console.log(`views           ${u.views}`);
    if (u.ownerCall) {
      console.log(`not sent: the proxy's owner ${u.ownerCall.from} must send to ${u.ownerCall.to} the data`);
      console.log(u.ownerCall.data);
    } else {
      const version = await publicClient.readContract({
        address: getAddress(upgrade),
        abi: accountConfigAbi,
        functionName: "version",
      });
      console.log(`upgraded        ${upgrade} from version ${u.previousVersion} to ${version} in ${u.transactionHash}`);
    }
    return;
  }
  const ownerArg = argValue("--owner");
  if (ownerArg !== undefined && !isAddress(ownerArg)) throw new Error(`--owner is not an address: ${ownerArg}`);
  const owner = (ownerArg as Address | undefined) ?? (typeof account === "string" ? account : account.address);
  const d = await deployAccountConfig({ publicClient, walletClient, account }, { owner });
  console.log(`chain id        ${d.chainId}`);
  console.log(`owner           ${d.owner}`);
  console.log(`implementation  ${d.implementation}`);
  console.log(`views           ${d.views}`);
  console.log(`AccountConfig   ${d.proxy}`);
  // The edge's SIGIL_CONTRACT_FROM_BLOCK: where the audit log's event reads start.
  console.log(`deployed block  ${d.blockNumber}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`deploy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
