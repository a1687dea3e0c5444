// `npm run bench:enclave`: hello-world and signing runs through the enclave's internal API on
// loopback, each sealed through the attested channel as the edge sends it, at concurrency 1 and 32 — p50/p99 latency and runs per second. It starts its own anvil
// and enclave (test/harness/stack.ts, as the test suites do). Then how far past its deadline a run
// ends whose code is one long built-in call after another (the watchdog ends it from outside its
// worker): the overshoot of 10 such runs with a 1 s limit, alone and beside a stream of hello runs. The
// last line of output is one JSON object with every result.
import { cpus } from "node:os";
import { computeCid } from "../../shared/cid.ts";
import { nodeAead } from "../../enclave/channel/nodeAead.ts";
import { newTestChannel } from "../harness/channel.ts";
import { startTestStack } from "../harness/stack.ts";
import { agentFetch, channelTarget, closeAgent, measure } from "./measure.ts";

const HELLO = "async function main() { return 'hello' }";
const SIGN = "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";
/** 300 scans of a 16 MiB string: no interrupt poll for tens of milliseconds at a time. */
const INDEXOF_LOOP = 'async function main() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return n }';

async function main(): Promise<void> {
  const stack = await startTestStack();
  try {
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
    const hello = execute({ api_key: apiKey, code: HELLO, js_params: null });
    const sign = execute({ api_key: apiKey, code: SIGN, js_params: { wallet } });
    // Warm-up: JIT, the CID and permission caches, the workers' QuickJS modules.
    await measure(hello, 8, 400);
    await measure(sign, 8, 400);

    const results = [];
    for (const [name, target] of [["hello", hello], ["sign", sign]] as const) {
      for (const [concurrency, runs] of [[1, 1_000], [32, 4_000]] as const) {
        const r = { name, concurrency, runs, ...(await measure(target, concurrency, runs)) };
        results.push(r);
        console.log(`${name.padEnd(6)} c=${String(concurrency).padEnd(3)} p50 ${r.p50_ms.toFixed(2)} ms  p99 ${r.p99_ms.toFixed(2)} ms  ${r.rps} runs/s`);
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
        const answer = await call("sigil_action", { api_key: apiKey, code: INDEXOF_LOOP, js_params: null, timeout_ms: 1000 });
        late.push(performance.now() - started - 1000);
        done = true;
        await Promise.all(traffic);
        if ((answer.error as unknown as { code?: string } | undefined)?.code !== "timeout") throw new Error(`the long built-in did not end in timeout: ${JSON.stringify(answer)}`);
      }
      late.sort((a, b) => a - b);
      const r = { neighbours, p50_ms: Math.round(late[Math.floor(late.length / 2)] as number), max_ms: Math.round(late[late.length - 1] as number) };
      overshoot.push(r);
      console.log(`deadline overshoot, ${neighbours} clients of hello runs beside it: p50 ${r.p50_ms} ms  max ${r.max_ms} ms (bound 250 ms)`);
    }
    console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}`);
    console.log(JSON.stringify({ bench: "enclave", results, overshoot }));
  } finally {
    closeAgent();
    await stack.stop();
  }
}

await main();
