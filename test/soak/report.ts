// What a soak run found, judged and printed: requests by kind and status, p50/p99 latency per kind
// per minute, every 5xx with its code and Retry-After, each fault with its time and effect, the
// ledger audit per account, runs answered twice, the accounts' webhooks — and the acceptance rules,
// each PASS or FAIL with what failed it. The last line printed is one JSON object.
//
// The ledger rule, per account (the probe account too), checked after the traffic has drained:
// 1. the Ledger's own audit() is consistent (its cached balance = the sum of its entries plus what
//    its retention pruned) and no hold is left, live or expired;
// 2. credits: one credit entry per payment intent the Stripe emulator reports succeeded for the
//    account (payment_intent.succeeded), of its amount_received, and none other; refunds: one
//    adjustment per refund of those intents, of its amount, and none other;
// 3. charges: at most one per request id (a billing ref). A client's answer says what it was charged
//    (X-Sigil-Charged-Cents, `charged_cents`) under its billing ref — Original-Request when the
//    answer carries it (a retry or replay under an Idempotency-Key: every attempt is charged under the
//    first one's request id), else X-Request-Id. Every ref an answer claims a charge c > 0 for must
//    have a charge of exactly c; a call's last answer claiming 0 must have none; every charge in the
//    Ledger must be claimed by an answer, except the charges of requests that got no answer (the
//    client gave up waiting, so it never saw their request ids; docs/design/billing.md: a request is charged
//    whether or not its client waits, and a hold nobody settles is charged in full when it expires,
//    `hold_expired`): of those there may be at most one per run or write of the account that got no
//    answer. So Σ client-charged = Σ ledger charges − Σ charges of unanswered requests, and any
//    charge beyond is listed ref by ref.
//
// "Runs answered twice": a request id on two answers; a run receipt on two answers that are not one
// answer and its replays under the same Idempotency-Key; or a run executed more times than the rules
// allow for its Idempotency-Key (the fetch target counts each execution): at most once, plus once per
// attempt of it that was lost with its enclave (503 enclave_unavailable: the documented re-run after
// an interrupted attempt, which the successful answer reports as `first_attempt`). An answered run
// must have executed at least once.
import { cpus } from "node:os";
import { errorStatus } from "../../shared/errors.ts";
import type { Delivery, StripeEvent } from "../../emulators/stripe.ts";
import type { FaultEvent, FaultName } from "./faults.ts";
import { RECOVERY_BOUND_MS } from "./faults.ts";
import { SOAK_ROLES, type CpuSample } from "./cpu.ts";
import type { ReceivedEvent } from "./receiver.ts";
import type { LedgerAudit, LedgerEntry } from "./stack.ts";
import type { Attempt, Call, Kind, TopUp } from "./traffic.ts";
import { LOAD_KINDS } from "./traffic.ts";

/** Every 503 code the API documents (shared/errors.ts): answered with Retry-After, they are the only 5xx allowed. */
/** The managed writes the soak sends (metered: a cent each once sent). */
const WRITE_OPS = new Set(["create_wallet", "add_group", "add_usage_api_key"]);

const DOCUMENTED_503 = new Set(
  Object.entries(errorStatus)
    .filter(([, s]) => s === 503)
    .map(([c]) => c),
);

export type SoakData = {
  startedAt: Date;
  minutes: number;
  capacity: { callsPerSecond: number; concurrency: number; seconds: number };
  load: number;
  rate: number;
  /** The load phase on the traffic's clock (ms). */
  loadFrom: number;
  loadTo: number;
  started: number;
  shed: number;
  attempts: Attempt[];
  calls: Call[];
  topUps: TopUp[];
  faults: FaultEvent[];
  /** The faults the run was meant to make (each at least once). */
  plannedFaults: FaultName[];
  accounts: Array<{ name: string; master: string; traffic: boolean }>;
  ledgers: Map<string, { audit: LedgerAudit; entries: LedgerEntry[] }>;
  stripeEvents: StripeEvent[];
  stripeDeliveries: Delivery[];
  /** Executions per run token (the fetch target's /counts). */
  counts: Record<string, number>;
  received: Map<string, ReceivedEvent[]>;
  /** The machine's CPU and the soak's share of it, every 5 s (cpu.ts). */
  cpu: CpuSample[];
  /** How many wallets, groups and usage keys of each name each account has on chain, by account. */
  namesOnChain: Map<string, Map<string, number>>;
  receiverRefused: number;
  /** The edge's error-level log lines, by message. */
  edgeErrors: Record<string, number>;
};

export type Rule = { name: string; ok: boolean; detail: string[] };
/**
 * `fiveXx`: every 5xx answer (and every request with no answer), one line each, in time order;
 * `markdown`: the run's summary as docs/operations/soak.md shows it.
 */
export type SoakReport = {
  lines: string[];
  rules: Rule[];
  ok: boolean;
  json: Record<string, unknown>;
  fiveXx: string[];
  markdown: string[];
};

const pct = (sorted: number[], p: number) =>
  sorted.length === 0 ? null : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number);
const round = (n: number | null, digits = 1) => (n === null ? null : Math.round(n * 10 ** digits) / 10 ** digits);
const fmtMs = (n: number | null) => (n === null ? "—" : n < 10 ? n.toFixed(1) : String(Math.round(n)));
const pad = (s: string | number, n: number) => String(s).padStart(n);
const padEnd = (s: string | number, n: number) => String(s).padEnd(n);

function table(header: string[], rows: Array<Array<string | number>>): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? "").length)));
  const line = (cells: Array<string | number>) =>
    cells.map((c, i) => (i === 0 ? padEnd(c, widths[i]!) : pad(c, widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)];
}

