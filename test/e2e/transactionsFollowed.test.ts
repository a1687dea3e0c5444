// Transactions sent and followed to the end (issue 32, part 5; docs/design/transactions.md), on two
// local chains: anvil 31337 (the contract's, reached by the services through a stoppable proxy) and
// anvil 31338, both in the enclaves' and the edge's SIGIL_CHAINS. Two enclave instances behind the
// edge under wrangler dev; the account's Transactions object follows every sent transaction (every
// 300 ms here; a transaction seen nowhere for 3 s is dropped) and tells a loopback webhook receiver.
//
// - 100 concurrent sends of one wallet through both instances: consecutive nonces, all confirmed with
//   their receipts (waitForTransaction), one transaction.confirmed each.
// - The second chain: its own nonces; a transaction that reverts on chain is `reverted`.
// - A transaction the pool lost while still valid is sent again by the follower and mined; one lost
//   and no longer payable (its wallet emptied) is `dropped`, and its nonce is the next send's.
// - A transaction replaced from outside (the wallet's own signature of the same nonce, broadcast by
//   the test) is `replaced` once the other is mined.
// - The RPC stopped with a transaction pending: the record stays pending and says why, the SDK's wait
//   ends at its timeout with that record, a send meanwhile is `chain_unavailable` at once; the RPC
//   back, the transaction is confirmed.
import {
  createPublicClient,
  createTestClient,
  http,
  parseEther,
  type Address,
  type Hex,
  type PublicClient,
  type TestClient,
} from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import {
  createSigilClient,
  SigilTransactionTimeoutError,
  topUp,
  waitForTransaction,
  type SigilClient,
  type Transaction,
} from "../../sdk/src/index.ts";
import { startCrashStack, type CrashStack } from "../harness/budgetCrash.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../harness/webhookReceiver.ts";

const RECIPIENT = "0x2222222222222222222222222222222222222222";
/** Code that reverts whatever it is called with: PUSH1 0, PUSH1 0, REVERT. */
const REVERTER = "0x3333333333333333333333333333333333333333";
const CHAIN_B = 31338;

/**
 * Sends each of `sends` (signs it, `sign: true`; speeds up the transaction `speedUp`), answering each
 * record or the error's code and message.
 */
const SEND = `async function main({ wallet, sends }) {
  const out = [];
  for (const { sign, speedUp, ...transaction } of sends) {
    try {
      out.push(sign
        ? { ok: true, signed: await Sigil.Actions.signTransaction({ pkpId: wallet, transaction }) }
        : speedUp
          ? { ok: true, sent: await Sigil.Actions.speedUpTransaction({ pkpId: wallet, id: speedUp }) }
          : { ok: true, sent: await Sigil.Actions.sendTransaction({ pkpId: wallet, transaction }) });
    } catch (e) {
      out.push({ ok: false, code: e.code ?? null, message: e.message });
    }
  }
  return out;
}`;

type Sent = { id: string; hash: Hex; chain_id: number; nonce: number; status: string };
type Outcome = { ok: true; sent?: Sent; signed?: Hex } | { ok: false; code: string | null; message: string };

let stack: CrashStack;
let anvilB: Anvil;
let receiver: WebhookReceiver;
let client: SigilClient;
let wallet: Address;
let chainA: PublicClient;
let chainB: PublicClient;
let testA: TestClient;
let testB: TestClient;

beforeAll(async () => {
  anvilB = await startAnvil({ chainId: CHAIN_B, accounts: 2 });
  stack = await startCrashStack({
    enclaves: 2,
    chainProxy: true,
    extraChains: { [CHAIN_B]: anvilB.rpcUrl },
    edgeVars: { SIGIL_TX_FOLLOW_MS: "300", SIGIL_TX_DROP_AFTER_S: "3" },
  });
  receiver = await startWebhookReceiver();
  chainA = createPublicClient({ transport: http(stack.rpcUrl) });
  chainB = createPublicClient({ transport: http(anvilB.rpcUrl) });
  testA = createTestClient({ chain: foundry, transport: http(stack.rpcUrl), mode: "anvil" });
  testB = createTestClient({ chain: { ...foundry, id: CHAIN_B }, transport: http(anvilB.rpcUrl), mode: "anvil" });
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "followed" });
  client = anon.with({ apiKey: created.api_key });
  await topUp(client, { amountCents: 20_000 });
  wallet = (await client.createWallet({ name: "sender" })).wallet_address as Address;
  const cid = await client.getSigilActionIpfsId(SEND);
  await client.addAction({ action_ipfs_cid: cid, name: "send", description: "" });
  await client.addGroup({
    group_name: "send",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  const endpoint = await client.createWebhook({
    url: receiver.url("tx"),
    events: ["transaction.confirmed", "transaction.reverted", "transaction.replaced", "transaction.dropped"],
  });
  receiver.setSecret("tx", endpoint.secret);
  for (const t of [testA, testB]) await t.setBalance({ address: wallet, value: parseEther("10") });
  await testB.setCode({ address: REVERTER, bytecode: "0x60006000fd" });
}, 180_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
  await anvilB?.stop();
}, 60_000);

