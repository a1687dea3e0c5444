// The ChainSecured flows: wallets and usage keys made on a wallet's signature, and a managed
// account handed to the wallet that signed ConvertAccount. The edge checks the typed data and the
// signature before forwarding; the enclave checks them again itself, because it never takes the
// edge's word for who is asking.
import type { Address } from "viem";
import { validateTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { isWalletSignature } from "../../shared/walletSignature.ts";
import { derivationPath, newDerivation } from "../keys/derive.ts";
import { readChain, type Enclave, type RequestContext } from "./context.ts";
import { writeAsCaller } from "./write.ts";

/** Validates the envelope and the signature; returns the signing wallet. */
export async function verifySignedRequest(
  enclave: Enclave,
  primaryType: SigilPrimaryType,
  input: { typed_data: unknown; signature: string },
  expectedAddress?: string,
): Promise<Address> {
  const checked = validateTypedData(input.typed_data, {
    primaryType,
    chainId: enclave.chain.chain.id,
    now: Math.floor(Date.now() / 1000),
    signature: input.signature,
    ...(expectedAddress === undefined ? {} : { expectedAddress: expectedAddress as Address }),
  });
  if (!checked.ok) throw checked.error;
  const { address, digest } = checked.value;
  const valid = await readChain(() =>
    isWalletSignature(enclave.chain.client, { address, digest, signature: input.signature }),
  );
  if (!valid) throw new SigilError("invalid_signature", "the signature is not the wallet's");
  return address;
}

/**
 * The master hash of the account a wallet administers: the account its lookup hash names among
 * the contract's aliases (it administers or administered one), or the ChainSecured account it
 * creates or will create with `newChainSecuredAccount` (whose master is that lookup hash). Only
 * aliases are asked (`accountOfWallet`): a usage key that some account registered under the
 * wallet's lookup hash must not pull the wallet's flows into that account. A live read, as the
 * permission cache serves the execute path only.
 */
async function accountOfWallet(enclave: Enclave, wallet: Address): Promise<bigint> {
  const { client, contract } = enclave.chain;
  const [master] = await readChain(() =>
    client.readContract({ address: contract, abi: accountConfigAbi, functionName: "accountOfWallet", args: [wallet] }),
  );
  return master === 0n ? walletLookupHash(wallet) : master;
}

/**
 * A new PKP for the signer's account; the signer registers it on chain with its own transaction.
 * Also the account's master wallet (the PKP whose derivation is the master hash), which a wallet
 * without an account names as wallet 0 in `newChainSecuredAccount(name, description, amw)`.
 */
export async function createWalletWithSignature(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"create_wallet_with_signature">,
  _ctx: RequestContext,
): Promise<EnclaveResponse<"create_wallet_with_signature">> {
  const signer = await verifySignedRequest(enclave, "CreateWallet", input);
  const master = await accountOfWallet(enclave, signer);
  const derivation = newDerivation();
  return {
    wallet_address: enclave.keyring.pkpAddress(master, derivation).toLowerCase(),
    derivation_path: derivationPath(derivation),
    master_wallet_address: enclave.keyring.pkpAddress(master, master).toLowerCase(),
    account_id: toHash32(master),
  };
}

/**
 * A new usage key for the signer's account and its wallet (the PKP whose derivation is the key's
 * hash). Nothing is on chain until the admin wallet registers both; until then the key is inert.
 */
export async function addUsageApiKeyWithSignature(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"add_usage_api_key_with_signature">,
  _ctx: RequestContext,
): Promise<EnclaveResponse<"add_usage_api_key_with_signature">> {
  const signer = await verifySignedRequest(enclave, "AddUsageApiKey", input);
  const master = await accountOfWallet(enclave, signer);
  const usageKey = generateApiKey();
  const usageHash = apiKeyHash(usageKey);
  return {
    usage_api_key: usageKey,
    wallet_address: enclave.keyring.pkpAddress(master, usageHash).toLowerCase(),
    derivation_path: derivationPath(usageHash),
    usage_api_key_hash: toHash32(usageHash),
  };
}

/** Hands a managed account to the wallet that signed the ConvertAccount typed data. */
export async function convertToChainSecuredAccount(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"convert_to_chain_secured_account">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"convert_to_chain_secured_account">> {
  const { response } = await writeAsCaller(
    enclave,
    input.api_key,
    ctx,
    async ({ keyHash }) => ({
      functionName: "convertToChainSecuredAccount",
      args: [keyHash, await verifySignedRequest(enclave, "ConvertAccount", input, input.new_admin_wallet_address)],
    }),
    { owner: true },
  );
  return response;
}
