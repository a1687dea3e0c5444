// The permission matrix of docs/design/api.md (Endpoints: the auth column) through the edge in workerd, against
// the real chain and enclave. For every endpoint that takes a key: a usage key lacking exactly the
// scope it needs → 403 (`permission_denied` naming the scope, or `account_key_required` on `acct`
// endpoints); a usage key holding just that scope (per-group scopes: the group's id and the `0`
// wildcard) → 200; the master key → 200; reads → 200 with any live key of the account. Each row sets
// up what its write consumes (a group to remove, a wallet to add, …), so rows are independent.
// Then: an expired and a removed usage key are 401 invalid_api_key on a read and a write.
import { SELF } from "cloudflare:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { buildTypedData, signableTypedData } from "../../shared/eip712.ts";
import { apiKeyHash, cidHash, toHash32 } from "../../shared/hashing.ts";
import { ALL_PERMISSIONS, edgeClient, NO_PERMISSIONS, type Reply } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

type Account = { api_key: string; wallet_address: string };
type GroupList = Array<string | number>;
type Perms = {
  can_create_groups: boolean;
  can_delete_groups: boolean;
  can_create_pkps: boolean;
  manage_ipfs_ids_in_groups: GroupList;
  add_pkp_to_groups: GroupList;
  remove_pkp_from_groups: GroupList;
  execute_in_groups: GroupList;
};
type FlagField = "can_create_groups" | "can_delete_groups" | "can_create_pkps";
type ListField = "manage_ipfs_ids_in_groups" | "add_pkp_to_groups" | "remove_pkp_from_groups" | "execute_in_groups";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const EXEC_CODE = "async function main() { return 'permission matrix' }";
const hashOf = (cid: string) => toHash32(cidHash(cid));

let counter = 0;
/** A CID nobody has used yet (a fresh action for a row). */
const freshCid = () => computeCid(`async function main() { return ${++counter} } // ${Date.now()}`);

const newAccount = (name: string) => ok200<Account>("new_account", { body: { account_name: name } });
const newUsageKey = async (master: string, perms: Perms, extra: Record<string, unknown> = {}) =>
  (
    await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: master,
      body: { name: "matrix", description: "", ...perms, ...extra },
    })
  ).usage_api_key;
const newGroup = async (master: string, wallets: string[] = [], cids: string[] = []) =>
  (
    await ok200<{ group_id: string }>("add_group", {
      key: master,
      body: { group_name: "g", group_description: "", pkp_ids_permitted: wallets, cid_hashes_permitted: cids },
    })
  ).group_id;
const newWallet = async (master: string) =>
  (await ok200<{ wallet_address: string }>("create_wallet", { key: master, body: {} })).wallet_address;

// ─── the matrix ────────────────────────────────────────────────────────────────────────────

/** What a row's request is, once its state is set up; `groupId` is the group its per-group scope names. */
type Prepared = { path: string; method?: "GET" | "POST"; body?: unknown; groupId?: string };

/** A scope a usage key needs: a boolean permission, or a group list (per group, in some group, in all). */
type Need =
  | { scope: string; field: FlagField }
  | { scope: string; field: ListField; mode: "group" | "some" | "all" | "execute" };

type Row = {
  endpoint: string;
  /** `read`: any live key; `acct`: the master key only; `scoped`: the master key or a usage key with `needs`. */
  auth: "read" | "acct" | "scoped";
  needs?: Need[];
  /** The row's writes need an account of their own (conversion ends the account's managed life). */
  freshAccount?: boolean;
  prepare(account: Account): Promise<Prepared>;
  /** Checks a 200 answer beyond its status (writes: `success: true`). */
  check?(body: unknown, prepared: Prepared): void;
};

type Case = {
  name: string;
  /** The caller: the master key, or a usage key with these permissions (given the row's group). */
  key: "master" | ((groupId: string) => Perms);
  status: 200 | 403;
  code?: "permission_denied" | "account_key_required";
  scope?: string;
  /** The group `details.group_id` names on a refusal: the row's group, or "0" (no one group). */
  deniedGroup?: "row" | "0";
};

let shared: Account;
/** A group of the shared account that lists no action the rows use (the "another group" of refusals). */
let otherGroup: string;
/** A group of the shared account that lists EXEC_CODE (what sigil_action rows run). */
let execGroup: string;
let execCid: string;
let chainId: number;

const allBut = (field: FlagField | ListField): Perms => ({
  ...ALL_PERMISSIONS,
  [field]: field.startsWith("can_") ? false : [],
});

