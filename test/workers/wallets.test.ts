// Wallets through the edge in workerd, against the real chain and enclave: creation (POST and the
// deprecated GET) by the master key and by usage keys with and without can_create_pkps, the
// account's wallet list and a group's, with their pages.
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { addGroupThroughEnclave, edgeClient, readContract, NO_PERMISSIONS } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

type NewAccount = { api_key: string; wallet_address: string; solana_address: string; account_id: string };
type Created = {
  success: boolean;
  transaction_hash: string;
  wallet_address: string;
  solana_address: string;
  wallet_id: string;
};
type WalletItem = {
  id: string;
  wallet_address: string;
  solana_address: string | null;
  name: string;
  description: string;
};

/** A Solana address: base58 of 32 bytes. */
const SOLANA = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

const ZERO = "0x0000000000000000000000000000000000000000";

const newAccount = () => ok200<NewAccount>("new_account", { body: { account_name: "wallets" } });
const usageKey = async (master: string, perms: Partial<typeof NO_PERMISSIONS> = {}) =>
  (
    await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: master,
      body: { name: "u", description: "", ...NO_PERMISSIONS, ...perms },
    })
  ).usage_api_key;

/** The wallet registered on chain under `address`, as the contract's wallet list reports it. */
async function onChainWallets(apiKey: string) {
  const [items] = await readContract<
    readonly [ReadonlyArray<{ id: bigint; wallet: string; name: string; description: string }>, bigint]
  >("listWallets", [apiKeyHash(apiKey), 0n, 100n]);
  return items;
}

