// Wallets (PKPs) of managed accounts: derived here from a fresh random derivation, registered on
// chain by a payer. The key itself is never stored; only (account, derivation) is.
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { newDerivation } from "../keys/derive.ts";
import { callerKey, type Enclave, type RequestContext } from "./context.ts";
import { submitWrite } from "./write.ts";

export async function createWallet(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"create_wallet">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"create_wallet">> {
  const { keyHash, resolution } = await callerKey(enclave, input.api_key);
  const derivation = newDerivation();
  const key = enclave.keyring.pkpKey(resolution.master, derivation);
  key.privateKey.fill(0);
  const { response, events } = await submitWrite(
    enclave,
    {
      functionName: "registerWalletDerivation",
      args: [keyHash, key.address, derivation, input.name ?? "", input.description ?? ""],
    },
    ctx,
    { keyHash, master: resolution.master },
  );
  const registered = events.find((e) => e.eventName === "WalletRegistered");
  if (registered?.eventName !== "WalletRegistered") {
    throw new SigilError("internal_error", "the wallet was registered but its id could not be read from the receipt");
  }
  return { ...response, wallet_address: key.address.toLowerCase(), wallet_id: registered.args.walletId.toString() };
}
