// `npm run bench:ledger [-- --repeats 3] [-- --only ledger,runs,isolates,profile]`: what one account's Ledger
// Durable Object takes per second, and what billing adds to a run. The edge is the production bundle
// under workerd (workerd.ts), billing on, against its own anvil and enclave (test/harness/stack.ts).
//
// (a) The raw object: a side Worker in the edge's workerd process, bound to the edge's own Ledger
//     class (no route of the edge's), sends ONE account's Ledger hold+settle pairs (the two calls a
//     run made before credit leases), with 1, 32 and 128 in flight, then commits of 1, 8 and 32
//     charges one after another (what an isolate's credit lease sends, workers/billing/lease.ts),
//     each with a real run's detail (its receipt). Ops/s, latency as the Worker sees it, and the
//     workerd process's CPU. Beside them, the eth_call billing made per run before the edge's key
//     cache (`billingOf`), timed from the side Worker the same way.
// (b) Metered hello runs of one account end to end through the edge at concurrency 1, 32 and 128,
//     on three workerd processes serving the same bundle: billing off; billing on for an account with
//     no webhooks (no Webhooks Durable Object call per run); billing on for an account with a webhook
//     endpoint (the edge tells its Webhooks object of each settle). At concurrency 1 the three take
//     turns, request by request, so they share every moment of the machine's load: "on − off" is
//     what billing adds to a run, "hooked − on" what the Webhooks call adds. The Ledger counts its
//     calls (`calls()`), so each billing-on row says how many a run cost. `--repeats N` makes each
//     figure the median of N passes.
// (c) One account's runs spread over three copies of the edge in one workerd process, each its own
//     Worker (own isolate, key cache and credit lease) bound to one set of Durable Objects: what
//     several edge machines look like to one account's Ledger.
// (d) `--only profile`: a CPU profile of the edge's isolate (workerd's inspector) at 1 and 32 clients,
//     billing off and on, its busiest functions a run side by side: where billing's JavaScript goes.
//
// CPU is each process's utime+stime from /proc/<pid>/stat over the window, divided by the window's
// operations (the Ledger object runs in the edge's process here, so its CPU is counted with the
// edge's). The last line of output is one JSON object: {"bench":"ledger", "ledger":[…], "commits":[…],
// "chain_read":{…}, "runs":[…], "added":[…], "one_account_isolates":[…]}.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFunctionData } from "viem";
import { computeCid } from "../../shared/cid.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack } from "../harness/stack.ts";
import { cpuMs } from "./proc.ts";
import { closeAgent, httpTarget, measure, measureInTurn, post, type Measured, type Target } from "./measure.ts";
import { freePort } from "../../bin/stack/edge.ts";
import { summarizeProfile } from "./profile.ts";
import { profileWorkerd, startWorkerd, type SideWorker, type Workerd } from "./workerd.ts";

const HELLO = "async function main() { return 'hello' }";
/** `--repeats N`: how many passes of (b) each figure is the median of (the acceptance reads 3). */
const REPEATS = Math.max(1, Number(process.argv[process.argv.indexOf("--repeats") + 1]) || 1);
/** `--only ledger,runs,isolates,profile`: which parts to measure (all but the profile by default). */
const ONLY = new Set(
  (process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1]! : "ledger,runs,isolates").split(
    ",",
  ),
);
/** How many edge isolates (c) spreads one account's runs over. */
const ISOLATES = 3;
/** What a run holds: the enclaves' default run timeout (60 s) in cents, as meteredRun does. */
const RUN_HOLD_CENTS = 60;

/**
 * The side Worker: `/credit` puts cents in an account's Ledger (a payment nobody made), `/audit`
 * answers its audit, `/pairs` sends `n` hold+settle pairs, `c` at a time, and answers the window's
 * length and each pair's latency (workerd's clock moves at each I/O, which every await here is, in
 * whole milliseconds); `/reads` makes `n` eth_calls one after another, as billing's read of the key.
 */
