// `npm test`: the formatter and linter, the type checks and every vitest project, in lanes that run side by side. Vitest runs
// a project whose files must take turns (a shared chain, one stack) apart from the others, never
// beside them, and one vitest process uses its pool for one group of projects at a time; so the
// suites that wait on processes (the stacks, the chain, the end-to-end runs) would each add their
// minutes. Here the lanes start together, each one or two vitest runs (or the type checks) one after
// another: CPU-bound files of one lane overlap the waits of another. Each vitest run writes its JSON
// report; they are merged into .sigil/test-results.json (what .ci/run counts), and the run ends with
// the totals, the slowest files and each lane's time and CPU.
//
//   node test/run.ts            every lane (the README's `npm test`)
//   node test/run.ts --quick    the lint, the type checks, unit and workerd suites only (`npm run test:quick`)
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs, stripVTControlCharacters } from "node:util";

const root = join(import.meta.dirname, "..");
const reports = join(root, ".sigil", "lanes");

/** One command of a lane: a vitest run of some projects (with its JSON report), or a type check. */
type Step = { command: string[]; report?: string };
/** A lane: steps run one after another; the lanes run side by side. */
type Lane = { name: string; steps: Step[] };

const vitest = (name: string, projects: string[], options: string[] = []): Step => ({
  command: [
    process.execPath,
    join(root, "node_modules/vitest/vitest.mjs"),
    "run",
    ...projects.flatMap((p) => ["--project", p]),
    ...options,
    `--outputFile.json=${join(reports, `${name}.json`)}`,
  ],
  report: join(reports, `${name}.json`),
});
const tsc = (project: string): Step => ({
  command: [process.execPath, join(root, "node_modules/typescript/bin/tsc"), "-p", project],
});
/** Biome: the formatter and the linter (biome.jsonc); a file it would format or a lint finding fails the run. */
const lint: Step = {
  command: [
    process.execPath,
    join(root, "node_modules/@biomejs/biome/bin/biome"),
    "ci",
    "--error-on-warnings",
    "--colors=off",
    ".",
  ],
};
/** The edge's Env as `wrangler types` generates it from wrangler.toml (npm run types:edge): a stale one fails the run. */
const edgeTypes: Step = {
  command: [
    process.execPath,
    join(root, "node_modules/wrangler/bin/wrangler.js"),
    "types",
    "workers/worker-configuration.d.ts",
    "--include-runtime=false",
    "--strict-vars=false",
    "--check",
  ],
};
const types = [lint, edgeTypes, tsc("."), tsc("workers"), tsc("dashboard")];

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });

/**
 * The lanes, all at once: the machine's two cores are the limit (the run prints each lane's CPU), so
 * no lane waits for another, and there are few of them, since each one more is another stack's worth of
 * memory and scheduling on the same two cores. The long runs (the soak's variant, which loads the
 * machine for 75 s, then the 10 000-run leak test, each on a stack of its own), then the contract's
 * suite on its chain; the end-to-end files on their shared stack; the enclave's and the edge's suites
 * on their one stack, then the browser's on its local stack; the unit and workerd suites; the lint and
 * type checks, then the end-to-end files whose stacks are their subject (they start their own and wait
 * on them more than they compute, so they run beside the shared stack's files, not after them).
 */
const LANES: Lane[] = values.quick
  ? [
      // Vitest gives each project one worker on two cores: the two suites as two processes use both.
      { name: "types", steps: types },
      { name: "unit", steps: [vitest("unit", ["unit"])] },
      { name: "workers", steps: [vitest("workers", ["workers"])] },
    ]
  : [
      { name: "long", steps: [vitest("long", ["long"]), vitest("contract", ["contract"])] },
      { name: "e2e", steps: [vitest("e2e", ["e2e"])] },
      {
        name: "stack",
        steps: [vitest("stack", ["enclave", "workers-stack", "workers-billing"]), vitest("browser", ["browser"])],
      },
      // Vitest gives a run one worker on two cores (cores - 1); the unit files wait on the processes,
      // workers and timers they start more than they compute, so two of them at once.
      { name: "unit", steps: [vitest("unit", ["unit", "workers"], ["--maxWorkers=2"])] },
      { name: "types+lifecycle", steps: [...types, vitest("lifecycle", ["e2e-lifecycle"])] },
    ];

type Outcome = { lane: Lane; code: number; ms: number; cpuSeconds?: number };

/**
 * GNU time (Debian's `time`), when the machine has it, measures each step's CPU: user and system
 * seconds of the step and every process it waited for (its workers, stacks, enclaves, CLI runs), the
 * figure that decides how long the run takes on two cores.
 */
const GNU_TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;

