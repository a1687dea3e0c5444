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
// `--profile`: instead, each script at concurrency 32 in an enclave of its own started with Node's
// `--cpu-prof`; the profiles (one per thread) go to .sigil/profiles/<script>/ and the busiest
// functions and files are printed with their microseconds per run (test/bench/profile.ts).
import { mkdirSync, rmSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { computeCid } from "../../shared/cid.ts";
import { nodeAead } from "../../enclave/channel/nodeAead.ts";
import { newTestChannel } from "../harness/channel.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";
import { agentFetch, channelTarget, closeAgent, measure, measureRepeated, type Target } from "./measure.ts";
import { summarizeProfiles } from "./profile.ts";

const HELLO = "async function main() { return 'hello' }";
const SIGN =
  "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";
/** 300 scans of a 16 MiB string: no interrupt poll for tens of milliseconds at a time. */
const INDEXOF_LOOP =
  'async function main() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return n }';

const { values: args } = parseArgs({
  options: {
    profile: { type: "boolean", default: false },
    "long-runs": { type: "string", default: "100000" },
    repeats: { type: "string", default: "3" },
  },
});
const root = join(import.meta.dirname, "../..");

/** An account with a wallet and a group allowing the three scripts, and a target per script. */
async function setUp(stack: TestStack) {
  const channel = newTestChannel({ fetch: agentFetch, aead: nodeAead });
  const call = async (op: string, body: unknown) => {
    const r = await channelTarget(channel, stack.enclaveUrl, op, body).send();
    if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Record<string, string>;
  };
  const { api_key: apiKey } = await call("new_account", { account_name: "bench" });
  const { wallet_address: wallet } = await call("create_wallet", { api_key: apiKey });
  await call("add_group", {
    api_key: apiKey,
    group_name: "bench",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [await computeCid(HELLO), await computeCid(SIGN), await computeCid(INDEXOF_LOOP)],
  });
  const execute = (body: unknown) => channelTarget(channel, stack.enclaveUrl, "sigil_action", body);
  return {
    call,
    apiKey: apiKey as string,
    hello: execute({ api_key: apiKey, code: HELLO, js_params: null }),
    sign: execute({ api_key: apiKey, code: SIGN, js_params: { wallet } }),
  };
}

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

async function main(): Promise<void> {
  const repeats = Number(args.repeats);
  const longRuns = Number(args["long-runs"]);
  const stack = await startTestStack();
  let stopped = false;
  const stopStack = async () => {
    if (!stopped) await stack.stop();
    stopped = true;
  };
  try {
    const { call, apiKey, hello, sign } = await setUp(stack);
    const pids = { enclave: stack.enclavePid, client: process.pid };
    // Warm-up: JIT, the CID and permission caches, and as many prepared QuickJS instances as 32
    // runs in flight need (a worker makes one, about 5 ms, only when more runs are in flight than
    // it has instances: a measurement should not count the pool's growth to its peak).
    await measure(hello, 32, 2_000);
    await measure(sign, 32, 2_000);

    console.log(
      `each row: the median of ${repeats} measurements in a row; CPU = user + system time of the process over the window, per run`,
    );
    console.log("script  c    p50        p99        runs/s   enclave CPU/run  client CPU/run  enclave RSS steady/peak");
    const results = [];
    for (const [name, target] of [
      ["hello", hello],
      ["sign", sign],
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

    // The deadline of a run whose code never polls: how long after its 1 s it is answered, alone and
    // while 8 clients keep hello runs coming (short slices: they do not hold its thread, so its own
    // deadline stays 1 s, and the watchdog works beside the channel's and the workers' traffic).
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
    await stopStack();

    // Memory over a long run, on an enclave of its own (what the runs above left — the instances the
    // signing runs held, the garbage of each phase — is not this load's): steady = the median of the
    // second half's samples, after a warm-up at the same concurrency.
    let long;
    if (longRuns > 0) {
      const fresh = await startTestStack();
      try {
        const { hello: freshHello } = await setUp(fresh);
        await measure(freshHello, 32, 3_000);
        const r = await measure(freshHello, 32, longRuns, { enclave: fresh.enclavePid, client: process.pid });
        const rss = r.rss_mib?.enclave;
        long = { name: "hello", concurrency: 32, runs: longRuns, ...r };
        console.log(
          `long run: ${longRuns} hello runs at c=32 on a fresh enclave: ${r.rps} runs/s, enclave CPU ${cpu(r.cpu_ms_per_run?.enclave)}/run, enclave RSS steady ${rss?.steady} MiB, peak ${rss?.peak} MiB`,
        );
      } finally {
        await fresh.stop();
      }
    }
    console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}`);
    console.log(
      JSON.stringify({ bench: "enclave", results: results.map(({ each: _each, ...r }) => r), long, overshoot }),
    );
  } finally {
    closeAgent();
    await stopStack();
  }
}

await (args.profile ? profile() : main());
