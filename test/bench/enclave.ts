// `npm run bench:enclave`: hello-world and signing runs through the enclave's internal API on
// loopback, each sealed through the attested channel as the edge sends it, at concurrency 1 and 32:
// p50/p99 latency, runs per second, and the CPU time each run costs the enclave process (all its
// threads) and the benchmark's own process (the clients and their sealing), each figure the median
// of 3 measurements in a row. Then how far past its deadline a run ends whose code is one long
// built-in call after another (the watchdog ends it from outside its worker): the overshoot of 10
// such runs with a 1 s limit, alone and beside a stream of hello runs; and, on a fresh enclave,
// its resident memory (peak and steady) over a long run of hello runs at concurrency 32 (100 000
// by default, `--long-runs N`). It starts its own anvil and enclave (test/harness/stack.ts, as the test
// suites do). The last line of output is one JSON object with every result.
//
// Issue 30's costs of a guarded signature (test/bench/guarded.ts):
// - guardrails: the enclave's check of one signature request against a compiled guardrail, in this
//   process (the enclave's Node): a plain transfer under a transfers allow list, and an ERC-20
//   `transfer` decoded by the guardrail's ABI with argument conditions — median and p99 µs per check.
//   Then signing runs (one signTransaction each, a new nonce each run) of an unguarded wallet and of
//   a guarded one, through the enclave: what the guardrail adds to a run (latency at concurrency 1,
//   the kinds taking turns request by request; CPU per run at concurrency 32).
// - budgets: the edge (the production bundle under workerd, test/bench/workerd.ts) beside the stack.
//   (a) A wallet's Budgets Durable Object with two budgets, driven from a side Worker in the edge's
//   workerd (as bench:ledger drives the Ledger): decide() per call with 0, 1 000 and 5 000 entries in
//   both windows — workerd's CPU per call — and the enclave's request for it (askBudgets) to the
//   edge's /internal/v1/budgets from this process. (b) Signing runs of a guarded wallet with and
//   without budgets through the enclave, each sealed with the budget access the edge would give it
//   (this edge's URL and its token; the edge's own /sigil_action is not in the path, and makes the
//   same token for every run): what the reservation's round trip adds to a run, in the enclave and
//   in workerd. The budgeted wallet's object holds 1 000 entries before the runs, and its counters
//   are checked after: one signature counted per budgeted run.
//   A reservation sums every entry of each budget's window: its cost grows with the window (the
//   object rows say how much), and one wallet's object serves its reservations one at a time.
// `--only runs,overshoot,long,guardrails,budgets` (any of them; default all) picks the parts.
//
// `--profile`: instead, each script at concurrency 32 in an enclave of its own started with Node's
// `--cpu-prof`; the profiles (one per thread) go to .sigil/profiles/<script>/ and the busiest
// functions and files are printed with their microseconds per run (test/bench/profile.ts).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Address } from "viem";
import { computeCid } from "../../shared/cid.ts";
import { budgetLimits, type BudgetAccess, type BudgetRequest } from "../../shared/guardrails/budgets.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { askBudgets } from "../../enclave/authz/budgets.ts";
import { nodeAead } from "../../enclave/channel/nodeAead.ts";
import { issueBudgetToken } from "../../workers/budgets/token.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { newTestChannel } from "../harness/channel.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import {
  ALLOWED_BY,
  BUDGETED_GUARDRAIL,
  BUDGETS_SIDE,
  checkCost,
  GUARDRAIL,
  SIGN_TX,
  txParams,
  type PerCall,
  type TxKind,
} from "./guarded.ts";
import {
  agentFetch,
  channelTarget,
  closeAgent,
  measure,
  measureInTurn,
  measureRepeated,
  medianOf,
  post,
  type Measured,
  type Target,
} from "./measure.ts";
import { cpuMs } from "./proc.ts";
import { summarizeProfiles } from "./profile.ts";
import { startWorkerd, type Workerd } from "./workerd.ts";

const HELLO = "async function main() { return 'hello' }";
const SIGN =
  "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";
/** The same with the wallet's Solana key (Ed25519): its key is asked of the service thread every time, never offered. */
const SIGN_SOLANA =
  "async function main({ wallet }) { return Sigil.Actions.signSolanaMessage({ pkpId: wallet, message: 'bench' }) }";
/** 300 scans of a 16 MiB string: no interrupt poll for tens of milliseconds at a time. */
const INDEXOF_LOOP =
  'async function main() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return n }';

const PARTS = ["runs", "overshoot", "long", "guardrails", "budgets", "delegation"] as const;
type Part = (typeof PARTS)[number];

