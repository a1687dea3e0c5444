// A usage key's permissions (docs/design/keys-and-authz.md, Usage keys): three abilities and four lists of group
// ids (0: every group), named once here. The API spells them in snake_case (the routes, the
// enclave's schemas, the CLI and the dashboard), the contract and the SDK's AccountConfig calls in
// camelCase (`camelOf`); setUsageApiKey takes them in this order, the abilities first.

export const PERMISSION_FLAGS = ["can_create_groups", "can_delete_groups", "can_create_pkps"] as const;
export const PERMISSION_LISTS = [
  "manage_ipfs_ids_in_groups",
  "add_pkp_to_groups",
  "remove_pkp_from_groups",
  "execute_in_groups",
] as const;
export type PermissionFlag = (typeof PERMISSION_FLAGS)[number];
export type PermissionList = (typeof PERMISSION_LISTS)[number];

/** A value per permission: `F` for each ability, `L` for each list (a schema's fields, a form's labels). */
export type PermissionFields<F, L> = { [K in PermissionFlag]: F } & { [K in PermissionList]: L };
/** A key's permissions in the API's spelling, its group ids as `G` (decimal strings in JSON, bigints on chain). */
export type Permissions<G = string> = PermissionFields<boolean, G[]>;

/** snake_case → camelCase, as the contract names a permission. */
export type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
/** A key's permissions as the contract names them (its key views, setUsageApiKey's arguments). */
export type ContractPermissions<G = bigint> = { [K in PermissionFlag as Camel<K>]: boolean } & {
  [K in PermissionList as Camel<K>]: readonly G[];
};

export function camelOf<S extends string>(name: S): Camel<S> {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) as Camel<S>;
}

/** `flag(name)` for each ability and `list(name)` for each list, in the contract's order. */
export function permissionFields<F, L>(
  flag: (name: PermissionFlag) => F,
  list: (name: PermissionList) => L,
): PermissionFields<F, L> {
  return Object.fromEntries([
    ...PERMISSION_FLAGS.map((name) => [name, flag(name)]),
    ...PERMISSION_LISTS.map((name) => [name, list(name)]),
  ]) as PermissionFields<F, L>;
}

/** No permission at all: every ability off, every list empty. */
export function noPermissions<G = string>(): Permissions<G> {
  return permissionFields(
    () => false,
    () => [],
  );
}

/** The permissions of `p` (anything that carries them, a key or a request) alone, its group ids mapped by `id`. */
export function permissionsOf<G, H>(p: Permissions<G>, id: (group: G) => H): Permissions<H> {
  return permissionFields(
    (name) => p[name],
    (name) => p[name].map(id),
  );
}

/** A key as the contract lists it (camelCase), in the API's spelling, its group ids mapped by `id`. */
export function fromContract<G, H>(k: ContractPermissions<G>, id: (group: G) => H): Permissions<H> {
  return permissionFields(
    (name) => k[camelOf(name)],
    (name) => k[camelOf(name)].map(id),
  );
}

/** `p` as the contract names it (camelCase), its group ids mapped by `id`. */
export function toContract<G, H>(p: Permissions<G>, id: (group: G) => H): ContractPermissions<H> {
  return Object.fromEntries([
    ...PERMISSION_FLAGS.map((name) => [camelOf(name), p[name]]),
    ...PERMISSION_LISTS.map((name) => [camelOf(name), p[name].map(id)]),
  ]) as ContractPermissions<H>;
}

/** setUsageApiKey's permission arguments, in its order: the three abilities, then the four lists. */
export function permissionArgs<G>(p: Permissions<G>): readonly [boolean, boolean, boolean, G[], G[], G[], G[]] {
  return [...PERMISSION_FLAGS.map((name) => p[name]), ...PERMISSION_LISTS.map((name) => p[name])] as unknown as [
    boolean,
    boolean,
    boolean,
    G[],
    G[],
    G[],
    G[],
  ];
}
