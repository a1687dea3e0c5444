// The fuzz worker thread (runner.ts): runs the fuzz cases it is given, telling the thread that
// started it each case's seed before it runs (a case that never returns is found that way), and posts
// the report; or runs the engine's memory-safety probes it is given by name and posts their results.
import { parentPort, workerData } from "node:worker_threads";
import { runCases, runEngineCases, type FuzzOptions } from "./runner.ts";

const data = workerData as FuzzOptions | { engineCases: string[] };
if ("engineCases" in data) {
  parentPort?.postMessage({ type: "engine", results: await runEngineCases(data.engineCases) });
} else {
  const report = await runCases(data, (seed) => parentPort?.postMessage({ type: "case", seed }));
  parentPort?.postMessage({ type: "report", report });
}
