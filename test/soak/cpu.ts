// What the machine's CPU did during the soak, from /proc (Linux; elsewhere it records nothing):
// every 5 s, how busy all its cores were, and how much of that was the soak's own processes — this
// one and everything it started (anvil, the enclave, workerd), each of those apart. On a shared
// machine, a load that the stack served at the start can outgrow what it is left later; the report
// says when that happened, and which process's share grew while the load stayed the same.
import { readdirSync, readFileSync } from "node:fs";
import { processStat } from "../bench/proc.ts";

/** Which of the soak's processes: this one (the clients, the Stripe emulator, the recorder), or what it started. */
export type SoakRole = "harness" | "enclave" | "workerd" | "anvil" | "other";
export const SOAK_ROLES: SoakRole[] = ["harness", "enclave", "workerd", "anvil", "other"];

export type CpuSample = { at: number; machinePct: number; soakPct: number; byRole: Record<SoakRole, number> };

/** A process of the soak's by its command line (read once per pid). */
const roles = new Map<number, SoakRole>();
function roleOf(pid: number): SoakRole {
  if (pid === process.pid) return "harness";
  let role = roles.get(pid);
  if (role === undefined) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      // gone meanwhile
    }
    role = /anvil/.test(cmdline)
      ? "anvil"
      : /workerd/.test(cmdline)
        ? "workerd"
        : /enclave/.test(cmdline)
          ? "enclave"
          : "other";
    roles.set(pid, role);
  }
  return role;
}

/** Each process's parent and its CPU ticks (user + system), by pid. */
function processes(): Map<number, { ppid: number; ticks: number }> {
  const out = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      out.set(Number(name), processStat(Number(name)));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** All cores' busy and total ticks. */
function machine(): { busy: number; total: number } {
  const [, ...values] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const n = values.map(Number);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** How often sampleCpu samples by default; a sample covers the interval before it. */
export const CPU_SAMPLE_MS = 5_000;

/** Samples every `everyMs` until stopped; percentages are of the whole machine (all cores). */
export function sampleCpu(clock: () => number, everyMs = CPU_SAMPLE_MS): { samples: CpuSample[]; stop(): void } {
  const samples: CpuSample[] = [];
  let prev:
    | { procs: Map<number, { ppid: number; ticks: number }>; machine: { busy: number; total: number } }
    | undefined;
  const tick = () => {
    let procs: Map<number, { ppid: number; ticks: number }>;
    let m: { busy: number; total: number };
    try {
      procs = processes();
      m = machine();
    } catch {
      return; // no /proc here
    }
    // The soak's processes: this one and its descendants.
    const ours = new Set<number>([process.pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, p] of procs) {
        if (!ours.has(pid) && ours.has(p.ppid)) {
          ours.add(pid);
          grew = true;
        }
      }
    }
    if (prev) {
      let soakTicks = 0;
      const byRoleTicks: Record<SoakRole, number> = { harness: 0, enclave: 0, workerd: 0, anvil: 0, other: 0 };
      // A process that started in the interval counts whole; one that ended counts nothing for it.
      for (const pid of ours) {
        const ticks = (procs.get(pid)?.ticks ?? 0) - (prev.procs.get(pid)?.ticks ?? 0);
        soakTicks += ticks;
        byRoleTicks[roleOf(pid)] += ticks;
      }
      // /proc/stat counts the ticks of all cores, /proc/<pid>/stat a process's: both in USER_HZ.
      const totalTicks = m.total - prev.machine.total;
      if (totalTicks > 0) {
        const pct = (ticks: number) => Math.min(100, Math.max(0, (100 * ticks) / totalTicks));
        const byRole = Object.fromEntries(SOAK_ROLES.map((r) => [r, pct(byRoleTicks[r])])) as Record<SoakRole, number>;
        samples.push({
          at: clock(),
          machinePct: (100 * (m.busy - prev.machine.busy)) / totalTicks,
          soakPct: pct(soakTicks),
          byRole,
        });
      }
    }
    prev = { procs, machine: m };
  };
  tick();
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return { samples, stop: () => clearInterval(timer) };
}
