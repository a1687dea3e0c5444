// ChainSecured accounts (spec, Authentication 7-9): a wallet administers its account on chain and
// proves itself to the service with EIP-712 signatures. Here: the typed data of the signature
// endpoints and of X-Wallet-Auth, signed by any viem Account or WalletClient (an EOA, or the owner
// of an ERC-1271 wallet signing for it), and the contract calls of the wallet-owned lifecycle
// through viem with AccountConfig's ABI.
import {
  encodeFunctionData,
  parseEventLogs,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { buildTypedData, signableTypedData, type SigilPrimaryType, type SigilTypedData } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { walletLookupHash } from "../../shared/hashing.ts";
import { camelOf, type ContractPermissions, permissionArgs, permissionFields } from "../../shared/permissions.ts";
import type { SigilClient } from "./client.ts";

export { accountConfigAbi, walletLookupHash };
export type { SigilPrimaryType, SigilTypedData };

/** Anything that signs EIP-712 typed data: a local viem Account, or a WalletClient (with its account, or a JSON-RPC one such as a browser wallet). */
export type TypedDataSigner =
  | Pick<Account & { signTypedData: NonNullable<Account["signTypedData"]> }, "address" | "signTypedData">
  | WalletClient<Transport, Chain | undefined, Account | undefined>;

/** A signature endpoint's body (and X-Wallet-Auth's content): the typed data and its signature. */
export type SignedTypedData<P extends SigilPrimaryType = SigilPrimaryType> = {
  typed_data: SigilTypedData<P>;
  signature: Hex;
};

function isWalletClient(
  signer: TypedDataSigner,
): signer is WalletClient<Transport, Chain | undefined, Account | undefined> {
  return typeof (signer as WalletClient).request === "function";
}

async function signerAddress(signer: TypedDataSigner): Promise<Address> {
  if (!isWalletClient(signer)) return signer.address;
  if (signer.account) return signer.account.address;
  const [address] = await signer.getAddresses();
  if (!address) throw new TypeError("the wallet client has no account");
  return address;
}

/**
 * Signs the Sigil typed data `primaryType` for `address` (default: the signer's own address; an
 * ERC-1271 wallet's address when the signer is its owner), issued now. `chainId` is the service's
 * chain (getNodeChainConfig's chain_id); give a client instead and it is asked.
 */
export async function signSigilTypedData<P extends SigilPrimaryType>(args: {
  signer: TypedDataSigner;
  primaryType: P;
  chainId?: number | bigint;
  client?: Pick<SigilClient, "getNodeChainConfig">;
  address?: Address;
  issuedAt?: number | bigint;
}): Promise<SignedTypedData<P>> {
  const chainId = args.chainId ?? (await chainIdOf(args.client));
  const address = args.address ?? (await signerAddress(args.signer));
  const typed = buildTypedData({
    primaryType: args.primaryType,
    address,
    chainId,
    issuedAt: args.issuedAt ?? Math.floor(Date.now() / 1000),
  });
  const definition = signableTypedData(typed);
  const signature = isWalletClient(args.signer)
    ? await args.signer.signTypedData({
        ...definition,
        account: args.signer.account ?? (await signerAddress(args.signer)),
      } as never)
    : await args.signer.signTypedData(definition as never);
  return { typed_data: typed, signature };
}

async function chainIdOf(client: Pick<SigilClient, "getNodeChainConfig"> | undefined): Promise<number> {
  if (!client) throw new TypeError("give chainId, or a client to ask for it");
  return (await client.getNodeChainConfig()).chain_id;
}

/**
 * An X-Wallet-Auth value (billing under a ChainSecured account's admin wallet): base64url of the
 * JSON `{typed_data, signature}` of a BillingAuth signature, valid for 5 minutes. For a client,
 * pass `() => walletAuthHeader(…)` as its `walletAuth` so each call signs a fresh one.
 */
export async function walletAuthHeader(args: {
  signer: TypedDataSigner;
  chainId?: number | bigint;
  client?: Pick<SigilClient, "getNodeChainConfig">;
  address?: Address;
}): Promise<string> {
  const signed = await signSigilTypedData({ ...args, primaryType: "BillingAuth" });
  const bytes = new TextEncoder().encode(JSON.stringify(signed));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The data of an AccountConfig call: for an ERC-1271 wallet that sends it through its own execute function. */
export function accountConfigCall(functionName: AccountConfigWrite, args: readonly unknown[]): Hex {
  return encodeFunctionData({ abi: accountConfigAbi, functionName, args } as never);
}

type AccountConfigWrite =
  | "newChainSecuredAccount"
  | "registerWalletDerivation"
  | "setUsageApiKey"
  | "transferChainSecuredAccountOwnership"
  | "convertToChainSecuredAccount"
  | "registerActions"
  | "addGroup"
  | "removeUsageApiKey";

/**
 * What a usage key may do, as setUsageApiKey takes it (group ids as bigints; 0 = none/never): its
 * permissions in the contract's names (canCreateGroups, …, executeInGroups), each off or empty
 * when left out.
 */
export type UsageKeyGrant = {
  expiresAt?: bigint;
  spendLimitCents?: bigint;
  name?: string;
  description?: string;
} & Partial<ContractPermissions<bigint>>;

/**
 * The wallet-owned lifecycle on AccountConfig, sent by `walletClient`'s account (the admin EOA)
 * and waited for; each resolves with the mined receipt's transaction hash and what its events say.
 * A revert throws viem's error (its `shortMessage` names the contract's error).
 */
export function accountConfig(args: {
  walletClient: WalletClient<Transport, Chain | undefined, Account>;
  publicClient: Pick<PublicClient, "waitForTransactionReceipt">;
  address: Address;
}) {
  const { walletClient, publicClient, address } = args;
  const send = async (functionName: AccountConfigWrite, callArgs: readonly unknown[]) => {
    const hash = await walletClient.writeContract({
      address,
      abi: accountConfigAbi,
      functionName,
      args: callArgs,
      chain: walletClient.chain ?? null,
      account: walletClient.account,
    } as never);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted (transaction ${hash})`);
    return receipt;
  };
  /** The account hash of a wallet-owned account: what the contract names it by (its admin's lookup hash). */
  const accountHashOf = (admin: Address) => walletLookupHash(admin);
  return {
    accountHashOf,
    /** Creates the admin's account; `masterWallet` is create_wallet_with_signature's master_wallet_address. */
    async newChainSecuredAccount(a: { name: string; description?: string; masterWallet: Address }) {
      const receipt = await send("newChainSecuredAccount", [a.name, a.description ?? "", a.masterWallet]);
      return { transactionHash: receipt.transactionHash, accountHash: accountHashOf(walletClient.account.address) };
    },
    /** Registers a wallet create_wallet_with_signature derived (its address and derivation_path). */
    async registerWalletDerivation(a: {
      wallet: Address;
      derivationPath: Hex | bigint;
      name?: string;
      description?: string;
      accountHash?: bigint;
    }) {
      const receipt = await send("registerWalletDerivation", [
        a.accountHash ?? accountHashOf(walletClient.account.address),
        a.wallet,
        BigInt(a.derivationPath),
        a.name ?? "",
        a.description ?? "",
      ]);
      return { transactionHash: receipt.transactionHash };
    },
    /** Grants a usage key (add_usage_api_key_with_signature's usage_api_key_hash) its permissions. */
    async setUsageApiKey(a: { keyHash: Hex | bigint; accountHash?: bigint } & UsageKeyGrant) {
      const receipt = await send("setUsageApiKey", [
        a.accountHash ?? accountHashOf(walletClient.account.address),
        BigInt(a.keyHash),
        a.expiresAt ?? 0n,
        a.spendLimitCents ?? 0n,
        a.name ?? "",
        a.description ?? "",
        ...permissionArgs(
          permissionFields(
            (name) => a[camelOf(name)] ?? false,
            (name) => [...(a[camelOf(name)] ?? [])],
          ),
        ),
      ]);
      return { transactionHash: receipt.transactionHash };
    },
    /** Registers actions (CIDs) with the account, as add_action does for a managed one. */
    async registerActions(a: { cids: string[]; groupId?: bigint; accountHash?: bigint }) {
      const receipt = await send("registerActions", [
        a.accountHash ?? accountHashOf(walletClient.account.address),
        a.groupId ?? 0n,
        a.cids,
      ]);
      return { transactionHash: receipt.transactionHash };
    },
    /** Adds a group of actions (CID hashes) and wallets; resolves with its id. */
    async addGroup(a: {
      name: string;
      description?: string;
      cidHashes: bigint[];
      wallets: Address[];
      accountHash?: bigint;
    }) {
      const receipt = await send("addGroup", [
        a.accountHash ?? accountHashOf(walletClient.account.address),
        a.name,
        a.description ?? "",
        a.cidHashes,
        a.wallets,
      ]);
      const groupId = parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0]?.args
        .groupId;
      if (groupId === undefined) throw new Error("addGroup: no GroupAdded event in the receipt");
      return { transactionHash: receipt.transactionHash, groupId };
    },
    /** Hands the account to another admin wallet; the sender stops being able to administer it. */
    async transferOwnership(a: { newAdmin: Address; accountHash?: bigint }) {
      const receipt = await send("transferChainSecuredAccountOwnership", [
        a.accountHash ?? accountHashOf(walletClient.account.address),
        a.newAdmin,
      ]);
      return { transactionHash: receipt.transactionHash };
    },
  };
}