const write = (body: unknown) =>
  expect(body).toMatchObject({ success: true, transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
const list = (body: unknown) => expect(Array.isArray(body)).toBe(true);

const post = (path: string, body: unknown): Prepared => ({ path, method: "POST", body });
const get = (path: string): Prepared => ({ path, method: "GET" });

const manage = (mode: "group" | "some" | "all"): Need => ({
  scope: "group:manageActions",
  field: "manage_ipfs_ids_in_groups",
  mode,
});

const rows: Row[] = [
  // Accounts and keys
  {
    endpoint: "account_exists",
    auth: "read",
    prepare: async () => get("account_exists"),
    check: (b) => expect(b).toEqual({ exists: true, managed: true }),
  },
  {
    endpoint: "add_usage_api_key",
    auth: "acct",
    prepare: async () => post("add_usage_api_key", { name: "new", description: "", ...NO_PERMISSIONS }),
    check: (b) => expect((b as { usage_api_key: string }).usage_api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/),
  },
  {
    endpoint: "update_usage_api_key",
    auth: "acct",
    prepare: async (a) =>
      post("update_usage_api_key", {
        usage_api_key: await newUsageKey(a.api_key, NO_PERMISSIONS),
        name: "updated",
        description: "",
        ...NO_PERMISSIONS,
        can_create_groups: true,
      }),
    check: write,
  },
  {
    endpoint: "update_usage_api_key_metadata",
    auth: "acct",
    prepare: async (a) =>
      post("update_usage_api_key_metadata", {
        usage_api_key: await newUsageKey(a.api_key, NO_PERMISSIONS),
        name: "renamed",
        description: "d",
      }),
    check: write,
  },
  {
    endpoint: "remove_usage_api_key",
    auth: "acct",
    prepare: async (a) => post("remove_usage_api_key", { usage_api_key: await newUsageKey(a.api_key, NO_PERMISSIONS) }),
    check: write,
  },
  {
    endpoint: "set_usage_key_guardrail",
    auth: "acct",
    prepare: async (a) =>
      post("set_usage_key_guardrail", {
        usage_api_key: await newUsageKey(a.api_key, NO_PERMISSIONS),
        guardrail: { version: 1, messages: {} },
      }),
    check: (b) => expect((b as { guardrail_hash: string }).guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/),
  },
  {
    endpoint: "get_usage_key_guardrail",
    auth: "read",
    prepare: async (a) =>
      get(
        `get_usage_key_guardrail?usage_api_key=${toHash32(apiKeyHash(await newUsageKey(a.api_key, NO_PERMISSIONS)))}`,
      ),
    check: (b) => expect(b).toMatchObject({ guardrail: null, budgets: [] }),
  },
  { endpoint: "list_api_keys", auth: "read", prepare: async () => get("list_api_keys"), check: list },

  // Wallets
  {
    endpoint: "POST create_wallet",
    auth: "scoped",
    needs: [{ scope: "pkp:create", field: "can_create_pkps" }],
    prepare: async () => post("create_wallet", { name: "w", description: "" }),
    check: (b) => expect(b).toMatchObject({ success: true, wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/) }),
  },
  {
    endpoint: "GET create_wallet",
    auth: "scoped",
    needs: [{ scope: "pkp:create", field: "can_create_pkps" }],
    prepare: async () => get("create_wallet"),
    check: (b) => expect(b).toMatchObject({ success: true, wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/) }),
  },
  { endpoint: "list_wallets", auth: "read", prepare: async () => get("list_wallets"), check: list },
  {
    endpoint: "list_wallets_in_group",
    auth: "read",
    prepare: async () => get(`list_wallets_in_group?group_id=${otherGroup}`),
    check: list,
  },
  // The dashboard's reads (issue 29): any key of the account may read them.
  {
    endpoint: "get_account",
    auth: "read",
    prepare: async () => get("get_account"),
    check: (b) => expect((b as { account_name: string }).account_name).toBe("permission matrix"),
  },
  {
    endpoint: "get_wallet_balance",
    auth: "read",
    prepare: async (a) => get(`get_wallet_balance?wallet_address=${a.wallet_address}`),
    check: (b) => expect((b as { balance_wei: string }).balance_wei).toMatch(/^\d+$/),
  },
  // The transactions scripts sent (issue 32): any key of the account reads them.
  {
    endpoint: "transactions",
    auth: "read",
    prepare: async () => get("transactions?limit=5"),
    check: (b) => expect(b).toMatchObject({ transactions: expect.any(Array), next_cursor: null }),
  },
  // Guardrails (issue 30): only the master key sets one (a usage key must not loosen what limits it).
  {
    endpoint: "set_wallet_guardrail",
    auth: "acct",
    prepare: async (a) =>
      post("set_wallet_guardrail", { wallet_address: a.wallet_address, guardrail: { version: 1, messages: {} } }),
    check: (b) => expect((b as { guardrail_hash: string }).guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/),
  },
  {
    endpoint: "check_guardrail",
    auth: "read",
    prepare: async (a) => post("check_guardrail", { wallet_address: a.wallet_address, request: { kind: "export" } }),
    check: (b) => expect(b).toMatchObject({ rule: expect.any(String) }),
  },
  {
    endpoint: "get_wallet_guardrail",
    auth: "read",
    prepare: async (a) => get(`get_wallet_guardrail?wallet_address=${a.wallet_address}`),
    check: (b) => expect(b).toMatchObject({ wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/) }),
  },
  {
    endpoint: "get_wallet_budgets",
    auth: "read",
    prepare: async (a) => get(`get_wallet_budgets?wallet_address=${a.wallet_address}`),
    check: (b) => expect(b).toMatchObject({ budgets: [] }),
  },

  // Groups and actions
  {
    endpoint: "add_group",
    auth: "scoped",
    needs: [{ scope: "group:create", field: "can_create_groups" }],
    prepare: async () =>
      post("add_group", { group_name: "new", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] }),
    check: (b) => expect(b).toMatchObject({ success: true, group_id: expect.stringMatching(/^[1-9]\d*$/) }),
  },
  { endpoint: "list_groups", auth: "read", prepare: async () => get("list_groups"), check: list },
  {
    endpoint: "remove_group",
    auth: "scoped",
    needs: [{ scope: "group:delete", field: "can_delete_groups" }],
    prepare: async (a) => post("remove_group", { group_id: await newGroup(a.api_key) }),
    check: write,
  },
  {
    endpoint: "update_group",
    auth: "scoped",
    needs: [
      manage("group"),
      { scope: "group:addPkp", field: "add_pkp_to_groups", mode: "group" },
      { scope: "group:removePkp", field: "remove_pkp_from_groups", mode: "group" },
    ],
    prepare: async (a) => {
      const groupId = await newGroup(a.api_key, [a.wallet_address]);
      return {
        ...post("update_group", {
          group_id: groupId,
          name: "updated",
          description: "",
          pkp_ids_permitted: [ZERO_ADDRESS],
          cid_hashes_permitted: ["0"],
        }),
        groupId,
      };
    },
    check: write,
  },
  {
    endpoint: "add_action_to_group",
    auth: "scoped",
    needs: [manage("group")],
    prepare: async (a) => {
      const groupId = await newGroup(a.api_key);
      return { ...post("add_action_to_group", { group_id: groupId, action_ipfs_cid: await freshCid() }), groupId };
    },
    check: write,
  },
  {
    endpoint: "remove_action_from_group",
    auth: "scoped",
    needs: [manage("group")],
    prepare: async (a) => {
      const cid = await freshCid();
      const groupId = await newGroup(a.api_key, [], [cid]);
      return { ...post("remove_action_from_group", { group_id: groupId, hashed_cid: hashOf(cid) }), groupId };
    },
    check: write,
  },
  {
    endpoint: "add_pkp_to_group",
    auth: "scoped",
    needs: [{ scope: "group:addPkp", field: "add_pkp_to_groups", mode: "group" }],
    prepare: async (a) => {
      const wallet = await newWallet(a.api_key);
      const groupId = await newGroup(a.api_key);
      return { ...post("add_pkp_to_group", { group_id: groupId, pkp_id: wallet }), groupId };
    },
    check: write,
  },
  {
    endpoint: "remove_pkp_from_group",
    auth: "scoped",
    needs: [{ scope: "group:removePkp", field: "remove_pkp_from_groups", mode: "group" }],
    prepare: async (a) => {
      const wallet = await newWallet(a.api_key);
      const groupId = await newGroup(a.api_key, [wallet]);
      return { ...post("remove_pkp_from_group", { group_id: groupId, pkp_id: wallet }), groupId };
    },
    check: write,
  },
  {
    endpoint: "add_action",
    auth: "scoped",
    needs: [manage("some")],
    prepare: async (a) => ({
      ...post("add_action", { action_ipfs_cid: await freshCid(), name: "a", description: "" }),
      groupId: await newGroup(a.api_key),
    }),
    check: write,
  },
  {
    endpoint: "update_action_metadata",
    auth: "scoped",
    needs: [manage("some")],
    prepare: async (a) => {
      const cid = await freshCid();
      await ok200("add_action", { key: a.api_key, body: { action_ipfs_cid: cid, name: "a", description: "" } });
      return {
        ...post("update_action_metadata", { hashed_cid: hashOf(cid), name: "renamed", description: "d" }),
        groupId: await newGroup(a.api_key),
      };
    },
    check: write,
  },
  {
    endpoint: "delete_action",
    auth: "scoped",
    needs: [manage("all")],
    prepare: async (a) => {
      const cid = await freshCid();
      const groupId = await newGroup(a.api_key, [], [cid]);
      await ok200("add_action", { key: a.api_key, body: { action_ipfs_cid: cid, name: "a", description: "" } });
      return { ...post("delete_action", { hashed_cid: hashOf(cid) }), groupId };
    },
    check: write,
  },
  { endpoint: "list_actions", auth: "read", prepare: async () => get("list_actions"), check: list },
  {
    endpoint: "list_actions?group_id",
    auth: "read",
    prepare: async () => get(`list_actions?group_id=${otherGroup}`),
    check: list,
  },

  // Execution
  {
    endpoint: "sigil_action",
    auth: "scoped",
    needs: [{ scope: "execute", field: "execute_in_groups", mode: "execute" }],
    prepare: async () => ({ ...post("sigil_action", { code: EXEC_CODE, js_params: null }), groupId: execGroup }),
    check: (b) => expect(b).toMatchObject({ has_error: false, response: "permission matrix", cid: execCid }),
  },

  // ChainSecured conversion (acct): each row converts, or tries to convert, an account of its own.
  {
    endpoint: "convert_to_chain_secured_account",
    auth: "acct",
    freshAccount: true,
    prepare: async () => {
      const admin = privateKeyToAccount(generatePrivateKey());
      const typed = buildTypedData({
        primaryType: "ConvertAccount",
        chainId,
        address: admin.address,
        issuedAt: BigInt(Math.floor(Date.now() / 1000)),
      });
      return post("convert_to_chain_secured_account", {
        new_admin_wallet_address: admin.address,
        typed_data: typed,
        signature: await admin.signTypedData(signableTypedData(typed)),
      });
    },
    check: write,
  },
];

