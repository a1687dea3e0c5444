// A usage key's own guardrail (docs/design/guardrails.md, Narrowed per usage key) on the real local
// stack: every signature a run of the key asks for must pass the key's guardrail as well as the
// wallet's, whatever the wallet — an unguarded wallet is narrowed by it too — with refusals named
// under `usage_key.`; its budgets count everything the key signs, across wallets; the account's
// master key, and another usage key, are not narrowed by it; removing it lifts it.
import { parseEther } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { noPermissions } from "../../shared/permissions.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const RECIPIENT = "0x2222222222222222222222222222222222222222";

/** Each ask is {wallet, transfer: {nonce, value}} or {wallet, message}: the signature or the refusal's code and rule. */
const SIGN = `async function main({ asks }) {
  const out = [];
  for (const a of asks) {
    try {
      if (a.message !== undefined) {
        out.push({ ok: true, sig: await Sigil.Actions.signMessage({ pkpId: a.wallet, message: a.message }) });
      } else {
        out.push({ ok: true, sig: await Sigil.Actions.signTransaction({ pkpId: a.wallet, transaction: {
          chainId: 31337, nonce: a.transfer.nonce, to: "${RECIPIENT}", value: a.transfer.value, gas: "21000",
          maxFeePerGas: "100", maxPriorityFeePerGas: "1" } }) });
      }
    } catch (e) {
      out.push({ ok: false, code: e.code, rule: e.details && e.details.rule });
    }
  }
  return out;
}`;

type Outcome = { ok: boolean; code?: string; rule?: string };

let owner: SigilClient;
let keyed: SigilClient;
let other: SigilClient;
let keyHash: string;
let plain: string;
let guarded: string;

const transfer = (wallet: string, nonce: number, eth: string) => ({
  wallet,
  transfer: { nonce, value: parseEther(eth).toString() },
});
const run = async (client: SigilClient, asks: unknown[]) =>
  (await client.sigilAction({ code: SIGN, js_params: { asks } })).response as Outcome[];

beforeAll(async () => {
  const stack: SharedLocalStack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "key guardrail" });
  owner = anon.with({ apiKey: created.api_key });
  await topUp(owner, { amountCents: 500 });
  plain = (await owner.createWallet({ name: "plain" })).wallet_address;
  guarded = (await owner.createWallet({ name: "guarded" })).wallet_address;
  const cid = await owner.getSigilActionIpfsId(SIGN);
  await owner.addAction({ action_ipfs_cid: cid, name: "sign", description: "" });
  const group = await owner.addGroup({
    group_name: "signers",
    group_description: "",
    pkp_ids_permitted: [plain, guarded],
    cid_hashes_permitted: [cid],
  });
  const usage = (name: string) =>
    owner.addUsageApiKey({ name, description: "", ...noPermissions(), execute_in_groups: [group.group_id] });
  const key = await usage("narrowed");
  keyed = anon.with({ apiKey: key.usage_api_key });
  other = anon.with({ apiKey: (await usage("other")).usage_api_key });
  keyHash = toHash32(apiKeyHash(key.usage_api_key));
  // The wallet's own guardrail allows transfers and any message; the key's allows no messages.
  await owner.setWalletGuardrail({
    wallet_address: guarded,
    guardrail: {
      version: 1,
      transactions: { chains: [31337], transfers: {} },
      messages: {},
      budgets: [{ name: "wallet-daily", window_seconds: 86_400, max_signatures: 100 }],
    },
  });
  await owner.setUsageKeyGuardrail({
    usage_api_key: key.usage_api_key,
    guardrail: {
      version: 1,
      transactions: { chains: [31337], max_value_wei: parseEther("0.3").toString(), transfers: { allow: [RECIPIENT] } },
      budgets: [{ name: "key-daily", window_seconds: 86_400, max_signatures: 3 }],
    },
  });
}, 120_000);

describe("a usage key's own guardrail", () => {
  it("narrows every wallet the key signs with, on top of the wallet's own, with refusals under usage_key.", async () => {
    const out = await run(keyed, [
      transfer(plain, 0, "0.1"),
      transfer(plain, 1, "0.5"),
      { wallet: plain, message: "hello" },
      { wallet: guarded, message: "hello" },
      transfer(guarded, 0, "0.1"),
    ]);
    expect(out).toEqual([
      { ok: true, sig: expect.any(String) },
      { ok: false, code: "guardrail_denied", rule: "usage_key.transactions.max_value_wei" },
      { ok: false, code: "guardrail_denied", rule: "usage_key.messages" },
      // The wallet allows messages; the key does not.
      { ok: false, code: "guardrail_denied", rule: "usage_key.messages" },
      { ok: true, sig: expect.any(String) },
    ]);
  });

  it("its budgets count what the key signs across wallets; the master key and another key are not narrowed", async () => {
    const out = await run(keyed, [transfer(guarded, 1, "0.1"), transfer(guarded, 2, "0.1")]);
    expect(out).toEqual([
      { ok: true, sig: expect.any(String) },
      { ok: false, code: "guardrail_denied", rule: "usage_key.budgets.key-daily" },
    ]);
    // The key's own budget decides first: what it refuses is counted in no wallet's budget (two, not three).
    expect((await owner.getWalletBudgets({ wallet_address: guarded })).budgets).toEqual([
      expect.objectContaining({ name: "wallet-daily", used_signatures: 2 }),
    ]);
    const own = await owner.getUsageKeyGuardrail({ usage_api_key: keyHash });
    expect(own.budgets).toEqual([
      expect.objectContaining({ name: "key-daily", used_signatures: 3, left_signatures: 0 }),
    ]);
    for (const client of [owner, other])
      expect(
        (await run(client, [transfer(plain, 3, "0.5"), { wallet: plain, message: "hi" }])).map((o) => o.ok),
      ).toEqual([true, true]);
  });

  it("removed, the key signs as its wallets allow again", async () => {
    await owner.setUsageKeyGuardrail({ usage_api_key: keyHash, guardrail: null });
    // The enclave's cache drops the key's grants at the event, within the listener's bound.
    const deadline = Date.now() + 20_000;
    let out: Outcome[] = [];
    while (Date.now() < deadline) {
      out = await run(keyed, [{ wallet: plain, message: "hello again" }]);
      if (out[0]?.ok) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(out).toEqual([{ ok: true, sig: expect.any(String) }]);
  });
});
