// A delegated key as the enclave reads one (docs/design/delegation.md): its tag checked under the
// secret only an enclave of this deployment derives (keys/derive.ts, delegationSecret), its blocks made
// into what they allow together. The root usage key's standing is the caller's to check (context.ts
// callerKey resolves it as any key); what a run may do with the key, sigilAction.ts's.
import { canonicalCid } from "../../shared/cid.ts";
import { mapContractError } from "../../shared/contractErrors.ts";
import {
  checkedCounters,
  decodeDelegatedKey,
  DELEGATIONS_PATH,
  effective,
  type DelegationToken,
  type DelegationUseAnswer,
  type DelegationUseRequest,
  type Effective,
  useBlocks,
} from "../../shared/delegation.ts";
import { isExposed, SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import type { BudgetAccess } from "../../shared/guardrails/budgets.ts";
import { toHash32 } from "../../shared/hashing.ts";
import { Recent } from "../../shared/recent.ts";
import type { ChainContext } from "../chain/client.ts";
import type { Keyring } from "../keys/derive.ts";
import { askEdge } from "./askEdge.ts";

/** A delegated key whose tag checked: its token, what its blocks allow together, and its root usage key's hash. */
export type DelegatedKey = {
  token: DelegationToken;
  effective: Effective;
  root: bigint;
  /** Each block's counter name (shared/delegationToken.ts checkedCounters): its uses and its budget are kept under it. */
  counters: string[];
};

const notValid = () => new SigilError("invalid_api_key", "the delegated key is not valid");

/**
 * `key` read and checked: well formed, and its tag the one its chain has under the secret of the
 * usage key it names — which only an enclave of this deployment can make. Any other: invalid_api_key
 * (a forged key, a changed block, a block forced after `delegate: false`, a block id twice).
 */
export function readDelegatedKey(enclave: { keyring: Keyring }, key: string): DelegatedKey {
  let token: DelegationToken;
  try {
    token = decodeDelegatedKey(key);
  } catch {
    throw notValid();
  }
  let secret: Uint8Array | undefined;
  const counters = checkedCounters((root) => {
    secret = enclave.keyring.delegationSecret(BigInt(root));
    return secret;
  }, token);
  secret?.fill(0);
  if (!counters) throw notValid();
  return { token, effective: effective(token.blocks), root: BigInt(token.root), counters };
}

/** What a run through a delegated key may use beyond its action: the wallets, if the chain names any (by list or by group). */
export type DelegationScope = { wallets?: ReadonlySet<string> };

/** A group as a delegated key's `groups` reads it: the CID hashes it lists and its wallets (lowercase). */
type GroupView = { cidHashes: readonly bigint[]; wallets: readonly string[] };

const ANY_WALLET = `0x${"0".repeat(40)}`;

/** How long a group read for a delegated key's run is used again: its lists are at most this much older than the chain. */
export const GROUP_VIEW_TTL_MS = 2_000;
const groupViews = new Recent<string, { at: number; view: GroupView | null }>(10_000);

async function groupView(chain: ChainContext, root: bigint, groupId: bigint): Promise<GroupView | null> {
  const key = `${root}:${groupId}`;
  const kept = groupViews.get(key);
  if (kept && Date.now() - kept.at < GROUP_VIEW_TTL_MS) return kept.view;
  let view: GroupView | null;
  try {
    const group = await chain.client.readContract({
      address: chain.contract,
      abi: accountConfigAbi,
      functionName: "getGroup",
      args: [root, groupId],
    });
    view = { cidHashes: group.cidHashes, wallets: group.wallets.map((w) => w.toLowerCase()) };
  } catch (err) {
    const mapped = isExposed(err) ? err : mapContractError(err, { keyHash: root }).error;
    // A group removed since the key was minted lists nothing; any other failure is the chain's.
    if (mapped.code !== "group_not_found") throw mapped;
    view = null;
  }
  groupViews.set(key, { at: Date.now(), view });
  return view;
}

const denied = (message: string, details: Record<string, unknown>) =>
  new SigilError("permission_denied", message, { details: { scope: "delegation", ...details } });

/**
 * What a run of `cid` through `delegation` may use, on top of what its root key may (which the caller
 * has checked): the action must be in every block's `actions` and listed by one of the chain's
 * `groups`; the wallets are those every block's `wallets` names and, with `groups`, those of the groups
 * that list the action. A run outside them is refused before anything is fetched or run.
 */
export async function delegationScope(
  chain: ChainContext,
  delegation: DelegatedKey,
  run: { cid: string; actionHash: bigint },
): Promise<DelegationScope> {
  const allowed = delegation.effective;
  if (allowed.actions && !allowed.actions.some((a) => sameCid(a, run.cid)))
    throw denied("this delegated key may not run this action: it is not among the key's actions", { cid: run.cid });
  let wallets = allowed.wallets ? new Set(allowed.wallets) : undefined;
  if (allowed.groups) {
    const views = await Promise.all(allowed.groups.map((g) => groupView(chain, delegation.root, BigInt(g))));
    const listing = views.filter(
      (v): v is GroupView => v !== null && (v.cidHashes.includes(run.actionHash) || v.cidHashes.includes(0n)),
    );
    if (listing.length === 0)
      throw denied("this delegated key may not run this action: none of the key's groups lists it", {
        cid: run.cid,
        groups: allowed.groups,
      });
    const inGroups = new Set(listing.flatMap((v) => v.wallets));
    // A group listing the zero address lists every wallet of the account (AccountConfig's convention).
    if (!inGroups.has(ANY_WALLET)) wallets = wallets ? new Set([...wallets].filter((w) => inGroups.has(w))) : inGroups;
  }
  return wallets ? { wallets } : {};
}

function sameCid(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return canonicalCid(a) === canonicalCid(b);
  } catch {
    return false;
  }
}

/**
 * Counts a run's use of a delegated key at the edge's Delegations store — a dry run's too: it may use
 * the wallets' keys (encrypt, decrypt) as a run does:
 * refused — 401 invalid_api_key — when a block of its chain is revoked or has no use left. Every run
 * through a delegated key asks, so a revocation holds from the next run on; a store that cannot be
 * reached refuses the run (503), never lets it through unchecked.
 */
export async function useDelegation(
  access: BudgetAccess & { ref: string },
  delegation: DelegatedKey,
  account: bigint,
  options: { deadline: number; allowHttp: boolean; fetchImpl?: typeof fetch },
): Promise<void> {
  const request: DelegationUseRequest = {
    op: "use",
    ref: access.ref,
    account: toHash32(account),
    blocks: useBlocks(delegation.token, delegation.counters),
  };
  let answer: DelegationUseAnswer;
  try {
    answer = await askEdge<DelegationUseAnswer>(
      access,
      DELEGATIONS_PATH,
      request,
      (a) => typeof a.granted === "boolean",
      {
        deadline: options.deadline,
        allowHttp: options.allowHttp,
        ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
      },
    );
  } catch (err) {
    throw new SigilError(
      "enclave_unavailable",
      "the store of this delegated key's uses and revocations could not be reached; nothing ran — try again",
      { retryAfterSeconds: 1, cause: err },
    );
  }
  if (answer.granted) return;
  throw new SigilError(
    "invalid_api_key",
    answer.reason === "revoked"
      ? "the delegated key has been revoked"
      : `the delegated key has been used ${answer.max_uses ?? "its"} times, all it allows`,
    { details: { block: answer.id, reason: answer.reason } },
  );
}
