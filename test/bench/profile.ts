// Where a process's CPU time went, from the V8 CPU profiles Node writes with `--cpu-prof` (one file
// per thread: the enclave's service thread and each sandbox worker). `summarizeProfiles(dir, runs)`
// prints, per thread and for all of them together, the functions and the files that took the most
// self time, as a share of the busy time and in microseconds per run. `node test/bench/profile.ts DIR
// [RUNS]` prints the same for a folder of profiles made elsewhere.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type CpuProfile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

/** Frames that are not work: the thread waiting, or the profiler's own. */
const IDLE = new Set(["(idle)", "(program)"]);

export type Cost = { name: string; us: number; share: number; usPerRun: number };
export type ThreadSummary = { file: string; busyMs: number; functions: Cost[]; files: Cost[] };

/** Short, readable location of a frame: the project's path, a package's name and path, or Node's module. */
function where(url: string): string {
  if (url === "") return "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) return url.slice(nm + "node_modules/".length);
  const root = url.indexOf("/enclave/") >= 0 ? url.indexOf("/enclave/") : url.indexOf("/shared/");
  if (root >= 0) return url.slice(root + 1);
  return url.replace(/^file:\/\//, "");
}

function top(map: Map<string, number>, busyUs: number, runs: number, n: number): Cost[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({
      name,
      us: Math.round(us),
      share: Math.round((us / busyUs) * 1000) / 10,
      usPerRun: Math.round((us / Math.max(1, runs)) * 10) / 10,
    }));
}

/** Self time by function and by file of one profile. */
export function summarizeProfile(profile: CpuProfile, runs: number, file: string, n = 15): ThreadSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  // timeDeltas[i] is the time from the sample before to sample i: the time sample i stands for.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const functions = new Map<string, number>();
  const files = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || IDLE.has(frame.functionName)) continue;
    busy += us;
    const loc = where(frame.url);
    const fn = `${frame.functionName || "(anonymous)"} ${loc}${frame.url ? `:${frame.lineNumber + 1}` : ""}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
    files.set(loc, (files.get(loc) ?? 0) + us);
  }
  return {
    file,
    busyMs: Math.round(busy / 100) / 10,
    functions: top(functions, busy, runs, n),
    files: top(files, busy, runs, n),
  };
}

/** Every profile in `dir`, summarized, printed, and returned (per thread, busiest first). */
export function summarizeProfiles(
  dir: string,
  runs: number,
  print: (line: string) => void = console.log,
): ThreadSummary[] {
  const summaries = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => summarizeProfile(JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile, runs, f))
    .sort((a, b) => b.busyMs - a.busyMs);
  const total = summaries.reduce((n, s) => n + s.busyMs, 0);
  print(
    `profiles in ${dir}: ${summaries.length} threads, ${total.toFixed(0)} ms busy in all, ${((total * 1000) / Math.max(1, runs)).toFixed(1)} µs per run over ${runs} runs`,
  );
  for (const s of summaries) {
    print(`\n${s.file}: ${s.busyMs} ms busy (${((s.busyMs * 1000) / Math.max(1, runs)).toFixed(1)} µs per run)`);
    print("  by file:");
    for (const c of s.files.slice(0, 10))
      print(`    ${c.share.toFixed(1).padStart(5)} %  ${c.usPerRun.toFixed(1).padStart(7)} µs/run  ${c.name}`);
    print("  by function:");
    for (const c of s.functions)
      print(`    ${c.share.toFixed(1).padStart(5)} %  ${c.usPerRun.toFixed(1).padStart(7)} µs/run  ${c.name}`);
  }
  return summaries;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, runs] = process.argv.slice(2);
  if (!dir) {
    console.error("usage: node test/bench/profile.ts DIR [RUNS]");
    process.exit(2);
  }
  summarizeProfiles(dir, Number(runs ?? 1));
}
