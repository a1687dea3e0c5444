// The crash test of budgets (issue 30's acceptance), short form; `npm run soak:budgets` is the long
// one (test/soak/budgets.ts), both on test/harness/budgetCrash.ts. Two enclave instances behind the
// edge (wrangler dev, billing on), a wallet whose guardrail's budget allows 50 transfers of 0.01 ETH
// a day, 200 runs at once — each signs one transfer at its own nonce, through the SDK, which
// retries every request under its Idempotency-Key — and one enclave killed with SIGKILL while they
// are in flight, then started again on its port. Afterwards exactly 50 signatures exist: 50 signed
// transactions among the answers, 50 digests in the receipts (the transactions' signing hashes),
// 50 in the wallet's Budgets object, 50 transfers mined when all are broadcast, and the recipient
// holds 0.5 ETH — not a wei more.
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  BUDGET_NAME,
  countCrash,
  driveCrashRuns,
  setUpBudgetedWallet,
  startCrashStack,
  summaryLine,
  type BudgetedWallet,
  type CrashStack,
  writeCrashLogs,
} from "../harness/budgetCrash.ts";

const RUNS = 200;
const CAP_TRANSFERS = 50;
const ENCLAVES = 2;

let stack: CrashStack;
let setup: BudgetedWallet;

beforeAll(async () => {
  stack = await startCrashStack({ enclaves: ENCLAVES });
  // A run holds its timeout's seconds (60 cents) while in flight: 200 at once hold $120.
  setup = await setUpBudgetedWallet(stack.origin, {
    capTransfers: CAP_TRANSFERS,
    topUpCents: 20_000,
    enclaves: ENCLAVES,
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

it("200 concurrent runs over two enclaves, one killed mid-way, every request retried: exactly 50 signatures, $0 over the cap", async () => {
  const run = await driveCrashRuns(stack, setup, { runs: RUNS, concurrency: RUNS, killAfterAnswers: [20] });
  const count = await countCrash(stack, setup, run);
  console.log(summaryLine(count, ENCLAVES));
  if (!count.exact) writeCrashLogs(join(import.meta.dirname, "../../.sigil/budget-crash"), stack, run);
  const failed = run.outcomes.filter((o) => o.kind === "failed");
  expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);

  // The kill came while runs were in flight, and the SDK retried what it interrupted.
  expect(count.kills).toHaveLength(1);
  expect(count.kills[0]!.inFlight).toBeGreaterThan(0);
  expect(count.retries).toBeGreaterThan(0);

  // Every run ended: its transaction, or a guardrail's refusal.
  expect(count.runs).toBe(RUNS);
  expect(count.signed + count.refused).toBe(RUNS);

  // (a) the answers, (b) the receipts and the wallet's Budgets object, (c) the chain: each exactly the
  // cap (soft: a failure shows every count).
  expect.soft(count.signed).toBe(CAP_TRANSFERS);
  expect.soft(count.signedTxs).toBe(CAP_TRANSFERS);
  expect.soft(count.receiptDigests).toBe(CAP_TRANSFERS);
  expect.soft(count.digestsMatch).toBe(true);
  expect.soft(count.store).toEqual({
    usedSignatures: CAP_TRANSFERS,
    usedValueWei: setup.capWei.toString(),
    refusedNext: true,
  });
  expect.soft(count.chain).toEqual({ mined: CAP_TRANSFERS, recipientWei: setup.capWei.toString(), overCapWei: "0" });

  // Every refusal was the budget's: none because the store could not be reached (rule `budgets`),
  // which refuses a signature the budget had room for and may leave it counted all the same.
  expect(count.otherRefusals).toEqual([]);
  for (const o of run.outcomes) if (o.kind === "refused") expect(o.rule).toBe(`budgets.${BUDGET_NAME}`);
  expect(count.exact).toBe(true);
}, 150_000);
