// Whether a delegated key may act at this edge (docs/design/delegation.md, At the edge): the edge cannot
// check a key's tag — only an enclave derives the secret its chain starts from — so it asks an enclave
// once per key (`check_delegated_key`) and keeps the answer, which never changes: a tag that checks
// checks forever. Until an enclave has vouched for it, a key names its root's account in nothing: not
// its rate limits, its credit, its reads. A forged key costs its sender one enclave call and an IP's
// rate limit. A key that was made but can no longer run — expired, revoked, used up — reads nothing
// either (its reads within STANDING_MS of a revocation); whether its root usage key still acts, the
// key cache says as for any key, and every run asks the chain.
import type { Context, MiddlewareHandler } from "hono";
import { type DelegationToken, effective, useBlocks } from "../../shared/delegation.ts";
import { SigilError } from "../../shared/errors.ts";
import { toHash32 } from "../../shared/hashing.ts";
import { Recent } from "../../shared/recent.ts";
import { callerAccount } from "../billing/account.ts";
import { enclave } from "../enclave/client.ts";
import { delegationsOf } from "./index.ts";
import { presentedKey, type CallerKey } from "../middleware/auth/index.ts";
import { takeKeyLimit } from "../middleware/rateLimit/index.ts";
import type { EdgeEnv } from "../router.ts";

/** Keys checked, by the hash of the key (never the key): whether an enclave made it, and its blocks' counters. */
const checked = new Recent<bigint, { valid: false } | { valid: true; counters: string[] }>(10_000);
/** How long the edge waits for an enclave's answer. */
const CHECK_TIMEOUT_MS = 10_000;
/** Keys found standing (not revoked, not used up), by the hash of the key, and when: asked again after STANDING_MS. */
const standing = new Recent<bigint, number>(10_000);
/** How long a key found standing is not asked about again: a revocation reaches its reads within it (its runs, at once). */
export const STANDING_MS = 2_000;

/**
 * Throws 401 invalid_api_key unless an enclave made `key` (a delegated key), asking one the first
 * time; answers the counters of its blocks (the Delegations store's names for them).
 */
export async function vouchedFor(c: Context<EdgeEnv>, key: CallerKey): Promise<string[]> {
  let known = checked.get(key.scopeHash);
  if (known === undefined) {
    const answer = await enclave.call(
      "check_delegated_key",
      { key: key.apiKey },
      { config: c.get("config"), ids: c.get("ids"), timeoutMs: CHECK_TIMEOUT_MS },
    );
    known =
      answer.valid && BigInt(answer.root) === key.keyHash
        ? { valid: true, counters: answer.counters }
        : { valid: false };
    checked.set(key.scopeHash, known);
    if (!known.valid) c.get("log").info("a delegated key no enclave made was refused");
  }
  if (!known.valid) throw new SigilError("invalid_api_key", "the delegated key is not valid");
  return known.counters;
}

/**
 * Throws 401 invalid_api_key for a delegated key past its expiry, revoked or used up — read from its
 * blocks and the account's Delegations store (op "peek": nothing counted), so that a key that can no
 * longer run cannot read either. Every run is counted by its enclave at the store as well.
 */
async function stillStands(
  c: Context<EdgeEnv>,
  key: CallerKey & { delegated: DelegationToken },
  counters: string[],
): Promise<void> {
  const token = key.delegated;
  const expiresAt = effective(token.blocks).expires_at;
  if (expiresAt !== undefined && expiresAt <= Math.floor(Date.now() / 1000))
    throw new SigilError("invalid_api_key", "the delegated key has expired");
  const at = standing.get(key.scopeHash);
  if (at !== undefined && Date.now() - at < STANDING_MS) return;
  const { master } = await callerAccount(c.get("config"), key);
  const answer = await delegationsOf(c.env.DELEGATIONS, master).use({
    op: "peek",
    ref: c.get("ids").requestId,
    account: toHash32(master),
    blocks: useBlocks(token, counters),
  });
  if (!answer.granted)
    throw new SigilError(
      "invalid_api_key",
      answer.reason === "revoked"
        ? "the delegated key has been revoked"
        : "the delegated key has been used all the times it allows",
    );
  standing.set(key.scopeHash, Date.now());
}

/**
 * Every keyed route's gate for delegated keys (mounted app-wide, before the routes): a request with
 * one goes on only once an enclave has vouched for the key, counted against its root's per-key rate
 * limit — every key descending from one usage key shares it, however many an agent mints.
 */
export function delegatedKeys(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const key = presentedKey(c);
    if (key?.delegated) {
      const counters = await vouchedFor(c, key);
      await takeKeyLimit(c, key.keyHash);
      await stillStands(c, { ...key, delegated: key.delegated }, counters);
    }
    await next();
  };
}
