// `npm run soak`: the service under mixed traffic with faults, for minutes (docs/operations/soak.md). It
// starts its own stack (stack.ts: anvil behind a stoppable proxy, mining a block a second as the
// service's chains do, the enclave, the Stripe emulator,
// the production edge bundle under workerd, billing on), makes a few accounts, measures the
// capacity of the mix briefly (closed loop, with clients enough to keep the machine busy while
// some wait for their writes' blocks), then sends the mix open-loop at a share of it (70 %
// by default) while the faults (faults.ts) happen on their schedules: the enclave killed with SIGKILL
// every 2 minutes, the chain's RPC stopped for 10 s every 3 minutes, Stripe's webhooks held,
// reordered and re-sent every minute, the channel's sessions dropped every 50 s, the edge killed with
// SIGKILL every 4 minutes. After the load it waits for the traffic to drain and for the enclaves'
// settlements of what a killed edge answered, reads every account's Ledger (and what the killed
// edges' leases still hold) and prints the report (report.ts); the last line is one JSON object.
// Exit status 1 when an acceptance rule fails.
//
//   node test/soak/soak.ts [--minutes 10] [--load 0.7] [--accounts 4]
//     [--enclave-kill-every 120] [--rpc-stop-every 180] [--stripe-every 60] [--session-drop-every 50]
//     [--edge-kill-every 240]   (seconds; 0 = never)
//     [--capacity-seconds 20] [--capacity-clients 24] [--block-time 1] [--logs .sigil/soak]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FAULT_NAMES, faultActions, scheduleFaults, type FaultName, type FaultPlan } from "./faults.ts";
import { CPU_SAMPLE_MS, sampleCpu, type CpuSample } from "./cpu.ts";
import { buildReport, claimedCharges, type KilledLeases, runtimeFaultsIn, type SoakReport } from "./report.ts";
import {
  DEFAULT_CHAIN_BLOCK_SECONDS,
  startSoakStack,
  type LedgerAudit,
  type LedgerEntry,
  type SoakStack,
} from "./stack.ts";
import { driveOpenLoop, measureCapacity, startTraffic, type Recorder } from "./traffic.ts";

export type SoakOptions = {
  minutes: number;
  /** The share of the measured capacity the open-loop load runs at. */
  load: number;
  accounts: number;
  capacitySeconds: number;
  capacityClients: number;
  faults: FaultPlan[];
  /** Calls in flight at most; an arrival beyond is shed (and counted). */
  maxInFlight: number;
  log: (line: string) => void;
  /** Where to write what the enclave and the edge printed (enclave.log, edge.log), for a look after. */
  logsDir?: string;
  /** Seconds between the chain's blocks (stack.ts; default 1; 0: a block per transaction). */
  chainBlockSeconds?: number;
};

/** The faults every `every` seconds (0: never), each first at a share of its interval so that they spread out. */
export function faultPlans(every: Record<FaultName, number>): FaultPlan[] {
  const first: Record<FaultName, number> = {
    enclave_kill: 0.5,
    rpc_stop: 0.55,
    stripe_chaos: 0.5,
    session_drop: 0.4,
    edge_kill: 0.6,
  };
  return FAULT_NAMES.filter((name) => every[name] > 0).map((name) => ({
    name,
    firstAtMs: every[name] * 1000 * first[name],
    everyMs: every[name] * 1000,
  }));
}

export const DEFAULT_INTERVALS: Record<FaultName, number> = {
  enclave_kill: 120,
  rpc_stop: 180,
  stripe_chaos: 60,
  session_drop: 50,
  edge_kill: 240,
};

/**
 * How long after the last run the audit waits, at least: the enclave that ran a run settles its charge
 * 5 s after it ended (enclave/receipts/settlements.ts, SETTLE_AFTER_MS), should its edge have been
 * killed before its commit; and a second or two for the settlement's way.
 */
const SETTLEMENTS_AFTER_MS = 7_000;

/** A closed loop this busy (% of the machine) has found the capacity… */
const CAPACITY_BUSY_PCT = 85;
/** …and so has one whose twice as many clients got less than this much more done (one process, workerd, saturates first). */
const CAPACITY_GAIN = 1.1;

