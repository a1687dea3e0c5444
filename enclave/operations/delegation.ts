// Delegated keys in the enclave (docs/design/delegation.md): minting a usage key's first children
// (`delegate_key`), telling the edge whether a key is one this deployment made
// (`check_delegated_key`). Reading one a request comes with is authz/delegation.ts's; what a run may
// then do with it, sigilAction.ts's.
import { canonicalCid } from "../../shared/cid.ts";
import { DelegationError, mintKeys, type Caveats } from "../../shared/delegation.ts";
import { SigilError } from "../../shared/errors.ts";
import { toHash32 } from "../../shared/hashing.ts";
import { keyRef } from "../../shared/log.ts";
import type { ParsedInput } from "../../shared/operations.ts";
import { readDelegatedKey } from "../authz/delegation.ts";
import { callerKey, readChain, type Enclave, type RequestContext } from "./context.ts";

/** `check_delegated_key`: whether the edge may count `key` as its root's (never the root key's standing: each run checks that). */
export async function checkDelegatedKey(
  enclave: Enclave,
  input: ParsedInput<"check_delegated_key">,
): Promise<{ valid: boolean; root: string; counters: string[] }> {
  try {
    const { root, counters } = readDelegatedKey(enclave, input.key);
    return { valid: true, root: toHash32(root), counters };
  } catch (err) {
    if (err instanceof SigilError) return { valid: false, root: "", counters: [] };
    throw err;
  }
}

const refuse = (message: string) => new SigilError("permission_denied", message, { details: { scope: "delegate" } });
const badCaveat = (path: string, message: string) =>
  new SigilError("invalid_request", `caveats.${path}: ${message}`, {
    details: [{ path: `caveats.${path}`, message }],
  });

/**
 * `delegate_key`: `count` first children of the caller's usage key, each narrowed by `caveats`, with
 * no chain write. The key must be a live usage key whose own guardrail (set_usage_key_guardrail) has
 * a `delegation` section; with `max_lifetime_seconds` there, each child must expire within it. A child
 * never outlives the usage key (its expiry is checked at every use as well).
 */
export async function delegateKey(
  enclave: Enclave,
  input: ParsedInput<"delegate_key">,
  ctx: RequestContext,
): Promise<{ keys: string[]; ids: string[]; root: string; expires_at: number | null }> {
  const { keyHash, resolution } = await callerKey(enclave, input.api_key);
  if (resolution.isMaster)
    throw refuse("the account's master key does not delegate: mint from a usage key whose guardrail allows delegation");
  const guardrail = resolution.guardrail
    ? await readChain(() =>
        enclave.guardrails.load(resolution.master, { usageKey: keyHash }, resolution.guardrail as `0x${string}`),
      )
    : undefined;
  if (!guardrail) throw refuse("this usage key may not delegate: it has no guardrail with a delegation section");
  if ("broken" in guardrail) throw refuse(`this usage key may not delegate: ${guardrail.broken}`);
  const allowed = guardrail.compiled.document.delegation;
  if (!allowed) throw refuse("this usage key may not delegate: its guardrail has no delegation section");

  const now = Math.floor(Date.now() / 1000);
  const caveats: Caveats = { ...input.caveats };
  if (caveats.expires_at !== undefined && caveats.expires_at <= now)
    throw badCaveat("expires_at", "is not in the future");
  const keyExpiry = Number(resolution.expiresAt);
  if (keyExpiry !== 0 && caveats.expires_at !== undefined && caveats.expires_at > keyExpiry)
    throw badCaveat("expires_at", `is after the usage key's own expiry (${keyExpiry}): a child cannot outlive it`);
  const lifetime = allowed.max_lifetime_seconds;
  if (lifetime !== undefined) {
    if (caveats.expires_at === undefined)
      throw badCaveat("expires_at", `is required: this key's guardrail lets its children live at most ${lifetime} s`);
    if (caveats.expires_at > now + lifetime)
      throw badCaveat("expires_at", `is more than ${lifetime} s ahead, the most this key's guardrail allows`);
  }
  if (caveats.actions) {
    caveats.actions = caveats.actions.map((cid, i) => {
      try {
        return canonicalCid(cid);
      } catch {
        throw badCaveat(`actions.${i}`, "is not an IPFS CID");
      }
    });
  }

  const root = toHash32(keyHash);
  const secret = enclave.keyring.delegationSecret(keyHash);
  const count = input.count ?? 1;
  let minted: { keys: string[]; ids: string[] };
  try {
    minted = mintKeys(secret, root, caveats, count);
  } catch (err) {
    if (err instanceof DelegationError) throw badCaveat(err.dimension, err.message);
    throw err;
  } finally {
    secret.fill(0);
  }
  ctx.log.info("delegated keys minted", { count, key: keyRef(keyHash) });
  const expiresAt = caveats.expires_at ?? (keyExpiry === 0 ? null : keyExpiry);
  return { ...minted, root, expires_at: expiresAt };
}
