// `sigil key add|list|update|remove`: usage keys (and delegated keys: delegation.ts), with flags for each permission of
// add_usage_api_key (wallets are the API's "pkps", actions its "ipfs ids"). A new key is printed
// once, where it is made; lists and updates name keys by their hash. `key add --sign` makes a key
// for a ChainSecured account: the service derives it for the signing admin wallet, which grants its
// permissions on chain (setUsageApiKey).
import type { ListApiKeysOutput, SigilClient, UsageKeyGrant } from "../../sdk/src/index.ts";
import { noPermissions, permissionsOf, toContract } from "../../shared/permissions.ts";
import { signedWrite, signerOptions, signerUsage } from "./chainSecured.ts";
import {
  dollars,
  CliError,
  groupIds,
  repeated,
  required,
  service,
  switches,
  UsageError,
  valued,
  wholeNumber,
  type Command,
  type Context,
  type Group,
} from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";
import { delegationCommands } from "./delegation.ts";

type KeyItem = ListApiKeysOutput[number];
type Permissions = Omit<KeyItem, "id" | "spent_cents">;

const permissionOptions = {
  ...valued("description", "expires-at", "spend-limit-cents"),
  ...switches("can-create-groups", "can-delete-groups", "can-create-wallets"),
  ...repeated("execute-in-groups", "manage-actions-in-groups", "add-wallet-to-groups", "remove-wallet-from-groups"),
};

const permissionUsage = `  --description TEXT
  --can-create-groups, --can-delete-groups, --can-create-wallets   (--no-… to turn one off)
  --execute-in-groups IDS          run actions with the wallets of these groups
  --manage-actions-in-groups IDS   add and remove actions in these groups
  --add-wallet-to-groups IDS       add wallets to these groups
  --remove-wallet-from-groups IDS  remove wallets from these groups
      IDS: group ids, comma-separated or the option repeated; 0 = every group; "" = none
  --expires-at WHEN                Unix seconds or an ISO date (0: never)
  --spend-limit-cents CENTS        the most the key may spend (0: no limit)`;

const NONE: Permissions = { name: "", description: "", expires_at: 0, spend_limit_cents: 0, ...noPermissions() };

function expiry(value: string): number {
  if (/^\d+$/.test(value)) return wholeNumber("--expires-at", value);
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new UsageError(`--expires-at takes Unix seconds or an ISO date, not ${JSON.stringify(value)}`);
  return Math.floor(ms / 1000);
}

/** `base` with what the flags change; `changed` says whether any permission flag was given. */
function permissionsFrom(
  values: Record<string, unknown>,
  base: Permissions,
): { permissions: Permissions; changed: boolean } {
  const p: Permissions = { ...base };
  const flag = <T>(name: string, set: (v: T) => void) => {
    if (values[name] !== undefined) set(values[name] as T);
  };
  flag<string>("name", (v) => (p.name = v));
  flag<string>("description", (v) => (p.description = v));
  flag<boolean>("can-create-groups", (v) => (p.can_create_groups = v));
  flag<boolean>("can-delete-groups", (v) => (p.can_delete_groups = v));
  flag<boolean>("can-create-wallets", (v) => (p.can_create_pkps = v));
  flag<string[]>("execute-in-groups", (v) => (p.execute_in_groups = groupIds("--execute-in-groups", v) ?? []));
  flag<string[]>(
    "manage-actions-in-groups",
    (v) => (p.manage_ipfs_ids_in_groups = groupIds("--manage-actions-in-groups", v) ?? []),
  );
  flag<string[]>("add-wallet-to-groups", (v) => (p.add_pkp_to_groups = groupIds("--add-wallet-to-groups", v) ?? []));
  flag<string[]>(
    "remove-wallet-from-groups",
    (v) => (p.remove_pkp_from_groups = groupIds("--remove-wallet-from-groups", v) ?? []),
  );
  flag<string>("expires-at", (v) => (p.expires_at = expiry(v)));
  flag<string>("spend-limit-cents", (v) => (p.spend_limit_cents = wholeNumber("--spend-limit-cents", v)));
  const permissionFlags = Object.keys(permissionOptions).filter((k) => k !== "description");
  return { permissions: p, changed: permissionFlags.some((k) => values[k] !== undefined) };
}

/** What add_usage_api_key and update_usage_api_key take: the permissions, 0 limits left out. */
function requestOf(p: Permissions) {
  return {
    name: p.name,
    description: p.description,
    ...permissionsOf(p, (g) => g),
    ...(p.expires_at ? { expires_at: p.expires_at } : {}),
    ...(p.spend_limit_cents ? { spend_limit_cents: p.spend_limit_cents } : {}),
  };
}

/** The same as setUsageApiKey takes it, for a key granted on chain. */
function grantOf(p: Permissions): UsageKeyGrant {
  return {
    name: p.name,
    description: p.description,
    expiresAt: BigInt(p.expires_at),
    spendLimitCents: BigInt(p.spend_limit_cents),
    ...toContract(p, (g) => BigInt(g)),
  };
}

/** The permissions in one column: "create-groups execute:1,2 add-wallet:all". */
export function permissionSummary(k: Permissions): string {
  const list = (what: string, ids: string[]) =>
    ids.length ? `${what}:${ids.map((g) => (g === "0" ? "all" : g)).join(",")}` : "";
  const parts = [
    k.can_create_groups ? "create-groups" : "",
    k.can_delete_groups ? "delete-groups" : "",
    k.can_create_pkps ? "create-wallets" : "",
    list("execute", k.execute_in_groups),
    list("manage-actions", k.manage_ipfs_ids_in_groups),
    list("add-wallet", k.add_pkp_to_groups),
    list("remove-wallet", k.remove_pkp_from_groups),
  ].filter(Boolean);
  return parts.length ? parts.join(" ") : "-";
}

