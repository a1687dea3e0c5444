// Sigil.Actions.sendTransaction on the real local stack (anvil, the enclave, the edge under wrangler
// dev; docs/design/transactions.md): the enclave fills the transaction, reserves its nonce in the
// account's Transactions object at the edge, signs it as signTransaction does and sends it to
// anvil, which mines it. Concurrent runs of one wallet get consecutive nonces and all land; a chain
// the deployment does not send to, a nonce chosen by the script, and a transaction the chain
// refuses are told to the script, the last releasing its nonce for the next send (no gap); a dry
// run sends nothing; GET /transactions lists what was sent.
import { createPublicClient, createTestClient, http, parseEther, type Address, type Hex } from "viem";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const RECIPIENT = "0x2222222222222222222222222222222222222222";

/** Sends each of `sends`, answering each record or the error's code and message. */
const SEND = `async function main({ wallet, sends }) {
  const out = [];
  for (const transaction of sends) {
    try {
      out.push({ ok: true, sent: await Sigil.Actions.sendTransaction({ pkpId: wallet, transaction }) });
    } catch (e) {
      out.push({ ok: false, code: e.code ?? null, name: e.name, message: e.message });
    }
  }
  return out;
}`;

type Sent = { id: string; hash: Hex | null; chain_id: number; nonce: number; status: string };
type Outcome = { ok: true; sent: Sent } | { ok: false; code: string | null; name: string; message: string };

let stack: SharedLocalStack;
let client: SigilClient;
let wallet: Address;
const chain = () => createPublicClient({ chain: foundry, transport: http(stack.rpcUrl) });

beforeAll(async () => {
  stack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "sends" });
  client = anon.with({ apiKey: created.api_key });
  // Twenty runs at once each hold their longest run's worth of credit until they settle.
  await topUp(client, { amountCents: 5_000 });
  wallet = (await client.createWallet({ name: "sender" })).wallet_address as Address;
  const cid = await client.getSigilActionIpfsId(SEND);
  await client.addAction({ action_ipfs_cid: cid, name: "send", description: "" });
  await client.addGroup({
    group_name: "send",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  await createTestClient({ chain: foundry, transport: http(stack.rpcUrl), mode: "anvil" }).setBalance({
    address: wallet,
    value: parseEther("10"),
  });
}, 120_000);

async function send(sends: Record<string, unknown>[], extra: { dry_run?: boolean } = {}): Promise<Outcome[]> {
  const r = await client.sigilAction({ code: SEND, js_params: { wallet, sends }, ...extra });
  expect(r.has_error, JSON.stringify(r.error)).toBe(false);
  return r.response as Outcome[];
}

const transfer = (value: bigint) => ({ chainId: 31337, to: RECIPIENT, value: value.toString() });