describe("POST /create_wallet", () => {
  let account: NewAccount;
  beforeAll(async () => {
    account = await newAccount();
  });

  it("creates a wallet with a name and a description: registered on chain to the account with the next id", async () => {
    const created = await ok200<Created>("create_wallet", {
      key: account.api_key,
      body: { name: "treasury", description: "cold" },
    });
    expect(created.success).toBe(true);
    expect(created.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(created.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(created.wallet_id).toBe("1");
    expect(created.solana_address).toMatch(SOLANA);
    const onChain = (await onChainWallets(account.api_key)).find(
      (w) => w.wallet.toLowerCase() === created.wallet_address,
    );
    expect(onChain).toMatchObject({ id: 1n, name: "treasury", description: "cold" });
  });

  it("needs no body at all, or takes an empty one", async () => {
    const bare = await ok200<Created>("create_wallet", { key: account.api_key, method: "POST" });
    const empty = await ok200<Created>("create_wallet", { key: account.api_key, body: {} });
    expect(new Set([bare.wallet_address, empty.wallet_address]).size).toBe(2);
    expect(Number(empty.wallet_id)).toBe(Number(bare.wallet_id) + 1);
  });

  it("refuses unknown fields and wrong types with 400, and a missing key with 401 before looking at the body", async () => {
    const unknown = expectError(
      await edge("create_wallet", { key: account.api_key, body: { name: "x", label: "y" } }),
      400,
      "invalid_request",
    );
    expect(unknown.details?.[0]?.message).toContain("label");
    expectError(await edge("create_wallet", { key: account.api_key, body: { name: 7 } }), 400, "invalid_request");
    expectError(
      await edge("create_wallet", { key: account.api_key, body: { name: "x".repeat(1025) } }),
      400,
      "invalid_request",
    );
    expectError(await edge("create_wallet", { body: { label: "y" } }), 401, "missing_api_key");
    expectError(await edge("create_wallet", { key: generateApiKey(), body: {} }), 401, "invalid_api_key");
  });

  it("a usage key with can_create_pkps may create one (for its account); without it, 403 permission_denied", async () => {
    const allowed = await usageKey(account.api_key, { can_create_pkps: true });
    const created = await ok200<Created>("create_wallet", { key: allowed, body: { name: "by usage key" } });
    expect((await onChainWallets(account.api_key)).map((w) => w.wallet.toLowerCase())).toContain(
      created.wallet_address,
    );

    const refused = await usageKey(account.api_key, { can_create_groups: true });
    const error = expectError(await edge("create_wallet", { key: refused, body: {} }), 403, "permission_denied");
    expect(error.message).toContain("pkp");
  });

  it("takes the key as Authorization: Bearer", async () => {
    const created = await ok200<Created>("create_wallet", {
      headers: { authorization: `Bearer ${account.api_key}` },
      body: {},
    });
    expect(created.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
  });
});

describe("GET /create_wallet (deprecated)", () => {
  it("creates a wallet like the POST form and says it is deprecated, linking to the POST form", async () => {
    const account = await newAccount();
    const res = await edge<Created>("create_wallet", { key: account.api_key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: true, wallet_id: "1" });
    expect(res.body.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(res.headers.get("deprecation")).toBe("true");
    expect(res.headers.get("link")).toBe('</core/v1/create_wallet>; rel="successor-version"');
    expect((await onChainWallets(account.api_key)).map((w) => w.wallet.toLowerCase())).toContain(
      res.body.wallet_address,
    );
  });

  it("keeps the same rules: 401 without a key, 403 for a usage key without can_create_pkps", async () => {
    const account = await newAccount();
    expectError(await edge("create_wallet"), 401, "missing_api_key");
    expectError(await edge("create_wallet", { key: await usageKey(account.api_key) }), 403, "permission_denied");
  });
});

describe("GET /list_wallets", () => {
  let account: NewAccount;
  const created: Created[] = [];

  beforeAll(async () => {
    account = await newAccount();
    for (const name of ["w1", "w2", "w3"])
      created.push(
        await ok200<Created>("create_wallet", { key: account.api_key, body: { name, description: `${name} wallet` } }),
      );
  });

  it("lists the account's wallets from the Account Master Wallet (id 0) on, lowercase, with X-Total-Count", async () => {
    const res = await edge<WalletItem[]>("list_wallets", { key: account.api_key });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-total-count")).toBe("4");
    expect(res.body).toEqual([
      {
        id: "0",
        wallet_address: account.wallet_address,
        solana_address: account.solana_address,
        name: expect.any(String),
        description: expect.any(String),
      },
      ...created.map((c, i) => ({
        id: c.wallet_id,
        wallet_address: c.wallet_address,
        solana_address: c.solana_address,
        name: `w${i + 1}`,
        description: `w${i + 1} wallet`,
      })),
    ]);
  });

  it("pages with page_number and page_size, and refuses page_size 101 with 400", async () => {
    const second = await edge<WalletItem[]>("list_wallets?page_number=1&page_size=3", { key: account.api_key });
    expect(second.body.map((w) => w.id)).toEqual(["3"]);
    expect(second.headers.get("x-total-count")).toBe("4");
    const first = await edge<WalletItem[]>("list_wallets?page_size=2", { key: account.api_key });
    expect(first.body.map((w) => w.id)).toEqual(["0", "1"]);
    const error = expectError(
      await edge("list_wallets?page_size=101", { key: account.api_key }),
      400,
      "invalid_request",
    );
    expect(error.details?.[0]?.path).toBe("page_size");
  });

  it("a usage key of the account (any scope) reads the same list; another account sees only its own", async () => {
    const usage = await edge<WalletItem[]>("list_wallets", { key: await usageKey(account.api_key) });
    expect(usage.headers.get("x-total-count")).toBe("4");
    expect(usage.body.map((w) => w.wallet_address)).toEqual([
      account.wallet_address,
      ...created.map((c) => c.wallet_address),
    ]);
    const other = await newAccount();
    const theirs = await edge<WalletItem[]>("list_wallets", { key: other.api_key });
    expect(theirs.body.map((w) => w.wallet_address)).toEqual([other.wallet_address]);
    expect(theirs.body.map((w) => w.solana_address)).toEqual([other.solana_address]);
  });

  it("every wallet's Solana address is its own: the ones creation answered, all different, none a wallet's EVM address", async () => {
    const res = await edge<WalletItem[]>("list_wallets", { key: account.api_key });
    const addresses = res.body.map((w) => w.solana_address);
    expect(addresses.every((a) => typeof a === "string" && SOLANA.test(a))).toBe(true);
    expect(new Set(addresses).size).toBe(4);
    // Asked again (the isolate keeps what the enclave said), the same.
    expect((await edge<WalletItem[]>("list_wallets", { key: account.api_key })).body).toEqual(res.body);
  });

  it("is 401 without a key, with a malformed one and with an unknown one; 400 with two different keys", async () => {
    expectError(await edge("list_wallets"), 401, "missing_api_key");
    expectError(await edge("list_wallets", { key: "x".repeat(44) }), 401, "invalid_api_key");
    expectError(await edge("list_wallets", { key: generateApiKey() }), 401, "invalid_api_key");
    expectError(
      await edge("list_wallets", { key: account.api_key, headers: { authorization: `Bearer ${generateApiKey()}` } }),
      400,
      "conflicting_credentials",
    );
  });
});

describe("GET /list_wallets_in_group", () => {
  let account: NewAccount;
  let wallet: Created;
  let groupId: string;
  let anyGroupId: string;

  beforeAll(async () => {
    account = await newAccount();
    wallet = await ok200<Created>("create_wallet", {
      key: account.api_key,
      body: { name: "in group", description: "g" },
    });
    await ok200<Created>("create_wallet", { key: account.api_key, body: { name: "not in group" } });
    groupId = await addGroupThroughEnclave(account.api_key, [wallet.wallet_address, account.wallet_address]);
    anyGroupId = await addGroupThroughEnclave(account.api_key, [ZERO, wallet.wallet_address]);
  });

  it("lists the wallets the group permits, with their ids and names, and X-Total-Count", async () => {
    const res = await edge<WalletItem[]>(`list_wallets_in_group?group_id=${groupId}`, { key: account.api_key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get("x-total-count")).toBe("2");
    expect(res.body).toEqual([
      {
        id: wallet.wallet_id,
        wallet_address: wallet.wallet_address,
        solana_address: wallet.solana_address,
        name: "in group",
        description: "g",
      },
      {
        id: "0",
        wallet_address: account.wallet_address,
        solana_address: account.solana_address,
        name: expect.any(String),
        description: expect.any(String),
      },
    ]);
    const paged = await edge<WalletItem[]>(`list_wallets_in_group?group_id=${groupId}&page_number=1&page_size=1`, {
      key: account.api_key,
    });
    expect(paged.body.map((w) => w.id)).toEqual(["0"]);
    expect(paged.headers.get("x-total-count")).toBe("2");
  });

  it('shows the group\'s any-wallet entry (the zero address) with id "any"', async () => {
    const res = await edge<WalletItem[]>(`list_wallets_in_group?group_id=${anyGroupId}`, { key: account.api_key });
    expect(res.body).toEqual([
      { id: "any", wallet_address: ZERO, solana_address: null, name: "", description: "" },
      {
        id: wallet.wallet_id,
        wallet_address: wallet.wallet_address,
        solana_address: wallet.solana_address,
        name: "in group",
        description: "g",
      },
    ]);
  });

  it("a usage key of the account reads it too", async () => {
    const res = await edge<WalletItem[]>(`list_wallets_in_group?group_id=${groupId}`, {
      key: await usageKey(account.api_key),
    });
    expect(res.headers.get("x-total-count")).toBe("2");
  });

  it("an unknown group, or another account's, is 404 group_not_found", async () => {
    expectError(await edge("list_wallets_in_group?group_id=999999", { key: account.api_key }), 404, "group_not_found");
    const other = await newAccount();
    expectError(
      await edge(`list_wallets_in_group?group_id=${groupId}`, { key: other.api_key }),
      404,
      "group_not_found",
    );
  });

  it("needs group_id as a decimal number: missing, negative, hex or over 64 bits is 400", async () => {
    for (const query of ["", "?group_id=", "?group_id=-1", "?group_id=0x1", "?group_id=18446744073709551616"]) {
      const error = expectError(
        await edge(`list_wallets_in_group${query}`, { key: account.api_key }),
        400,
        "invalid_request",
      );
      expect(error.details?.[0]?.path, query).toBe("group_id");
    }
    expectError(
      await edge(`list_wallets_in_group?group_id=${groupId}&page_size=101`, { key: account.api_key }),
      400,
      "invalid_request",
    );
  });
});