/** Prints a key just made (shown this once), what `more` says of it, and its transaction. */
function printNewKey(
  ctx: Context,
  answer: { usage_api_key: string; transaction_hash: string },
  more: Array<[string, string]>,
) {
  ctx.wrote(answer, [["usage key", `${answer.usage_api_key}   (shown once: keep it)`], ...more]);
}

/** A usage key's hash from the key itself or from its 0x hash. */
function keyHashOf(keyOrHash: string): string {
  if (/^0x[0-9a-fA-F]{64}$/.test(keyOrHash)) return keyOrHash.toLowerCase();
  const { apiKeyHash, toHash32 } = service();
  return toHash32(apiKeyHash(keyOrHash));
}

const add: Command = {
  name: "key add",
  summary: "create a usage key with the given permissions; prints it once",
  usage: `--name NAME [permissions] [--sign [--keystore FILE] [--rpc-url URL]]

  Creates a usage key and prints it (shown this once: keep it) with its hash. Without a flag the
  key may do nothing. With --sign, for a ChainSecured account: the service derives the key for the
  signer (add_usage_api_key_with_signature) and the signer grants these permissions on chain
  (setUsageApiKey); no API key is needed.

${permissionUsage}

  ${signerUsage}`,
  options: { ...valued("name"), ...permissionOptions, ...switches("sign"), ...signerOptions },
  async run({ values, ctx }) {
    required(values, "name");
    const { permissions } = permissionsFrom(values, NONE);
    if (!values.sign) {
      const answer = await ctx.keyed().addUsageApiKey(requestOf(permissions));
      printNewKey(ctx, answer, [["hash", keyHashOf(answer.usage_api_key)]]);
      return;
    }
    // The key is granted on chain as soon as the service has made it.
    const { owner, answer } = await signedWrite(ctx, values, {
      ask: async (o) => o.client.addUsageApiKeyWithSignature(await o.sign("AddUsageApiKey")),
      send: (contract, made) =>
        contract.setUsageApiKey({ keyHash: made.usage_api_key_hash as `0x${string}`, ...grantOf(permissions) }),
    });
    printNewKey(ctx, answer, [
      ["hash", answer.usage_api_key_hash],
      ["admin", owner.signer.address],
    ]);
  },
};

const list: Command = {
  name: "key list",
  summary: "the account's usage keys: hash, name, expiry, spend limit, permissions",
  usage: `

  Lists the account's usage keys (never their values: a key is shown only when made).`,
  async run({ ctx }) {
    ctx.list(await collect(ctx.keyed().all.listApiKeys()), "no usage keys", [
      ["HASH", (k) => k.id],
      ["NAME", (k) => k.name],
      ["EXPIRES", (k) => (k.expires_at ? new Date(k.expires_at * 1000).toISOString().replace(".000Z", "Z") : "never")],
      ["SPENT", (k) => dollars(k.spent_cents)],
      ["SPEND LIMIT", (k) => (k.spend_limit_cents ? dollars(k.spend_limit_cents) : "none")],
      ["PERMISSIONS", permissionSummary],
    ]);
  },
};

/** The key `keyOrHash` names, as list_api_keys has it. */
async function findKey(client: SigilClient, keyOrHash: string): Promise<KeyItem> {
  const hash = keyHashOf(keyOrHash);
  for await (const k of client.all.listApiKeys()) if (k.id.toLowerCase() === hash) return k;
  throw new CliError("not_found", `the account has no usage key ${hash}`);
}

const update: Command = {
  name: "key update",
  summary: "change a usage key's name, description or permissions (the rest is kept)",
  usage: `KEY_OR_HASH [--name NAME] [permissions]

  Changes what the flags name and keeps the rest: the key's current permissions are read first
  (list_api_keys), so --execute-in-groups 3 replaces that one list only. KEY_OR_HASH is the key
  or its 0x hash (key list shows it).

${permissionUsage}`,
  options: { ...valued("name"), ...permissionOptions },
  positionals: { min: 1, max: 1, names: "KEY_OR_HASH" },
  async run({ values, positionals, ctx }) {
    const renamed = values.name !== undefined || values.description !== undefined;
    if (!renamed && !permissionsFrom(values, NONE).changed)
      throw new UsageError("nothing to change: give --name, --description or a permission");
    const client = ctx.keyed();
    const current = await findKey(client, positionals[0] as string);
    const { permissions, changed } = permissionsFrom(values, current);
    const answer = changed
      ? await client.updateUsageApiKey({ usage_api_key: current.id, ...requestOf(permissions) })
      : await client.updateUsageApiKeyMetadata({
          usage_api_key: current.id,
          name: permissions.name,
          description: permissions.description,
        });
    ctx.wrote(answer, [["updated", `${current.id} "${permissions.name}": ${permissionSummary(permissions)}`]]);
  },
};

const remove: Command = {
  name: "key remove",
  summary: "remove a usage key; it stops working at once",
  usage: `KEY_OR_HASH

  Removes the usage key (the key itself, or its 0x hash).`,
  positionals: { min: 1, max: 1, names: "KEY_OR_HASH" },
  async run({ positionals, ctx }) {
    const hash = keyHashOf(positionals[0] as string);
    ctx.wrote(await ctx.keyed().removeUsageApiKey({ usage_api_key: hash }), [["removed", hash]]);
  },
};

export const keyGroup: Group = {
  name: "key",
  summary: "usage keys: scoped keys of an account",
  commands: [add, list, update, remove, ...delegationCommands],
};
