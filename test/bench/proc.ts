// What a benchmark reads of the processes it measures, from Linux's /proc: CPU time (user + system,
// every thread of the process: the enclave's sandbox workers are threads of it) and resident memory.
// CPU time per run is the figure that survives a noisy shared machine: latency and runs per second
// move with whatever else the two cores are doing, the work a run costs much less.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's times (100 on every Linux here; asked once). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** A process's parent and the CPU ticks (utime + stime, in clock ticks) it has used so far. */
export function processStat(pid: number): { ppid: number; ticks: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name, in parentheses, may hold spaces: the fields are counted after its closing one.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 4, 14 and 15 of stat(5) (ppid, utime, stime) are the 2nd, 12th and 13th after the name.
  return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
}

/** The CPU time a process has used so far, in milliseconds (utime + stime of all its threads). */
export function cpuMs(pid: number): number {
  return (processStat(pid).ticks * 1000) / TICKS_PER_SECOND;
}

/** Resident memory now and at its peak (VmRSS, VmHWM), in MiB. */
export function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** What a measured window cost one process. */
export type ProcessCost = {
  /** CPU time over the window, in milliseconds. */
  cpu_ms: number;
  /** Resident memory: the highest sampled during the window, and the median of the samples of its second half. */
  peak_rss_mib: number;
  steady_rss_mib: number;
};

/**
 * Watches processes over a window: CPU time at its start and end, resident memory sampled every
 * `sampleMs`. `stop()` gives each process's cost. The benchmark's own process may be watched too
 * (its CPU is the clients' and the sealing's, on the same two cores).
 */
export function watchProcesses(pids: Record<string, number>, sampleMs = 200): { stop(): Record<string, ProcessCost> } {
  const names = Object.keys(pids);
  const startCpu = new Map(names.map((n) => [n, cpuMs(pids[n] as number)]));
  const samples = new Map<string, number[]>(names.map((n) => [n, []]));
  const sample = () => {
    for (const n of names) {
      try {
        samples.get(n)!.push(rssMiB(pids[n] as number).rss);
      } catch {
        // the process is gone (a restart): its samples stop
      }
    }
  };
  sample();
  const timer = setInterval(sample, sampleMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const out: Record<string, ProcessCost> = {};
      for (const n of names) {
        const s = samples.get(n)!;
        const second = s.slice(Math.floor(s.length / 2)).sort((a, b) => a - b);
        out[n] = {
          cpu_ms: Math.round((cpuMs(pids[n] as number) - (startCpu.get(n) as number)) * 10) / 10,
          peak_rss_mib: Math.round(Math.max(...s) * 10) / 10,
          steady_rss_mib: Math.round((second[Math.floor(second.length / 2)] ?? 0) * 10) / 10,
        };
      }
      return out;
    },
  };
}

/** The median of numbers (the middle one of an odd count, the lower middle of an even one). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}
