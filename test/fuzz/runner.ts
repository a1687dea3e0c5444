// The sandbox's fuzzing harness (issue 26): generated scripts (grammar.ts) run one after another on
// a prepared sandbox instance, in a worker thread with the pool's native stack (pool.ts), each run
// followed by the checks from outside that isolation rests on:
// - the script's own report: no view past its buffer, no canary bytes in a buffer (grammar.ts);
// - the whole memory of the instance is the image again, every byte (image.ts, isPristine);
// - the residue oracle (test/harness/residue.ts) finds the run's canary in no QuickJS memory of
//   this process, in any form;
// - the next run sees a pristine world: a probe script's fingerprint of the globals, the built-ins'
//   properties and a few of their answers is the one it gave on a fresh instance.
// A run whose instance cannot be reused (a trap of the engine, the native stack exhausted, a host
// failure) is counted, and a trap is a finding: WebAssembly stopped the engine reading or writing
// outside its memory. `runCases` runs in the calling thread; `runInWorker` in a thread of its own.
import { Worker } from "node:worker_threads";
import { randomBytes } from "node:crypto";
import { readEnclaveConfig } from "../../enclave/config.ts";
import { createInstance, type SandboxInstance } from "../../enclave/sandbox/instance.ts";
import { prepareRuntime, ScriptRun, type PreparedRuntime, type RunOutcome } from "../../enclave/sandbox/runtime.ts";
import { scanResidue } from "../harness/residue.ts";
import { generateScript } from "./grammar.ts";

export type FuzzOptions = {
  /** The first case's seed; case i has seed `seed + i * stride`. */
  seed: number;
  /** The step between two cases' seeds (several workers each take every stride-th seed). */
  stride?: number;
  /** Cases to run, at most. */
  cases: number;
  /** Stop once this many milliseconds have passed (0: no limit). */
  budgetMs?: number;
  /** Operations per script. */
  ops?: number;
  /**
   * For the harness's own test: write no image back after runs, so every check from outside must
   * fail (a fuzz that cannot fail proves nothing).
   */
  breakReset?: boolean;
};

/**
 * What a case showed. A stall (one run held its thread for long in one built-in call, which polls no
 * interrupt) is not a failure of isolation — the pool's watchdog ends such runs from outside — and
 * is reported apart.
 */
export type Finding = {
  seed: number;
  kind: "violation" | "trap" | "not pristine" | "residue" | "world" | "stall";
  detail: string;
};

/** Whether a finding breaks isolation or memory safety (every kind but a stall). */
export const isFailure = (f: Finding): boolean => f.kind !== "stall";

export type FuzzReport = {
  cases: number;
  ms: number;
  findings: Finding[];
  /** How the runs ended: completed, failed in the script (its error code), or abandoned. */
  endings: Record<string, number>;
  /** Operations the scripts tried that threw (refused by the engine: a RangeError, a TypeError…). */
  refusedOps: number;
};

const limits = {
  ...readEnclaveConfig({
    SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
    SIGIL_RPC_URL: "http://127.0.0.1:1",
    SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
  }).limits,
  timeoutMs: 3_000,
};

/** The probe: what every run finds of its world, as one string. */
const PROBE = `async function main() {
  const names = (o) => Object.getOwnPropertyNames(o).sort().join(",");
  const out = [];
  for (const k of Object.getOwnPropertyNames(globalThis).sort()) {
    let v;
    try { v = globalThis[k] } catch (e) { v = "throws" }
    out.push(k + ":" + typeof v);
    if ((typeof v === "function" || (typeof v === "object" && v !== null)) && k !== "globalThis") {
      out.push(names(v));
      if (typeof v === "function" && v.prototype) out.push(names(v.prototype));
    }
  }
  const TA = Object.getPrototypeOf(Uint8Array);
  out.push(names(TA), names(TA.prototype), names(Object.prototype), names(Function.prototype));
  out.push(JSON.stringify([[3, 1, 2].sort(), "abc".replace(/b/, "x"), new Uint8Array(4).length, typeof SharedArrayBuffer, typeof Atomics,
    new ArrayBuffer(8, { maxByteLength: 16 }).maxByteLength, Array.from(new Uint16Array([1, 2])), JSON.parse('{"a":[1]}').a.length,
    String(new Error("e")), typeof Sigil.Actions.signMessage, Object.isFrozen(Sigil)]));
  return out.join("|");
}`;

const host = { callAsync: async () => null, callSync: () => null };
const request = (code: string, params: unknown, requestId: string) => ({
  code,
  cid: "QmSandboxFuzz",
  paramsJson: JSON.stringify(params),
  timeoutMs: limits.timeoutMs,
  requestId,
  correlationId: null,
});

