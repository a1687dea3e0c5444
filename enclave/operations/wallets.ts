// Wallets (PKPs) of managed accounts: derived here from a fresh random derivation, registered on
// chain by a payer. The key itself is never stored; only (account, derivation) is.
import { SigilError } from "../../shared/errors.ts";
import { newDerivation } from "../keys/derive.ts";
import { managedWrite } from "./write.ts";

export const createWallet = managedWrite<"create_wallet">({
  call: (input, { keyHash, resolution }, enclave) => {
    const derivation = newDerivation();
    return {
      functionName: "registerWalletDerivation",
      args: [
        keyHash,
        enclave.keyring.pkpAddress(resolution.master, derivation),
        derivation,
        input.name ?? "",
        input.description ?? "",
      ],
    };
  },
  // The receipt's event names the wallet the contract registered, and its id.
  answer: ({ response, events }) => {
    const registered = events.find((e) => e.eventName === "WalletRegistered");
    if (registered?.eventName !== "WalletRegistered")
      throw new SigilError("internal_error", "the wallet was registered but its id could not be read from the receipt");
    return {
      ...response,
      wallet_address: registered.args.wallet.toLowerCase(),
      wallet_id: registered.args.walletId.toString(),
    };
  },
});
