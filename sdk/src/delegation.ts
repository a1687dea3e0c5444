// `@sigil/sdk/delegation`: delegated keys, offline (docs/design/delegation.md). Whoever holds a
// delegated key can make a narrower one — a child of the child — with no call and no chain write:
// `attenuateKey` adds a block of caveats, refusing one wider than the key in any dimension;
// `describeDelegatedKey` says what a key allows. Minting the first children from a usage key is the
// API's (`client.delegateKey`), revoking one too (`client.revokeDelegation`). Its own entry point: it
// carries the HMAC and the token algebra, which the rest of the SDK does not need.
import {
  attenuate,
  type Caveats,
  decodeDelegatedKey,
  DelegationError,
  type DelegationToken,
  effective,
  encodeDelegatedKey,
} from "../../shared/delegationToken.ts";

export { DelegationError, type Caveats, type DelegationToken };

/**
 * `key` narrowed by `caveats`: a new delegated key that allows at most what `key` allows and what the
 * caveats say (fewer groups, actions or wallets, an earlier expiry, fewer uses, a smaller budget, or
 * `delegate: false` so that nobody can narrow it further). Throws DelegationError naming the dimension
 * a caveat would widen (the key would not be wider — every block holds at a run — but it would say
 * something untrue) or why the key cannot be narrowed.
 */
export function attenuateKey(key: string, caveats: Caveats): string {
  return encodeDelegatedKey(attenuate(decodeDelegatedKey(key), caveats));
}

/** What a delegated key allows, read from it (its blocks together): nothing here is checked by the service. */
export function describeDelegatedKey(key: string): {
  /** The usage key it descends from (its hash). */
  root: string;
  /** Each block's id, first to last: any of them revokes the key (client.revokeDelegation). */
  ids: string[];
  expires_at: number | null;
  groups: string[] | null;
  actions: string[] | null;
  wallets: string[] | null;
  uses: Array<{ id: string; max_uses: number }>;
  budgets: Array<{ id: string; window_seconds: number; max_value_wei?: string; max_signatures?: number }>;
  /** Whether it may be narrowed further. */
  delegable: boolean;
} {
  const token = decodeDelegatedKey(key);
  const allowed = effective(token.blocks);
  return {
    root: token.root,
    ids: token.blocks.map((b) => b.id),
    expires_at: allowed.expires_at ?? null,
    groups: allowed.groups ?? null,
    actions: allowed.actions ?? null,
    wallets: allowed.wallets ?? null,
    uses: allowed.uses,
    budgets: allowed.budgets,
    delegable: allowed.delegable,
  };
}