const { values: args } = parseArgs({
  options: {
    profile: { type: "boolean", default: false },
    "long-runs": { type: "string", default: "100000" },
    repeats: { type: "string", default: "3" },
    only: { type: "string", default: PARTS.join(",") },
  },
});
const root = join(import.meta.dirname, "../..");

/**
 * An account with a wallet and a group allowing the scripts, and a target per script; with
 * `guarded`, two more wallets of the group: one under GUARDRAIL, one under BUDGETED_GUARDRAIL.
 */
async function setUp(stack: TestStack, options: { guarded?: boolean } = {}) {
  const channel = newTestChannel({ fetch: agentFetch, aead: nodeAead });
  const call = async (op: string, body: unknown) => {
    const r = await channelTarget(channel, stack.enclaveUrl, op, body).send();
    if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Record<string, string>;
  };
  const { api_key: apiKey } = await call("new_account", { account_name: "bench" });
  const newWallet = async () => (await call("create_wallet", { api_key: apiKey })).wallet_address as Address;
  const wallet = await newWallet();
  const guarded = options.guarded ? { plain: await newWallet(), budgeted: await newWallet() } : undefined;
  await call("add_group", {
    api_key: apiKey,
    group_name: "bench",
    group_description: "",
    pkp_ids_permitted: [wallet, ...(guarded ? [guarded.plain, guarded.budgeted] : [])],
    cid_hashes_permitted: [
      await computeCid(HELLO),
      await computeCid(SIGN),
      await computeCid(SIGN_SOLANA),
      await computeCid(INDEXOF_LOOP),
      await computeCid(SIGN_TX),
    ],
  });
  // Each wallet's guardrail hash, as the receipts of its runs must name it.
  const hashes = guarded && {
    plain: (
      await call("set_wallet_guardrail", { api_key: apiKey, wallet_address: guarded.plain, guardrail: GUARDRAIL })
    ).guardrail_hash as string,
    budgeted: (
      await call("set_wallet_guardrail", {
        api_key: apiKey,
        wallet_address: guarded.budgeted,
        guardrail: BUDGETED_GUARDRAIL,
      })
    ).guardrail_hash as string,
  };
  const execute = (body: unknown) => channelTarget(channel, stack.enclaveUrl, "sigil_action", body);
  return {
    call,
    execute,
    enclavePid: stack.enclavePid,
    apiKey: apiKey as string,
    wallet,
    guarded: guarded && hashes ? { ...guarded, hashes } : undefined,
    hello: execute({ api_key: apiKey, code: HELLO, js_params: null }),
    sign: execute({ api_key: apiKey, code: SIGN, js_params: { wallet } }),
    signSolana: execute({ api_key: apiKey, code: SIGN_SOLANA, js_params: { wallet } }),
  };
}
type Bench = Awaited<ReturnType<typeof setUp>>;

const ms = (v: number) => `${v.toFixed(2)} ms`;
const cpu = (v: number | undefined) => (v === undefined ? "—" : `${(v * 1000).toFixed(0)} µs`);

