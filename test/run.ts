// `npm test`: the type checks and every vitest project, in lanes that run side by side. Vitest runs
// a project whose files must take turns (a shared chain, one stack) apart from the others, never
// beside them, and one vitest process uses its pool for one group of projects at a time; so the
// suites that wait on processes (the stacks, the chain, the end-to-end runs) would each add their
// minutes. Here each lane is a vitest process of its own, started together: CPU-bound files of one
// lane overlap the waits of another. Each lane writes its JSON report; they are merged into
// .sigil/test-results.json (what .ci/run counts), and the run ends with the totals, the slowest files
// and each lane's time.
//
//   node test/run.ts            every lane (the README's `npm test`)
//   node test/run.ts --quick    the type checks, unit and workerd suites only (`npm run test:quick`)
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const root = join(import.meta.dirname, "..");
const reports = join(root, ".sigil", "lanes");

type Lane = { name: string; command: string[]; report?: string };

const vitest = (name: string, projects: string[]): Lane => ({
  name,
  command: [process.execPath, join(root, "node_modules/vitest/vitest.mjs"), "run", ...projects.flatMap((p) => ["--project", p]), `--outputFile.json=${join(reports, `${name}.json`)}`],
  report: join(reports, `${name}.json`),
});
const tsc = (project: string): string[] => [process.execPath, join(root, "node_modules/typescript/bin/tsc"), "-p", project];

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });

/**
 * The lanes, longest first. The end-to-end suites are the longest (stacks started as a user starts
 * them); the soak's variant runs its 75 s of load in a lane of its own from the start.
 */
const LANES: Lane[] = values.quick
  ? [{ name: "types", command: ["sh", "-c", `${tsc(".").join(" ")} && ${tsc("workers").join(" ")} && ${tsc("dashboard").join(" ")}`] }, vitest("unit", ["unit", "workers"])]
  : [
      vitest("soak", ["soak"]),
      vitest("e2e", ["e2e", "e2e-lifecycle", "browser"]),
      vitest("stack", ["enclave", "workers-stack", "workers-billing"]),
      vitest("unit", ["unit", "workers", "contract"]),
      { name: "types", command: ["sh", "-c", `${tsc(".").join(" ")} && ${tsc("workers").join(" ")} && ${tsc("dashboard").join(" ")}`] },
    ];

type Outcome = { lane: Lane; code: number; ms: number };

function runLane(lane: Lane): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const [cmd, ...args] = lane.command as [string, ...string[]];
    // The project's Node first on PATH, as npm puts it: the suites start `node` processes of their own.
    const env = { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}` };
    const child = spawn(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    const prefix = `[${lane.name}] `;
    const relay = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
      let rest = "";
      stream.on("data", (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) out.write(prefix + line + "\n");
      });
      stream.on("end", () => {
        if (rest) out.write(prefix + rest + "\n");
      });
    };
    relay(child.stdout, process.stdout);
    relay(child.stderr, process.stderr);
    child.on("close", (code) => resolve({ lane, code: code ?? 1, ms: performance.now() - started }));
  });
}

type JsonReport = {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numTotalTests: number;
  testResults: Array<{ name: string; startTime: number; endTime: number; status: string; assertionResults: unknown[] }>;
};

rmSync(reports, { recursive: true, force: true });
mkdirSync(reports, { recursive: true });
const started = performance.now();
const outcomes = await Promise.all(LANES.map(runLane));

const merged: JsonReport = { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, numTotalTests: 0, testResults: [] };
let missing = 0;
for (const { lane } of outcomes) {
  if (!lane.report) continue;
  let report: JsonReport;
  try {
    report = JSON.parse(readFileSync(lane.report, "utf8")) as JsonReport;
  } catch {
    // A lane that ended before its report (a suite that failed to load, a crash) fails the run below.
    missing++;
    continue;
  }
  merged.numPassedTests += report.numPassedTests;
  merged.numFailedTests += report.numFailedTests;
  merged.numPendingTests += report.numPendingTests;
  merged.numTodoTests += report.numTodoTests;
  merged.numTotalTests += report.numTotalTests;
  merged.testResults.push(...report.testResults);
}
writeFileSync(join(root, ".sigil", "test-results.json"), JSON.stringify(merged));

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
const slowest = [...merged.testResults].sort((a, b) => b.endTime - b.startTime - (a.endTime - a.startTime)).slice(0, 15);
console.log("\nslowest files:");
for (const f of slowest) console.log(`  ${seconds(f.endTime - f.startTime).padStart(6)}  ${f.name.replace(`${root}/`, "")}`);
console.log("lanes:");
for (const o of outcomes) console.log(`  ${o.lane.name.padEnd(6)} ${seconds(o.ms).padStart(6)}  ${o.code === 0 ? "ok" : `failed (exit ${o.code})`}`);
console.log(`tests: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed${merged.numPendingTests + merged.numTodoTests ? `, ${merged.numPendingTests + merged.numTodoTests} skipped` : ""}, in ${seconds(performance.now() - started)}`);
process.exit(outcomes.every((o) => o.code === 0) && missing === 0 ? 0 : 1);
