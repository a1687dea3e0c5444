// Whether a run (its API key, or delegated key, and its code) may use a wallet: its grant from the permission cache,
// or the script's error — what every use of a wallet by a run asks first (sigilAction.ts for keys,
// send.ts before it reserves a nonce for one).
import type { Address } from "viem";
import type { WalletGrant } from "../authz/cache.ts";
import { CodedError } from "../sandbox/runtime.ts";
import type { Enclave } from "./context.ts";

/** The run's grant of `wallet`; throws permission_denied when it has none, chain_unavailable when the chain could not say. */
export async function walletGrant(
  enclave: Enclave,
  run: { keyHash: bigint; actionHash: bigint; onlyWallets?: ReadonlySet<string> | undefined },
  wallet: Address,
): Promise<WalletGrant> {
  // A run through a delegated key uses only the wallets its chain names (authz/delegation.ts).
  if (run.onlyWallets && !run.onlyWallets.has(wallet.toLowerCase()))
    throw new CodedError(
      "permission_denied",
      `wallet ${wallet.toLowerCase()} is not usable by this delegated key: it is not among the wallets its chain allows`,
    );
  let grant: WalletGrant;
  try {
    grant = (await enclave.cache.wallet(run.keyHash, run.actionHash, wallet)).value;
  } catch {
    throw new CodedError("chain_unavailable", "the chain could not be reached to authorize the wallet; try again");
  }
  if (!grant.allowed)
    throw new CodedError(
      "permission_denied",
      `wallet ${wallet.toLowerCase()} is not usable by this API key and action: it must be registered to the account and in a group that lists this action`,
    );
  return grant;
}