async function profile(): Promise<void> {
  const runs = 8_000;
  const warm = 2_000;
  const results = [];
  for (const name of ["hello", "sign"] as const) {
    const dir = join(root, ".sigil/profiles", name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const stack = await startTestStack({ enclaveExecArgv: ["--cpu-prof", `--cpu-prof-dir=${dir}`] });
    let measured;
    try {
      const bench = await setUp(stack);
      const target: Target = bench[name];
      await measure(target, 32, warm);
      measured = await measure(target, 32, runs, { enclave: stack.enclavePid, client: process.pid });
      console.log(
        `${name} c=32: p50 ${ms(measured.p50_ms)}  ${measured.rps} runs/s  enclave CPU ${cpu(measured.cpu_ms_per_run?.enclave)}/run`,
      );
    } finally {
      // SIGTERM: the enclave closes its workers and exits, and Node writes each thread's profile.
      await stack.stop();
    }
    // The profile covers the whole process: set-up (a few operations) and warm-up are counted in the runs.
    console.log(
      `\n=== ${name}: where the enclave's CPU time goes (${runs} runs at concurrency 32 after ${warm} warm-up runs) ===`,
    );
    const threads = summarizeProfiles(dir, runs + warm);
    results.push({
      name,
      ...measured,
      threads: threads.map((t) => ({ file: t.file, busy_ms: t.busyMs, top: t.functions.slice(0, 10) })),
    });
  }
  closeAgent();
  console.log(JSON.stringify({ bench: "enclave-profile", results }));
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
const us = (v: number) => `${v.toFixed(2)} µs`;

/** hello, sign (secp256k1) and sign-sol (Ed25519, the wallet's Solana key) at concurrency 1 and 32, each the median of `repeats` measurements. */
async function runsPart(bench: Bench, pids: Record<string, number>, repeats: number) {
  const { hello, sign, signSolana } = bench;
  // Warm-up: JIT, the CID and permission caches, and as many prepared QuickJS instances as 32
  // runs in flight need (a worker makes one, about 5 ms, only when more runs are in flight than
  // it has instances: a measurement should not count the pool's growth to its peak).
  await measure(hello, 32, 2_000);
  await measure(sign, 32, 2_000);
  await measure(signSolana, 32, 2_000);

  console.log(
    `each row: the median of ${repeats} measurements in a row; CPU = user + system time of the process over the window, per run`,
  );
  console.log("script  c    p50        p99        runs/s   enclave CPU/run  client CPU/run  enclave RSS steady/peak");
  const results = [];
  for (const [name, target] of [
    ["hello", hello],
    ["sign", sign],
    ["sign-sol", signSolana],
  ] as const) {
    for (const [concurrency, runs] of [
      [1, 1_000],
      [32, 4_000],
    ] as const) {
      const r = { name, concurrency, runs, ...(await measureRepeated(target, concurrency, runs, pids, repeats)) };
      results.push(r);
      const rss = r.rss_mib?.enclave;
      console.log(
        `${name.padEnd(6)}  ${String(concurrency).padEnd(3)}  ${ms(r.p50_ms).padEnd(9)}  ${ms(r.p99_ms).padEnd(9)}  ${String(r.rps).padEnd(7)}  ${cpu(r.cpu_ms_per_run?.enclave).padEnd(15)}  ${cpu(r.cpu_ms_per_run?.client).padEnd(14)}  ${rss ? `${rss.steady} / ${rss.peak} MiB` : ""}`,
      );
    }
  }
  return results.map(({ each: _each, ...r }) => r);
}

/**
 * The deadline of a run whose code never polls: how long after its 1 s it is answered, alone and
 * while 8 clients keep hello runs coming (short slices: they do not hold its thread, so its own
 * deadline stays 1 s, and the watchdog works beside the channel's and the workers' traffic).
 */
async function overshootPart(bench: Bench) {
  const { call, apiKey } = bench;
  const overshoot: Array<{ neighbours: number; p50_ms: number; max_ms: number }> = [];
  for (const neighbours of [0, 8]) {
    const late: number[] = [];
    for (let i = 0; i < 10; i++) {
      let done = false;
      const traffic = Array.from({ length: neighbours }, async () => {
        while (!done) await call("sigil_action", { api_key: apiKey, code: HELLO, js_params: null });
      });
      const started = performance.now();
      const answer = await call("sigil_action", {
        api_key: apiKey,
        code: INDEXOF_LOOP,
        js_params: null,
        timeout_ms: 1000,
      });
      late.push(performance.now() - started - 1000);
      done = true;
      await Promise.all(traffic);
      if ((answer.error as unknown as { code?: string } | undefined)?.code !== "timeout")
        throw new Error(`the long built-in did not end in timeout: ${JSON.stringify(answer)}`);
    }
    late.sort((a, b) => a - b);
    const r = {
      neighbours,
      p50_ms: Math.round(late[Math.floor(late.length / 2)] as number),
      max_ms: Math.round(late[late.length - 1] as number),
    };
    overshoot.push(r);
    console.log(
      `deadline overshoot, ${neighbours} clients of hello runs beside it: p50 ${r.p50_ms} ms  max ${r.max_ms} ms (bound 250 ms)`,
    );
  }
  return overshoot;
}

/** The enclave's guardrail check per signature, in this process: each kind, and with a budgeted signature's digest. */
function guardrailChecks(): Record<string, PerCall> {
  const checks: Record<string, PerCall> = {
    "plain transfer (transfers allow list)": checkCost("transfer"),
    "erc20 transfer (ABI-decoded, 2 argument conditions)": checkCost("erc20"),
    "erc20 transfer + budget charge (payload digest)": checkCost("erc20", { charge: true }),
  };
  const width = Math.max(...Object.keys(checks).map((k) => k.length));
  console.log("");
  console.log(
    `guardrail check per signature, in this process (node ${process.version}, as the enclave's service thread makes it: the compiled guardrail's decision), each check timed on its own:`,
  );
  console.log(`  ${"request".padEnd(width)}  checks  median     p99        mean`);
  for (const [name, c] of Object.entries(checks))
    console.log(
      `  ${name.padEnd(width)}  ${String(c.calls).padEnd(6)}  ${us(c.median_us).padEnd(9)}  ${us(c.p99_us).padEnd(9)}  ${us(c.mean_us)}`,
    );
  return checks;
}

/** One measurement of the Budgets object from the side Worker. */
type ObjectRow = {
  op: "reserve" | "peek";
  concurrency: number;
  calls: number;
  /** Entries in each budget's window when the measurement began. */
  entries_before: number;
  calls_per_s: number;
  /** As the side Worker sees it: workerd's clock moves only at I/O, so in whole milliseconds at best. */
  p50_ms: number;
  p99_ms: number;
  workerd_cpu_ms_per_call: number;
};

/** The Budgets object's request template of one (account, wallet): a reservation of 1000 wei in BUDGETED_GUARDRAIL's two budgets. */
function budgetRequest(
  account: string,
  wallet: string,
  limits: BudgetRequest["budgets"],
): Omit<BudgetRequest, "digest"> {
  return { op: "reserve", account, wallet: wallet.toLowerCase(), ref: "bench", value_wei: "1000", budgets: limits };
}

/** Sends `n` decide() calls, `c` at a time, to the Budgets object `account:wallet` from the side Worker. */
async function sideDecide(
  edge: Workerd,
  template: Omit<BudgetRequest, "digest">,
  n: number,
  c: number,
): Promise<{ ms: number; latencies: number[] }> {
  const name = encodeURIComponent(`${template.account}:${template.wallet}`);
  const r = await post(new URL(`${edge.sideUrl}/decide?name=${name}&n=${n}&c=${c}`), {}, JSON.stringify(template));
  if (r.status !== 200) throw new Error(`side /decide: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as { ms: number; latencies: number[] };
}

async function sideStates(
  edge: Workerd,
  template: Omit<BudgetRequest, "digest">,
): Promise<Array<{ name: string; used_signatures: number; used_value_wei: string }>> {
  const name = encodeURIComponent(`${template.account}:${template.wallet}`);
  const r = await post(
    new URL(`${edge.sideUrl}/states?name=${name}`),
    {},
    JSON.stringify({ limits: template.budgets }),
  );
  if (r.status !== 200) throw new Error(`side /states: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as Array<{ name: string; used_signatures: number; used_value_wei: string }>;
}

function percentile(sorted: number[], p: number): number {
  return round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0, 2);
}

/**
 * (a) The Budgets object alone, and the enclave's request for it through the edge's route: one
 * wallet's object with two budgets, its windows filled to 0, 1 000 and 5 000 entries (each
 * reservation of a new payload adds one to each), decide() per call from the side Worker — reserve
 * at concurrency 1 and 32, peek (a dry run's) — then askBudgets (enclave/authz/budgets.ts) from this
 * process to /internal/v1/budgets, which verifies the run's token, validates the request and calls
 * the same object, at concurrency 1 and 8 (at 32 its queue comes near askBudgets' 2 s per attempt).
 * Then each budget must count every reservation once.
 */
async function budgetObject(edge: Workerd) {
  const account = `0x${"ab".repeat(32)}`;
  const wallet = `0x${"cd".repeat(20)}`;
  const limits = budgetLimits(BUDGETED_GUARDRAIL.budgets, { keyHash: toHash32(1n), cid: "bench" });
  const template = budgetRequest(account, wallet, limits);
  // Warm-up on another object: the side Worker's and the class's code, the storage.
  await sideDecide(edge, budgetRequest(account, `0x${"ef".repeat(20)}`, limits), 100, 8);

  let entries = 0;
  const rows: ObjectRow[] = [];
  const row = async (op: "reserve" | "peek", concurrency: number, calls: number) => {
    const before = cpuMs(edge.pid);
    const started = performance.now();
    const r = await sideDecide(edge, { ...template, op }, calls, concurrency);
    const seconds = (performance.now() - started) / 1000;
    const cpuPerCall = (cpuMs(edge.pid) - before) / calls;
    const sorted = r.latencies.sort((a, b) => a - b);
    const measured: ObjectRow = {
      op,
      concurrency,
      calls,
      entries_before: entries,
      calls_per_s: Math.round(calls / seconds),
      p50_ms: percentile(sorted, 0.5),
      p99_ms: percentile(sorted, 0.99),
      workerd_cpu_ms_per_call: round(cpuPerCall),
    };
    rows.push(measured);
    if (op === "reserve") entries += calls;
    console.log(
      `budgets object ${op.padEnd(7)}  c=${String(concurrency).padEnd(3)} ${String(measured.entries_before).padStart(5)} entries/window  ${String(measured.calls_per_s).padStart(5)} calls/s  p50 ${ms(measured.p50_ms)}  p99 ${ms(measured.p99_ms)}  workerd CPU ${cpu(measured.workerd_cpu_ms_per_call)}/call`,
    );
  };
  const fillTo = async (n: number) => {
    if (n > entries) await sideDecide(edge, template, n - entries, 16);
    entries = Math.max(entries, n);
  };
  console.log("");
  console.log(
    "the wallet's Budgets Durable Object under workerd, decide() from a side Worker (two budgets: a day's value per wallet, an hour's signatures per key):",
  );
  // Filling is what costs: each reservation sums both windows, so the fill to 5 000 is O(n²).
  await row("reserve", 1, 200);
  await fillTo(1_000);
  await row("reserve", 1, 200);
  await fillTo(5_000);
  await row("reserve", 1, 200);
  await row("reserve", 32, 256);
  await row("peek", 1, 100);

  // The route, from this process as from the enclave (askBudgets, Node's fetch), to the same object.
  const token = await issueBudgetToken(TEST_EDGE_IDENTITY_SEED, "bench", Date.now() + 3_600_000);
  const access: BudgetAccess = { url: edge.url, token };
  let next = 0;
  const reserve: Target = {
    name: "askBudgets",
    async send() {
      const digest = `0x${"ee".repeat(16)}${(next++).toString(16).padStart(32, "0")}` as BudgetRequest["digest"];
      const answer = await askBudgets(access, { ...template, digest });
      if (!answer.granted) throw new Error(`askBudgets refused: ${JSON.stringify(answer)}`);
      return { status: 200, body: { has_error: false } };
    },
  };
  await measure(reserve, 8, 100);
  entries += 100;
  const route = [];
  for (const [concurrency, calls] of [
    [1, 150],
    [8, 150],
  ] as const) {
    const entriesBefore = entries;
    const r = await measure(reserve, concurrency, calls, { workerd: edge.pid, client: process.pid });
    entries += calls;
    const { rss_mib: _rss, ...rest } = r;
    route.push({ concurrency, calls, entries_before: entriesBefore, ...rest });
    console.log(
      `askBudgets → edge route c=${String(concurrency).padEnd(3)} ${String(entriesBefore).padStart(5)} entries/window  ${String(r.rps).padStart(5)} calls/s  p50 ${ms(r.p50_ms)}  p99 ${ms(r.p99_ms)}  workerd CPU ${cpu(r.cpu_ms_per_run?.workerd)}/call  caller CPU ${cpu(r.cpu_ms_per_run?.client)}/call`,
    );
  }
  // Every reservation was counted once in each budget.
  const states = await sideStates(edge, template);
  for (const s of states)
    if (s.used_signatures !== entries || s.used_value_wei !== String(entries * 1000))
      throw new Error(`budget ${s.name} counts ${s.used_signatures} signatures, ${entries} were reserved`);
  return { object: rows, route };
}

type SigningRow = Measured & { name: string; concurrency: number; runs: number };

/**
 * (guardrails, budgets) Signing runs through the enclave, one signTransaction each with a nonce of
 * its own: an unguarded wallet's and a guarded one's (a transfer, an ERC-20 call), and — with the
 * edge — a guarded wallet's with budgets and without, every run sealed with the budget access the
 * edge would give it. At concurrency 1 the targets take turns, request by request (one client: they
 * share every moment of the machine's load); at 32 each is measured apart, `repeats` times, with
 * each process's CPU.
 */
async function signingRuns(
  stack: TestStack,
  bench: Bench,
  options: { guardrails: boolean; edge: Workerd | undefined; repeats: number },
) {
  const guarded = bench.guarded;
  if (!guarded) throw new Error("the signing runs need the guarded wallets");
  const { edge, repeats } = options;
  const access = edge && {
    url: edge.url,
    token: await issueBudgetToken(TEST_EDGE_IDENTITY_SEED, "bench-runs", Date.now() + 7_200_000),
    ref: "bench-runs",
  };
  let nonce = 0;
  const sent = new Map<string, number>();
  const signTx = (name: string, wallet: Address, kind: TxKind): Target => ({
    name,
    async send() {
      const r = await bench
        .execute({
          api_key: bench.apiKey,
          code: SIGN_TX,
          js_params: { wallet, tx: txParams(kind, nonce++) },
          ...(access ? { budget: access } : {}),
        })
        .send();
      sent.set(name, (sent.get(name) ?? 0) + 1);
      return r;
    },
  });
  const kinds: Array<{ target: Target; wallet: Address; kind: TxKind; guardrail?: string }> = [];
  if (options.guardrails)
    kinds.push(
      { target: signTx("tx", bench.wallet, "transfer"), wallet: bench.wallet, kind: "transfer" },
      {
        target: signTx("tx guarded", guarded.plain, "transfer"),
        wallet: guarded.plain,
        kind: "transfer",
        guardrail: guarded.hashes.plain,
      },
      { target: signTx("erc20", bench.wallet, "erc20"), wallet: bench.wallet, kind: "erc20" },
      {
        target: signTx("erc20 guarded", guarded.plain, "erc20"),
        wallet: guarded.plain,
        kind: "erc20",
        guardrail: guarded.hashes.plain,
      },
    );
  if (edge) {
    if (!options.guardrails)
      kinds.push({
        target: signTx("tx guarded", guarded.plain, "transfer"),
        wallet: guarded.plain,
        kind: "transfer",
        guardrail: guarded.hashes.plain,
      });
    kinds.push({
      target: signTx("tx budgeted", guarded.budgeted, "transfer"),
      wallet: guarded.budgeted,
      kind: "transfer",
      guardrail: guarded.hashes.budgeted,
    });
  }

  // Each signs what it should, and the receipt names the guardrail and the rule that allowed it.
  let account = "";
  for (const k of kinds) {
    const r = await k.target.send();
    const body = r.body as {
      has_error?: boolean;
      response?: unknown;
      receipt?: {
        account: string;
        wallets: Array<{ address: string; guardrail?: string; signed: Array<{ rule?: string }> }>;
      };
    };
    const used = body.receipt?.wallets.find((w) => w.address === k.wallet.toLowerCase());
    if (
      r.status !== 200 ||
      body.has_error ||
      typeof body.response !== "string" ||
      !body.response.startsWith("0x02") ||
      !used ||
      used.guardrail !== k.guardrail ||
      used.signed[0]?.rule !== (k.guardrail ? ALLOWED_BY[k.kind] : undefined)
    )
      throw new Error(`${k.target.name}: not the signature expected: ${r.status} ${JSON.stringify(r.body)}`);
    account = body.receipt!.account;
  }

  // The budgeted wallet's object with 1 000 signatures in each window before the runs (each budgeted
  // run adds one: the windows grow by some 2 000 over the measurements; the object's own rows above
  // say what 5 000 cost).
  let budgeted: Omit<BudgetRequest, "digest"> | undefined;
  const seeded = 1_000;
  if (edge) {
    const limits = budgetLimits(BUDGETED_GUARDRAIL.budgets, {
      keyHash: toHash32(apiKeyHash(bench.apiKey)),
      cid: await computeCid(SIGN_TX),
    });
    budgeted = budgetRequest(account, guarded.budgeted, limits);
    await sideDecide(edge, budgeted, seeded, 16);
  }

  for (const k of kinds) await measure(k.target, 32, 200);
  const windowBefore = seeded + (sent.get("tx budgeted") ?? 0);
  const pids = { enclave: stack.enclavePid, client: process.pid, ...(edge ? { workerd: edge.pid } : {}) };
  const rows: SigningRow[] = [];
  const inTurn = 300;
  const turns = await measureInTurn(
    kinds.map((k) => k.target),
    inTurn,
  );
  for (const [i, k] of kinds.entries()) rows.push({ name: k.target.name, concurrency: 1, runs: inTurn, ...turns[i]! });
  // At 32, the kinds in turn too, measurement by measurement (not all of one kind's repeats in a row):
  // the machine's load drifts, and each figure is the median of its kind's measurements.
  const runs = 600;
  const each = kinds.map(() => [] as Measured[]);
  for (let i = 0; i < repeats; i++)
    for (const [j, k] of kinds.entries()) each[j]!.push(await measure(k.target, 32, runs, pids));
  for (const [j, k] of kinds.entries()) {
    const { rss_mib: _rss, ...r } = medianOf(each[j]!);
    rows.push({ name: k.target.name, concurrency: 32, runs, ...r });
  }
  console.log("");
  console.log(
    `signing runs (signTransaction, a new nonce each run) through the enclave${edge ? ", each sealed with the edge's budget access" : ""}: c=1 the kinds in turn, run by run (${inTurn} runs each); c=32 the median of ${repeats} measurements of ${runs} runs, the kinds in turn`,
  );
  console.log("script         c    p50        p99        runs/s   enclave CPU/run  client CPU/run  workerd CPU/run");
  for (const r of rows)
    console.log(
      `${r.name.padEnd(13)}  ${String(r.concurrency).padEnd(3)}  ${ms(r.p50_ms).padEnd(9)}  ${ms(r.p99_ms).padEnd(9)}  ${String(r.rps).padEnd(7)}  ${cpu(r.cpu_ms_per_run?.enclave).padEnd(15)}  ${cpu(r.cpu_ms_per_run?.client).padEnd(14)}  ${cpu(r.cpu_ms_per_run?.workerd)}`,
    );

  const at = (name: string, c: number) => rows.find((r) => r.name === name && r.concurrency === c);
  const added = [
    ["guardrail check, transfer", "tx", "tx guarded"],
    ["guardrail check, erc20", "erc20", "erc20 guarded"],
    ["budget reservation", "tx guarded", "tx budgeted"],
  ].flatMap(([what, base, over]) => {
    const b1 = at(base!, 1);
    const o1 = at(over!, 1);
    const b32 = at(base!, 32);
    const o32 = at(over!, 32);
    if (!b1 || !o1 || !b32 || !o32) return [];
    const diff = (f: (m: Measured) => number | undefined) => {
      const o = f(o32);
      const b = f(b32);
      return o === undefined || b === undefined ? undefined : round(o - b);
    };
    return [
      {
        what: what!,
        p50_ms_c1: round(o1.p50_ms - b1.p50_ms, 2),
        enclave_cpu_ms_c32: diff((m) => m.cpu_ms_per_run?.enclave),
        workerd_cpu_ms_c32: diff((m) => m.cpu_ms_per_run?.workerd),
        rps_c32: [b32.rps, o32.rps] as const,
      },
    ];
  });
  for (const a of added)
    console.log(
      `${a.what} adds to a run: p50 ${ms(a.p50_ms_c1)} at c=1; at c=32 enclave CPU ${cpu(a.enclave_cpu_ms_c32)}${a.what.startsWith("budget") ? `, workerd CPU ${cpu(a.workerd_cpu_ms_c32)}` : ""}, runs/s ${a.rps_c32[0]} → ${a.rps_c32[1]}`,
    );

  // Every budgeted run reserved its signature once, in both budgets.
  let budgetedWindow: { entries_before: number; entries_after: number } | undefined;
  if (edge && budgeted) {
    const expected = seeded + (sent.get("tx budgeted") ?? 0);
    for (const s of await sideStates(edge, budgeted))
      if (s.used_signatures !== expected)
        throw new Error(`budget ${s.name} of the budgeted wallet counts ${s.used_signatures}, expected ${expected}`);
    budgetedWindow = { entries_before: windowBefore, entries_after: expected };
    console.log(
      `the budgeted wallet's windows held ${windowBefore} entries when the measured runs began, ${expected} after (each counted once: checked)`,
    );
  }
  return { rows, added, ...(budgetedWindow ? { budgeted_window: budgetedWindow } : {}) };
}

/**
 * Issue 33: 10 000 delegated keys minted in one `delegate_key` call, sealed through the channel as the
 * edge sends it: the wall time of the call and the enclave process's CPU over it (median of 3).
 */
async function delegationPart(bench: Bench): Promise<{ count: number; wall_ms: number; enclave_cpu_ms: number }> {
  const count = 10_000;
  const { group_id: group } = await bench.call("add_group", {
    api_key: bench.apiKey,
    group_name: "delegating",
    group_description: "",
    pkp_ids_permitted: [bench.wallet],
    cid_hashes_permitted: [await computeCid(SIGN)],
  });
  const { usage_api_key: key } = await bench.call("add_usage_api_key", {
    api_key: bench.apiKey,
    name: "delegating",
    description: "",
    ...NO_PERMISSIONS,
    execute_in_groups: [group],
  });
  await bench.call("set_usage_key_guardrail", {
    api_key: bench.apiKey,
    usage_api_key: key,
    guardrail: { version: 1, messages: {}, delegation: {} },
  });
  const caveats = { expires_at: Math.floor(Date.now() / 1000) + 3600, max_uses: 1, actions: [await computeCid(SIGN)] };
  await bench.call("delegate_key", { api_key: key, caveats, count: 100 });
  const samples: Array<{ wall: number; cpu: number }> = [];
  for (let i = 0; i < 3; i++) {
    const cpuBefore = cpuMs(bench.enclavePid);
    const started = performance.now();
    const answer = (await bench.call("delegate_key", { api_key: key, caveats, count })) as unknown as {
      keys: string[];
    };
    const wall = performance.now() - started;
    if (answer.keys.length !== count) throw new Error(`delegate_key answered ${answer.keys.length} keys`);
    samples.push({ wall, cpu: cpuMs(bench.enclavePid) - cpuBefore });
  }
  const median = (f: (x: { wall: number; cpu: number }) => number) => samples.map(f).sort((a, b) => a - b)[1]!;
  const out = { count, wall_ms: round(median((x) => x.wall)), enclave_cpu_ms: round(median((x) => x.cpu)) };
  console.log(
    `delegate_key: ${count} keys in one call, ${out.wall_ms} ms through the channel, ${out.enclave_cpu_ms} ms of enclave CPU (median of 3)`,
  );
  return out;
}

async function main(): Promise<void> {
  const parts = new Set(args.only.split(",").map((p) => p.trim()));
  for (const p of parts)
    if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: no part "${p}" (${PARTS.join(", ")})`);
  const has = (p: Part) => parts.has(p);
  const repeats = Number(args.repeats);
  const longRuns = Number(args["long-runs"]);
  const loadBefore = loadavg()[0]!.toFixed(2);
  const seconds: Record<string, number> = {};
  const timed = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      seconds[name] = round((performance.now() - started) / 1000, 1);
    }
  };
  const out: Record<string, unknown> = { bench: "enclave" };
  let stack: TestStack | undefined;
  let edge: Workerd | undefined;
  let stateDir: string | undefined;
  const stopAll = async () => {
    await edge?.stop();
    edge = undefined;
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    stateDir = undefined;
    await stack?.stop();
    stack = undefined;
  };
  try {
    if (has("runs") || has("overshoot") || has("guardrails") || has("budgets") || has("delegation")) {
      const s = await startTestStack();
      stack = s;
      const guards = has("guardrails") || has("budgets");
      const bench = await timed(guards ? "setup (with the guarded wallets)" : "setup", () =>
        setUp(s, { guarded: guards }),
      );
      const pids = { enclave: s.enclavePid, client: process.pid };
      if (has("runs")) out.results = await timed("runs", () => runsPart(bench, pids, repeats));
      if (has("overshoot")) out.overshoot = await timed("overshoot", () => overshootPart(bench));
      if (has("delegation")) out.delegation = await timed("delegation", () => delegationPart(bench));
      if (has("guardrails")) out.guardrail_check_us = await timed("guardrail checks", async () => guardrailChecks());
      if (has("budgets")) {
        out.budgets = await timed("budgets object and route", async () => {
          stateDir = mkdtempSync(join(tmpdir(), "sigil-bench-enclave-"));
          edge = await startWorkerd({
            dir: stateDir,
            side: BUDGETS_SIDE,
            vars: {
              SIGIL_ENV: "test",
              SIGIL_ENCLAVE_URLS: s.enclaveUrl,
              // The key its budget tokens are made and checked with: the one the test enclave allows.
              SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
              SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
              SIGIL_RPC_URL: s.rpcUrl,
              SIGIL_CONTRACT_ADDRESS: s.contract,
              SIGIL_BILLING: "off",
            },
          });
          return budgetObject(edge);
        });
      }
      if (guards) {
        const e = edge;
        out.signing = await timed("signing runs", () =>
          signingRuns(s, bench, { guardrails: has("guardrails"), edge: e, repeats }),
        );
      }
      await stopAll();
    }

    // Memory over a long run, on an enclave of its own (what the runs above left — the instances the
    // signing runs held, the garbage of each phase — is not this load's): steady = the median of the
    // second half's samples, after a warm-up at the same concurrency.
    if (has("long") && longRuns > 0) {
      out.long = await timed("long", async () => {
        const fresh = await startTestStack();
        try {
          const { hello: freshHello } = await setUp(fresh);
          await measure(freshHello, 32, 3_000);
          const r = await measure(freshHello, 32, longRuns, { enclave: fresh.enclavePid, client: process.pid });
          const rss = r.rss_mib?.enclave;
          console.log(
            `long run: ${longRuns} hello runs at c=32 on a fresh enclave: ${r.rps} runs/s, enclave CPU ${cpu(r.cpu_ms_per_run?.enclave)}/run, enclave RSS steady ${rss?.steady} MiB, peak ${rss?.peak} MiB`,
          );
          return { name: "hello", concurrency: 32, runs: longRuns, ...r };
        } finally {
          await fresh.stop();
        }
      });
    }
    console.log(
      `machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}, load average ${loadBefore} before, ${loadavg()[0]!.toFixed(2)} after`,
    );
    console.log(
      `time: ${Object.entries(seconds)
        .map(([k, v]) => `${k} ${v} s`)
        .join(", ")}`,
    );
    console.log(
      JSON.stringify({ ...out, seconds, load_average: [Number(loadBefore), Number(loadavg()[0]!.toFixed(2))] }),
    );
  } finally {
    closeAgent();
    await stopAll();
  }
}

await (args.profile ? profile() : main());
