// Wallet-owned flows: a wallet (the signer: SIGIL_PRIVATE_KEY, or --keystore FILE with its password
// in SIGIL_KEYSTORE_PASSWORD) proves itself to the service with EIP-712 signatures and sends its
// account's writes to AccountConfig itself, paying their gas, on the chain the service names
// (get_node_chain_config: chain id, contract, rpc_url; --rpc-url overrides the URL).
// `sigil chain-secured create` makes such an account; `sigil convert` turns a managed account into
// one; `wallet create --sign` and `key add --sign` (wallet.ts, key.ts) use the same signer.
// viem, the keystore and the SDK's signing load when a command runs (service(), import()), not for its --help.
import type { PrivateKeyAccount } from "viem/accounts";
import type {
  accountConfig,
  GetNodeChainConfigOutput,
  SigilClient,
  SigilPrimaryType,
  signSigilTypedData,
} from "../../sdk/src/index.ts";
import {
  CliError,
  fields,
  readInput,
  required,
  service,
  text,
  UsageError,
  valued,
  type Command,
  type Context,
  type Env,
  type Group,
} from "./context.ts";

/** The options of every command that signs as a wallet. */
export const signerOptions = valued("keystore", "rpc-url");

export const signerUsage = `the signer: --keystore FILE (an Ethereum v3 keystore, scrypt or pbkdf2; its password in
  SIGIL_KEYSTORE_PASSWORD), or SIGIL_PRIVATE_KEY (0x + 64 hex). Its transactions go to the chain
  the service names (get_node_chain_config's rpc_url, or --rpc-url URL), and it pays their gas.`;

/** The signing wallet: the keystore when one is named, otherwise SIGIL_PRIVATE_KEY. Neither key is ever printed. */
export async function loadSigner(keystore: string | undefined, env: Env): Promise<PrivateKeyAccount> {
  if (keystore !== undefined) {
    const password = env.SIGIL_KEYSTORE_PASSWORD;
    if (password === undefined) throw new UsageError("--keystore needs its password in SIGIL_KEYSTORE_PASSWORD");
    const { decryptKeystore } = await import("./keystore.ts");
    return accountOf(decryptKeystore(readInput(keystore), password), `the key in ${keystore}`);
  }
  const key = env.SIGIL_PRIVATE_KEY?.trim();
  if (!key)
    throw new UsageError("this command signs as a wallet: set SIGIL_PRIVATE_KEY (0x + 64 hex) or give --keystore FILE");
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new UsageError("SIGIL_PRIVATE_KEY must be 0x followed by 64 hex digits");
  return accountOf(key as `0x${string}`, "SIGIL_PRIVATE_KEY");
}

/** The account of a private key; an invalid one (0, or beyond the curve's order) is refused without its value. */
function accountOf(key: `0x${string}`, what: string): PrivateKeyAccount {
  const { privateKeyToAccount } = service();
  try {
    return privateKeyToAccount(key);
  } catch {
    throw new CliError("invalid_private_key", `${what} is not a valid secp256k1 private key`);
  }
}

export type WalletOwner = {
  signer: PrivateKeyAccount;
  chain: GetNodeChainConfigOutput;
  /** A client without the API key: the signature endpoints take none. */
  client: SigilClient;
  sign<P extends SigilPrimaryType>(primaryType: P): ReturnType<typeof signSigilTypedData<P>>;
  /** AccountConfig calls sent by the signer (they check it can pay for gas first). */
  contract(): Promise<ReturnType<typeof accountConfig>>;
};

/** The signer, the service's chain, and the means to sign and to send AccountConfig calls as the signer. */
export async function walletOwner(ctx: Context, values: Record<string, unknown>): Promise<WalletOwner> {
  const signer = await loadSigner(text(values, "keystore"), ctx.env);
  const client = ctx.client().with({ apiKey: undefined });
  const chain = await client.getNodeChainConfig();
  const { accountConfig, signSigilTypedData } = service();
  const sign = <P extends SigilPrimaryType>(primaryType: P) =>
    signSigilTypedData({ signer, primaryType, chainId: chain.chain_id });
  const contract = async () => {
    if (!chain.contract_address)
      throw new CliError("chain_unavailable", "the service names no AccountConfig contract (get_node_chain_config)");
    const rpcUrl = text(values, "rpc-url") ?? chain.rpc_url;
    const { createPublicClient, createWalletClient, defineChain, getAddress, http } = service();
    const viemChain = defineChain({
      id: chain.chain_id,
      name: chain.chain_name,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    });
    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ chain: viemChain, transport, pollingInterval: 250 });
    if ((await publicClient.getBalance({ address: signer.address })) === 0n) {
      throw new CliError(
        "insufficient_funds",
        `the signer ${signer.address} has no ether on ${chain.chain_name} (chain ${chain.chain_id}) to pay for its transactions`,
      );
    }
    const walletClient = createWalletClient({ account: signer, chain: viemChain, transport });
    return accountConfig({ walletClient, publicClient, address: getAddress(chain.contract_address) });
  };
  return { signer, chain, client, sign, contract };
}