function casesOf(row: Row): Case[] {
  const master: Case = { name: "master key → 200", key: "master", status: 200 };
  if (row.auth === "read") {
    return [
      master,
      { name: "usage key without scopes → 200", key: () => NO_PERMISSIONS, status: 200 },
      { name: "usage key with every scope → 200", key: () => ALL_PERMISSIONS, status: 200 },
    ];
  }
  if (row.auth === "acct") {
    return [
      {
        name: "usage key with every scope → 403",
        key: () => ALL_PERMISSIONS,
        status: 403,
        code: "account_key_required",
      },
      { name: "usage key without scopes → 403", key: () => NO_PERMISSIONS, status: 403, code: "account_key_required" },
      master,
    ];
  }
  const needs = row.needs ?? [];
  const cases: Case[] = [];
  // Refused: every scope but the one needed (or, per group, that scope for another group only).
  for (const need of needs) {
    const deniedGroup: Case["deniedGroup"] = "mode" in need && need.mode === "group" ? "row" : "0";
    const refusal = {
      status: 403 as const,
      code: "permission_denied" as const,
      scope: need.scope,
      ...(need.scope === "execute" ? {} : { deniedGroup }),
    };
    cases.push({ name: `usage key without ${need.scope} → 403`, key: () => allBut(need.field), ...refusal });
    if ("mode" in need && (need.mode === "group" || need.mode === "execute")) {
      cases.push({
        name: `usage key with ${need.scope} for another group only → 403`,
        key: () => ({ ...ALL_PERMISSIONS, [need.field]: [Number(otherGroup)] }),
        ...refusal,
      });
    }
  }
  // Allowed: exactly the scopes needed, and nothing else.
  const flags = needs.filter((n): n is Need & { field: FlagField } => !("mode" in n));
  const lists = needs.filter(
    (n): n is Need & { field: ListField; mode: "group" | "some" | "all" | "execute" } => "mode" in n,
  );
  const scopeNames = needs.map((n) => n.scope).join(" + ");
  if (flags.length > 0) {
    cases.push({
      name: `usage key with only ${scopeNames} → 200`,
      key: () => flags.reduce((p, n) => ({ ...p, [n.field]: true }), NO_PERMISSIONS),
      status: 200,
    });
  }
  if (lists.length > 0) {
    const only = (ids: (g: string) => GroupList) => (g: string) =>
      lists.reduce((p, n) => ({ ...p, [n.field]: ids(g) }), NO_PERMISSIONS);
    const allMode = lists.some((n) => n.mode === "all");
    cases.push(
      allMode
        ? {
            name: `usage key with only ${scopeNames}(group id) → 403`,
            key: only((g) => [Number(g)]),
            status: 403,
            code: "permission_denied",
            scope: lists[0]?.scope,
            deniedGroup: "0",
          }
        : { name: `usage key with only ${scopeNames}(group id) → 200`, key: only((g) => [g]), status: 200 },
      { name: `usage key with only ${scopeNames}([0]) → 200`, key: only(() => [0]), status: 200 },
    );
  }
  cases.push(master);
  return cases;
}

