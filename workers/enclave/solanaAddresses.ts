// Wallets' Solana addresses for the edge's lists (docs/design/api.md, Wallets). A wallet's Solana key
// is derived in the enclave from the root secret, so only the enclave can say its address: the edge
// asks it for those of a list page it has not seen (`solana_addresses`, one call a page, with the
// caller's key) and keeps them — an address is a function of the wallet's account and derivation,
// which never change, so what is kept is never stale. Should the enclave not answer, the list is
// still answered, those wallets' `solana_address` null, and the log says so.
import type { Context } from "hono";
import { isExposed } from "../../shared/errors.ts";
import { Recent } from "../../shared/recent.ts";
import { callerKey } from "../middleware/auth/index.ts";
import type { EdgeEnv } from "../router.ts";
import { enclave } from "./client.ts";

/** Addresses kept per isolate: (wallet → Solana address), public facts, the oldest dropped past this. */
const KEPT = 100_000;
const known = new Recent<string, string>(KEPT);

/** How long a list waits for the enclave's answer before answering without the addresses it lacks. */
const ASK_TIMEOUT_MS = 10_000;

/**
 * The Solana address of each of `wallets` (lowercase EVM addresses of the caller's account) that the
 * isolate knows or the enclave gives now; a wallet missing from the answer has none to show.
 */
export async function solanaAddressesOf(c: Context<EdgeEnv>, wallets: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const missing: string[] = [];
  for (const wallet of new Set(wallets)) {
    const address = known.get(wallet);
    if (address === undefined) missing.push(wallet);
    else out.set(wallet, address);
  }
  if (missing.length === 0) return out;
  try {
    const answer = await enclave.call(
      "solana_addresses",
      { api_key: callerKey(c).apiKey, wallets: missing },
      { config: c.get("config"), ids: c.get("ids"), timeoutMs: ASK_TIMEOUT_MS },
    );
    for (const [wallet, address] of Object.entries(answer.solana_addresses)) {
      known.getOrMake(wallet, () => address);
      out.set(wallet, address);
    }
  } catch (err) {
    c.get("log").warn("wallets' Solana addresses not given: the enclave did not answer; listed without them", {
      wallets: missing.length,
      error: isExposed(err) ? err.code : err instanceof Error ? err.message : String(err),
    });
  }
  return out;
}
