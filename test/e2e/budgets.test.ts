// Budgets on the real local stack (anvil, AccountConfig, the enclave, the edge under wrangler dev,
// billing on; docs/design/guardrails.md, Budgets): a wallet whose guardrail allows transfers under a
// budget of signatures and of value. The enclave reserves in the wallet's Budgets object over the
// edge before it signs: a signature past a budget fails the script's call with guardrail_denied at
// `budgets.<name>`, naming what is used; the same payload signed again is counted once; a payment split
// into many small ones meets the value budget; a dry run shows the budgets before and after without
// consuming them; the receipt records the refusal.
import { parseEther, type Hex } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";
import { solanaTransfer } from "../harness/solanaTransfer.ts";

const RECIPIENT = "0x1111111111111111111111111111111111111111";
const SOL_RECIPIENT = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

/** Signs one transfer per entry of `payments` ({nonce, value}), each answer the signature or the refusal. */
const PAY = `async function main({ wallet, payments }) {
  const out = [];
  for (const p of payments) {
    try {
      const tx = await Sigil.Actions.signTransaction({ pkpId: wallet, transaction: {
        chainId: 31337, nonce: p.nonce, to: "${RECIPIENT}", value: p.value, gas: "21000",
        maxFeePerGas: "100", maxPriorityFeePerGas: "1" } });
      out.push({ ok: true, tx });
    } catch (e) {
      out.push({ ok: false, code: e.code, rule: e.details && e.details.rule, observed: e.details && e.details.observed });
    }
  }
  return out;
}`;

type Outcome = { ok: boolean; tx?: Hex; code?: string; rule?: string; observed?: string };

let stack: SharedLocalStack;
let client: SigilClient;
let wallet: string;

beforeAll(async () => {
  stack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "budgets" });
  client = anon.with({ apiKey: created.api_key });
  await topUp(client, { amountCents: 500 });
  wallet = (await client.createWallet({ name: "budgeted" })).wallet_address;
  const cid = await client.getSigilActionIpfsId(PAY);
  await client.addAction({ action_ipfs_cid: cid, name: "pay", description: "" });
  await client.addGroup({
    group_name: "pay",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  await client.setWalletGuardrail({
    wallet_address: wallet,
    guardrail: {
      version: 1,
      transactions: { chains: [31337], max_value_wei: parseEther("1").toString(), transfers: { allow: [RECIPIENT] } },
      budgets: [
        { name: "daily-eth", window_seconds: 86_400, max_value_wei: parseEther("0.5").toString() },
        { name: "hourly-count", window_seconds: 3600, max_signatures: 4 },
      ],
    },
  });
}, 120_000);

const pay = async (payments: Array<{ nonce: number; value: string }>, dry = false) =>
  client.sigilAction({ code: PAY, js_params: { wallet, payments }, ...(dry ? { dry_run: true } : {}) });

