// Whether a delegated key may act at this edge (docs/design/delegation.md, At the edge): the edge cannot
// check a key's tag — only an enclave derives the secret its chain starts from — so it asks an enclave
// once per key (`check_delegated_key`) and keeps the answer, which never changes: a tag that checks
// checks forever (whether the root usage key still acts is every run's own question). Until an
// enclave has vouched for it, a key names its root's account in nothing: not its rate limits, its
// credit, its reads. A forged key costs its sender one enclave call and an IP's rate limit.
import type { Context, MiddlewareHandler } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { Recent } from "../../shared/recent.ts";
import { enclave } from "../enclave/client.ts";
import { presentedKey, type CallerKey } from "../middleware/auth/index.ts";
import { takeKeyLimit } from "../middleware/rateLimit/index.ts";
import type { EdgeEnv } from "../router.ts";

/** Keys checked, by the hash of the key (never the key): whether an enclave made it. */
const checked = new Recent<bigint, boolean>(10_000);
/** How long the edge waits for an enclave's answer. */
const CHECK_TIMEOUT_MS = 10_000;

/** Throws 401 invalid_api_key unless an enclave made `key` (a delegated key); asks one the first time. */
export async function vouchedFor(c: Context<EdgeEnv>, key: CallerKey): Promise<void> {
  let valid = checked.get(key.scopeHash);
  if (valid === undefined) {
    const answer = await enclave.call(
      "check_delegated_key",
      { key: key.apiKey },
      { config: c.get("config"), ids: c.get("ids"), timeoutMs: CHECK_TIMEOUT_MS },
    );
    valid = answer.valid && BigInt(answer.root) === key.keyHash;
    checked.set(key.scopeHash, valid);
    if (!valid) c.get("log").info("a delegated key no enclave made was refused");
  }
  if (!valid) throw new SigilError("invalid_api_key", "the delegated key is not valid");
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
      await vouchedFor(c, key);
      await takeKeyLimit(c, key.keyHash);
    }
    await next();
  };
}
