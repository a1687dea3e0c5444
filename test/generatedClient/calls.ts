// Every operation of the served OpenAPI document, called through a client that openapi-typescript
// generated from it (api.ts, written by test/unit/generatedClient.test.ts) and openapi-fetch, with no
// cast: what a developer who generates their own client gets. Never run, only type-checked; the
// lines marked as expected errors are what the schema must refuse (a mark not needed fails).
import createClient from "openapi-fetch";
import type { paths } from "./api.ts";
const c = createClient<paths>({ baseUrl: "http://127.0.0.1:8787", headers: { "X-Api-Key": "k" } });
const perms = {
  can_create_groups: false,
  can_delete_groups: false,
  can_create_pkps: false,
  manage_ipfs_ids_in_groups: [] as string[],
  add_pkp_to_groups: [] as string[],
  remove_pkp_from_groups: [] as string[],
  execute_in_groups: ["1"],
};
const typed = { typed_data: {}, signature: "0x00" };
export async function all() {
  await c.GET("/core/v1/version");
  await c.GET("/core/v1/get_node_chain_config");
  await c.POST("/core/v1/get_sigil_action_ipfs_id", { body: "async function main() {}" });
  await c.GET("/core/v1/get_sigil_action_client_config");
  await c.GET("/core/v1/get_api_payers");
  await c.GET("/core/v1/get_admin_api_payer");
  await c.GET("/core/v1/health");
  await c.POST("/core/v1/billing/webhook", {
    body: { id: "evt_1", type: "payment_intent.succeeded", data: { object: {} } },
  });
  await c.POST("/core/v1/new_account", { body: { account_name: "me" } });
  await c.GET("/core/v1/account_exists");
  await c.GET("/core/v1/get_account");
  await c.POST("/core/v1/add_usage_api_key", { body: { name: "n", description: "d", ...perms } });
  await c.POST("/core/v1/update_usage_api_key", {
    body: { usage_api_key: "0x", name: "n", description: "d", ...perms },
  });
  await c.POST("/core/v1/update_usage_api_key_metadata", {
    body: { usage_api_key: "0x", name: "n", description: "d" },
  });
  await c.POST("/core/v1/remove_usage_api_key", { body: { usage_api_key: "0x" } });
  await c.POST("/core/v1/delegate_key", { body: { caveats: { expires_at: 2_000_000_000, max_uses: 1 }, count: 2 } });
  await c.POST("/core/v1/revoke_delegation", { body: { id: "0".repeat(32) } });
  await c.POST("/core/v1/set_usage_key_guardrail", {
    body: {
      usage_api_key: "0x",
      guardrail: { version: 1, budgets: [{ name: "d", window_seconds: 86400, max_signatures: 5 }] },
    },
  });
  const own = await c.GET("/core/v1/get_usage_key_guardrail", { params: { query: { usage_api_key: "0x" } } });
  own.data?.budgets.map((b) => b.left_signatures);
  await c.GET("/core/v1/list_api_keys", { params: { query: { page_number: 0, page_size: 10 } } });
  await c.POST("/core/v1/create_wallet", { body: { name: "w" } });
  await c.GET("/core/v1/create_wallet");
  await c.GET("/core/v1/list_wallets", { params: { query: { page_size: 100 } } });
  await c.GET("/core/v1/list_wallets_in_group", { params: { query: { group_id: "1" } } });
  await c.GET("/core/v1/get_wallet_balance", { params: { query: { wallet_address: "0x00" } } });
  await c.POST("/core/v1/set_wallet_guardrail", {
    body: {
      wallet_address: "0x00",
      guardrail: {
        version: 1,
        transactions: {
          chains: [1],
          contracts: [
            { address: "0x00", functions: [{ signature: "function f(uint256 a)", args: { a: { lte: "1" } } }] },
          ],
        },
        typed_data: [{ domain: { chain_id: 1 }, primary_type: "Permit", fields: { spender: { in: ["0x00"] } } }],
        messages: { pattern: "Sign in*" },
      },
    },
  });
  await c.POST("/core/v1/set_wallet_guardrail", { body: { wallet_address: 1, guardrail: null } });
  const guarded = await c.GET("/core/v1/get_wallet_guardrail", { params: { query: { wallet_address: "0x00" } } });
  const budgets = await c.GET("/core/v1/get_wallet_budgets", { params: { query: { wallet_address: "0x00" } } });
  budgets.data?.budgets.map((b) => [b.name, b.used_value_wei, b.left_signatures]);
  await c.POST("/core/v1/check_guardrail", {
    body: {
      wallet_address: "0x00",
      request: { kind: "transaction", transaction: { to: "0x00", value: "1", chainId: 1 } },
    },
  });
  await c.POST("/core/v1/check_guardrail", {
    body: { guardrail: { version: 1, raw_digests: true }, request: { kind: "hash", digest: "0x00" } },
  });
  const chains: number[] | undefined = guarded.data?.guardrail?.transactions?.chains;
  await c.POST("/core/v1/add_group", {
    body: { group_name: "g", group_description: "d", pkp_ids_permitted: [], cid_hashes_permitted: [] },
  });
  await c.POST("/core/v1/remove_group", { body: { group_id: 1 } });
  await c.POST("/core/v1/update_group", {
    body: { group_id: "1", name: "g", description: "d", pkp_ids_permitted: [1], cid_hashes_permitted: ["Qm"] },
  });
  await c.POST("/core/v1/add_action_to_group", { body: { group_id: 1, action_ipfs_cid: "Qm" } });
  await c.POST("/core/v1/remove_action_from_group", { body: { group_id: 1, hashed_cid: "0x" } });
  await c.POST("/core/v1/add_pkp_to_group", { body: { group_id: 1, pkp_id: "0x" } });
  await c.POST("/core/v1/remove_pkp_from_group", { body: { group_id: 1, pkp_id: 2 } });
  await c.GET("/core/v1/list_groups", { params: { query: { page_number: 1 } } });
  await c.POST("/core/v1/add_action", { body: { action_ipfs_cid: "Qm", name: "n", description: "d" } });
  await c.POST("/core/v1/delete_action", { body: { hashed_cid: "0x" } });
  await c.POST("/core/v1/update_action_metadata", { body: { hashed_cid: "0x", name: "n", description: "d" } });
  await c.GET("/core/v1/list_actions", { params: { query: { group_id: "1" } } });
  const run = await c.POST("/core/v1/sigil_action", {
    body: { code: "x", js_params: { wallet: "0x" } },
    params: { header: { "idempotency-key": "k1" } },
  });
  const charged: number | undefined = run.data?.charged_cents;
  await c.POST("/core/v1/create_wallet_with_signature", { body: typed });
  await c.POST("/core/v1/add_usage_api_key_with_signature", { body: typed });
  await c.POST("/core/v1/convert_to_chain_secured_account", { body: { new_admin_wallet_address: "0x", ...typed } });
  await c.GET("/core/v1/billing/stripe_config");
  await c.GET("/core/v1/billing/balance");
  await c.POST("/core/v1/billing/create_payment_intent", { body: { amount_cents: 500 } });
  await c.POST("/core/v1/billing/confirm_payment", { body: { payment_intent_id: "pi_1" } });
  await c.GET("/core/v1/usage", { params: { query: { limit: 50, kind: "run" } } });
  await c.GET("/core/v1/audit", { params: { query: { limit: 50 } } });
  await c.GET("/core/v1/transactions", { params: { query: { limit: 20, status: "pending", chain_id: 8453 } } });
  await c.POST("/core/v1/webhooks", { body: { url: "https://example.com/hook" } });
  await c.GET("/core/v1/webhooks");
  await c.GET("/core/v1/webhooks/settings");
  await c.PUT("/core/v1/webhooks/settings", { body: { balance_low_cents: 100 } });
  await c.DELETE("/core/v1/webhooks/{webhook_id}", { params: { path: { webhook_id: "we_1" } } });
  await c.GET("/core/v1/webhooks/{webhook_id}/deliveries", {
    params: { path: { webhook_id: "we_1" }, query: { page_size: 5 } },
  });
  await c.POST("/core/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend", {
    params: { path: { webhook_id: "we_1", delivery_id: "dlv_1" } },
  });
  await c.GET("/attestation", { params: { query: { nonce: "00" } } });
  await c.GET("/attestation/simulated-collateral");
  await c.GET("/info");
  await c.GET("/attestation/receipt-key");
  await c.GET("/attestation/receipt-anchor", { params: { query: { epoch: 1, head: `0x${"00".repeat(32)}` } } });
  await c.GET("/evidences/");
  await c.GET("/evidences/{name}", { params: { path: { name: "quote.json" } } });
  // sigil_action takes exactly one of code and ipfs_id.
  // @ts-expect-error both
  await c.POST("/core/v1/sigil_action", { body: { code: "x", ipfs_id: "Qm" } });
  // @ts-expect-error neither
  await c.POST("/core/v1/sigil_action", { body: { js_params: {} } });
  // Page sizes are numbers.
  // @ts-expect-error a string
  await c.GET("/core/v1/list_wallets", { params: { query: { page_size: "10" } } });
  // A guardrail's amounts are decimal strings, so none loses digits.
  const numbered = { version: 1, transactions: { chains: [1], max_value_wei: 5 } } as const;
  await c.POST("/core/v1/set_wallet_guardrail", {
    // @ts-expect-error a number
    body: { wallet_address: "0x00", guardrail: numbered },
  });
  return [charged, chains];
}