async function run(sends: Record<string, unknown>[]): Promise<{ outcomes: Outcome[]; instance: string }> {
  const r = await client.sigilAction({ code: SEND, js_params: { wallet, sends } });
  expect(r.has_error, JSON.stringify(r.error)).toBe(false);
  return { outcomes: r.response as Outcome[], instance: r.receipt.instance_id };
}

async function sendOne(transaction: Record<string, unknown>): Promise<Sent> {
  const { outcomes } = await run([transaction]);
  const [out] = outcomes;
  expect(out, JSON.stringify(out)).toMatchObject({ ok: true, sent: { status: "pending" } });
  return (out as { sent: Sent }).sent;
}

/** The webhook events of `type` the receiver holds for the transaction `id`, waited for up to 20 s. */
async function eventsFor(id: string, type: string, count = 1): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = receiver
      .events("tx")
      .filter((e) => e.type === type && e.data.id === id)
      .map((e) => e.data);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What is not terminal among the wallet's transactions, and what the chain knows of each: for a failure's message. */
async function explain(chain: PublicClient): Promise<string> {
  const open = [];
  for await (const t of client.all.listTransactions({ wallet_address: wallet, limit: 100 }))
    if (t.status === "pending" || t.status === "reserved") open.push(t);
  const lines = await Promise.all(
    open.map(async (t) => {
      const onChain = t.hash ? await chain.getTransaction({ hash: t.hash as Hex }).catch(() => null) : null;
      return `${t.id} nonce ${t.nonce} ${t.status} ${t.hash} known=${onChain !== null} last_error=${t.last_error}`;
    }),
  );
  const [latest, pending] = await Promise.all([
    chain.getTransactionCount({ address: wallet, blockTag: "latest" }),
    chain.getTransactionCount({ address: wallet, blockTag: "pending" }),
  ]);
  return `wallet nonce: latest ${latest}, pending ${pending}\n${lines.join("\n")}`;
}

const transfer = (chainId: number, value = 1n) => ({ chainId, to: RECIPIENT, value: value.toString() });

