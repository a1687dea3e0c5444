// Wallets (PKPs) of managed accounts: derived here from a fresh random derivation, registered on
// chain by a payer. The key itself is never stored; only (account, derivation) is.
import { keccak256, toBytes, type Address } from "viem";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import type { OperationOutput, ParsedInput } from "../../shared/operations.ts";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { SigilError } from "../../shared/errors.ts";
import type { Guardrail } from "../../shared/guardrails/schema.ts";
import { newDerivation } from "../keys/derive.ts";
import { DELEGATED_KEY_PREFIX } from "../../shared/delegation.ts";
import { readDelegatedKey } from "../authz/delegation.ts";
import { isPastExpiry, readChain, toWalletAddress, type Enclave } from "./context.ts";
import { managedWrite } from "./write.ts";

/** The Solana address of the wallet each create_wallet request registers, made with its derivation in `call` and answered. */
const solanaAddressOf = new WeakMap<object, string>();

export const createWallet = managedWrite<"create_wallet">({
  call: (input, { keyHash, resolution }, enclave) => {
    const derivation = newDerivation();
    solanaAddressOf.set(input, enclave.keyring.solanaAddress(resolution.master, derivation));
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
  answer: ({ response, events }, input) => {
    const registered = events.find((e) => e.eventName === "WalletRegistered");
    const solana = solanaAddressOf.get(input);
    if (registered?.eventName !== "WalletRegistered" || solana === undefined)
      throw new SigilError("internal_error", "the wallet was registered but its id could not be read from the receipt");
    return {
      ...response,
      wallet_address: registered.args.wallet.toLowerCase(),
      solana_address: solana,
      wallet_id: registered.args.walletId.toString(),
    };
  },
});

/**
 * The Solana addresses of some of the caller's wallets (shared/operations.ts solana_addresses): each
 * wallet's derivation read from the chain with the caller's key — 0, and so left out, for a wallet
 * that is not its account's — and its Solana key derived from it; only the address leaves.
 */
export async function solanaAddresses(
  enclave: Enclave,
  input: ParsedInput<"solana_addresses">,
): Promise<OperationOutput<"solana_addresses">> {
  // A delegated key reads as its root usage key (its tag checked first: a forged one reads nothing).
  const keyHash = input.api_key.startsWith(DELEGATED_KEY_PREFIX)
    ? readDelegatedKey(enclave, input.api_key).root
    : apiKeyHash(input.api_key);
  const { value: resolution } = await readChain(() => enclave.cache.resolve(keyHash));
  // Any key that may read the account's lists: its master key (also once converted), a live usage key.
  if (resolution.master === 0n || (!resolution.isMaster && (!resolution.live || isPastExpiry(resolution))))
    throw new SigilError("invalid_api_key", "the API key is not a live key of an account");
  const { client, contract } = enclave.chain;
  const wallets = [...new Set(input.wallets.map((w) => w.toLowerCase() as Address))];
  const derivations = await readChain(
    () =>
      Promise.all(
        wallets.map((wallet) =>
          client.readContract({
            address: contract,
            abi: accountConfigAbi,
            functionName: "getWalletDerivation",
            args: [keyHash, wallet],
          }),
        ),
      ),
    keyHash,
  );
  const out: Record<string, string> = {};
  wallets.forEach((wallet, i) => {
    const derivation = derivations[i] ?? 0n;
    if (derivation !== 0n) out[wallet] = enclave.keyring.solanaAddress(resolution.master, derivation);
  });
  return { solana_addresses: out };
}

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
