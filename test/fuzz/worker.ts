// The fuzz worker thread (runner.ts, runInWorker): runs the cases it is given, telling the thread
// that started it each case's seed before it runs (a case that never returns is found that way), and
// posts the report.
import { parentPort, workerData } from "node:worker_threads";
import { runCases, type FuzzOptions } from "./runner.ts";

const report = await runCases(workerData as FuzzOptions, (seed) => parentPort?.postMessage({ type: "case", seed }));
parentPort?.postMessage({ type: "report", report });