describe("sendTransaction", () => {
  it("fills, numbers, signs and sends a transfer; anvil mines it", async () => {
    const before = await chain().getBalance({ address: RECIPIENT });
    const first = await chain().getTransactionCount({ address: wallet, blockTag: "pending" });
    const [out] = await send([transfer(1000n)]);
    expect(out, JSON.stringify(out)).toMatchObject({
      ok: true,
      sent: { chain_id: 31337, nonce: first, status: "pending" },
    });
    const sent = (out as Extract<Outcome, { ok: true }>).sent;
    expect(sent.id).toMatch(/^tx_[0-9a-f]{24}$/);
    const receipt = await chain().waitForTransactionReceipt({ hash: sent.hash as Hex, timeout: 20_000 });
    expect(receipt.status).toBe("success");
    expect(await chain().getBalance({ address: RECIPIENT })).toBe(before + 1000n);
    const tx = await chain().getTransaction({ hash: sent.hash as Hex });
    expect(tx).toMatchObject({ from: wallet.toLowerCase(), nonce: first, type: "eip1559" });
  });

  it("20 runs of one wallet at once get consecutive nonces, and every transaction lands", async () => {
    const first = await chain().getTransactionCount({ address: wallet, blockTag: "pending" });
    const outs = (await Promise.all(Array.from({ length: 20 }, () => send([transfer(1n)])))).map((o) => o[0]);
    const sent = outs.map((o) => {
      expect(o, JSON.stringify(o)).toMatchObject({ ok: true });
      return (o as Extract<Outcome, { ok: true }>).sent;
    });
    expect(sent.map((s) => s.nonce).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => first + i));
    const receipts = await Promise.all(
      sent.map((s) => chain().waitForTransactionReceipt({ hash: s.hash as Hex, timeout: 30_000 })),
    );
    expect(receipts.every((r) => r.status === "success")).toBe(true);
    // GET /transactions has each, as sent; the SDK's iterator pages through them by cursor.
    const listed = [];
    for await (const t of client.all.listTransactions({ wallet_address: wallet, limit: 7 })) listed.push(t);
    for (const s of sent)
      expect(listed.find((t) => t.id === s.id)).toMatchObject({
        hash: s.hash,
        nonce: s.nonce,
        chain_id: 31337,
        wallet_address: wallet.toLowerCase(),
      });
    const one = await client.listTransactions({ id: sent[0]?.id });
    expect(one).toEqual({ transactions: [listed.find((t) => t.id === sent[0]?.id)], next_cursor: null });
  });

  it("tells the script what it cannot send, and a nonce the chain refused is the next one used", async () => {
    const first = await chain().getTransactionCount({ address: wallet, blockTag: "pending" });
    const [elsewhere, chosen, unpaid, next] = await send([
      { chainId: 1, to: RECIPIENT, value: "1" },
      { ...transfer(1n), nonce: 5 },
      // A gas limit given, so the RPC's estimate does not refuse it first: signed, and refused at the send.
      { ...transfer(parseEther("1000")), gas: "21000" },
      transfer(2n),
    ]);
    expect(elsewhere).toMatchObject({ ok: false, code: "chain_not_configured" });
    expect((elsewhere as { message: string }).message).toContain("31337");
    expect(chosen).toMatchObject({ ok: false, name: "TypeError" });
    expect(unpaid).toMatchObject({ ok: false, code: "transaction_rejected" });
    expect(next).toMatchObject({ ok: true, sent: { nonce: first } });
  });

  it("a transaction its wallet's guardrail refuses is not sent, and its nonce is the next send's", async () => {
    const allowed = "0x3333333333333333333333333333333333333333";
    const guarded = (await client.createWallet({ name: "guarded sender" })).wallet_address as Address;
    const cid = await client.getSigilActionIpfsId(SEND);
    await client.addGroup({
      group_name: "guarded",
      group_description: "",
      pkp_ids_permitted: [guarded],
      cid_hashes_permitted: [cid],
    });
    await client.setWalletGuardrail({
      wallet_address: guarded,
      guardrail: { version: 1, transactions: { chains: [31337], transfers: { allow: [allowed] } } },
    });
    await createTestClient({ chain: foundry, transport: http(stack.rpcUrl), mode: "anvil" }).setBalance({
      address: guarded,
      value: parseEther("1"),
    });
    const r = await client.sigilAction({
      code: SEND,
      js_params: { wallet: guarded, sends: [transfer(1n), { chainId: 31337, to: allowed, value: "1" }] },
    });
    const [refused, sent] = r.response as Outcome[];
    expect(refused).toMatchObject({ ok: false, code: "guardrail_denied" });
    expect(sent).toMatchObject({ ok: true, sent: { nonce: 0, status: "pending" } });
    const { transactions } = await client.listTransactions({ wallet_address: guarded });
    // Newest first: the send that took nonce 0 again, and the refused one, released saying why.
    expect(transactions.map((t) => [t.status, t.nonce])).toEqual([
      ["pending", 0],
      ["released", 0],
    ]);
    expect(transactions[1]?.last_error).toMatch(/transactions\.transfers\.allow/);
    expect(
      (await chain().getTransactionReceipt({ hash: (sent as Extract<Outcome, { ok: true }>).sent.hash as Hex })).to,
    ).toBe(allowed);
  });

  it("a dry run sends nothing: the transaction is filled and numbered as it would be, and no nonce is taken", async () => {
    const pending = await chain().getTransactionCount({ address: wallet, blockTag: "pending" });
    const [dry] = await send([transfer(1n)], { dry_run: true });
    expect(dry).toMatchObject({ ok: true, sent: { id: null, hash: null, nonce: pending, status: "dry_run" } });
    expect(await chain().getTransactionCount({ address: wallet, blockTag: "pending" })).toBe(pending);
    const [real] = await send([transfer(1n)]);
    expect(real).toMatchObject({ ok: true, sent: { nonce: pending } });
  });
});
