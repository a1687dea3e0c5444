// Account creation: a managed account and its master key.
import { newApiKey } from "../../shared/apiKey.ts";
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { toHash32 } from "../../shared/hashing.ts";
import type { Enclave, RequestContext } from "./context.ts";
import { submitWrite } from "./write.ts";

/**
 * A managed account: a fresh master key (shown once), its hash as the account id, and the Account
 * Master Wallet — the PKP whose derivation is the master hash — registered as wallet 0.
 */
export async function newAccount(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"new_account">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"new_account">> {
  const { apiKey, hash: master } = newApiKey();
  const amw = enclave.keyring.pkpAddress(master, master);
  const { response } = await submitWrite(
    enclave,
    {
      functionName: "newAccount",
      args: [master, input.account_name, input.account_description ?? "", amw, master],
    },
    ctx,
    { master },
  );
  ctx.log.info("account created", { account: toHash32(master).slice(0, 8) });
  return {
    ...response,
    api_key: apiKey,
    wallet_address: amw.toLowerCase(),
    solana_address: enclave.keyring.solanaAddress(master, master),
    account_id: toHash32(master),
  };
}