/**
 * A write made by signature (--sign): the service answers a request signed as the signer (`ask`: a
 * key or a wallet made for it), then the signer sends the on-chain half (`send`). The contract is
 * reached first: what the service makes would be shown for nothing if its transaction could not
 * be sent. The answer comes with that transaction's hash.
 */
export async function signedWrite<A>(
  ctx: Context,
  values: Record<string, unknown>,
  write: {
    ask(owner: WalletOwner): Promise<A>;
    send(contract: Awaited<ReturnType<WalletOwner["contract"]>>, answer: A): Promise<{ transactionHash: string }>;
  },
): Promise<{ owner: WalletOwner; answer: A & { transaction_hash: string } }> {
  const owner = await walletOwner(ctx, values);
  const contract = await owner.contract();
  const answer = await write.ask(owner);
  const sent = await write.send(contract, answer);
  return { owner, answer: { ...answer, transaction_hash: sent.transactionHash } };
}

/** For billing without a key: a client that signs a fresh X-Wallet-Auth as the signer for each call. */
export async function walletAuthClient(ctx: Context, values: Record<string, unknown>): Promise<SigilClient> {
  const signer = await loadSigner(text(values, "keystore"), ctx.env);
  const client = ctx.client().with({ apiKey: undefined });
  const { chain_id: chainId } = await client.getNodeChainConfig();
  const { walletAuthHeader } = service();
  return client.with({ apiKey: undefined, walletAuth: () => walletAuthHeader({ signer, chainId }) });
}

const create: Command = {
  name: "chain-secured create",
  summary: "create an account the signer's wallet administers on chain, with its first wallet",
  usage: `--name NAME [--description TEXT] [--wallet-name NAME] [--keystore FILE] [--rpc-url URL]

  Creates a ChainSecured account administered by the signer: asks the service for the account's
  master wallet and a first wallet (create_wallet_with_signature), then sends
  newChainSecuredAccount and registerWalletDerivation to AccountConfig. Prints the account hash,
  the admin, the master wallet and the wallet. No API key is made: add one with key add --sign.

  ${signerUsage}`,
  options: { ...signerOptions, ...valued("name", "description", "wallet-name") },
  async run({ values, ctx }) {
    const name = required(values, "name");
    const { getAddress, toHash32 } = service();
    const owner = await walletOwner(ctx, values);
    const contract = await owner.contract();
    const wallet = await owner.client.createWalletWithSignature(await owner.sign("CreateWallet"));
    const created = await contract.newChainSecuredAccount({
      name,
      description: text(values, "description") ?? "",
      masterWallet: getAddress(wallet.master_wallet_address),
    });
    const registered = await contract.registerWalletDerivation({
      wallet: getAddress(wallet.wallet_address),
      derivationPath: wallet.derivation_path as `0x${string}`,
      name: text(values, "wallet-name") ?? "",
    });
    const data = {
      account_id: toHash32(created.accountHash),
      admin_wallet_address: owner.signer.address,
      master_wallet_address: wallet.master_wallet_address,
      wallet_address: wallet.wallet_address,
      derivation_path: wallet.derivation_path,
      transaction_hashes: [created.transactionHash, registered.transactionHash],
    };
    ctx.print(data, () =>
      fields([
        ["account", data.account_id],
        ["admin", data.admin_wallet_address],
        ["master wallet", data.master_wallet_address],
        ["wallet", data.wallet_address],
        ["transactions", data.transaction_hashes.join(" ")],
      ]),
    );
  },
};

const convert: Command = {
  name: "convert",
  summary: "turn the managed account of the master key into a ChainSecured one, administered by the signer",
  usage: `[--keystore FILE] [--rpc-url URL]

  Converts the managed account of the API key (its master key: --key, SIGIL_API_KEY or the
  profile) into a ChainSecured account whose admin is the signer, who signs the ConvertAccount
  request. Afterwards the master key may only read: writes are the admin's, sent on chain.

  ${signerUsage}`,
  options: { ...signerOptions },
  async run({ values, ctx }) {
    const client = ctx.keyed();
    const owner = await walletOwner(ctx, values);
    const signed = await owner.sign("ConvertAccount");
    const answer = await client.convertToChainSecuredAccount({
      new_admin_wallet_address: owner.signer.address,
      ...signed,
    });
    ctx.wrote({ ...answer, admin_wallet_address: owner.signer.address }, [
      ["converted", `the account is now administered by ${owner.signer.address}; its master key may only read`],
    ]);
  },
};

export const chainSecuredGroup: Group = {
  name: "chain-secured",
  summary: "an account the signer's wallet administers on chain, with its first wallet",
  commands: [create],
};

export const convertCommand = convert;