/** The machine's mean busy share over the CPU samples taken in (from, to] (null: none, no /proc). */
function machineBusyPct(samples: CpuSample[], from: number, to: number): number | null {
  // A sample covers the 5 s before it: only those wholly inside the window.
  const inside = samples.filter((s) => s.at - CPU_SAMPLE_MS >= from && s.at <= to);
  return inside.length === 0 ? null : inside.reduce((a, s) => a + s.machinePct, 0) / inside.length;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Each account's Ledger as the report reads it: its audit(), its entries, the leases of killed edges
 * it still keeps (until they expire) with the runs they had in flight, and what the running edge's
 * leases have in flight. Read until two reads of the leases agree, so that no lease expires between
 * the parts.
 */
async function readLedger(
  stack: SoakStack,
  master: string,
  killedIds: Set<string>,
): Promise<{ audit: LedgerAudit; entries: LedgerEntry[]; killed: KilledLeases }> {
  const killedOf = async (): Promise<KilledLeases> => {
    const { leases, open } = await stack.ledger.leases(master);
    const now = Date.now();
    const live = leases.filter((l) => l.expiresAt > now);
    const mine = new Set(live.filter((l) => killedIds.has(l.id)).map((l) => l.id));
    const theirs = new Set(live.filter((l) => !killedIds.has(l.id)).map((l) => l.id));
    return {
      leases: live.filter((l) => mine.has(l.id)),
      open: open.filter((o) => mine.has(o.leaseId)),
      liveOpen: open.filter((o) => theirs.has(o.leaseId)),
    };
  };
  for (;;) {
    const before = await killedOf();
    const audit = await stack.ledger.audit(master);
    const entries = await stack.ledger.entries(master);
    const after = await killedOf();
    if (JSON.stringify(before) === JSON.stringify(after)) return { audit, entries, killed: after };
  }
}

/** Polls `done` every 250 ms until it holds or `ms` pass; whether it held. */
async function waitFor(done: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await done()) return true;
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { log } = options;
  const startedAt = new Date();
  const blockSeconds = options.chainBlockSeconds ?? DEFAULT_CHAIN_BLOCK_SECONDS;
  log(
    `starting the stack (anvil behind a proxy, ${blockSeconds > 0 ? `a block every ${blockSeconds} s` : "a block per transaction"}; enclave, Stripe emulator, edge under workerd)…`,
  );
  const stack = await startSoakStack({ chainBlockSeconds: blockSeconds });
  /** Every request the clients made, written to the logs folder whatever happens. */
  let recorded: Recorder | undefined;
  try {
    const traffic = await startTraffic(stack, { accounts: options.accounts, log });
    const { recorder } = traffic;
    recorded = recorder;
    const cpu = sampleCpu(() => recorder.now());

    log("warming up, then measuring the capacity of the mix (closed loop)…");
    await measureCapacity(traffic, { concurrency: 4, durationMs: 5_000 });
    // A closed loop measures the service only while its clients keep it busy, and clients waiting
    // for their writes' blocks are idle: while the machine was not busy and twice the clients still
    // got more done, measure again with twice as many; the capacity is the best of them.
    let measured = { callsPerSecond: 0, calls: 0, seconds: 0, concurrency: 0 };
    for (let clients = options.capacityClients, tries = 0; tries < 3; clients *= 2, tries++) {
      const from = recorder.now();
      const m = await measureCapacity(traffic, { concurrency: clients, durationMs: options.capacitySeconds * 1000 });
      const busyPct = machineBusyPct(cpu.samples, from, recorder.now());
      log(
        `capacity with ${clients} clients: ${m.callsPerSecond.toFixed(1)} calls/s, the machine ${busyPct === null ? "?" : Math.round(busyPct)} % busy`,
      );
      const rose = m.callsPerSecond > measured.callsPerSecond * CAPACITY_GAIN;
      if (m.callsPerSecond > measured.callsPerSecond) measured = { ...m, concurrency: clients };
      if (busyPct === null || busyPct >= CAPACITY_BUSY_PCT || !rose) break;
    }
    const rate = measured.callsPerSecond * options.load;
    log(
      `capacity ${measured.callsPerSecond.toFixed(1)} calls/s; driving ${rate.toFixed(1)} calls/s open-loop for ${options.minutes} min`,
    );

    const loadFrom = recorder.now();
    const clock = () => recorder.now() - loadFrom;
    const faults = scheduleFaults(options.faults, faultActions(stack, traffic), clock, log);
    // The faults' own times are on the load's clock; the report's are the recorder's.
    const drive = await driveOpenLoop(traffic, {
      rate,
      durationMs: options.minutes * 60_000,
      maxInFlight: options.maxInFlight,
    });
    const loadTo = recorder.now();
    await faults.stop();
    // And the faults' own calls (the edge kill's runs, sent again after the kill until answered).
    await waitFor(() => recorder.active === 0, 120_000);
    // The enclave must be up for what follows (a kill under way has restarted it by now).
    log(
      `load done: ${drive.started} calls, ${drive.shed} shed; waiting for the traffic's webhooks and settlements to finish…`,
    );

    // Drain: Stripe's deliveries (retries and re-sends), the accounts' webhooks for every credit and
    // failed payment, the charges (committed after the answers, under waitUntil; or, for the runs a
    // killed edge answered before its commit, settled by their enclaves 5 s after each run).
    const stripeDrained = await waitFor(() => stack.stripe.pendingDeliveries() === 0, 120_000);
    const everyone = [...traffic.accounts.map((a) => ({ ...a, traffic: true })), { ...traffic.probe, traffic: false }];
    const lastEnded = recorder.attempts.reduce((m, a) => Math.max(m, a.at + a.ms), 0);
    await sleep(lastEnded + SETTLEMENTS_AFTER_MS - recorder.now());
    // Each balance read through the edge: it commits what the isolate still has pending for the account.
    for (const a of everyone) await traffic.balance(a);
    const killedIds = new Set(stack.edge.kills.flatMap((k) => k.leases.map((l) => l.id)));
    // Held, once drained, is only what the killed edges' leases had in flight (until they expire);
    // and every charge an answer claimed is in the Ledger, or waits in a killed edge's lease.
    const claims = claimedCharges(recorder.attempts);
    let settled = { held: false, charged: false };
    await waitFor(async () => {
      settled = { held: true, charged: true };
      for (const a of everyone) {
        const { audit, entries, killed } = await readLedger(stack, a.master, killedIds);
        if (audit.heldCents !== killed.leases.reduce((t, l) => t + l.inFlight, 0)) settled.held = false;
        const charged = new Set(entries.filter((e) => e.kind === "charge").map((e) => e.ref));
        const waiting = new Set(killed.open.map((o) => o.ref));
        for (const ref of claims.get(a.name)?.keys() ?? [])
          if (!charged.has(ref) && !waiting.has(ref)) settled.charged = false;
      }
      return settled.held && settled.charged;
    }, 60_000);
    const toldAll = await waitFor(async () => {
      for (const a of traffic.accounts) {
        const credited = (await stack.ledger.entries(a.master)).filter((e) => e.kind === "credit").map((e) => e.ref);
        const told = new Set(
          stack.receiver
            .events(a.name)
            .filter((e) => e.type === "payment.credited")
            .map((e) => String(e.data.payment_intent_id)),
        );
        if (credited.some((pi) => !told.has(pi))) return false;
      }
      return true;
    }, 120_000);
    cpu.stop();
    log(
      `drained: Stripe deliveries ${stripeDrained ? "done" : "NOT done"}, holds ${settled.held ? "none left but the killed edges' leases" : "STILL HELD"}, ` +
        `answered charges ${settled.charged ? "all in the Ledger or a killed edge's lease" : "NOT all found"}, payments told ${toldAll ? "all" : "NOT all"}`,
    );

    const ledgers = new Map<string, { audit: LedgerAudit; entries: LedgerEntry[]; killed: KilledLeases }>();
    for (const a of everyone) ledgers.set(a.name, await readLedger(stack, a.master, killedIds));
    const counts = (await (await fetch(`${stack.counterUrl}/counts`)).json()) as Record<string, number>;
    const namesOnChain = new Map<string, Map<string, number>>();
    for (const a of traffic.accounts) namesOnChain.set(a.name, await traffic.namesOnChain(a));
    const edgeErrors: Record<string, number> = {};
    for (const line of stack.edge.output().split("\n")) {
      const m = /\{.*"level":"error".*\}/.exec(line);
      if (!m) continue;
      let msg = "?";
      try {
        msg = String((JSON.parse(m[0]) as { msg?: unknown }).msg);
      } catch {
        msg = m[0].slice(0, 120);
      }
      edgeErrors[msg] = (edgeErrors[msg] ?? 0) + 1;
    }

    return buildReport({
      startedAt,
      minutes: options.minutes,
      capacity: {
        callsPerSecond: measured.callsPerSecond,
        concurrency: measured.concurrency,
        seconds: measured.seconds,
      },
      load: options.load,
      rate,
      loadFrom,
      loadTo,
      started: drive.started,
      shed: drive.shed,
      attempts: recorder.attempts,
      calls: recorder.calls,
      topUps: recorder.topUps,
      faults: faults.events.map((f) => ({ ...f, at: f.at + loadFrom })),
      plannedFaults: [
        ...new Set(options.faults.filter((p) => p.firstAtMs < options.minutes * 60_000).map((p) => p.name)),
      ],
      accounts: everyone.map((a) => ({ name: a.name, master: a.master, traffic: a.traffic })),
      ledgers,
      stripeEvents: stack.stripe.events(),
      stripeDeliveries: stack.stripe.deliveries(),
      counts,
      received: new Map(traffic.accounts.map((a) => [a.name, stack.receiver.events(a.name)])),
      receiverRefused: stack.receiver.refused,
      namesOnChain,
      cpu: cpu.samples,
      edgeErrors,
      runtimeFaults: runtimeFaultsIn(stack.edge.output()),
      edgeKills: stack.edge.kills,
    });
  } finally {
    if (options.logsDir) {
      mkdirSync(options.logsDir, { recursive: true });
      if (recorded)
        writeFileSync(
          join(options.logsDir, "attempts.jsonl"),
          recorded.attempts.map((a) => `${JSON.stringify(a)}\n`).join(""),
        );
      writeFileSync(join(options.logsDir, "enclave.log"), stack.chain.enclaveOutput());
      writeFileSync(join(options.logsDir, "edge.log"), stack.edge.output());
    }
    await stack.stop();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string", default: "10" },
      load: { type: "string", default: "0.7" },
      accounts: { type: "string", default: "4" },
      "enclave-kill-every": { type: "string", default: String(DEFAULT_INTERVALS.enclave_kill) },
      "rpc-stop-every": { type: "string", default: String(DEFAULT_INTERVALS.rpc_stop) },
      "stripe-every": { type: "string", default: String(DEFAULT_INTERVALS.stripe_chaos) },
      "session-drop-every": { type: "string", default: String(DEFAULT_INTERVALS.session_drop) },
      "edge-kill-every": { type: "string", default: String(DEFAULT_INTERVALS.edge_kill) },
      "capacity-seconds": { type: "string", default: "20" },
      "capacity-clients": { type: "string", default: "24" },
      "block-time": { type: "string", default: String(DEFAULT_CHAIN_BLOCK_SECONDS) },
      logs: { type: "string", default: join(import.meta.dirname, "../../.sigil/soak") },
    },
  });
  const num = (name: keyof typeof values) => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n < 0) {
      console.error(`soak: --${name} must be a number ≥ 0`);
      process.exit(2);
    }
    return n;
  };
  const started = Date.now();
  const report = await runSoak({
    minutes: num("minutes"),
    load: num("load"),
    accounts: Math.max(1, Math.floor(num("accounts"))),
    capacitySeconds: num("capacity-seconds"),
    capacityClients: Math.max(1, Math.floor(num("capacity-clients"))),
    faults: faultPlans({
      enclave_kill: num("enclave-kill-every"),
      rpc_stop: num("rpc-stop-every"),
      stripe_chaos: num("stripe-every"),
      session_drop: num("session-drop-every"),
      edge_kill: num("edge-kill-every"),
    }),
    maxInFlight: 2_000,
    chainBlockSeconds: num("block-time"),
    logsDir: values.logs,
    log: (line) => console.log(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`),
  });
  for (const line of report.lines) console.log(line);
  console.log(JSON.stringify(report.json));
  writeFileSync(join(values.logs, "report.txt"), `${report.lines.join("\n")}\n${JSON.stringify(report.json)}\n`);
  writeFileSync(join(values.logs, "5xx.txt"), report.fiveXx.map((l) => `${l}\n`).join(""));
  writeFileSync(join(values.logs, "summary.md"), `${report.markdown.join("\n")}\n`);
  console.error(`soak: the report and what the enclave and the edge printed are in ${values.logs}`);
  process.exit(report.ok ? 0 : 1);
}