describe("budgets", () => {
  it("a dry run shows the budgets before and after each signature and consumes nothing", async () => {
    const dry = await pay(
      [
        { nonce: 0, value: parseEther("0.2").toString() },
        { nonce: 1, value: parseEther("0.2").toString() },
        { nonce: 2, value: parseEther("0.2").toString() },
      ],
      true,
    );
    const requests = dry.dry_run?.requests ?? [];
    expect(requests.map((r) => [r.allowed, r.rule])).toEqual([
      [true, "transactions.transfers"],
      [true, "transactions.transfers"],
      [false, "budgets.daily-eth"],
    ]);
    const daily = (r: (typeof requests)[number], when: "before" | "after") =>
      r.budgets?.[when].find((b) => b.name === "daily-eth");
    expect(daily(requests[0]!, "before")).toMatchObject({
      used_value_wei: "0",
      left_value_wei: parseEther("0.5").toString(),
    });
    expect(daily(requests[1]!, "after")).toMatchObject({
      used_value_wei: parseEther("0.4").toString(),
      used_signatures: 2,
    });
    expect(requests[2]!.observed).toContain("wei left");
    expect(typeof dry.dry_run?.would_cost_cents).toBe("number");
    // Nothing was consumed: the real run meets the same budgets.
    const again = await pay([{ nonce: 0, value: parseEther("0.2").toString() }], true);
    expect(daily(again.dry_run!.requests[0]!, "before")).toMatchObject({ used_value_wei: "0" });
  });

  it("a payment split into many meets the value budget; the same payload signed again is counted once", async () => {
    const first = await pay([
      { nonce: 10, value: parseEther("0.2").toString() },
      { nonce: 11, value: parseEther("0.2").toString() },
      { nonce: 12, value: parseEther("0.2").toString() },
    ]);
    const out = first.response as Outcome[];
    expect(out.map((o) => o.ok)).toEqual([true, true, false]);
    expect(out[2]).toMatchObject({ code: "guardrail_denied", rule: "budgets.daily-eth" });
    // The receipt records the refusal with the rule.
    const entry = first.receipt.wallets.find((w) => w.address.toLowerCase() === wallet.toLowerCase());
    expect(entry?.refused?.map((r) => r.rule)).toEqual(["budgets.daily-eth"]);
    // The first two again (a retried run): the same signatures, nothing added; a small new one fits the rest.
    const second = (
      await pay([
        { nonce: 10, value: parseEther("0.2").toString() },
        { nonce: 11, value: parseEther("0.2").toString() },
        { nonce: 13, value: parseEther("0.1").toString() },
        { nonce: 14, value: "1" },
      ])
    ).response as Outcome[];
    expect(second.map((o) => o.ok)).toEqual([true, true, true, false]);
    expect(second[0]!.tx).toBe(out[0]!.tx);
    expect(second[3]).toMatchObject({ rule: "budgets.daily-eth" });
  });

  it("the signature budget counts every signature, whatever its value", async () => {
    // Four counted so far in the hour (nonces 10, 11, 13 and — refused, so not — 12, 14): three. One more fits.
    const out = (
      await pay([
        { nonce: 20, value: "0" },
        { nonce: 21, value: "0" },
      ])
    ).response as Outcome[];
    expect(out.map((o) => o.ok)).toEqual([true, false]);
    expect(out[1]).toMatchObject({ rule: "budgets.hourly-count", observed: "4 of 4 signatures used" });
  });

  it("get_wallet_budgets says what each budget has used and what is left", async () => {
    const { budgets } = await client.getWalletBudgets({ wallet_address: wallet });
    expect(budgets).toEqual([
      expect.objectContaining({
        name: "daily-eth",
        scope: "wallet",
        used_value_wei: parseEther("0.5").toString(),
        left_value_wei: "0",
        used_signatures: 4,
      }),
      expect.objectContaining({ name: "hourly-count", used_signatures: 4, left_signatures: 0 }),
    ]);
    expect(Date.parse(budgets[0]!.frees_at ?? "")).toBeGreaterThan(Date.now() + 86_000_000);
    // check_guardrail meets the budgets too (read, not consumed): the rules allow it, the budget does not.
    const transfer = {
      kind: "transaction" as const,
      transaction: { chainId: 31337, to: RECIPIENT, value: "1", nonce: 99 },
    };
    expect(await client.checkGuardrail({ wallet_address: wallet, request: transfer })).toMatchObject({
      allowed: false,
      rule: "budgets.daily-eth",
      budgets: { before: expect.any(Array) },
    });
    // A proposed document is decided by its rules alone.
    const { guardrail } = await client.getWalletGuardrail({ wallet_address: wallet });
    expect(await client.checkGuardrail({ guardrail: guardrail!, request: transfer })).toMatchObject({
      allowed: true,
      rule: "transactions.transfers",
    });
  });
});

/** Signs each base64 Solana transaction of `transactions`, each answer the signed transaction or the refusal. */
const PAY_SOL = `async function main({ wallet, transactions }) {
  const out = [];
  for (const transaction of transactions) {
    try {
      out.push({ ok: true, tx: await Sigil.Actions.signSolanaTransaction({ pkpId: wallet, transaction }) });
    } catch (e) {
      out.push({ ok: false, code: e.code, rule: e.details && e.details.rule, observed: e.details && e.details.observed });
    }
  }
  return out;
}`;

describe("budgets of lamports", () => {
  it("count what the wallet's Solana transactions spend — its transfers and the fees it pays — across runs, and refuse past them", async () => {
    const made = await client.createWallet({ name: "sol-budgeted" });
    const solana = made.solana_address as string;
    const cid = await client.getSigilActionIpfsId(PAY_SOL);
    await client.addAction({ action_ipfs_cid: cid, name: "pay-sol", description: "" });
    await client.addGroup({
      group_name: "pay-sol",
      group_description: "",
      pkp_ids_permitted: [made.wallet_address],
      cid_hashes_permitted: [cid],
    });
    await client.setWalletGuardrail({
      wallet_address: made.wallet_address,
      guardrail: {
        version: 1,
        solana: { transactions: { transfers: { allow: [SOL_RECIPIENT] } } },
        budgets: [{ name: "sol-daily", window_seconds: 86_400, max_lamports: "20000" }],
      },
    });
    // Each: 4000 lamports sent and a 5000-lamport fee the wallet pays, 9000 counted.
    const transfers = [1, 2, 3].map((i) => solanaTransfer(solana, SOL_RECIPIENT, 4000n, i));
    const first = await client.sigilAction({
      code: PAY_SOL,
      js_params: { wallet: made.wallet_address, transactions: transfers.slice(0, 2) },
    });
    expect((first.response as Outcome[]).map((o) => o.ok)).toEqual([true, true]);
    const second = await client.sigilAction({
      code: PAY_SOL,
      js_params: { wallet: made.wallet_address, transactions: transfers },
    });
    // The two already counted are the same payloads: counted once. The third has 2000 left for its 9000.
    expect(second.response).toEqual([
      expect.objectContaining({ ok: true }),
      expect.objectContaining({ ok: true }),
      {
        ok: false,
        code: "guardrail_denied",
        rule: "budgets.sol-daily",
        observed: "9000 lamports asked, 2000 lamports left",
      },
    ]);
    const { budgets } = await client.getWalletBudgets({ wallet_address: made.wallet_address });
    expect(budgets).toEqual([
      expect.objectContaining({
        name: "sol-daily",
        max_lamports: "20000",
        used_lamports: "18000",
        left_lamports: "2000",
        used_signatures: 2,
      }),
    ]);
  });
});