async function runOne(
  prepared: PreparedRuntime,
  code: string,
  params: unknown,
  id: string,
): Promise<{ outcome: RunOutcome; reusable: boolean }> {
  const run = new ScriptRun(prepared, request(code, params, id), limits, host, { runId: 1 });
  const outcome = await run.start();
  return { outcome, reusable: run.instanceReusable };
}

async function freshRuntime(breakReset: boolean): Promise<PreparedRuntime> {
  const instance: SandboxInstance = await createInstance(limits);
  const prepared = await prepareRuntime(instance, limits);
  if (breakReset) instance.restore = () => {};
  return prepared;
}

/** The sandbox's default recycle threshold (SIGIL_SANDBOX_RECYCLE_MB). */
const RECYCLE_BYTES = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
}).sandboxRecycle.instanceGrowthBytes;

const TRAP =
  /memory access out of bounds|unreachable|RuntimeError|table index|null function|divide by zero|integer overflow|indirect call/i;

/** Runs the cases in this thread; `starting` is told each case's seed before it runs. */
export async function runCases(options: FuzzOptions, starting: (seed: number) => void = () => {}): Promise<FuzzReport> {
  const started = performance.now();
  const breakReset = options.breakReset ?? false;
  let prepared = await freshRuntime(breakReset);
  const world = (await runOne(prepared, PROBE, null, "probe")).outcome.responseJson;
  if (world === undefined) throw new Error("the probe failed on a fresh instance");
  const report: FuzzReport = { cases: 0, ms: 0, findings: [], endings: {}, refusedOps: 0 };
  const count = (ending: string) => (report.endings[ending] = (report.endings[ending] ?? 0) + 1);
  for (let i = 0; i < options.cases; i++) {
    if (options.budgetMs && performance.now() - started > options.budgetMs) break;
    const seed = options.seed + i * (options.stride ?? 1);
    starting(seed);
    const script = generateScript(seed, options.ops);
    const canary = `fuzz-canary-${randomBytes(12).toString("hex")}`;
    const { outcome, reusable } = await runOne(prepared, script.code, { canary }, `fuzz-${seed}`);
    report.cases++;
    const finding = (kind: Finding["kind"], detail: string) => report.findings.push({ seed, kind, detail });
    if (!reusable) {
      count("abandoned");
      if (outcome.hostFailure && TRAP.test(outcome.hostFailure)) finding("trap", outcome.hostFailure);
      // The instance is dropped as the worker drops it: its memory zeroed, a new one made.
      prepared.instance.wipe();
      prepared = await freshRuntime(breakReset);
      continue;
    }
    if (outcome.responseJson !== undefined) {
      count("completed");
      const answer = JSON.parse(outcome.responseJson) as { violations: string[]; errors: number };
      report.refusedOps += answer.errors;
      for (const v of answer.violations) finding("violation", v);
    } else {
      count(outcome.error?.code ?? "failed");
    }
    if (!prepared.instance.isPristine())
      finding("not pristine", "the instance's memory is not its image after the run");
    // The canary is text the script keeps as strings: 8-bit or UTF-16 in QuickJS, UTF-8 where C reads it.
    const residue = scanResidue("self", { canary }, ["utf8", "utf16"]);
    if (residue.hits.length > 0)
      finding(
        "residue",
        `${residue.hits.length} copies of the run's canary in memory after it (${[...new Set(residue.hits.map((h) => h.form))].join(", ")})`,
      );
    const probe = await runOne(prepared, PROBE, null, `probe-${seed}`);
    if (probe.outcome.responseJson !== world) finding("world", "the next run's world differs from a fresh instance's");
    // As the worker does: an instance a run made large is dropped rather than cleared after every run.
    if (prepared.instance.heapBytes() > prepared.instance.preparedBytes + RECYCLE_BYTES) {
      prepared.instance.wipe();
      prepared = await freshRuntime(breakReset);
    }
  }
  report.ms = performance.now() - started;
  return report;
}

export type EngineCaseResult = {
  id: string;
  /** The probe's verdict, or how its run ended without one (an error code, "ended": its instance dropped). */
  verdict: string;
  detail: string;
  /** What the checks from outside found after the run (none: it left nothing). */
  findings: Finding["kind"][];
};

/**
 * Runs the engine's memory-safety probes (engineCases.ts) in this thread, each followed by the same
 * checks from outside as a fuzz case.
 */
