// `npm run fuzz:sandbox -- --minutes N`: the sandbox's fuzzing (issue 26) for as long as asked, in
// one worker thread per core, each taking every W-th seed from `--seed` on (a random start unless
// given). Every case is a generated script (grammar.ts) run on a prepared sandbox instance and
// checked from outside (runner.ts): the script's own report, the whole memory against its image, the
// run's canary in no QuickJS memory of the process, the next run's world unchanged. It prints cases
// per second as it goes, then every finding with the one line that reproduces it, and exits 1 if any
// finding broke isolation or memory safety.
//
//   --minutes N   how long (default 1)      --cases N   at most this many cases (default: no limit)
//   --seed S      the first seed            --workers W worker threads (default: the cores)
//   --ops N       operations per script (default 12)
//   --print       print each case's script before it runs (with --cases 1 --workers 1: a reproduction)
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { generateScript } from "./grammar.ts";
import { isFailure, reproduction, runInWorker, type FuzzReport } from "./runner.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "1" },
    cases: { type: "string" },
    seed: { type: "string" },
    workers: { type: "string" },
    ops: { type: "string", default: "12" },
    print: { type: "boolean", default: false },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const cases = values.cases === undefined ? Number.MAX_SAFE_INTEGER : Number(values.cases);
const workers = Math.max(1, Math.min(Number(values.workers ?? availableParallelism()), cases));
const ops = Number(values.ops);
const budgetMs = Number(values.minutes) * 60_000;
for (const [name, v] of Object.entries({ minutes: budgetMs, seed, cases, workers, ops })) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a non-negative number`);
}

if (values.print) {
  for (let i = 0; i < Math.min(cases, 20); i++) console.log(generateScript(seed + i, ops).code, "\n");
}
console.log(
  `fuzz:sandbox: ${workers} worker(s) from seed ${seed}, for ${values.minutes} min${values.cases ? ` or ${cases} cases` : ""}`,
);
const started = performance.now();
const done = new Array<number>(workers).fill(0);
const progress = setInterval(() => {
  const n = done.reduce((a, b) => a + b, 0);
  console.log(`  ${n} cases, ${((n / (performance.now() - started)) * 1000).toFixed(1)} cases/s`);
}, 10_000);
const perWorker = Math.ceil(cases / workers);
const reports: FuzzReport[] = await Promise.all(
  Array.from({ length: workers }, (_, k) =>
    runInWorker({ seed: seed + k, stride: workers, cases: perWorker, budgetMs, ops }, (n) => (done[k] = n)),
  ),
);
clearInterval(progress);
const total = reports.reduce((t, r) => ({
  cases: t.cases + r.cases,
  ms: Math.max(t.ms, r.ms),
  findings: [...t.findings, ...r.findings],
  refusedOps: t.refusedOps + r.refusedOps,
  endings: Object.fromEntries(
    [...new Set([...Object.keys(t.endings), ...Object.keys(r.endings)])].map((k) => [
      k,
      (t.endings[k] ?? 0) + (r.endings[k] ?? 0),
    ]),
  ),
}));
console.log(
  `fuzz:sandbox: ${total.cases} cases in ${(total.ms / 1000).toFixed(1)} s, ${((total.cases / total.ms) * 1000).toFixed(1)} cases/s; runs ${JSON.stringify(total.endings)}; ${total.refusedOps} operations refused by the engine`,
);
for (const f of total.findings)
  console.log(`  seed ${f.seed}: ${f.kind}: ${f.detail} — reproduce: ${reproduction(f.seed)}`);
const failures = total.findings.filter(isFailure);
console.log(
  failures.length === 0
    ? "fuzz:sandbox: no finding broke isolation"
    : `fuzz:sandbox: ${failures.length} finding(s) broke isolation or memory safety`,
);
process.exit(failures.length === 0 ? 0 : 1);
