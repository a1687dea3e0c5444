// `npm run soak:budgets`: the crash test of budgets (issue 30's acceptance) in the soak's style, at
// length; its short form is test/e2e/budgetCrash.test.ts, both on test/harness/budgetCrash.ts. It
// starts its own stack (anvil with AccountConfig, `--enclaves` enclave instances of one root key, the
// Stripe emulator, the edge under wrangler dev with billing on, listing every enclave), makes an
// account, a wallet whose guardrail's budget allows `--cap-transfers` transfers of 0.01 ETH a day and
// an action that signs one transfer at the nonce it is given, then sends `--runs` runs (nonce 0, 1, …),
// `--concurrency` at a time, through the SDK, which retries every request under its Idempotency-Key.
// Meanwhile it kills an enclave `--kills` times (SIGKILL of its process group; the enclaves in turn),
// spread over the answers while the budget fills and just after, each started again on its port
// before the next. Afterwards it counts the signatures from the answers, the receipts, the wallet's
// Budgets object and the chain (every signed transfer broadcast, nonce by nonce), prints progress
// lines, the summary and, last, one JSON object. Exit status 1 when a count is not the cap exactly
// (or a run failed, or one was refused for another reason than the budget).
//
//   node test/soak/budgets.ts [--runs 2000] [--concurrency 200] [--kills 3] [--cap-transfers 500]
//     [--enclaves 2] [--logs .sigil/soak-budgets]
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  countCrash,
  driveCrashRuns,
  setUpBudgetedWallet,
  startCrashStack,
  summaryLine,
  writeCrashLogs,
  type CrashCount,
} from "../harness/budgetCrash.ts";

export type BudgetSoakOptions = {
  runs: number;
  concurrency: number;
  kills: number;
  capTransfers: number;
  enclaves: number;
  log: (line: string) => void;
  /** Where to write what the enclaves and the edge printed, and every run's outcome. */
  logsDir?: string;
};

/**
 * The answers after which the kills come: spread evenly over the runs that fill the budget and as
 * many after (when the refusals begin), or over all the runs when there are fewer.
 */
export function killPoints(runs: number, capTransfers: number, kills: number): number[] {
  const span = Math.min(runs, 2 * capTransfers);
  return Array.from({ length: kills }, (_, k) => Math.max(1, Math.round((span * (k + 1)) / (kills + 1))));
}

export async function runBudgetSoak(options: BudgetSoakOptions): Promise<CrashCount> {
  const { log } = options;
  log(`starting the stack (anvil, ${options.enclaves} enclaves, Stripe emulator, edge under wrangler dev)…`);
  const stack = await startCrashStack({ enclaves: options.enclaves });
  let run: Awaited<ReturnType<typeof driveCrashRuns>> | undefined;
  try {
    // A run holds its timeout's seconds (60 cents by default) while in flight.
    const topUpCents = options.concurrency * 60 + 1_000;
    const setup = await setUpBudgetedWallet(stack.origin, {
      capTransfers: options.capTransfers,
      topUpCents,
      enclaves: options.enclaves,
    });
    const points = killPoints(options.runs, options.capTransfers, options.kills);
    log(
      `wallet ${setup.wallet}, budget ${options.capTransfers} transfers; ${options.runs} runs, ${options.concurrency} at a time; kills after ${points.join(", ") || "none"} answers`,
    );
    run = await driveCrashRuns(stack, setup, {
      runs: options.runs,
      concurrency: options.concurrency,
      killAfterAnswers: points,
      progressEvery: Math.max(1, Math.round(options.runs / 20)),
      log,
    });
    log("counting: the answers, the receipts, the Budgets object, then every signed transfer broadcast…");
    return await countCrash(stack, setup, run);
  } finally {
    if (options.logsDir) writeCrashLogs(options.logsDir, stack, run);
    await stack.stop();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      runs: { type: "string", default: "2000" },
      concurrency: { type: "string", default: "200" },
      kills: { type: "string", default: "3" },
      "cap-transfers": { type: "string", default: "500" },
      enclaves: { type: "string", default: "2" },
      logs: { type: "string", default: join(import.meta.dirname, "../../.sigil/soak-budgets") },
    },
  });
  const int = (name: keyof typeof values, min: number) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) {
      console.error(`soak:budgets: --${name} must be an integer ≥ ${min}`);
      process.exit(2);
    }
    return n;
  };
  const options = {
    runs: int("runs", 1),
    concurrency: int("concurrency", 1),
    kills: int("kills", 0),
    capTransfers: int("cap-transfers", 1),
    enclaves: int("enclaves", 1),
  };
  const started = Date.now();
  const count = await runBudgetSoak({
    ...options,
    logsDir: values.logs,
    log: (line) => console.log(`[soak:budgets ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`),
  });
  const failed = count.failed + count.otherRefusals.length;
  console.log(summaryLine(count, options.enclaves));
  if (count.otherRefusals.length > 0)
    console.log(`refused for another reason: ${count.otherRefusals.slice(0, 5).join("; ")}`);
  console.log(JSON.stringify({ ok: count.exact, options, ...count, failedOrOther: failed }));
  console.error(`soak:budgets: what the enclaves and the edge printed, and every run's outcome, are in ${values.logs}`);
  process.exit(count.exact ? 0 : 1);
}
