// The ChainSecured flows: wallets and usage keys made on a wallet's signature, and a managed
// account handed to the wallet that signed ConvertAccount. The edge checks the typed data and the
// signature before forwarding; the enclave checks them again itself, because it never takes the
// edge's word for who is asking.
import type { Address } from "viem";
import { validateTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { newApiKey } from "../../shared/apiKey.ts";
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
 * A derivation a wallet signed for (typed data of `primaryType`): the signature checked, the
 * signer's account found, then `derive` for that account. It derives and sends nothing on chain.
 */
const signedDerivation =
  <Op extends "create_wallet_with_signature" | "add_usage_api_key_with_signature">(
    primaryType: "CreateWallet" | "AddUsageApiKey",
    derive: (enclave: Enclave, master: bigint) => EnclaveResponse<Op>,
  ) =>
  async (enclave: Enclave, input: ParsedEnclaveRequest<Op>): Promise<EnclaveResponse<Op>> =>
    derive(enclave, await accountOfWallet(enclave, await verifySignedRequest(enclave, primaryType, input)));

/**
 * A new PKP for the signer's account; the signer registers it on chain with its own transaction.
 * Also the account's master wallet (the PKP whose derivation is the master hash), which a wallet
 * without an account names as wallet 0 in `newChainSecuredAccount(name, description, amw)`.
 */
export const createWalletWithSignature = signedDerivation<"create_wallet_with_signature">(
  "CreateWallet",
  (enclave, master) => {
    const derivation = newDerivation();
    return {
      wallet_address: enclave.keyring.pkpAddress(master, derivation).toLowerCase(),
      solana_address: enclave.keyring.solanaAddress(master, derivation),
      derivation_path: derivationPath(derivation),
      master_wallet_address: enclave.keyring.pkpAddress(master, master).toLowerCase(),
      account_id: toHash32(master),
    };
  },
);

/**
 * A new usage key for the signer's account and its wallet (the PKP whose derivation is the key's
 * hash). Nothing is on chain until the admin wallet registers both; until then the key is inert.
 */
export const addUsageApiKeyWithSignature = signedDerivation<"add_usage_api_key_with_signature">(
  "AddUsageApiKey",
  (enclave, master) => {
    const { apiKey, hash } = newApiKey();
    return {
      usage_api_key: apiKey,
      wallet_address: enclave.keyring.pkpAddress(master, hash).toLowerCase(),
      solana_address: enclave.keyring.solanaAddress(master, hash),
      derivation_path: derivationPath(hash),
      usage_api_key_hash: toHash32(hash),
    };
  },
);

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
