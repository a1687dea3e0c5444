// The reads the dashboard's header and wallet page need (issue 29), through the edge in workerd
// against the real chain and enclave: get_account (the account's id, name, counts, the kind of key
// asking and the fees) for the master key and a usage key, and get_wallet_balance for one of the
// account's wallets, refused for another account's and for bad input. This project runs with
// billing off, so the fees say so; the billing suite's metering tests charge what they say with it on.
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { chain, edgeClient, NO_PERMISSIONS } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

type NewAccount = { api_key: string; wallet_address: string; account_id: string };
type Account = {
  account_id: string;
  account_name: string;
  account_description: string;
  managed: boolean;
  admin: string | null;
  key: { kind: "master" | "usage"; hash: string };
  wallet_count: number;
  group_count: number;
  usage_key_count: number;
  action_count: number;
  fees: { billing: boolean; run_cents_per_second: number; write_cents: number };
};
type Balance = {
  wallet_address: string;
  chain_id: number;
  balance_wei: string;
  balance_eth: string;
  block_number: string;
};

let account: NewAccount;
let usageKey: string;

beforeAll(async () => {
  account = await ok200<NewAccount>("new_account", {
    body: { account_name: "reads for the dashboard", account_description: "header and wallet page" },
  });
  usageKey = (
    await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key: account.api_key,
      body: { name: "reader", description: "", ...NO_PERMISSIONS },
    })
  ).usage_api_key;
});

describe("GET /get_account", () => {
  it("answers the master key its account: the master hash as the id (new_account's account_id), name, description, mode, counts and the fees", async () => {
    const a = await ok200<Account>("get_account", { key: account.api_key });
    expect(a).toEqual({
      account_id: account.account_id,
      account_name: "reads for the dashboard",
      account_description: "header and wallet page",
      managed: true,
      admin: null,
      key: { kind: "master", hash: account.account_id },
      wallet_count: 1,
      group_count: 0,
      usage_key_count: 1,
      action_count: 0,
      // This project's edge runs with SIGIL_BILLING=off: nothing is charged.
      fees: { billing: false, run_cents_per_second: 0, write_cents: 0 },
    });
    expect(a.account_id).toBe(toHash32(apiKeyHash(account.api_key)));
  });

  it("answers a usage key the same account, naming the key as a usage key by its hash", async () => {
    const a = await ok200<Account>("get_account", { key: usageKey });
    expect(a.account_id).toBe(account.account_id);
    expect(a.account_name).toBe("reads for the dashboard");
    expect(a.key).toEqual({ kind: "usage", hash: toHash32(apiKeyHash(usageKey)) });
  });

  it("refuses no key (401 missing_api_key) and an unknown key (401 invalid_api_key)", async () => {
    expectError(await edge("get_account"), 401, "missing_api_key");
    expectError(await edge("get_account", { key: generateApiKey() }), 401, "invalid_api_key");
  });
});

describe("GET /get_wallet_balance", () => {
  it("answers a wallet's balance at the latest block, in wei and in ether", async () => {
    const zero = await ok200<Balance>(`get_wallet_balance?wallet_address=${account.wallet_address}`, {
      key: account.api_key,
    });
    expect(zero).toMatchObject({ wallet_address: account.wallet_address, balance_wei: "0", balance_eth: "0" });
    expect(zero.chain_id).toBe(await chain().getChainId());
    expect(BigInt(zero.block_number)).toBeGreaterThan(0n);

    await chain().request({
      method: "anvil_setBalance" as never,
      params: [account.wallet_address, "0x14d1120d7b160000"] as never, // 1.5 ether
    });
    // Checksummed or not, by the master key or a usage key of the account.
    const funded = await ok200<Balance>(
      `get_wallet_balance?wallet_address=${account.wallet_address.toUpperCase().replace("0X", "0x")}`,
      { key: usageKey },
    );
    expect(funded).toMatchObject({
      wallet_address: account.wallet_address,
      balance_wei: "1500000000000000000",
      balance_eth: "1.5",
    });
  });

  it("refuses another account's wallet (404 wallet_not_found), a bad address (400) and no key (401)", async () => {
    const other = await ok200<NewAccount>("new_account", { body: { account_name: "someone else" } });
    const refused = expectError(
      await edge(`get_wallet_balance?wallet_address=${other.wallet_address}`, { key: account.api_key }),
      404,
      "wallet_not_found",
    );
    expect(refused.message).toContain(other.wallet_address);
    expectError(await edge("get_wallet_balance?wallet_address=0x12", { key: account.api_key }), 400, "invalid_request");
    expectError(await edge("get_wallet_balance", { key: account.api_key }), 400, "invalid_request");
    expectError(await edge(`get_wallet_balance?wallet_address=${account.wallet_address}`), 401, "missing_api_key");
  });
});