const SIDE: SideWorker = {
  objects: { LEDGER: "Ledger" },
  module: `
export default {
  async fetch(request, env) {
    try {
      return await serve(request, env);
    } catch (err) {
      return new Response(String(err && err.stack || err), { status: 500 });
    }
  },
};

async function serve(request, env) {
    const url = new URL(request.url);
    const q = (k) => url.searchParams.get(k);
    const ledger = env.LEDGER.get(env.LEDGER.idFromName(q("account")));
    if (url.pathname === "/credit") return Response.json(await ledger.credit("pi_bench_" + crypto.randomUUID(), Number(q("cents"))));
    if (url.pathname === "/audit") return Response.json(await ledger.audit());
    if (url.pathname === "/reads") {
      // The chain read billing makes for each request (the key's account and cap), as a bare eth_call.
      const { rpc, to, data } = await request.json();
      const latencies = [];
      const started = performance.now();
      for (let i = 0; i < Number(q("n")); i++) {
        const t = performance.now();
        const res = await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "eth_call", params: [{ to, data }, "latest"] }) });
        const body = await res.json();
        if (!body.result) throw new Error("eth_call: " + JSON.stringify(body));
        latencies.push(performance.now() - t);
      }
      return Response.json({ ms: performance.now() - started, latencies });
    }
    if (url.pathname === "/calls") return Response.json(await ledger.calls());
    if (url.pathname === "/commits") {
      // What an isolate's credit lease sends: one lease, then n charges committed k at a time, one
      // commit after another, each with a real run's detail (its receipt).
      const n = Number(q("n")), k = Number(q("k"));
      const detail = JSON.parse(await request.text());
      const id = crypto.randomUUID();
      await ledger.lease(id, n, 0, 600000);
      const latencies = [];
      const started = performance.now();
      for (let done = 0; done < n; done += k) {
        const charges = [];
        for (let i = done; i < Math.min(n, done + k); i++) charges.push({ ref: id + ":" + i, cents: 1, op: "run", detail });
        const t = performance.now();
        await ledger.commit(id, { charges, opened: [], closed: [], returnCents: 0, inFlightCents: 0, ttlMs: 600000 });
        latencies.push(performance.now() - t);
      }
      await ledger.commit(id, { charges: [], opened: [], closed: [], returnCents: n, inFlightCents: 0, ttlMs: 0 });
      return Response.json({ ms: performance.now() - started, latencies });
    }
    if (url.pathname === "/pairs") {
      const n = Number(q("n")), c = Number(q("c")), cents = Number(q("hold"));
      const detail = JSON.parse(await request.text());
      const prefix = crypto.randomUUID();
      const latencies = [];
      let next = 0;
      const client = async () => {
        while (next < n) {
          const ref = prefix + ":" + next++;
          const t = performance.now();
          const held = await ledger.hold(ref, cents, cents * 1000 + 300000, undefined, { op: "run" });
          if (held.granted === 0) throw new Error("the bench account ran out of credit");
          await ledger.settle(ref, 1, undefined, { op: "run", detail });
          latencies.push(performance.now() - t);
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: c }, client));
      return Response.json({ ms: performance.now() - started, latencies });
    }
    return new Response("not found", { status: 404 });
}
`,
};

/** Runs `work` and answers its result with each of `pids`' CPU ms over it. */
async function withCpu<T>(
  pids: number[],
  work: () => Promise<T>,
): Promise<{ result: T; cpu: number[]; seconds: number }> {
  const before = pids.map(cpuMs);
  const started = performance.now();
  const result = await work();
  const seconds = (performance.now() - started) / 1000;
  return { result, cpu: pids.map((p, i) => cpuMs(p) - before[i]!), seconds };
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
function percentile(sorted: number[], p: number): number {
  return round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0);
}

