// Guardrails through the edge in workerd against the real chain and enclave (docs/design/guardrails.md):
// set by the master key (a usage key refused), read back as the chain holds it, and check_guardrail —
// the enclave's check made at the edge, on a wallet's guardrail or a proposed one — with its
// refusals naming the rule and the value seen; bad input and another account's wallet refused.
import { SELF } from "cloudflare:test";
import { encodeFunctionData, parseAbi } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { solanaTransfer } from "../harness/solanaTransfer.ts";
import { edgeClient, NO_PERMISSIONS } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

const ALICE = "0x00000000000000000000000000000000000a11ce";
const TOKEN = "0x1111111111111111111111111111111111111111";
const ERC20 = parseAbi(["function transfer(address to, uint256 amount)"]);
const GUARDRAIL = {
  version: 1,
  transactions: {
    chains: [1],
    max_value_wei: "1000",
    transfers: { allow: [ALICE] },
    contracts: [
      {
        address: TOKEN,
        functions: [{ signature: "function transfer(address to, uint256 amount)", args: { amount: { lte: "50" } } }],
      },
    ],
  },
};
type Decision = { allowed: boolean; rule: string; reason?: string; observed?: string; guardrail_hash: string | null };

let key: string;
let wallet: string;
let bare: string;

beforeAll(async () => {
  key = (await ok200<{ api_key: string }>("new_account", { body: { account_name: "guardrails at the edge" } })).api_key;
  wallet = (await ok200<{ wallet_address: string }>("create_wallet", { key, body: {} })).wallet_address;
  bare = (await ok200<{ wallet_address: string }>("create_wallet", { key, body: {} })).wallet_address;
});

const check = (body: Record<string, unknown>) => edge<Decision>("check_guardrail", { key, body });

describe("set_wallet_guardrail and get_wallet_guardrail", () => {
  it("the master key sets it (answering its hash), any key reads it back with its block; a usage key may not set one", async () => {
    const set = await ok200<{ guardrail_hash: string }>("set_wallet_guardrail", {
      key,
      body: { wallet_address: wallet, guardrail: GUARDRAIL },
    });
    expect(set.guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const read = await ok200<{ guardrail_hash: string; guardrail: unknown; set_at_block: string }>(
      `get_wallet_guardrail?wallet_address=${wallet}`,
      { key },
    );
    expect(read).toMatchObject({
      guardrail_hash: set.guardrail_hash,
      guardrail: GUARDRAIL,
      set_at_block: expect.stringMatching(/^\d+$/),
    });
    expect(await ok200(`get_wallet_guardrail?wallet_address=${bare}`, { key })).toMatchObject({
      guardrail: null,
      guardrail_hash: null,
    });
    const usage = (
      await ok200<{ usage_api_key: string }>("add_usage_api_key", {
        key,
        body: { name: "u", description: "", ...NO_PERMISSIONS, can_create_pkps: true, can_create_groups: true },
      })
    ).usage_api_key;
    expectError(
      await edge("set_wallet_guardrail", { key: usage, body: { wallet_address: wallet, guardrail: null } }),
      403,
      "account_key_required",
    );
    expectError(await edge(`get_wallet_guardrail?wallet_address=${TOKEN}`, { key }), 404, "wallet_not_found");
  });
});

describe("check_guardrail", () => {
  it("decides a request against the wallet's guardrail, naming the rule; nothing is signed", async () => {
    const allowed = await check({
      wallet_address: wallet,
      request: { kind: "transaction", transaction: { to: ALICE, value: "1000", chainId: 1 } },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ allowed: true, rule: "transactions.transfers" });
    const call = await check({
      wallet_address: wallet,
      request: {
        kind: "transaction",
        transaction: {
          to: TOKEN,
          chainId: 1,
          data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [ALICE, 51n] }),
        },
      },
    });
    expect(call.body).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.amount",
      reason: "amount is more than 50",
      observed: "51",
    });
    expect((await check({ wallet_address: wallet, request: { kind: "export" } })).body).toMatchObject({
      allowed: false,
      rule: "key_export",
    });
  });

  it("decides against a proposed document before it is set; a wallet without one allows, saying so", async () => {
    const proposed = await check({
      guardrail: { version: 1, messages: { pattern: "hi*" } },
      request: { kind: "message", message: "bye" },
    });
    expect(proposed.body).toMatchObject({ allowed: false, rule: "messages.pattern", observed: "bye" });
    expect(proposed.body.guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(
      (await check({ wallet_address: bare, request: { kind: "hash", digest: `0x${"00".repeat(32)}` } })).body,
    ).toMatchObject({
      allowed: true,
      guardrail_hash: null,
    });
  });

  it("refuses both or neither of wallet_address and guardrail, a malformed request, and another account's wallet", async () => {
    const request = { kind: "message", message: "x" };
    expectError(await check({ request }), 400, "invalid_request");
    expectError(await check({ wallet_address: wallet, guardrail: { version: 1 }, request }), 400, "invalid_request");
    expectError(
      await check({ wallet_address: wallet, request: { kind: "transaction", transaction: { value: "1.5" } } }),
      400,
      "invalid_request",
    );
    expectError(await check({ wallet_address: TOKEN, request }), 404, "wallet_not_found");
  });

  it("a budgeted wallet: typed data its rules allow but that cannot be hashed is the client's 400, not a 500", async () => {
    const typed = (await ok200<{ wallet_address: string }>("create_wallet", { key, body: {} })).wallet_address;
    await ok200("set_wallet_guardrail", {
      key,
      body: {
        wallet_address: typed,
        guardrail: {
          version: 1,
          typed_data: [{ domain: {}, primary_type: "Permit" }],
          budgets: [{ name: "hourly", window_seconds: 3600, max_signatures: 5 }],
        },
      },
    });
    const permit = (message: Record<string, unknown>) => ({
      kind: "typed_data",
      typed_data: {
        domain: {},
        types: { Permit: [{ name: "spender", type: "address" }] },
        primaryType: "Permit",
        message,
      },
    });
    expect(await check({ wallet_address: typed, request: permit({ spender: ALICE }) })).toMatchObject({
      status: 200,
      body: { allowed: true, budgets: { before: [{ name: "hourly", used_signatures: 0 }] } },
    });
    expectError(await check({ wallet_address: typed, request: permit({}) }), 400, "invalid_request");
  });
});