describe("transactions followed to the end", () => {
  it("100 concurrent sends of one wallet through two enclave instances: consecutive nonces, each confirmed and told", async () => {
    const first = await chainA.getTransactionCount({ address: wallet, blockTag: "pending" });
    const runs = await Promise.all(Array.from({ length: 100 }, () => run([transfer(31337)])));
    // The edge sent the runs to both instances.
    expect(new Set(runs.map((r) => r.instance)).size).toBe(2);
    // Pending, or already confirmed: anvil mines each at once, and an enclave whose first "sent" to a
    // slow edge timed out asks again (askEdge) and gets the record as the follower has left it since.
    const sent = runs.map(({ outcomes: [o] }) => {
      expect(o, JSON.stringify(o)).toMatchObject({
        ok: true,
        sent: { status: expect.stringMatching(/^(pending|confirmed)$/) },
      });
      return (o as { sent: Sent }).sent;
    });
    expect(sent.map((s) => s.nonce).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => first + i));
    const ended = await Promise.all(
      sent.map((s) => waitForTransaction(client, s.id, { timeoutMs: 60_000, pollMs: 500 })),
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await explain(chainA)}`);
    });
    for (const [i, t] of ended.entries()) {
      const s = sent[i] as Sent;
      const receipt = await chainA.getTransactionReceipt({ hash: s.hash });
      expect(t).toMatchObject({
        id: s.id,
        status: "confirmed",
        hash: s.hash,
        block_number: receipt.blockNumber.toString(),
        gas_used: receipt.gasUsed.toString(),
        fee_wei: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
        last_error: null,
      });
    }
    for (const s of sent) expect(await eventsFor(s.id, "transaction.confirmed")).toHaveLength(1);
    const told = receiver.events("tx").find((e) => e.data.id === sent[0]?.id);
    expect(told?.data).toMatchObject({
      id: sent[0]?.id,
      status: "confirmed",
      chain_id: 31337,
      wallet_address: wallet.toLowerCase(),
    });
  }, 180_000);

  it("the second chain has its own nonces; a transaction that reverts on chain is reverted", async () => {
    const firstB = await chainB.getTransactionCount({ address: wallet, blockTag: "pending" });
    const a = await sendOne(transfer(CHAIN_B, 5n));
    expect(a).toMatchObject({ chain_id: CHAIN_B, nonce: firstB });
    // A gas limit given, so the RPC's estimate (which would refuse it) is not asked: mined, and reverted.
    const b = await sendOne({ chainId: CHAIN_B, to: REVERTER, data: "0x", gas: "50000" });
    expect(b).toMatchObject({ chain_id: CHAIN_B, nonce: firstB + 1 });
    expect(await waitForTransaction(client, a.id, { timeoutMs: 20_000 })).toMatchObject({
      status: "confirmed",
      chain_id: CHAIN_B,
    });
    const reverted = await waitForTransaction(client, b.id, { timeoutMs: 20_000 });
    expect(reverted).toMatchObject({ status: "reverted", chain_id: CHAIN_B });
    expect(Number(reverted.gas_used)).toBeGreaterThan(0);
    expect(await eventsFor(b.id, "transaction.reverted")).toMatchObject([{ id: b.id, status: "reverted" }]);
    const page = await client.listTransactions({ chain_id: CHAIN_B, status: "reverted" });
    expect(page.transactions.map((t) => t.id)).toEqual([b.id]);
  }, 60_000);

  it("a transaction the pool lost while it is still valid is sent again by the follower, and mined", async () => {
    await testB.setAutomine(false);
    try {
      const sent = await sendOne(transfer(CHAIN_B));
      await testB.dropTransaction({ hash: sent.hash });
      expect(await chainB.getTransaction({ hash: sent.hash }).catch(() => null)).toBeNull();
      // Within a follow or two it is back in the pool, the same bytes.
      await expect
        .poll(() => chainB.getTransaction({ hash: sent.hash }).catch(() => null), { timeout: 10_000, interval: 100 })
        .toMatchObject({ hash: sent.hash, nonce: sent.nonce });
      await testB.mine({ blocks: 1 });
      expect(await waitForTransaction(client, sent.id, { timeoutMs: 20_000, pollMs: 200 })).toMatchObject({
        status: "confirmed",
      });
    } finally {
      await testB.setAutomine(true);
    }
  }, 60_000);

  it("a transaction dropped from the pool and no longer payable is dropped, and its nonce is the next send's", async () => {
    await testB.setAutomine(false);
    try {
      const sent = await sendOne(transfer(CHAIN_B));
      expect(await chainB.getTransaction({ hash: sent.hash })).toMatchObject({ nonce: sent.nonce });
      // Dropped, and no longer payable: the follower's sending it again is refused until it is dropped.
      await testB.setBalance({ address: wallet, value: 0n });
      await testB.dropTransaction({ hash: sent.hash });
      const dropped = await waitForTransaction(client, sent.id, { timeoutMs: 20_000, pollMs: 200 });
      expect(dropped).toMatchObject({ status: "dropped", block_number: null });
      expect(dropped.last_error).toMatch(/refused it sent again: .*; its nonce is free again/);
      expect(await eventsFor(sent.id, "transaction.dropped")).toMatchObject([{ id: sent.id, status: "dropped" }]);
      await testB.setBalance({ address: wallet, value: parseEther("10") });
      await testB.setAutomine(true);
      const next = await sendOne(transfer(CHAIN_B));
      expect(next.nonce).toBe(sent.nonce);
      expect(await waitForTransaction(client, next.id, { timeoutMs: 20_000 })).toMatchObject({ status: "confirmed" });
    } finally {
      await testB.setAutomine(true);
    }
  }, 60_000);

  it("a transaction replaced from outside is replaced once the other is mined", async () => {
    await testB.setAutomine(false);
    try {
      const sent = await sendOne(transfer(CHAIN_B));
      const pooled = await chainB.getTransaction({ hash: sent.hash });
      // The wallet's own signature of the same nonce with twice the fees, sent by the test, not the service.
      const { outcomes } = await run([
        {
          sign: true,
          chainId: CHAIN_B,
          to: RECIPIENT,
          value: "7",
          nonce: sent.nonce,
          gas: "21000",
          maxFeePerGas: ((pooled.maxFeePerGas ?? 0n) * 2n).toString(),
          maxPriorityFeePerGas: ((pooled.maxPriorityFeePerGas ?? 0n) * 2n + 1n).toString(),
        },
      ]);
      const signed = (outcomes[0] as { signed?: Hex }).signed;
      expect(signed, JSON.stringify(outcomes)).toMatch(/^0x/);
      const other = await chainB.sendRawTransaction({ serializedTransaction: signed as Hex });
      await testB.mine({ blocks: 1 });
      expect((await chainB.getTransactionReceipt({ hash: other })).status).toBe("success");
      const replaced = await waitForTransaction(client, sent.id, { timeoutMs: 20_000, pollMs: 200 });
      expect(replaced).toMatchObject({ status: "replaced", block_number: null });
      expect(await eventsFor(sent.id, "transaction.replaced")).toMatchObject([{ id: sent.id, status: "replaced" }]);
    } finally {
      await testB.setAutomine(true);
    }
  }, 60_000);

  it("a speed-up sends the pending transaction again with its nonce and higher fees; the first ends replaced by it", async () => {
    await testB.setAutomine(false);
    try {
      const slow = await sendOne(transfer(CHAIN_B, 9n));
      const before = await chainB.getTransaction({ hash: slow.hash });
      const fast = await sendOne({ speedUp: slow.id });
      expect(fast).toMatchObject({ chain_id: CHAIN_B, nonce: slow.nonce, status: "pending" });
      expect(fast.id).not.toBe(slow.id);
      const after = await chainB.getTransaction({ hash: fast.hash });
      expect(after).toMatchObject({ to: RECIPIENT, value: 9n, nonce: slow.nonce, gas: before.gas });
      // At least an eighth more in both fees.
      expect((after.maxFeePerGas ?? 0n) * 8n).toBeGreaterThanOrEqual((before.maxFeePerGas ?? 0n) * 9n);
      expect((after.maxPriorityFeePerGas ?? 0n) * 8n).toBeGreaterThanOrEqual((before.maxPriorityFeePerGas ?? 0n) * 9n);
      // Sped up again by the first's id: it bids over the newest pending one of the nonce, not the first.
      const faster = await sendOne({ speedUp: slow.id });
      expect(faster).toMatchObject({ nonce: slow.nonce, status: "pending" });
      const third = await chainB.getTransaction({ hash: faster.hash });
      expect((third.maxFeePerGas ?? 0n) * 8n).toBeGreaterThanOrEqual((after.maxFeePerGas ?? 0n) * 9n);
      await testB.mine({ blocks: 1 });
      expect(await waitForTransaction(client, faster.id, { timeoutMs: 20_000, pollMs: 200 })).toMatchObject({
        status: "confirmed",
        replaces: slow.id,
      });
      for (const loser of [slow, fast])
        expect(await waitForTransaction(client, loser.id, { timeoutMs: 20_000, pollMs: 200 })).toMatchObject({
          status: "replaced",
          replaced_by: faster.id,
        });
      expect(await eventsFor(slow.id, "transaction.replaced")).toMatchObject([{ replaced_by: faster.id }]);
      // Only a pending transaction can be sped up.
      const { outcomes } = await run([{ speedUp: faster.id }]);
      expect(outcomes[0]).toMatchObject({
        ok: false,
        code: "conflict",
        message: expect.stringMatching(/is confirmed/),
      });
    } finally {
      await testB.setAutomine(true);
    }
  }, 60_000);

  it("the RPC stopped with a transaction pending: a stated state, a wait that ends, and confirmed once it is back", async () => {
    const proxy = stack.testStack.chainProxy;
    if (!proxy) throw new Error("the stack has no chain proxy");
    await testA.setAutomine(false);
    try {
      const sent = await sendOne(transfer(31337));
      await proxy.stop();
      // The follower cannot read the chain: the record stays pending and says why.
      let seen: Transaction | undefined;
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
        seen = (await client.listTransactions({ id: sent.id })).transactions[0];
        if (seen?.last_error) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen).toMatchObject({ status: "pending" });
      expect(seen?.last_error).toMatch(/RPC did not answer/);
      expect(seen?.last_error).not.toMatch(/127\.0\.0\.1/);
      const waited = await waitForTransaction(client, sent.id, { timeoutMs: 1_500, pollMs: 200 }).catch((e) => e);
      expect(waited).toBeInstanceOf(SigilTransactionTimeoutError);
      expect((waited as SigilTransactionTimeoutError).transaction).toMatchObject({ id: sent.id, status: "pending" });
      // A send meanwhile is told at once, not left hanging.
      const started = Date.now();
      const { outcomes } = await run([transfer(31337)]);
      expect(outcomes[0]).toMatchObject({ ok: false, code: "chain_unavailable" });
      expect(Date.now() - started).toBeLessThan(15_000);
      await proxy.start();
      await testA.mine({ blocks: 1 });
      const confirmed = await waitForTransaction(client, sent.id, { timeoutMs: 20_000, pollMs: 200 });
      expect(confirmed).toMatchObject({ status: "confirmed", last_error: null });
    } finally {
      if (!proxy.running) await proxy.start();
      await testA.setAutomine(true);
    }
  }, 90_000);
});