export function buildReport(d: SoakData): SoakReport {
  const lines: string[] = [];
  const rules: Rule[] = [];
  const out = (s = "") => lines.push(s);
  const edge = d.attempts.filter((a) => a.target === "edge");
  const inLoad = (a: { at: number }) => a.at >= d.loadFrom && a.at <= d.loadTo;
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

  out(`== Sigil soak with faults: ${d.minutes} min of load, started ${d.startedAt.toISOString()}`);
  out(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}`);
  out(
    `capacity: ${d.capacity.callsPerSecond.toFixed(1)} calls/s (closed loop, ${d.capacity.concurrency} clients, ${d.capacity.seconds.toFixed(0)} s of the mix); ` +
      `load: open loop at ${Math.round(d.load * 100)} % = ${d.rate.toFixed(1)} calls/s; ${d.started} calls started, ${d.shed} shed (over the in-flight cap)`,
  );

  // --- requests by kind and status ---------------------------------------------------------------
  out();
  out("-- requests by kind and status (edge answers, whole run; retries: attempts after a call's first)");
  const kinds: Kind[] = [...LOAD_KINDS, "probe", "setup"];
  const statuses = [...new Set(edge.map((a) => a.status))].sort((a, b) => a - b);
  const byKind: Record<string, Record<string, number>> = {};
  const kindRows = kinds
    .map((k) => {
      const as = edge.filter((a) => a.kind === k);
      const calls = d.calls.filter((c) => c.kind === k);
      const row: Record<string, number> = {
        calls: calls.length,
        failed_calls: calls.filter((c) => !c.ok).length,
        attempts: as.length,
        retries: as.filter((a) => a.n > 0).length,
      };
      for (const s of statuses) row[String(s)] = as.filter((a) => a.status === s).length;
      byKind[k] = row;
      return [
        k,
        row.calls!,
        row.failed_calls!,
        row.attempts!,
        row.retries!,
        ...statuses.map((s) => row[String(s)] || ""),
      ];
    })
    .filter((r) => r[1] !== 0);
  for (const l of table(
    ["kind", "calls", "failed", "attempts", "retries", ...statuses.map((s) => (s === 0 ? "no answer" : String(s)))],
    kindRows,
  ))
    out(l);
  const codes = new Map<string, number>();
  for (const a of edge)
    if (a.status >= 400)
      codes.set(`${a.status} ${a.code ?? "?"}`, (codes.get(`${a.status} ${a.code ?? "?"}`) ?? 0) + 1);
  if (codes.size)
    out(
      `error codes: ${[...codes]
        .sort()
        .map(([c, n]) => `${c} ×${n}`)
        .join(", ")}`,
    );
  const failedCalls = new Map<string, number>();
  for (const c of d.calls)
    if (!c.ok) failedCalls.set(`${c.kind} ${c.code}`, (failedCalls.get(`${c.kind} ${c.code}`) ?? 0) + 1);
  if (failedCalls.size)
    out(
      `calls that ended in an error (after the SDK's retries): ${[...failedCalls]
        .sort()
        .map(([c, n]) => `${c} ×${n}`)
        .join(", ")}`,
    );

  // --- latency per kind per minute ----------------------------------------------------------------
  out();
  out("-- latency per kind per minute of load, p50 / p99 in ms (each attempt through the edge)");
  const minutes = Math.max(1, Math.ceil((d.loadTo - d.loadFrom) / 60_000));
  const latency: Record<string, Array<{ minute: number; n: number; p50: number | null; p99: number | null }>> = {};
  const latRows: Array<Array<string | number>> = [];
  for (let m = 0; m < minutes; m++) {
    const row: Array<string | number> = [String(m + 1)];
    for (const k of LOAD_KINDS) {
      const ms = edge
        .filter((a) => a.kind === k && inLoad(a) && Math.floor((a.at - d.loadFrom) / 60_000) === m)
        .map((a) => a.ms)
        .sort((x, y) => x - y);
      (latency[k] ??= []).push({ minute: m + 1, n: ms.length, p50: round(pct(ms, 0.5)), p99: round(pct(ms, 0.99)) });
      row.push(ms.length ? `${fmtMs(pct(ms, 0.5))} / ${fmtMs(pct(ms, 0.99))}` : "—");
    }
    latRows.push(row);
  }
  const overall: Record<string, { n: number; p50: number | null; p99: number | null }> = {};
  const allRow: Array<string | number> = ["all"];
  for (const k of LOAD_KINDS) {
    const ms = edge
      .filter((a) => a.kind === k && inLoad(a))
      .map((a) => a.ms)
      .sort((x, y) => x - y);
    overall[k] = { n: ms.length, p50: round(pct(ms, 0.5)), p99: round(pct(ms, 0.99)) };
    allRow.push(`${fmtMs(pct(ms, 0.5))} / ${fmtMs(pct(ms, 0.99))}`);
  }
  // The machine's CPU per minute: all of it, the soak's processes (this one, anvil, the enclave,
  // workerd), the rest (other processes on a shared machine).
  const cpuOf = (from: number, to: number) => {
    const xs = d.cpu.filter((c) => c.at >= from && c.at < to);
    if (xs.length === 0) return null;
    const avg = (f: (c: CpuSample) => number) => xs.reduce((t, c) => t + f(c), 0) / xs.length;
    return {
      machine: avg((c) => c.machinePct),
      soak: avg((c) => c.soakPct),
      others: avg((c) => Math.max(0, c.machinePct - c.soakPct)),
    };
  };
  for (const [m, row] of latRows.entries()) {
    const c = cpuOf(d.loadFrom + m * 60_000, d.loadFrom + (m + 1) * 60_000);
    row.push(c ? `${Math.round(c.machine)} / ${Math.round(c.soak)} / ${Math.round(c.others)}` : "—");
  }
  const cpuAll = cpuOf(d.loadFrom, d.loadTo);
  allRow.push(
    cpuAll ? `${Math.round(cpuAll.machine)} / ${Math.round(cpuAll.soak)} / ${Math.round(cpuAll.others)}` : "—",
  );
  latRows.push(allRow);
  const capacityRow: Array<string | number> = ["cap."];
  for (const k of LOAD_KINDS) {
    const ms = edge
      .filter((a) => a.kind === k && a.at < d.loadFrom)
      .map((a) => a.ms)
      .sort((x, y) => x - y);
    capacityRow.push(`${fmtMs(pct(ms, 0.5))} / ${fmtMs(pct(ms, 0.99))}`);
  }
  const cpuCap = cpuOf(Number.NEGATIVE_INFINITY, d.loadFrom);
  capacityRow.push(
    cpuCap ? `${Math.round(cpuCap.machine)} / ${Math.round(cpuCap.soak)} / ${Math.round(cpuCap.others)}` : "—",
  );
  latRows.push(capacityRow);
  for (const l of table(["min", ...LOAD_KINDS, "cpu % all / soak / others"], latRows)) out(l);
  out(
    "(cap.: during the closed-loop capacity measurement and its warm-up, before the load; cpu: of the whole machine, the soak's processes — this one, anvil, the enclave, workerd — and the rest)",
  );

  // The soak's CPU per process per minute, and per call answered: a share that grows while the
  // load stays the same is a process whose cost per call grows (state that piles up).
  out();
  out("-- the soak's CPU per minute by process, % of the machine (and CPU ms per call answered that minute)");
  const roleRows: Array<Array<string | number>> = [];
  const loadMinutes = Math.ceil((d.loadTo - d.loadFrom) / 60_000);
  for (let m = 0; m < loadMinutes; m++) {
    // The load's last minute may be a part of one: CPU and answers over the same span.
    const from = d.loadFrom + m * 60_000;
    const to = Math.min(from + 60_000, d.loadTo);
    const xs = d.cpu.filter((c) => c.at >= from && c.at < to);
    const answered = edge.filter((a) => a.at + a.ms >= from && a.at + a.ms < to).length;
    const seconds = (to - from) / 1000;
    roleRows.push([
      m + 1,
      ...SOAK_ROLES.map((r) => {
        if (xs.length === 0) return "—";
        const pctAvg = xs.reduce((t, c) => t + (c.byRole?.[r] ?? 0), 0) / xs.length;
        // % of the machine's cores over the minute → CPU ms in the minute → per call answered.
        const msPerCall = answered > 0 ? ((pctAvg / 100) * cpus().length * seconds * 1000) / answered : NaN;
        return `${Math.round(pctAvg)} (${Number.isFinite(msPerCall) ? msPerCall.toFixed(1) : "—"})`;
      }),
      answered,
    ]);
  }
  for (const l of table(["min", ...SOAK_ROLES, "answers"], roleRows)) out(l);

  // --- every 5xx --------------------------------------------------------------------------------
  out();
  out(
    "-- every 5xx answer (and every request the edge did not answer), consecutive alike ones merged (when answered, on the load's clock; negative: before it; one by one in 5xx.txt)",
  );
  // By when each was answered (sent + latency): what a client saw, when.
  const answeredAt = (a: Attempt) => a.at + a.ms;
  const bad = edge.filter((a) => a.status >= 500 || a.status === 0).sort((a, b) => answeredAt(a) - answeredAt(b));
  const fiveXx = bad.map(
    (a) =>
      `${((answeredAt(a) - d.loadFrom) / 1000).toFixed(3)} s  ${a.kind} ${a.op}  ${a.status} ${a.status === 0 ? `no answer: ${a.error ?? "?"}` : (a.code ?? "?")}  ` +
      `${a.retryAfter === undefined ? "no Retry-After" : `Retry-After: ${a.retryAfter}`}  request ${a.requestId ?? "?"}  attempt ${a.n + 1}, sent ${((a.at - d.loadFrom) / 1000).toFixed(3)} s`,
  );
  const undocumented: string[] = [];
  const fiveGroups: Array<{
    from: number;
    to: number;
    status: number;
    code: string;
    retryAfter: string | null;
    kinds: Set<string>;
    n: number;
  }> = [];
  for (const a of bad) {
    const code = a.status === 0 ? `no answer: ${a.error ?? "?"}` : (a.code ?? "?");
    const retryAfter = a.retryAfter ?? null;
    const at = answeredAt(a);
    const last = fiveGroups[fiveGroups.length - 1];
    if (
      last &&
      last.status === a.status &&
      last.code === code &&
      last.retryAfter === retryAfter &&
      at - last.to < 5_000
    ) {
      last.to = at;
      last.n++;
      last.kinds.add(a.kind);
    } else {
      fiveGroups.push({ from: at, to: at, status: a.status, code, retryAfter, kinds: new Set([a.kind]), n: 1 });
    }
    const documented =
      a.status === 503 &&
      a.retryAfter !== undefined &&
      /^\d+$/.test(a.retryAfter) &&
      a.code !== undefined &&
      DOCUMENTED_503.has(a.code);
    if (!documented)
      undocumented.push(
        `${sec(at - d.loadFrom)} ${a.kind} ${a.op} ${a.status} ${code}${retryAfter ? ` Retry-After ${retryAfter}` : " (no Retry-After)"} request ${a.requestId ?? "?"}`,
      );
  }
  if (fiveGroups.length === 0) out("none");
  for (const g of fiveGroups) {
    out(
      `${pad(sec(g.from - d.loadFrom), 8)}${g.n > 1 ? ` – ${sec(g.to - d.loadFrom)}` : ""}  ${g.status} ${g.code}  ${g.retryAfter === null ? "no Retry-After" : `Retry-After: ${g.retryAfter}`}  ×${g.n}  (${[...g.kinds].join(", ")})`,
    );
  }
  rules.push({
    name: "no 5xx but documented 503s with Retry-After (and every request answered)",
    ok: undocumented.length === 0,
    detail: undocumented.slice(0, 50),
  });

  // --- faults ------------------------------------------------------------------------------------
  out();
  out("-- faults (time on the load's clock; what the 10 s after each start saw)");
  for (const f of [...d.faults].sort((a, b) => a.at - b.at)) {
    const window = edge.filter((a) => a.at >= f.at && a.at < f.at + Math.max(f.ms, 10_000));
    const errors = new Map<string, number>();
    for (const a of window)
      if (a.status >= 500 || a.status === 0)
        errors.set(
          `${a.status} ${a.code ?? a.error ?? "?"}`,
          (errors.get(`${a.status} ${a.code ?? a.error ?? "?"}`) ?? 0) + 1,
        );
    out(
      `${pad(sec(f.at - d.loadFrom), 8)}  ${padEnd(f.name, 12)}  ${f.ok ? "ok " : "NOT OK"}  ${Object.entries(f.effect)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")}` +
        `  | ${window.length} answers, 5xx: ${errors.size ? [...errors].map(([c, n]) => `${c} ×${n}`).join(", ") : "none"}`,
    );
  }
  // The edge serves again once a run through it succeeds after the new enclave process is ready:
  // the fault's own probe (a run every 100 ms from then), or any run of the traffic, whichever is
  // answered first.
  const kills = d.faults.filter((f) => f.name === "enclave_kill");
  const recoveries = kills.map((f) => {
    const readyAt = f.at + Number(f.effect.kill_to_ready_ms);
    const byTraffic = edge
      .filter(
        (a) =>
          (a.kind === "run" || a.kind === "sign") &&
          a.status === 200 &&
          a.run &&
          !a.run.hasError &&
          a.at + a.ms > readyAt,
      )
      .reduce((m, a) => Math.min(m, a.at + a.ms - readyAt), Number.POSITIVE_INFINITY);
    const byProbe =
      f.effect.ready_to_served_ms === null ? Number.POSITIVE_INFINITY : Number(f.effect.ready_to_served_ms);
    const served = Math.min(byTraffic, byProbe);
    return { f, served, byTraffic, byProbe };
  });
  const msOrNever = (n: number) => (Number.isFinite(n) ? `${Math.round(n)} ms` : "never");
  out();
  out(
    `-- enclave restarts: from the new process ready to the first run answered through the edge (bound ${RECOVERY_BOUND_MS / 1000} s)`,
  );
  for (const r of recoveries) {
    out(
      `${pad(sec(r.f.at - d.loadFrom), 8)}  kill→ready ${r.f.effect.kill_to_ready_ms} ms, ready→served ${msOrNever(r.served)} ` +
        `(the probe's ${msOrNever(r.byProbe)}, the traffic's ${msOrNever(r.byTraffic)}; ${r.f.effect.calls_in_flight_at_ready} calls in flight at ready)`,
    );
  }
  rules.push({
    name: `the edge serves again within ${RECOVERY_BOUND_MS / 1000} s of each enclave restart`,
    ok: recoveries.length > 0 && recoveries.every((r) => r.served <= RECOVERY_BOUND_MS),
    detail: recoveries.map(
      (r) =>
        `${sec(r.f.at - d.loadFrom)}: ready→served ${msOrNever(r.served)} (kill→ready ${r.f.effect.kill_to_ready_ms} ms)`,
    ),
  });
  const missing = d.plannedFaults.filter((n) => !d.faults.some((f) => f.name === n));
  const notOk = d.faults.filter((f) => f.name !== "enclave_kill" && !f.ok);
  rules.push({
    name: "every planned fault happened and did what it should (a dropped session mended on the next request, the chain's RPC back)",
    ok: missing.length === 0 && notOk.length === 0,
    detail: [
      ...missing.map((n) => `${n} never happened`),
      ...notOk.map((f) => `${f.name} at ${sec(f.at - d.loadFrom)}: ${JSON.stringify(f.effect)}`),
    ],
  });

  // --- ledger audit per account ------------------------------------------------------------------
  out();
  out("-- ledger audit per account (after the traffic drained)");
  const ledgerProblems: string[] = [];
  const ledgerRows: Array<Array<string | number>> = [];
  const ledgerJson: Array<Record<string, unknown>> = [];
  const succeededOf = new Map<string, { account: string; amount: number }>();
  for (const e of d.stripeEvents) {
    if (e.type !== "payment_intent.succeeded") continue;
    const o = e.data.object as { id: string; amount_received: number; metadata?: { account?: string } };
    succeededOf.set(o.id, { account: o.metadata?.account ?? "", amount: o.amount_received });
  }
  const refundsOf = new Map<string, { account: string; amount: number }>();
  for (const e of d.stripeEvents) {
    if (e.type !== "refund.created") continue;
    const o = e.data.object as { id: string; amount: number; payment_intent: string; status: string };
    const paid = succeededOf.get(o.payment_intent);
    if (paid && o.status === "succeeded") refundsOf.set(o.id, { account: paid.account, amount: o.amount });
  }
  let clientChargedTotal = 0;
  let ledgerChargedTotal = 0;
  let expiredTotal = 0;
  let unansweredTotal = 0;
  for (const acct of d.accounts) {
    const l = d.ledgers.get(acct.name);
    if (!l) {
      ledgerProblems.push(`${acct.name}: no ledger read`);
      continue;
    }
    const { audit, entries } = l;
    const problems: string[] = [];
    if (!audit.consistent) problems.push(`audit() inconsistent: ${JSON.stringify(audit)}`);
    if (audit.heldCents !== 0) problems.push(`${audit.heldCents} cents still held after the traffic drained`);
    if (audit.entriesSumCents + audit.prunedCents !== audit.settledCents)
      problems.push(`settled ${audit.settledCents} ≠ entries ${audit.entriesSumCents} + pruned ${audit.prunedCents}`);
    // Credits: each succeeded intent of the account once, of what Stripe received.
    const credits = entries.filter((e) => e.kind === "credit");
    const expectedPis = [...succeededOf].filter(([, v]) => v.account === acct.master);
    const creditByRef = new Map<string, number[]>();
    for (const c of credits) creditByRef.set(c.ref, [...(creditByRef.get(c.ref) ?? []), c.cents]);
    for (const [pi, v] of expectedPis) {
      const got = creditByRef.get(pi);
      if (!got)
        problems.push(`payment ${pi} (${v.amount} cents) succeeded at Stripe but was never credited (credit lost)`);
      else if (got.length !== 1 || got[0] !== v.amount)
        problems.push(`payment ${pi}: credited ${JSON.stringify(got)}, expected once ${v.amount}`);
    }
    for (const ref of creditByRef.keys())
      if (!expectedPis.some(([pi]) => pi === ref))
        problems.push(`credit ${ref} has no payment Stripe says succeeded for this account`);
    // Refunds: each refund of the account's intents once.
    const adjustments = entries.filter((e) => e.kind === "adjustment");
    const expectedRefunds = [...refundsOf].filter(([, v]) => v.account === acct.master);
    for (const [re, v] of expectedRefunds) {
      const got = adjustments.filter((a) => a.ref === re);
      if (got.length !== 1 || got[0]!.cents !== -v.amount)
        problems.push(
          `refund ${re} of ${v.amount} cents: debited ${JSON.stringify(got.map((g) => g.cents))}, expected once`,
        );
    }
    for (const a of adjustments)
      if (!expectedRefunds.some(([re]) => re === a.ref))
        problems.push(`adjustment ${a.ref} (${a.cents}) matches no refund`);
    // Charges: what the answers claimed, under their billing refs, against the Ledger's charges.
    const charges = entries.filter((e) => e.kind === "charge");
    const chargeByRef = new Map<string, LedgerEntry>();
    for (const c of charges) {
      if (chargeByRef.has(c.ref)) problems.push(`two charges for request ${c.ref}`);
      chargeByRef.set(c.ref, c);
    }
    const claims = new Map<string, Set<number>>();
    const claim = (ref: string, cents: number) => claims.set(ref, (claims.get(ref) ?? new Set()).add(cents));
    const answered = edge.filter((a) => a.account === acct.name && a.status !== 0);
    for (const a of answered)
      if (a.chargedCents !== undefined && a.chargedCents > 0)
        claim(a.originalRequest ?? a.requestId ?? "?", a.chargedCents);
    // A call's last answer claims its charge even when it is 0 (nothing may be charged then).
    const lastOfCall = new Map<number, Attempt>();
    for (const a of answered) lastOfCall.set(a.call, a);
    for (const a of lastOfCall.values()) if (a.chargedCents === 0) claim(a.originalRequest ?? a.requestId ?? "?", 0);
    let clientCharged = 0;
    for (const [ref, cents] of claims) {
      const positive = [...cents].filter((c) => c > 0);
      if (positive.length > 1)
        problems.push(`request ${ref}: answers claim different charges ${JSON.stringify([...cents])}`);
      const got = chargeByRef.get(ref);
      if (positive.length) {
        clientCharged += positive[0]!;
        if (!got)
          problems.push(`request ${ref}: answered charged ${positive[0]} cents, but the Ledger has no charge for it`);
        else if (-got.cents !== positive[0])
          problems.push(`request ${ref}: answered charged ${positive[0]}, the Ledger charged ${-got.cents}`);
      } else if (got) {
        problems.push(
          `request ${ref}: answered charged 0, the Ledger charged ${-got.cents}${got.detail.hold_expired ? " (its hold expired)" : ""}`,
        );
      }
    }
    // Charges no answer claims: a request the client got no answer for (it gave up waiting; it is
    // charged all the same, docs/design/billing.md) — at most one per such request of the account, run or
    // write, whose request id the client never saw — or a hold that expired unsettled.
    let expired = 0;
    let unanswered = 0;
    const unclaimed = charges.filter((c) => !claims.has(c.ref));
    const noAnswer = edge.filter(
      (a) => a.account === acct.name && a.status === 0 && (a.op === "sigil_action" || WRITE_OPS.has(a.op)),
    ).length;
    for (const c of unclaimed) {
      if (c.detail.hold_expired) expired += -c.cents;
      else unanswered += -c.cents;
    }
    if (unclaimed.length > noAnswer) {
      for (const c of unclaimed) {
        problems.push(
          `charge ${c.ref} (${-c.cents} cents, ${c.op ?? "?"}${c.detail.hold_expired ? ", its hold expired" : ""}) answers no request the client got an answer for (${unclaimed.length} such charges, ${noAnswer} requests without an answer)`,
        );
      }
    }
    const ledgerCharged = charges.reduce((s, c) => s - c.cents, 0);
    clientChargedTotal += clientCharged;
    ledgerChargedTotal += ledgerCharged;
    expiredTotal += expired;
    unansweredTotal += unanswered;
    const creditsSum = credits.reduce((s, c) => s + c.cents, 0);
    const refundsSum = -adjustments.reduce((s, c) => s + c.cents, 0);
    ledgerRows.push([
      acct.name,
      expectedPis.length,
      creditsSum,
      refundsSum,
      charges.length,
      ledgerCharged,
      clientCharged,
      unanswered,
      expired,
      audit.settledCents,
      audit.heldCents,
      audit.consistent ? "yes" : "NO",
      problems.length,
    ]);
    ledgerJson.push({
      account: acct.name,
      payments: expectedPis.length,
      credited_cents: creditsSum,
      refunded_cents: refundsSum,
      charges: charges.length,
      ledger_charged_cents: ledgerCharged,
      client_charged_cents: clientCharged,
      expired_hold_cents: expired,
      unanswered_cents: unanswered,
      settled_cents: audit.settledCents,
      held_cents: audit.heldCents,
      audit_consistent: audit.consistent,
      problems: problems.length,
    });
    for (const p of problems) ledgerProblems.push(`${acct.name}: ${p}`);
  }
  for (const l of table(
    [
      "account",
      "payments",
      "credited",
      "refunded",
      "charges",
      "ledger charged",
      "client charged",
      "not answered",
      "expired holds",
      "settled",
      "held",
      "audit ok",
      "problems",
    ],
    ledgerRows,
  ))
    out(l);
  out(
    "(charged, in cents: what the Ledger charged; what the answers said; requests the client got no answer for; holds that expired unsettled)",
  );
  for (const p of ledgerProblems.slice(0, 40)) out(`  ${p}`);
  if (ledgerProblems.length > 40) out(`  … ${ledgerProblems.length - 40} more`);
  rules.push({
    name: "no credit lost or counted twice, every charge once and as answered (the ledger audit)",
    ok: ledgerProblems.length === 0,
    detail: ledgerProblems.slice(0, 50),
  });

  // --- runs answered twice -----------------------------------------------------------------------
  out();
  out("-- runs answered twice");
  const twice: string[] = [];
  const byRequestId = new Map<string, number>();
  for (const a of edge) if (a.requestId) byRequestId.set(a.requestId, (byRequestId.get(a.requestId) ?? 0) + 1);
  for (const [id, n] of byRequestId) if (n > 1) twice.push(`request id ${id} on ${n} answers`);
  const runAnswers = edge.filter((a) => a.run?.receipt);
  const byReceipt = new Map<string, Attempt[]>();
  for (const a of runAnswers) byReceipt.set(a.run!.receipt!, [...(byReceipt.get(a.run!.receipt!) ?? []), a]);
  for (const [, as] of byReceipt) {
    if (as.length < 2) continue;
    const keys = new Set(as.map((a) => a.idempotencyKey));
    if (keys.size > 1 || as.filter((a) => !a.replayed).length > 1)
      twice.push(
        `receipt of request ${as[0]!.run!.receiptRequestId} on ${as.length} answers (${[...keys].join(", ")})`,
      );
  }
  let reruns = 0;
  const runCalls = d.calls.filter(
    (c) => c.token !== undefined && (c.kind === "run" || c.kind === "sign" || c.kind === "probe"),
  );
  for (const c of runCalls) {
    const executed = d.counts[c.token!] ?? 0;
    const attempts = edge.filter((a) => a.call === c.id);
    const lost = attempts.filter((a) => a.status === 503 && a.code === "enclave_unavailable").length;
    const answeredOk = attempts.some((a) => a.status === 200 && a.run && !a.run.hasError);
    if (answeredOk && executed === 0) twice.push(`run ${c.token} answered but never executed`);
    if (executed > 1) {
      if (executed > 1 + lost)
        twice.push(
          `run ${c.token} executed ${executed} times for one Idempotency-Key (attempts lost with their enclave: ${lost})`,
        );
      else reruns++;
    }
  }
  out(
    `${runCalls.length} runs, ${runAnswers.length} run answers with receipts, ${byReceipt.size} distinct receipts, ${byRequestId.size} request ids; ` +
      `re-run after an attempt lost with its enclave (documented): ${reruns}; answered twice: ${twice.length}`,
  );
  for (const t of twice.slice(0, 20)) out(`  ${t}`);
  rules.push({ name: "zero runs answered twice", ok: twice.length === 0, detail: twice.slice(0, 50) });

  // --- writes made twice -------------------------------------------------------------------------
  // Each write names what it makes with a name of its own: the chain must have it once if the write
  // was answered, at most once if not (the client gave up, or the enclave was lost with it).
  const writeProblems: string[] = [];
  const writeCalls = d.calls.filter((c) => c.kind === "write" && c.token !== undefined);
  let unansweredActed = 0;
  for (const c of writeCalls) {
    const n = d.namesOnChain.get(c.account)?.get(c.token!) ?? 0;
    if (n > 1) writeProblems.push(`${c.op} ${c.token} (${c.account}): made ${n} times for one Idempotency-Key`);
    else if (c.ok && n !== 1)
      writeProblems.push(`${c.op} ${c.token} (${c.account}): answered, but the chain has it ${n} times`);
    else if (!c.ok && n === 1) unansweredActed++;
  }
  out();
  out(
    `-- writes: ${writeCalls.length} (${writeCalls.filter((c) => c.ok).length} answered); made twice: ${writeProblems.filter((p) => p.includes("times for one")).length}; ` +
      `ended in an error yet made on chain: ${unansweredActed} (write_outcome_unknown and the like: the client must look)`,
  );
  for (const p of writeProblems.slice(0, 20)) out(`  ${p}`);
  rules.push({
    name: "zero writes made twice, every answered write made once",
    ok: writeProblems.length === 0,
    detail: writeProblems.slice(0, 50),
  });

  // --- webhooks ---------------------------------------------------------------------------------
  out();
  out("-- webhooks");
  const stripeProblems: string[] = [];
  const deliveredOk = new Set(d.stripeDeliveries.filter((x) => x.ok).map((x) => x.eventId));
  for (const e of d.stripeEvents)
    if (!deliveredOk.has(e.id))
      stripeProblems.push(`Stripe event ${e.id} (${e.type}) never delivered to the edge with a 2xx`);
  const resent = d.stripeDeliveries.filter((x) => x.resent && x.attempt === 1).length;
  const stripeFailedAttempts = d.stripeDeliveries.filter((x) => !x.ok);
  out(
    `Stripe → edge: ${d.stripeEvents.length} events, ${d.stripeDeliveries.length} delivery attempts (${resent} re-sends of past events, ${stripeFailedAttempts.length} attempts not 2xx` +
      `${stripeFailedAttempts.length ? `: ${[...new Set(stripeFailedAttempts.map((x) => x.status ?? x.error))].join(", ")}` : ""})`,
  );
  const userProblems: string[] = [];
  let userEvents = 0;
  let userDeliveries = 0;
  for (const acct of d.accounts.filter((a) => a.traffic)) {
    const events = d.received.get(acct.name) ?? [];
    userEvents += events.length;
    userDeliveries += events.reduce((s, e) => s + e.deliveries, 0);
    const credited = (d.ledgers.get(acct.name)?.entries ?? []).filter((e) => e.kind === "credit").map((e) => e.ref);
    for (const pi of credited) {
      const told = events.filter((e) => e.type === "payment.credited" && e.data.payment_intent_id === pi);
      if (told.length !== 1)
        userProblems.push(`${acct.name}: payment ${pi} credited, told by ${told.length} payment.credited events`);
    }
    for (const e of events)
      if (e.type === "payment.credited" && !credited.includes(String(e.data.payment_intent_id)))
        userProblems.push(
          `${acct.name}: payment.credited ${e.id} for ${e.data.payment_intent_id}, which was not credited`,
        );
    const failedAtStripe = new Map<string, Set<string>>();
    for (const ev of d.stripeEvents) {
      if (ev.type !== "payment_intent.payment_failed") continue;
      const o = ev.data.object as { id: string; metadata?: { account?: string } };
      if (o.metadata?.account !== acct.master) continue;
      failedAtStripe.set(o.id, (failedAtStripe.get(o.id) ?? new Set()).add(ev.id));
    }
    for (const [pi, ids] of failedAtStripe) {
      const told = events.filter((e) => e.type === "payment.failed" && e.data.payment_intent_id === pi).length;
      if (told !== ids.size)
        userProblems.push(
          `${acct.name}: payment ${pi} failed ${ids.size} time(s) at Stripe, told by ${told} payment.failed events`,
        );
    }
  }
  out(
    `edge → accounts' endpoints: ${userEvents} events, ${userDeliveries} deliveries (${userDeliveries - userEvents} repeats of an event already received), ${d.receiverRefused} refused by the receiver`,
  );
  for (const p of [...stripeProblems, ...userProblems].slice(0, 20)) out(`  ${p}`);
  rules.push({
    name: "every Stripe event reached the edge; each payment told to the account's webhook once (failures once per Stripe event)",
    ok: stripeProblems.length === 0 && userProblems.length === 0,
    detail: [...stripeProblems, ...userProblems].slice(0, 50),
  });

  if (Object.keys(d.edgeErrors).length) {
    out();
    out(
      `-- the edge's error-level log lines: ${Object.entries(d.edgeErrors)
        .map(([m, n]) => `"${m}" ×${n}`)
        .join(", ")}`,
    );
  }

  // --- acceptance --------------------------------------------------------------------------------
  out();
  out("-- acceptance");
  for (const r of rules) {
    out(`${r.ok ? "PASS" : "FAIL"}  ${r.name}`);
    if (!r.ok) for (const x of r.detail.slice(0, 10)) out(`        ${x}`);
  }
  const ok = rules.every((r) => r.ok);
  const fiveJson = fiveGroups.map((g) => ({
    from_s: round((g.from - d.loadFrom) / 1000),
    to_s: round((g.to - d.loadFrom) / 1000),
    status: g.status,
    code: g.code,
    retry_after: g.retryAfter,
    count: g.n,
  }));
  const json = {
    soak: "sigil",
    ok,
    started_at: d.startedAt.toISOString(),
    minutes: d.minutes,
    machine: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}`,
    node: process.version,
    capacity_calls_per_s: round(d.capacity.callsPerSecond),
    load: d.load,
    rate_calls_per_s: round(d.rate),
    calls_started: d.started,
    shed: d.shed,
    by_kind: byKind,
    latency_ms: overall,
    latency_per_minute_ms: latency,
    cpu_pct: cpuAll ? { machine: round(cpuAll.machine), soak: round(cpuAll.soak), others: round(cpuAll.others) } : null,
    five_xx: fiveJson,
    faults: d.faults.map((f) => ({ name: f.name, at_s: round((f.at - d.loadFrom) / 1000), ok: f.ok, ...f.effect })),
    restarts: recoveries.map((r) => ({
      at_s: round((r.f.at - d.loadFrom) / 1000),
      kill_to_ready_ms: r.f.effect.kill_to_ready_ms,
      ready_to_served_ms: Number.isFinite(r.served) ? Math.round(r.served) : null,
    })),
    ledger: ledgerJson,
    client_charged_cents: clientChargedTotal,
    ledger_charged_cents: ledgerChargedTotal,
    expired_hold_cents: expiredTotal,
    unanswered_cents: unansweredTotal,
    runs_answered_twice: twice.length,
    writes_made_twice: writeProblems.filter((p) => p.includes("times for one")).length,
    documented_reruns: reruns,
    stripe_events: d.stripeEvents.length,
    stripe_resends: resent,
    user_webhook_events: userEvents,
    rules: rules.map((r) => ({ name: r.name, ok: r.ok })),
  };
  // The summary, as docs/operations/soak.md shows it.
  const loadEdge = edge.filter((a) => inLoad(a) && (LOAD_KINDS as readonly string[]).includes(a.kind));
  const statusCounts = new Map<number, number>();
  for (const a of loadEdge) statusCounts.set(a.status, (statusCounts.get(a.status) ?? 0) + 1);
  const codeCounts = new Map<string, number>();
  for (const a of edge)
    if (a.status >= 500)
      codeCounts.set(
        `${a.status} ${a.code ?? "?"}${a.retryAfter === undefined ? " (no Retry-After)" : ""}`,
        (codeCounts.get(`${a.status} ${a.code ?? "?"}${a.retryAfter === undefined ? " (no Retry-After)" : ""}`) ?? 0) +
          1,
      );
  const loadCalls = d.calls.filter((c) => (LOAD_KINDS as readonly string[]).includes(c.kind) && c.at >= d.loadFrom);
  const faultCount = (n: FaultName) => d.faults.filter((f) => f.name === n).length;
  const credited = ledgerJson.reduce((t, l) => t + Number(l.credited_cents), 0);
  const payments = ledgerJson.reduce((t, l) => t + Number(l.payments), 0);
  const refunded = ledgerJson.reduce((t, l) => t + Number(l.refunded_cents), 0);
  const markdown = [
    `| | |`,
    `|---|---|`,
    `| load | ${d.minutes} min, open loop at ${Math.round(d.load * 100)} % of the measured ${d.capacity.callsPerSecond.toFixed(1)} calls/s = ${d.rate.toFixed(1)} calls/s; ${loadCalls.length} calls (${loadCalls.filter((c) => !c.ok).length} ended in an error after the SDK's retries), ${loadEdge.length} requests, ${loadEdge.filter((a) => a.n > 0).length} of them retries |`,
    `| requests by status | ${[...statusCounts]
      .sort((a, b) => a[0] - b[0])
      .map(([st, n]) => `${st === 0 ? "no answer" : st} × ${n}`)
      .join(", ")} |`,
    `| 5xx (whole run) | ${codeCounts.size ? [...codeCounts].map(([c, n]) => `${c} × ${n}`).join(", ") : "none"} |`,
    `| p50 / p99 (ms) | ${LOAD_KINDS.map((k) => `${k} ${fmtMs(overall[k]!.p50)} / ${fmtMs(overall[k]!.p99)}`).join(", ")} |`,
    `| CPU (of the machine's ${cpus().length} cores, load phase) | ${cpuAll ? `busy ${Math.round(cpuAll.machine)} %: the soak's processes ${Math.round(cpuAll.soak)} %, other processes ${Math.round(cpuAll.others)} %` : "not measured"} |`,
    `| faults | ${faultCount("enclave_kill")} enclave kills, ${faultCount("rpc_stop")} chain RPC stops of 10 s, ${faultCount("stripe_chaos")} Stripe replays and reorders (${resent} events re-sent), ${faultCount("session_drop")} session drops |`,
    `| recovery after each restart (ready → first run answered) | ${recoveries.map((r) => msOrNever(r.served)).join(", ")} (kill → ready ${recoveries.map((r) => `${r.f.effect.kill_to_ready_ms} ms`).join(", ")}) |`,
    `| ledger audit | ${d.accounts.length} accounts, every audit() consistent: ${ledgerJson.every((l) => l.audit_consistent) ? "yes" : "NO"}, holds left ${ledgerJson.reduce((t, l) => t + Number(l.held_cents), 0)}; ${payments} payments credited once each (${credited} cents), ${refunded} cents refunded; charged: client ${clientChargedTotal} cents, ledger ${ledgerChargedTotal} cents (of requests the client got no answer for ${unansweredTotal}, expired holds ${expiredTotal}); problems ${ledgerProblems.length} |`,
    `| runs answered twice | ${twice.length} (${runCalls.length} runs; ${reruns} re-run after an attempt lost with its enclave, as documented) |`,
    `| writes made twice | ${writeProblems.filter((p) => p.includes("times for one")).length} (${writeCalls.length} writes) |`,
    `| webhooks | Stripe → edge ${d.stripeEvents.length} events, ${d.stripeDeliveries.length} deliveries; edge → accounts ${userEvents} events, each payment told once: ${userProblems.length === 0 ? "yes" : "NO"} |`,
    `| acceptance | ${
      rules.every((r) => r.ok)
        ? "every rule passed"
        : `FAILED: ${rules
            .filter((r) => !r.ok)
            .map((r) => r.name)
            .join("; ")}`
    } |`,
  ];
  return { lines, rules, ok, json, fiveXx, markdown };
}
