// Wallets (PKPs) of managed accounts: derived here from a fresh random derivation, registered on
// chain by a payer. The key itself is never stored; only (account, derivation) is.
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { newDerivation } from "../keys/derive.ts";
import type { Enclave, RequestContext } from "./context.ts";
import { writeAsCaller } from "./write.ts";

export async function createWallet(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"create_wallet">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"create_wallet">> {
  const derivation = newDerivation();
  let address = "";
  const { response, events } = await writeAsCaller(enclave, input.api_key, ctx, ({ keyHash, resolution }) => {
    const key = enclave.keyring.pkpKey(resolution.master, derivation);
    key.privateKey.fill(0);
    address = key.address;
    return {
      functionName: "registerWalletDerivation",
      args: [keyHash, key.address, derivation, input.name ?? "", input.description ?? ""],
    };
  });
  const registered = events.find((e) => e.eventName === "WalletRegistered");
  if (registered?.eventName !== "WalletRegistered") {
    throw new SigilError("internal_error", "the wallet was registered but its id could not be read from the receipt");
  }
  return { ...response, wallet_address: address.toLowerCase(), wallet_id: registered.args.walletId.toString() };
}
