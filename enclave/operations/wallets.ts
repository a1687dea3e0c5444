// Wallets (PKPs) of managed accounts: derived here from a fresh random derivation, registered on
// chain by a payer. The key itself is never stored; only (account, derivation) is.
import { keccak256, toBytes } from "viem";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { SigilError } from "../../shared/errors.ts";
import type { Guardrail } from "../../shared/guardrails/schema.ts";
import { newDerivation } from "../keys/derive.ts";
import { toWalletAddress } from "./context.ts";
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

/**
 * A wallet's guardrail set (or removed, with null) by the account's master key: the document as
 * canonical JSON, so its hash is the hash of what it says, not of how it was spelled
 * (docs/design/guardrails.md). The contract keeps the hash and emits the bytes.
 */
export const setWalletGuardrail = managedWrite<"set_wallet_guardrail">({
  owner: true,
  call: async (input, { keyHash }, enclave) => ({
    functionName: "setWalletGuardrail",
    args: [
      keyHash,
      await toWalletAddress(enclave, keyHash, input.wallet_address, "wallet_address"),
      guardrailText(input.guardrail),
    ],
  }),
  answer: ({ response }, input) => ({
    ...response,
    guardrail_hash: input.guardrail === null ? null : keccak256(toBytes(guardrailText(input.guardrail))),
  }),
});

/** A guardrail as the contract keeps it: its canonical JSON, or "" to remove it. */
export const guardrailText = (guardrail: Guardrail | null): string =>
  guardrail === null ? "" : canonicalJson(guardrail);
