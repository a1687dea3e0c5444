// Accounts and keys through the edge in workerd, against the real chain and enclave: a new
// account, account_exists for every kind of key, the usage key life cycle, list_api_keys' pages,
// the header rules, and the public payer reads.
import { SELF } from "cloudflare:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { buildTypedData, signableTypedData } from "../../shared/eip712.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { ok } from "../enclave/client.ts";
import { addGroupThroughEnclave, edgeClient, readContract, NO_PERMISSIONS } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

type NewAccount = {
  success: boolean;
  transaction_hash: string;
  api_key: string;
  wallet_address: string;
  account_id: string;
};
const newAccount = (name = "edge test account") => ok200<NewAccount>("new_account", { body: { account_name: name } });

type KeyItem = {
  id: string;
  name: string;
  description: string;
  expires_at: number;
  spend_limit_cents: number;
  can_create_groups: boolean;
  can_delete_groups: boolean;
  can_create_pkps: boolean;
  manage_ipfs_ids_in_groups: string[];
  add_pkp_to_groups: string[];
  remove_pkp_from_groups: string[];
  execute_in_groups: string[];
};

describe("POST /new_account", () => {
  it("creates a managed account: a 44-character key, its Account Master Wallet, the key's hash as the account id", async () => {
    const account = await newAccount();
    expect(account.success).toBe(true);
    expect(account.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(account.api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(account.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(account.account_id).toBe(toHash32(apiKeyHash(account.api_key)));
    const onChain = await readContract<{ master: bigint; managed: boolean; name: string; walletCount: bigint }>(
      "getAccount",
      [apiKeyHash(account.api_key)],
    );
    expect(onChain).toMatchObject({
      master: apiKeyHash(account.api_key),
      managed: true,
      name: "edge test account",
      walletCount: 1n,
    });
  });

  it("rejects an unknown field, a missing name and a bad email with 400 invalid_request and details", async () => {
    const unknown = expectError(
      await edge("new_account", { body: { account_name: "x", acount_description: "typo" } }),
      400,
      "invalid_request",
    );
    expect(unknown.details?.[0]?.message).toContain("acount_description");
    const missing = expectError(await edge("new_account", { body: {} }), 400, "invalid_request");
    expect(missing.details?.map((d) => d.path)).toContain("account_name");
    expectError(
      await edge("new_account", { body: { account_name: "x", email: "not an email" } }),
      400,
      "invalid_request",
    );
    expectError(await edge("new_account", { body: "{not json" }), 400, "invalid_json");
  });
});

describe("GET /account_exists", () => {
  let account: NewAccount;
  let usageKey: string;

  beforeAll(async () => {
    account = await newAccount();
    usageKey = (
      await ok200<{ usage_api_key: string }>("add_usage_api_key", {
        key: account.api_key,
        body: { name: "u", description: "", ...NO_PERMISSIONS },
      })
    ).usage_api_key;
  });

  it("is {exists: true, managed: true} for a managed account's master key and for its usage key", async () => {
    expect(await ok200("account_exists", { key: account.api_key })).toEqual({ exists: true, managed: true });
    expect(await ok200("account_exists", { key: usageKey })).toEqual({ exists: true, managed: true });
  });

  it("is {exists: false, managed: false} with 200 for a well-formed key nobody holds", async () => {
    expect(await ok200("account_exists", { key: generateApiKey() })).toEqual({ exists: false, managed: false });
  });

  it("is 401 for a missing key (missing_api_key) and a malformed one or a public hash (invalid_api_key)", async () => {
    expectError(await edge("account_exists"), 401, "missing_api_key");
    expectError(await edge("account_exists", { key: "not-a-key" }), 401, "invalid_api_key");
    expectError(await edge("account_exists", { key: account.account_id }), 401, "invalid_api_key");
    expectError(
      await edge("account_exists", { headers: { authorization: `Basic ${account.api_key}` } }),
      401,
      "invalid_api_key",
    );
  });

  it("takes the key as Authorization: Bearer (any case), and refuses two different keys with 400 conflicting_credentials", async () => {
    expect(await ok200("account_exists", { headers: { authorization: `Bearer ${account.api_key}` } })).toEqual({
      exists: true,
      managed: true,
    });
    expect(await ok200("account_exists", { headers: { authorization: `bearer ${usageKey}` } })).toEqual({
      exists: true,
      managed: true,
    });
    expect(
      await ok200("account_exists", { key: account.api_key, headers: { authorization: `Bearer ${account.api_key}` } }),
    ).toEqual({ exists: true, managed: true });
    expectError(
      await edge("account_exists", { key: account.api_key, headers: { authorization: `Bearer ${usageKey}` } }),
      400,
      "conflicting_credentials",
    );
  });

  it("is {exists: true, managed: false} for a converted account's old master key, which may still read but not write", async () => {
    const converted = await newAccount("to convert");
    const admin = privateKeyToAccount(generatePrivateKey());
    const { chain_id } = await ok200<{ chain_id: number }>("get_node_chain_config");
    const typed = buildTypedData({
      primaryType: "ConvertAccount",
      chainId: chain_id,
      address: admin.address,
      issuedAt: BigInt(Math.floor(Date.now() / 1000)),
    });
    await ok("convert_to_chain_secured_account", {
      api_key: converted.api_key,
      new_admin_wallet_address: admin.address,
      typed_data: typed,
      signature: await admin.signTypedData(signableTypedData(typed)),
    });
    expect(await ok200("account_exists", { key: converted.api_key })).toEqual({ exists: true, managed: false });
    const wallets = await edge<unknown[]>("list_wallets", { key: converted.api_key });
    expect(wallets.status).toBe(200);
    expectError(
      await edge("add_usage_api_key", {
        key: converted.api_key,
        body: { name: "u", description: "", ...NO_PERMISSIONS },
      }),
      403,
      "chain_secured_account",
    );
  });
});

describe("usage keys", () => {
  let account: NewAccount;
  let groupId: string;

  beforeAll(async () => {
    account = await newAccount();
    groupId = await addGroupThroughEnclave(account.api_key, [account.wallet_address]);
  });

  const listKeys = async (key: string, query = "") => {
    const r = await edge<KeyItem[]>(`list_api_keys${query}`, { key });
    if (r.status !== 200) throw new Error(`list_api_keys answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r;
  };
  const itemOf = async (usageKey: string) =>
    (await listKeys(account.api_key, "?page_size=100")).body.find((k) => k.id === toHash32(apiKeyHash(usageKey)));

  it("add_usage_api_key answers a new key that works at once; list_api_keys shows its permissions, group ids as decimal strings", async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 86_400;
    const added = await ok200<{ success: boolean; transaction_hash: string; usage_api_key: string }>(
      "add_usage_api_key",
      {
        key: account.api_key,
        body: {
          name: "ci",
          description: "for CI",
          ...NO_PERMISSIONS,
          can_create_pkps: true,
          execute_in_groups: [Number(groupId)],
          manage_ipfs_ids_in_groups: [groupId],
          expires_at: expiresAt,
          spend_limit_cents: 250,
        },
      },
    );
    expect(added.success).toBe(true);
    expect(added.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(added.usage_api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(await ok200("account_exists", { key: added.usage_api_key })).toEqual({ exists: true, managed: true });
    expect(await itemOf(added.usage_api_key)).toEqual({
      id: toHash32(apiKeyHash(added.usage_api_key)),
      name: "ci",
      description: "for CI",
      expires_at: expiresAt,
      spend_limit_cents: 250,
      spent_cents: 0,
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: true,
      manage_ipfs_ids_in_groups: [groupId],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [groupId],
    });
  });

  it("update_usage_api_key replaces every permission (by key or by hash); update_usage_api_key_metadata only renames", async () => {
    const { usage_api_key: key } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: account.api_key,
      body: {
        name: "before",
        description: "d",
        ...NO_PERMISSIONS,
        can_create_groups: true,
        execute_in_groups: [groupId],
      },
    });
    const updated = await ok200<{ success: boolean; transaction_hash: string }>("update_usage_api_key", {
      key: account.api_key,
      body: {
        usage_api_key: key,
        name: "after",
        description: "d2",
        ...NO_PERMISSIONS,
        can_delete_groups: true,
        add_pkp_to_groups: [0],
      },
    });
    expect(updated).toEqual({ success: true, transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await itemOf(key)).toMatchObject({
      name: "after",
      description: "d2",
      can_create_groups: false,
      can_delete_groups: true,
      add_pkp_to_groups: ["0"],
      execute_in_groups: [],
    });

    await ok200("update_usage_api_key", {
      key: account.api_key,
      body: {
        usage_api_key: toHash32(apiKeyHash(key)),
        name: "by hash",
        description: "",
        ...NO_PERMISSIONS,
        remove_pkp_from_groups: [groupId],
      },
    });
    expect(await itemOf(key)).toMatchObject({
      name: "by hash",
      can_delete_groups: false,
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [groupId],
    });

    await ok200("update_usage_api_key_metadata", {
      key: account.api_key,
      body: { usage_api_key: key, name: "renamed", description: "new words" },
    });
    expect(await itemOf(key)).toMatchObject({
      name: "renamed",
      description: "new words",
      remove_pkp_from_groups: [groupId],
    });
  });

  it("update_usage_api_key of a key the account does not have is 404 not_found", async () => {
    expectError(
      await edge("update_usage_api_key", {
        key: account.api_key,
        body: { usage_api_key: generateApiKey(), name: "x", description: "", ...NO_PERMISSIONS },
      }),
      404,
      "not_found",
    );
  });

  it("remove_usage_api_key stops the key at once: it no longer exists and every keyed call with it is 401 invalid_api_key", async () => {
    const { usage_api_key: key } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: account.api_key,
      body: { name: "doomed", description: "", ...NO_PERMISSIONS },
    });
    expect((await edge("list_api_keys", { key })).status).toBe(200);
    const removed = await ok200("remove_usage_api_key", { key: account.api_key, body: { usage_api_key: key } });
    expect(removed).toMatchObject({ success: true });
    expect(await itemOf(key)).toBeUndefined();
    expectError(await edge("list_api_keys", { key }), 401, "invalid_api_key");
    expectError(await edge("list_wallets", { key }), 401, "invalid_api_key");
    expect(await ok200("account_exists", { key })).toEqual({ exists: false, managed: false });
  });

  it("a usage key may not manage usage keys: 403 account_key_required on all four", async () => {
    const { usage_api_key: usage } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: account.api_key,
      body: {
        name: "all groups",
        description: "",
        ...NO_PERMISSIONS,
        can_create_groups: true,
        can_create_pkps: true,
        execute_in_groups: [0],
      },
    });
    const perms = { name: "x", description: "", ...NO_PERMISSIONS };
    expectError(await edge("add_usage_api_key", { key: usage, body: perms }), 403, "account_key_required");
    expectError(
      await edge("update_usage_api_key", { key: usage, body: { usage_api_key: usage, ...perms } }),
      403,
      "account_key_required",
    );
    expectError(
      await edge("update_usage_api_key_metadata", {
        key: usage,
        body: { usage_api_key: usage, name: "x", description: "" },
      }),
      403,
      "account_key_required",
    );
    expectError(
      await edge("remove_usage_api_key", { key: usage, body: { usage_api_key: usage } }),
      403,
      "account_key_required",
    );
    expect(await itemOf(usage)).toMatchObject({ name: "all groups" });
  });

  it("validates bodies strictly: api_key in the body, unknown fields and wrong types are 400; the key is checked first", async () => {
    const perms = { name: "x", description: "", ...NO_PERMISSIONS };
    const inBody = expectError(
      await edge("add_usage_api_key", { key: account.api_key, body: { ...perms, api_key: account.api_key } }),
      400,
      "invalid_request",
    );
    expect(inBody.details?.[0]?.message).toContain("api_key");
    expectError(
      await edge("add_usage_api_key", { key: account.api_key, body: { ...perms, can_create_group: true } }),
      400,
      "invalid_request",
    );
    const wrong = expectError(
      await edge("add_usage_api_key", { key: account.api_key, body: { ...perms, execute_in_groups: ["one"] } }),
      400,
      "invalid_request",
    );
    expect(wrong.details?.[0]?.path).toBe("execute_in_groups.0");
    expectError(
      await edge("remove_usage_api_key", { key: account.api_key, body: { usage_api_key: "0x1234" } }),
      400,
      "invalid_request",
    );
    expectError(await edge("add_usage_api_key", { body: { bogus: true } }), 401, "missing_api_key");
    expectError(await edge("add_usage_api_key", { key: "nope", body: perms }), 401, "invalid_api_key");
  });

  it("an unknown group id in the permissions is refused by the chain with 404 group_not_found", async () => {
    expectError(
      await edge("add_usage_api_key", {
        key: account.api_key,
        body: { name: "x", description: "", ...NO_PERMISSIONS, execute_in_groups: ["987654"] },
      }),
      404,
      "group_not_found",
    );
  });
});

describe("GET /list_api_keys", () => {
  let account: NewAccount;
  const keys: string[] = [];

  beforeAll(async () => {
    account = await newAccount();
    for (const name of ["k0", "k1", "k2"]) {
      keys.push(
        (
          await ok200<{ usage_api_key: string }>("add_usage_api_key", {
            key: account.api_key,
            body: { name, description: "", ...NO_PERMISSIONS },
          })
        ).usage_api_key,
      );
    }
  });

  it("pages the account's usage keys with X-Total-Count, default page size 10", async () => {
    const all = await edge<KeyItem[]>("list_api_keys", { key: account.api_key });
    expect(all.status).toBe(200);
    expect(all.headers.get("x-total-count")).toBe("3");
    expect(all.body.map((k) => k.name)).toEqual(["k0", "k1", "k2"]);
    expect(all.body.map((k) => k.id)).toEqual(keys.map((k) => toHash32(apiKeyHash(k))));

    const first = await edge<KeyItem[]>("list_api_keys?page_number=0&page_size=2", { key: account.api_key });
    expect(first.body.map((k) => k.name)).toEqual(["k0", "k1"]);
    expect(first.headers.get("x-total-count")).toBe("3");
    const second = await edge<KeyItem[]>("list_api_keys?page_number=1&page_size=2", { key: account.api_key });
    expect(second.body.map((k) => k.name)).toEqual(["k2"]);
    const beyond = await edge<KeyItem[]>("list_api_keys?page_number=5&page_size=2", { key: account.api_key });
    expect(beyond.body).toEqual([]);
    expect(beyond.headers.get("x-total-count")).toBe("3");
  });

  it("never shows key values, and a usage key of the account reads the same list", async () => {
    const asUsage = await edge<KeyItem[]>("list_api_keys", { key: keys[0] as string });
    expect(asUsage.status).toBe(200);
    expect(asUsage.headers.get("x-total-count")).toBe("3");
    const text = JSON.stringify(asUsage.body);
    for (const k of [...keys, account.api_key]) expect(text).not.toContain(k);
    expect(text).not.toContain(account.account_id);
  });

  it("refuses page_size over 100, 0, or not a number, and a bad page_number, with 400 invalid_request", async () => {
    const over = expectError(
      await edge("list_api_keys?page_size=101", { key: account.api_key }),
      400,
      "invalid_request",
    );
    expect(over.details?.[0]?.path).toBe("page_size");
    expectError(await edge("list_api_keys?page_size=0", { key: account.api_key }), 400, "invalid_request");
    expectError(await edge("list_api_keys?page_size=ten", { key: account.api_key }), 400, "invalid_request");
    expectError(await edge("list_api_keys?page_number=-1", { key: account.api_key }), 400, "invalid_request");
    expect((await edge("list_api_keys?page_size=100", { key: account.api_key })).status).toBe(200);
  });

  it("is 401 without a key or with an unknown one", async () => {
    expectError(await edge("list_api_keys"), 401, "missing_api_key");
    expectError(await edge("list_api_keys", { key: generateApiKey() }), 401, "invalid_api_key");
  });
});

describe("public payer information", () => {
  it("get_api_payers answers the contract's payer set, lowercase", async () => {
    const onChain = await readContract<readonly string[]>("apiPayers");
    expect(onChain.length).toBeGreaterThan(0);
    const payers = await ok200<string[]>("get_api_payers");
    expect(payers).toEqual(onChain.map((p) => p.toLowerCase()));
  });

  it("get_admin_api_payer answers the contract's admin payer as a lowercase address string", async () => {
    const onChain = await readContract<string>("adminApiPayer");
    const admin = await ok200<string>("get_admin_api_payer");
    expect(admin).toBe(onChain.toLowerCase());
    expect(admin).toMatch(/^0x[0-9a-f]{40}$/);
  });
});