beforeAll(async () => {
  shared = await newAccount("permission matrix");
  execCid = await computeCid(EXEC_CODE);
  otherGroup = await newGroup(shared.api_key, [shared.wallet_address]);
  execGroup = await newGroup(shared.api_key, [], [execCid]);
  chainId = (await ok200<{ chain_id: number }>("get_node_chain_config")).chain_id;
});

describe.each(rows)("$endpoint", (row) => {
  for (const c of casesOf(row)) {
    it(`${row.endpoint}: ${c.name}`, async () => {
      const account = row.freshAccount ? await newAccount("permission matrix, converted") : shared;
      const prepared = await row.prepare(account);
      const groupId = prepared.groupId ?? otherGroup;
      const key = c.key === "master" ? account.api_key : await newUsageKey(account.api_key, c.key(groupId));
      const r: Reply<unknown> = await edge(prepared.path, {
        key,
        method: prepared.method ?? "POST",
        ...(prepared.body === undefined ? {} : { body: prepared.body }),
      });
      if (c.status === 200) {
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        row.check?.(r.body, prepared);
        return;
      }
      const error = expectError(r, 403, c.code as string);
      if (c.scope !== undefined) {
        const details = error.details as unknown as { scope: string; group_id?: string };
        expect(details.scope).toBe(c.scope);
        if (c.deniedGroup !== undefined) expect(details.group_id).toBe(c.deniedGroup === "row" ? groupId : "0");
      }
    });
  }
});