/** Runs one command, each line of its output prefixed with the lane's name; resolves to its exit code and CPU seconds. */
function runStep(lane: Lane, step: Step, index: number): Promise<{ code: number; cpuSeconds?: number }> {
  return new Promise((resolve) => {
    const cpuFile = join(reports, `${lane.name}-${index}.cpu`);
    const [cmd, ...args] = (
      GNU_TIME ? [GNU_TIME, "-q", "-f", "%U %S", "-o", cpuFile, ...step.command] : step.command
    ) as [string, ...string[]];
    // The project's Node first on PATH, as npm puts it: the suites start `node` processes of their own.
    // And Node's compile cache, so the hundreds of `node` processes the suites start (the CLI, stacks,
    // enclaves) parse and strip each module once per run, not once per process.
    const env = {
      ...process.env,
      PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(root, ".sigil", "compile-cache"),
    };
    const child = spawn(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    const prefix = `[${lane.name}] `;
    const relay = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
      let rest = "";
      stream.on("data", (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) out.write(`${prefix + line}\n`);
      });
      stream.on("end", () => {
        if (rest) out.write(`${prefix + rest}\n`);
      });
    };
    relay(child.stdout, process.stdout);
    relay(child.stderr, process.stderr);
    child.on("close", (code) => {
      let cpuSeconds: number | undefined;
      try {
        const [user, system] = readFileSync(cpuFile, "utf8").trim().split(/\s+/).map(Number);
        if (Number.isFinite(user) && Number.isFinite(system)) cpuSeconds = (user as number) + (system as number);
      } catch {
        // No GNU time, or it could not write: the lane's CPU is not shown.
      }
      resolve({ code: code ?? 1, cpuSeconds });
    });
  });
}

/** Runs a lane's steps in order; a failed step fails the lane, and the steps after it still run (their tests count). */
async function runLane(lane: Lane): Promise<Outcome> {
  const started = performance.now();
  let code = 0;
  let cpuSeconds: number | undefined = 0;
  for (const [index, step] of lane.steps.entries()) {
    const done = await runStep(lane, step, index);
    code = done.code || code;
    cpuSeconds = cpuSeconds === undefined || done.cpuSeconds === undefined ? undefined : cpuSeconds + done.cpuSeconds;
  }
  return { lane, code, ms: performance.now() - started, cpuSeconds };
}

type JsonReport = {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numTotalTests: number;
  testResults: Array<{
    name: string;
    startTime: number;
    endTime: number;
    status: string;
    message?: string;
    assertionResults: Array<{ fullName?: string; title?: string; status: string; failureMessages?: string[] }>;
  }>;
};

rmSync(reports, { recursive: true, force: true });
mkdirSync(reports, { recursive: true });
const started = performance.now();
const outcomes = await Promise.all(LANES.map(runLane));

const merged: JsonReport = {
  numPassedTests: 0,
  numFailedTests: 0,
  numPendingTests: 0,
  numTodoTests: 0,
  numTotalTests: 0,
  testResults: [],
};
let missing = 0;
for (const step of outcomes.flatMap((o) => o.lane.steps)) {
  if (!step.report) continue;
  let report: JsonReport;
  try {
    report = JSON.parse(readFileSync(step.report, "utf8")) as JsonReport;
  } catch {
    // A step that ended before its report (a suite that failed to load, a crash) fails the run below.
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
const slowest = [...merged.testResults]
  .sort((a, b) => b.endTime - b.startTime - (a.endTime - a.startTime))
  .slice(0, 15);
console.log("\nslowest files:");
for (const f of slowest)
  console.log(`  ${seconds(f.endTime - f.startTime).padStart(6)}  ${f.name.replace(`${root}/`, "")}`);
console.log("lanes:");
for (const o of outcomes) {
  const cpu = o.cpuSeconds === undefined ? "" : `  CPU ${seconds(o.cpuSeconds * 1000).padStart(6)}`;
  console.log(
    `  ${o.lane.name.padEnd(15)} ${seconds(o.ms).padStart(6)}${cpu}  ${o.code === 0 ? "ok" : `failed (exit ${o.code})`}`,
  );
}
// What failed, last, where a CI log cut to its head and tail still shows it: each failed test (or a
// file that failed without one, such as a suite that did not load) with its message's first lines.
const failures = merged.testResults.flatMap((f) => {
  const file = f.name.replace(`${root}/`, "");
  const tests = f.assertionResults
    .filter((t) => t.status === "failed")
    .map((t) => ({ file, name: t.fullName ?? t.title ?? "", message: t.failureMessages?.[0] ?? "" }));
  return tests.length > 0 || f.status !== "failed" ? tests : [{ file, name: "(the file)", message: f.message ?? "" }];
});
if (failures.length > 0) {
  console.log(`failed (${failures.length}):`);
  for (const f of failures.slice(0, 10)) {
    console.log(`  ${f.file} > ${f.name}`);
    const lines = stripVTControlCharacters(f.message)
      .split("\n")
      .filter((l) => l.trim() !== "" && !/^\s*at .*node_modules/.test(l));
    for (const line of lines.slice(0, 4)) console.log(`      ${line.trim().slice(0, 200)}`);
  }
  if (failures.length > 10) console.log(`  … and ${failures.length - 10} more (.sigil/test-results.json)`);
}
const cpuTotal = outcomes.every((o) => o.cpuSeconds !== undefined)
  ? outcomes.reduce((sum, o) => sum + (o.cpuSeconds ?? 0), 0)
  : undefined;
if (cpuTotal !== undefined)
  console.log(
    `  CPU in all: ${seconds(cpuTotal * 1000)} (${(cpuTotal / ((performance.now() - started) / 1000)).toFixed(2)} cores busy on average)`,
  );
console.log(
  `tests: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed${merged.numPendingTests + merged.numTodoTests ? `, ${merged.numPendingTests + merged.numTodoTests} skipped` : ""}, in ${seconds(performance.now() - started)}`,
);
process.exit(outcomes.every((o) => o.code === 0) && missing === 0 ? 0 : 1);