export async function runEngineCases(ids: readonly string[]): Promise<EngineCaseResult[]> {
  const { ENGINE_CASES, engineCaseScript } = await import("./engineCases.ts");
  let prepared = await freshRuntime(false);
  const world = (await runOne(prepared, PROBE, null, "probe")).outcome.responseJson;
  const results: EngineCaseResult[] = [];
  for (const probe of ENGINE_CASES.filter((c) => ids.includes(c.id))) {
    const canary = `engine-canary-${randomBytes(12).toString("hex")}`;
    const { outcome, reusable } = await runOne(prepared, engineCaseScript(probe), { canary }, probe.id);
    const findings: Finding["kind"][] = [];
    let verdict: string;
    let detail: string;
    if (outcome.responseJson !== undefined) {
      const answer = JSON.parse(outcome.responseJson) as { verdict?: string; detail?: string } | null;
      verdict = answer?.verdict ?? "no verdict";
      detail = answer?.detail ?? outcome.responseJson;
    } else {
      verdict = reusable ? (outcome.error?.code ?? "failed") : "ended";
      detail = outcome.hostFailure ?? outcome.error?.message ?? "";
    }
    if (!reusable) {
      if (outcome.hostFailure && TRAP.test(outcome.hostFailure)) findings.push("trap");
      prepared.instance.wipe();
      prepared = await freshRuntime(false);
    } else {
      if (!prepared.instance.isPristine()) findings.push("not pristine");
      if (scanResidue("self", { canary }, ["utf8", "utf16"]).hits.length > 0) findings.push("residue");
    }
    if ((await runOne(prepared, PROBE, null, `probe-${probe.id}`)).outcome.responseJson !== world)
      findings.push("world");
    results.push({ id: probe.id, verdict, detail: detail.slice(0, 300), findings });
  }
  return results;
}

/** Runs the engine's probes in a worker thread with the pool's native stack. */
export function runEngineCasesInWorker(ids: readonly string[]): Promise<EngineCaseResult[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./worker.ts", import.meta.url), {
      workerData: { engineCases: ids },
      resourceLimits: { stackSizeMb: 8, maxYoungGenerationSizeMb: 12 },
    });
    worker.on("message", (m: { type: string; results?: EngineCaseResult[] }) => {
      if (m.type !== "engine") return;
      resolve(m.results as EngineCaseResult[]);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

/** A run that holds its worker's thread this long is a stall: the worker is ended and the next case goes on in a new one. */
const STALL_MS = 20_000;

/**
 * Runs the cases in worker threads with the pool's native stack (8 MiB), as scripts really run. A
 * case that holds its thread past STALL_MS is recorded as a stall, its worker ended, and the cases
 * after it go on in a new one.
 */
export async function runInWorker(
  options: FuzzOptions,
  onProgress: (cases: number) => void = () => {},
): Promise<FuzzReport> {
  const started = performance.now();
  const total: FuzzReport = { cases: 0, ms: 0, findings: [], endings: {}, refusedOps: 0 };
  const stride = options.stride ?? 1;
  let next = { ...options };
  for (;;) {
    const remaining = options.budgetMs ? options.budgetMs - (performance.now() - started) : 0;
    if (next.cases <= 0 || (options.budgetMs && remaining <= 0)) break;
    const part = await new Promise<{ report?: FuzzReport; stalledAt?: number; ran: number }>((resolve, reject) => {
      const worker = new Worker(new URL("./worker.ts", import.meta.url), {
        workerData: { ...next, ...(options.budgetMs ? { budgetMs: remaining } : {}) },
        resourceLimits: { stackSizeMb: 8, maxYoungGenerationSizeMb: 12 },
      });
      let seed = next.seed;
      let ran = 0;
      let lastAt = performance.now();
      const watch = setInterval(() => {
        if (performance.now() - lastAt < STALL_MS) return;
        clearInterval(watch);
        void worker.terminate();
        resolve({ stalledAt: seed, ran });
      }, 1_000);
      worker.on("message", (m: { type: "case"; seed: number } | { type: "report"; report: FuzzReport }) => {
        if (m.type === "case") {
          if (ran > 0) onProgress(total.cases + ran);
          seed = m.seed;
          ran++;
          lastAt = performance.now();
          return;
        }
        clearInterval(watch);
        resolve({ report: m.report, ran });
        void worker.terminate();
      });
      worker.once("error", (err) => {
        clearInterval(watch);
        reject(err);
      });
    });
    if (part.report) {
      total.cases += part.report.cases;
      total.findings.push(...part.report.findings);
      total.refusedOps += part.report.refusedOps;
      for (const [k, n] of Object.entries(part.report.endings)) total.endings[k] = (total.endings[k] ?? 0) + n;
      break;
    }
    // The stalled case counts; the rest go on after it, in a new worker.
    const seed = part.stalledAt as number;
    total.cases += part.ran;
    total.findings.push({
      seed,
      kind: "stall",
      detail: `one run held its thread for more than ${STALL_MS / 1000} s in a single built-in call`,
    });
    total.endings.stalled = (total.endings.stalled ?? 0) + 1;
    next = { ...next, seed: seed + stride, cases: next.cases - part.ran };
  }
  total.ms = performance.now() - started;
  return total;
}

/** The one line that runs a finding's case again. */
export const reproduction = (seed: number) => `npm run fuzz:sandbox -- --seed ${seed} --cases 1 --workers 1 --print`;