describe("check_guardrail on Solana", () => {
  const ALICE_SOL = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
  const STRANGER = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T";

  it("decides a wire transaction and a message against a proposed document; bytes that are no transaction are a 400", async () => {
    const guardrail = { version: 1, solana: { transactions: { transfers: { allow: [ALICE_SOL] } } } };
    expect(
      (
        await check({
          guardrail,
          request: { kind: "solana_transaction", transaction: solanaTransfer(STRANGER, ALICE_SOL, 5n) },
        })
      ).body,
    ).toMatchObject({ allowed: true, rule: "solana.transactions.transfers" });
    expect(
      (
        await check({
          guardrail,
          request: { kind: "solana_transaction", transaction: solanaTransfer(ALICE_SOL, STRANGER, 5n) },
        })
      ).body,
    ).toMatchObject({ allowed: false, rule: "solana.transactions.transfers.allow", observed: STRANGER });
    expect((await check({ guardrail, request: { kind: "solana_message", message: "gm" } })).body).toMatchObject({
      allowed: false,
      rule: "solana.messages",
    });
    expectError(
      await check({ guardrail, request: { kind: "solana_transaction", transaction: "AAAA" } }),
      400,
      "invalid_request",
    );
  });

  it("a wallet's budget of lamports counts what the wallet itself would spend: its transfer and the fee it pays", async () => {
    const made = await ok200<{ wallet_address: string; solana_address: string }>("create_wallet", { key, body: {} });
    await ok200("set_wallet_guardrail", {
      key,
      body: {
        wallet_address: made.wallet_address,
        guardrail: {
          version: 1,
          solana: { transactions: { transfers: {} } },
          budgets: [{ name: "sol", window_seconds: 3600, max_lamports: "10000" }],
        },
      },
    });
    const ask = (amount: bigint) =>
      check({
        wallet_address: made.wallet_address,
        request: { kind: "solana_transaction", transaction: solanaTransfer(made.solana_address, ALICE_SOL, amount) },
      });
    // 5000 lamports sent and 5000 of fee: the budget's 10 000, exactly.
    expect((await ask(5000n)).body).toMatchObject({
      allowed: true,
      budgets: { after: [expect.objectContaining({ name: "sol", used_lamports: "10000", left_lamports: "0" })] },
    });
    expect((await ask(5001n)).body).toMatchObject({
      allowed: false,
      rule: "budgets.sol",
      observed: "10001 lamports asked, 10000 lamports left",
    });
  });
});