async function main(): Promise<void> {
  // The machine may be shared: its load says how far to trust the latencies (CPU per op moves less).
  const loadBefore = loadavg()[0]!.toFixed(2);
  const stack = await startTestStack();
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-bench-ledger-"));
  const edges: Workerd[] = [];
  try {
    const vars = {
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_URLS: stack.enclaveUrl,
      SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
      SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
      SIGIL_RPC_URL: stack.rpcUrl,
      SIGIL_CONTRACT_ADDRESS: stack.contract,
      // A few clients send everything: rate limits would only measure themselves.
      SIGIL_RATE_LIMIT_PER_KEY: "100000000",
      SIGIL_RATE_LIMIT_PER_IP: "100000000",
      // Nor would a share of admission's places per client: they are one client to the edge.
      SIGIL_EDGE_CLIENT_SHARE_PERCENT: "100",
      // SIGIL_LEASE_COMMIT_DELAY_MS from the bench's environment, to compare commit delays.
      ...(process.env.SIGIL_LEASE_COMMIT_DELAY_MS
        ? { SIGIL_LEASE_COMMIT_DELAY_MS: process.env.SIGIL_LEASE_COMMIT_DELAY_MS }
        : {}),
    };
    // `--only profile` opens both processes' inspectors, for CPU profiles of the edge's isolate.
    const inspect = async () => (ONLY.has("profile") ? { inspectorPort: await freePort() } : {});
    const on = await startWorkerd({ dir: join(stateDir, "on"), vars, side: SIDE, ...(await inspect()) });
    edges.push(on);
    const off = await startWorkerd({
      dir: join(stateDir, "off"),
      vars: { ...vars, SIGIL_BILLING: "off" },
      bundleDir: on.bundleDir,
      ...(await inspect()),
    });
    edges.push(off);
    const hooked = await startWorkerd({ dir: join(stateDir, "hooked"), vars, bundleDir: on.bundleDir, side: SIDE });
    edges.push(hooked);

    const call = async (edge: Workerd, path: string, key: string | undefined, body: unknown) => {
      const r = await post(
        new URL(`${edge.url}/core/v1${path}`),
        key ? { "x-api-key": key } : {},
        JSON.stringify(body),
      );
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
      return JSON.parse(r.text) as Record<string, unknown>;
    };
    const side = async <T>(edge: Workerd, path: string, body?: unknown): Promise<T> => {
      const r = await post(new URL(`${edge.sideUrl}${path}`), {}, body === undefined ? "" : JSON.stringify(body));
      if (r.status !== 200) throw new Error(`side ${path}: ${r.status} ${r.text}`);
      return JSON.parse(r.text) as T;
    };
    const accountOf = (key: string) => apiKeyHash(key).toString(16).padStart(64, "0");
    /** A new account on `edge` allowed to run HELLO, with plenty of credit when billing is on. */
    const account = async (edge: Workerd, name: string) => {
      const key = (await call(edge, "/new_account", undefined, { account_name: name })).api_key as string;
      if (edge.sideUrl) await side(edge, `/credit?account=${accountOf(key)}&cents=100000000`);
      await call(edge, "/add_group", key, {
        group_name: "bench",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [await computeCid(HELLO)],
      });
      return key;
    };
    const keys = {
      off: await account(off, "bench off"),
      on: await account(on, "bench on"),
      hooked: await account(hooked, "bench hooked"),
    };
    // An endpoint nobody listens at: a successful run raises no event, so what is measured is the
    // Webhooks object being told of each settle (balance.low's check), not deliveries.
    await call(hooked, "/webhooks", keys.hooked, { url: "http://127.0.0.1:9/hook" });

    const body = JSON.stringify({ code: HELLO, js_params: null });
    const target = (name: string, edge: Workerd, key: string): Target => ({
      ...httpTarget(new URL(`${edge.url}/core/v1/sigil_action`), { "x-api-key": key }, body),
      name,
    });
    const targets = {
      off: target("billing off", off, keys.off),
      on: target("billing on", on, keys.on),
      hooked: target("billing on + webhooks", hooked, keys.hooked),
    };

    // A real run's settle detail (its CID, duration and signed receipt), for the raw pairs.
    const sample = await call(on, "/sigil_action", keys.on, { code: HELLO, js_params: null });
    const detail = { cid: sample.cid, duration_ms: sample.duration_ms, receipt: JSON.stringify(sample.receipt) };

    // Warm-up: JIT, the channel sessions, the sandbox workers, each Durable Object.
    for (const t of Object.values(targets)) await measure(t, 8, 300);
    await side(on, `/pairs?account=${accountOf(keys.on)}&n=2000&c=8&hold=${RUN_HOLD_CENTS}`, detail);

    // (a) The raw Ledger: hold+settle pairs on one account, from inside workerd.
    const ledgerRows = [];
    for (const [concurrency, pairs] of ONLY.has("ledger")
      ? ([
          [1, 3_000],
          [32, 10_000],
          [128, 10_000],
        ] as const)
      : []) {
      const { result, cpu, seconds } = await withCpu([on.pid], () =>
        side<{ ms: number; latencies: number[] }>(
          on,
          `/pairs?account=${accountOf(keys.on)}&n=${pairs}&c=${concurrency}&hold=${RUN_HOLD_CENTS}`,
          detail,
        ),
      );
      const sorted = result.latencies.sort((a, b) => a - b);
      const row = {
        concurrency,
        pairs,
        pairs_per_s: Math.round(pairs / seconds),
        p50_ms: percentile(sorted, 0.5),
        p99_ms: percentile(sorted, 0.99),
        workerd_cpu_ms_per_pair: round(cpu[0]! / pairs, 3),
      };
      ledgerRows.push(row);
      console.log(
        `ledger hold+settle c=${String(concurrency).padEnd(3)} ${String(row.pairs_per_s).padStart(5)} pairs/s  p50 ${row.p50_ms.toFixed(2)} ms  p99 ${row.p99_ms.toFixed(2)} ms  workerd CPU ${row.workerd_cpu_ms_per_pair.toFixed(3)} ms/pair`,
      );
    }

    // (a2) The calls an isolate's credit lease makes instead: commits of k charges each.
    const commitRows = [];
    for (const k of ONLY.has("ledger") ? [1, 8, 32] : []) {
      const charges = 4_000;
      const { result, cpu, seconds } = await withCpu([on.pid], () =>
        side<{ ms: number; latencies: number[] }>(
          on,
          `/commits?account=${accountOf(keys.on)}&n=${charges}&k=${k}`,
          detail,
        ),
      );
      const sorted = result.latencies.sort((a, b) => a - b);
      const row = {
        charges_per_commit: k,
        charges,
        charges_per_s: Math.round(charges / seconds),
        commit_p50_ms: percentile(sorted, 0.5),
        workerd_cpu_ms_per_commit: round((cpu[0]! * k) / charges, 3),
        workerd_cpu_ms_per_charge: round(cpu[0]! / charges, 3),
      };
      commitRows.push(row);
      console.log(
        `ledger commit of ${String(k).padEnd(2)} charges: ${String(row.charges_per_s).padStart(6)} charges/s  p50 ${row.commit_p50_ms.toFixed(2)} ms a commit  workerd CPU ${row.workerd_cpu_ms_per_commit.toFixed(3)} ms a commit, ${row.workerd_cpu_ms_per_charge.toFixed(3)} ms a charge`,
      );
    }

    // What billing read from the chain for every run before the edge's key cache: one eth_call of the key's account and cap.
    let chainRead: { reads: number; p50_ms: number; workerd_cpu_ms_per_read: number } | undefined;
    if (ONLY.has("ledger")) {
      const reads = 1_000;
      const data = encodeFunctionData({
        abi: accountConfigAbi,
        functionName: "billingOf",
        args: [apiKeyHash(keys.on)],
      });
      const { result, cpu } = await withCpu([on.pid], () =>
        side<{ latencies: number[] }>(on, `/reads?n=${reads}`, { rpc: stack.rpcUrl, to: stack.contract, data }),
      );
      chainRead = {
        reads,
        p50_ms: percentile(
          result.latencies.sort((a, b) => a - b),
          0.5,
        ),
        workerd_cpu_ms_per_read: round(cpu[0]! / reads, 3),
      };
      console.log(
        `chain read (billingOf eth_call) p50 ${chainRead.p50_ms.toFixed(2)} ms  workerd CPU ${chainRead.workerd_cpu_ms_per_read.toFixed(3)} ms/read`,
      );
    }

    // (b) Metered hello runs through the edge.
    const runRows: Array<
      Measured & {
        path: string;
        concurrency: number;
        runs: number;
        workerd_cpu_ms_per_run: number;
        enclave_cpu_ms_per_run: number;
        ledger_calls_per_run?: number;
      }
    > = [];
    const order = ["off", "on", "hooked"] as const;
    const pidOf = { off: off.pid, on: on.pid, hooked: hooked.pid };
    const calls = async () => side<Record<string, number>>(on, `/calls?account=${accountOf(keys.on)}`);
    const callsPerRun = (before: Record<string, number>, after: Record<string, number>, runs: number) => {
      // Which calls, for the log: commits, lease asks, the enclaves' settlements.
      console.log(
        `  Ledger calls over ${runs} runs: ${Object.keys(after)
          .map((k) => `${k} ${after[k]! - (before[k] ?? 0)}`)
          .join(", ")}`,
      );
      return callsPerRunOf(before, after, runs);
    };
    const callsPerRunOf = (before: Record<string, number>, after: Record<string, number>, runs: number) =>
      round(Object.keys(after).reduce((t, k) => t + (after[k]! - (before[k] ?? 0)), 0) / runs, 3);
    type RunRow = (typeof runRows)[number] & { ledger_calls_per_run?: number };
    const passes: RunRow[][] = [];
    for (let pass = 0; pass < (ONLY.has("runs") ? REPEATS : 0); pass++) {
      const rows: RunRow[] = [];
      {
        const runs = 1_000;
        // One client, the three paths in turn; each path's CPU is its own process's.
        const before = await calls();
        const { result, cpu } = await withCpu([off.pid, on.pid, hooked.pid, stack.enclavePid], () =>
          measureInTurn(
            order.map((k) => targets[k]),
            runs,
          ),
        );
        const after = await calls();
        for (const [i, k] of order.entries()) {
          rows.push({
            path: targets[k].name,
            concurrency: 1,
            runs,
            ...result[i]!,
            workerd_cpu_ms_per_run: round(cpu[i]! / runs, 3),
            enclave_cpu_ms_per_run: round(cpu[3]! / (3 * runs), 3),
            ...(k === "on" ? { ledger_calls_per_run: callsPerRun(before, after, runs) } : {}),
          });
        }
      }
      for (const [concurrency, runs] of [
        [32, 3_000],
        [128, 3_000],
      ] as const) {
        for (const k of order) {
          const before = await calls();
          const { result, cpu } = await withCpu([pidOf[k], stack.enclavePid], () =>
            measure(targets[k], concurrency, runs),
          );
          const after = await calls();
          rows.push({
            path: targets[k].name,
            concurrency,
            runs,
            ...result,
            workerd_cpu_ms_per_run: round(cpu[0]! / runs, 3),
            enclave_cpu_ms_per_run: round(cpu[1]! / runs, 3),
            ...(k === "on" ? { ledger_calls_per_run: callsPerRun(before, after, runs) } : {}),
          });
        }
      }
      passes.push(rows);
    }
    // Each figure's median over the passes (one slow window on a shared machine moves none of them).
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)]!;
    };
    for (const [i, first] of (passes[0] ?? []).entries()) {
      const all = passes.map((rows) => rows[i]!);
      const m = (f: (r: RunRow) => number) => median(all.map(f));
      runRows.push({
        ...first,
        p50_ms: m((r) => r.p50_ms),
        p99_ms: m((r) => r.p99_ms),
        rps: m((r) => r.rps),
        workerd_cpu_ms_per_run: m((r) => r.workerd_cpu_ms_per_run),
        enclave_cpu_ms_per_run: m((r) => r.enclave_cpu_ms_per_run),
        ...(first.ledger_calls_per_run === undefined
          ? {}
          : { ledger_calls_per_run: m((r) => r.ledger_calls_per_run!) }),
      });
    }
    console.log("");
    console.log(`(median of ${REPEATS} pass${REPEATS === 1 ? "" : "es"})`);
    console.log("| path | concurrency | p50 | p99 | runs/s | workerd CPU/run | enclave CPU/run | Ledger calls/run |");
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (const r of runRows) {
      console.log(
        `| ${r.path} | ${r.concurrency} | ${r.p50_ms.toFixed(2)} ms | ${r.p99_ms.toFixed(2)} ms | ${r.rps} | ${r.workerd_cpu_ms_per_run.toFixed(3)} ms | ${r.enclave_cpu_ms_per_run.toFixed(3)} ms | ${r.ledger_calls_per_run?.toFixed(3) ?? ""} |`,
      );
    }
    const at = (path: string, c: number) => runRows.find((r) => r.path === path && r.concurrency === c)!;
    const added = (runRows.length ? [1, 32, 128] : []).map((c) => ({
      concurrency: c,
      ledger_p50_ms: round(at(targets.on.name, c).p50_ms - at(targets.off.name, c).p50_ms),
      rps_on_vs_off: round(at(targets.on.name, c).rps / at(targets.off.name, c).rps, 3),
      webhooks_p50_ms: round(at(targets.hooked.name, c).p50_ms - at(targets.on.name, c).p50_ms),
      ledger_cpu_ms: round(
        at(targets.on.name, c).workerd_cpu_ms_per_run - at(targets.off.name, c).workerd_cpu_ms_per_run,
        3,
      ),
      webhooks_cpu_ms: round(
        at(targets.hooked.name, c).workerd_cpu_ms_per_run - at(targets.on.name, c).workerd_cpu_ms_per_run,
        3,
      ),
    }));
    console.log("");
    for (const a of added) {
      console.log(
        `c=${String(a.concurrency).padEnd(3)} billing adds p50 ${a.ledger_p50_ms.toFixed(2)} ms, ${a.ledger_cpu_ms.toFixed(3)} ms workerd CPU a run, runs/s ${Math.round(a.rps_on_vs_off * 100)} % of billing off's; the Webhooks call adds p50 ${a.webhooks_p50_ms.toFixed(2)} ms, ${a.webhooks_cpu_ms.toFixed(3)} ms CPU`,
      );
    }

    // (d) Where billing's CPU goes: a CPU profile of the edge's isolate (its Durable Objects' JavaScript
    // included) at 32 clients, billing off and on, its busiest functions per run side by side.
    if (ONLY.has("profile")) {
      for (const [concurrency, runs] of [
        [1, 1_000],
        [32, 3_000],
      ] as const) {
        const summaries = [];
        for (const k of ["off", "on"] as const) {
          const edge = k === "on" ? on : off;
          const { profile } = await profileWorkerd(edge.inspectorPort!, "edge", () =>
            measure(targets[k], concurrency, runs),
          );
          summaries.push(summarizeProfile(profile, runs, targets[k].name, 40));
        }
        for (const s of summaries) {
          console.log(
            `\nprofile, ${s.file}, ${concurrency} client${concurrency === 1 ? "" : "s"}: ${round((s.busyMs * 1000) / runs, 1)} µs of JavaScript a run`,
          );
          for (const f of s.functions)
            console.log(
              `  ${f.usPerRun.toFixed(1).padStart(6)} µs/run  ${f.share.toFixed(1).padStart(5)} %  ${f.name}`,
            );
        }
      }
    }

    // (c) One account from several edge isolates at once (three Workers in one workerd process, bound
    // to one set of Durable Objects: what several edge machines look like to the account's Ledger),
    // each with its own key cache and credit lease, the clients spread over them.
    const sharedRows = [];
    const audited: Array<[Workerd, string]> = [
      [on, keys.on],
      [hooked, keys.hooked],
    ];
    if (ONLY.has("isolates")) {
      const shared = await startWorkerd({
        dir: join(stateDir, "shared"),
        vars,
        bundleDir: on.bundleDir,
        side: SIDE,
        isolates: ISOLATES,
      });
      edges.push(shared);
      const sharedKey = await account(shared, "bench shared");
      let turn = 0;
      const spread: Target = {
        name: `billing on, ${ISOLATES} isolates`,
        send: () => {
          const url = shared.urls[turn++ % shared.urls.length]!;
          return httpTarget(new URL(`${url}/core/v1/sigil_action`), { "x-api-key": sharedKey }, body).send();
        },
      };
      await measure(spread, 8 * ISOLATES, 300);
      audited.push([shared, sharedKey]);
      for (const [concurrency, runs] of [
        [32, 3_000],
        [128, 3_000],
      ] as const) {
        const before = await side<Record<string, number>>(shared, `/calls?account=${accountOf(sharedKey)}`);
        const { result, cpu } = await withCpu([shared.pid, stack.enclavePid], () => measure(spread, concurrency, runs));
        const after = await side<Record<string, number>>(shared, `/calls?account=${accountOf(sharedKey)}`);
        const row = {
          isolates: ISOLATES,
          concurrency,
          runs,
          ...result,
          workerd_cpu_ms_per_run: round(cpu[0]! / runs, 3),
          enclave_cpu_ms_per_run: round(cpu[1]! / runs, 3),
          ledger_calls_per_run: callsPerRun(before, after, runs),
        };
        sharedRows.push(row);
        console.log(
          `one account over ${ISOLATES} isolates, c=${String(concurrency).padEnd(3)} ${String(row.rps).padStart(5)} runs/s  p50 ${row.p50_ms.toFixed(2)} ms  workerd CPU ${row.workerd_cpu_ms_per_run.toFixed(3)} ms/run  Ledger calls ${row.ledger_calls_per_run.toFixed(3)}/run`,
        );
      }
    }

    // Every ledger still adds up, with nothing held, once the edges' last charges are in: a read of the
    // balance through an edge commits what its isolate has pending (answers go out before commits).
    for (const [edge, key] of audited) {
      for (const url of edge.urls) {
        const r = await fetch(`${url}/core/v1/billing/balance`, { headers: { "x-api-key": key } });
        await r.arrayBuffer();
      }
      const audit = await side<{ consistent: boolean; heldCents: number }>(edge, `/audit?account=${accountOf(key)}`);
      if (!audit.consistent || audit.heldCents !== 0) throw new Error(`ledger audit failed: ${JSON.stringify(audit)}`);
    }
    console.log(
      `machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}, load average ${loadBefore} before, ${loadavg()[0]!.toFixed(2)} after`,
    );
    console.log(
      JSON.stringify({
        bench: "ledger",
        ledger: ledgerRows,
        commits: commitRows,
        chain_read: chainRead,
        runs: runRows,
        one_account_isolates: sharedRows,
        added,
        load_average: [Number(loadBefore), Number(loadavg()[0]!.toFixed(2))],
      }),
    );
  } finally {
    closeAgent();
    for (const e of edges.reverse()) await e.stop();
    await stack.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
