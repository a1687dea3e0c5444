// Issue 34's acceptance for anchoring: an anchored root is found on the local chain for every receipt
// of a 1,000-run burst. Two enclave instances behind the edge (test/harness/budgetCrash.ts's stack,
// rate limits and admission out of the way), each anchoring its own receipts every 2 s into one
// ReceiptAnchor under its own receipt key; the runs sent 32 at a time through the SDK (each receipt
// verified on the way, its default); then each receipt's anchor checked with verifyAnchored against
// the contract on anvil. Prints the epochs, heads and the anchor transactions' gas.
import { createPublicClient, http, type PublicClient } from "viem";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createSigilClient,
  topUp,
  verifyAnchored,
  type AnchoredReceipt,
  type SigilClient,
} from "../../sdk/src/index.ts";
import type { RunReceipt } from "../../shared/receipt.ts";
import { startCrashStack, type CrashStack } from "../harness/budgetCrash.ts";
import { anchorTransaction } from "../harness/anchors.ts";
import { pool } from "../harness/pool.ts";

const RUNS = 1_000;
const CONCURRENCY = 32;
const CODE = "async function main({ i }) { return i * 2 }";

let stack: CrashStack;
let client: SigilClient;
let chain: PublicClient;

beforeAll(async () => {
  stack = await startCrashStack({ enclaves: 2, anchorReceiptsEveryS: 2 });
  const anon = createSigilClient({ baseUrl: stack.origin });
  client = anon.with({ apiKey: (await anon.newAccount({ account_name: "anchored burst" })).api_key });
  // A run holds its timeout's seconds while in flight: room for 32 at once, and a cent each.
  await topUp(client, { amountCents: 5_000 });
  const cid = await client.getSigilActionIpfsId(CODE);
  await client.addGroup({
    group_name: "burst",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: [cid],
  });
  chain = createPublicClient({ transport: http(stack.rpcUrl) });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

it(`an anchored root is on the local chain for every receipt of a ${RUNS}-run burst over two instances`, async () => {
  const started = Date.now();
  const answers = await pool(RUNS, CONCURRENCY, async (i) => {
    const r = await client.sigilAction({ code: CODE, js_params: { i } });
    expect(r.response).toBe(i * 2);
    return r as unknown as { receipt: RunReceipt };
  });
  const ranMs = Date.now() - started;
  const contract = stack.testStack.receiptAnchor?.toLowerCase();
  for (const { receipt } of answers)
    expect(receipt.anchor).toEqual({ chain_id: 31337, contract, epoch: expect.any(Number) });
  expect(new Set(answers.map((a) => a.receipt.instance_id)).size).toBe(2);

  const anchored: AnchoredReceipt[] = await pool(RUNS, 16, (i) =>
    verifyAnchored(client, answers[i] as { receipt: RunReceipt }, { publicClient: chain, waitMs: 60_000 }),
  );
  // Two receipt keys (one per instance), each with its epochs; each epoch one transaction.
  const epochs = new Map<string, AnchoredReceipt>();
  /** A receipt of each epoch, to ask its instance for the epoch's transaction. */
  const receiptOf = new Map<string, RunReceipt>();
  for (const [i, a] of anchored.entries()) {
    epochs.set(`${a.signer}:${a.epoch}`, a);
    receiptOf.set(`${a.signer}:${a.epoch}`, (answers[i] as { receipt: RunReceipt }).receipt);
  }
  expect(new Set(anchored.map((a) => a.signer)).size).toBe(2);
  const heads = new Set(anchored.map((a) => `${a.signer}:${a.epoch}:${a.proof.head}`));
  for (const [key, a] of epochs)
    expect(a.heads).toBeGreaterThanOrEqual([...heads].filter((h) => h.startsWith(`${key}:`)).length);
  for (const [i, a] of anchored.entries())
    expect(Date.parse(answers[i]?.receipt.ended_at ?? "")).toBeLessThan((a.anchoredAt + 1) * 1000);

  const transactions = new Set(
    await Promise.all([...epochs].map(([key, a]) => anchorTransaction(client, receiptOf.get(key) as RunReceipt, a))),
  );
  expect(transactions.size).toBe(epochs.size);
  const gas = await Promise.all(
    [...transactions].map(async (hash) => (await chain.getTransactionReceipt({ hash })).gasUsed),
  );
  console.log(
    `${RUNS} runs in ${ranMs} ms over 2 instances: ${heads.size} batch heads in ${epochs.size} epochs, ` +
      `each anchored by one transaction; gas used: ${gas.map(String).join(", ")}`,
  );
  expect(gas.every((g) => g < 120_000n)).toBe(true);
}, 300_000);