// ─── keys that no longer work ──────────────────────────────────────────────────────────────

const addGroupBody = { group_name: "x", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] };

describe("a usage key that no longer works is 401 invalid_api_key", () => {
  it("expired usage key: list_groups → 401, add_group → 401, sigil_action → 401", async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 4;
    const key = await newUsageKey(shared.api_key, ALL_PERMISSIONS, { expires_at: expiresAt });
    // Live until then.
    expect((await edge("list_groups", { key })).status).toBe(200);
    while (Date.now() / 1000 <= expiresAt + 1) await new Promise((resolve) => setTimeout(resolve, 250));
    // The chain's clock moves with its blocks (anvil mines only on transactions, and a read sees the
    // latest block's timestamp): one more write by the master key mines a block past the expiry.
    await newGroup(shared.api_key);
    expectError(await edge("list_groups", { key }), 401, "invalid_api_key");
    expectError(await edge("add_group", { key, body: addGroupBody }), 401, "invalid_api_key");
    expectError(await edge("sigil_action", { key, body: { code: EXEC_CODE } }), 401, "invalid_api_key");
  });

  it("removed usage key: list_groups → 401, add_group → 401, sigil_action → 401", async () => {
    const key = await newUsageKey(shared.api_key, ALL_PERMISSIONS);
    expect((await edge("list_groups", { key })).status).toBe(200);
    await ok200("remove_usage_api_key", { key: shared.api_key, body: { usage_api_key: key } });
    expectError(await edge("list_groups", { key }), 401, "invalid_api_key");
    expectError(await edge("add_group", { key, body: addGroupBody }), 401, "invalid_api_key");
    expectError(await edge("sigil_action", { key, body: { code: EXEC_CODE } }), 401, "invalid_api_key");
  });
});
