// `npm run bench:edge`: the enclave benchmark's hello-world and signing runs through the edge
// under workerd (the production bundle served by workerd itself, see workerd.ts), measured in the
// same run as the same runs sent straight to the enclave — both through the attested channel, the
// edge's sealed by the edge — so the difference is what the edge adds; and, each path alone, the
// CPU time a run costs the edge's workerd process, the enclave process and the benchmark's own
// (/proc/<pid>/stat over the window), with their resident memory, the median of 3 measurements
// (`--repeats N`). It starts its own anvil, enclave and edge. The last line of output is one JSON
// object: {"bench":"edge","results":[{…, "p50_ms", "enclave_p50_ms", "cpu_ms_per_run"}]}.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { computeCid } from "../../shared/cid.ts";
import { nodeAead } from "../../enclave/channel/nodeAead.ts";
import { newTestChannel } from "../harness/channel.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack } from "../harness/stack.ts";
import {
  agentFetch,
  channelTarget,
  closeAgent,
  httpTarget,
  measure,
  measureInTurn,
  measureRepeated,
  post,
  type Measured,
} from "./measure.ts";
import { startWorkerd } from "./workerd.ts";

const HELLO = "async function main() { return 'hello' }";
const SIGN =
  "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";

async function main(): Promise<void> {
  const stack = await startTestStack();
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-bench-edge-"));
  let stopEdge = async () => {};
  try {
    const edge = await startWorkerd({
      dir: stateDir,
      vars: {
        SIGIL_ENV: "test",
        SIGIL_ENCLAVE_URLS: stack.enclaveUrl,
        // The channel to the enclave, as in production, with the test enclave's simulated quotes.
        SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
        SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
        SIGIL_RPC_URL: stack.rpcUrl,
        SIGIL_CONTRACT_ADDRESS: stack.contract,
        // The benchmark is one client: rate limits would only measure themselves.
        // The benchmark measures the edge without its ledger round trips (billing has its own tests).
        SIGIL_BILLING: "off",
        SIGIL_RATE_LIMIT_PER_KEY: "100000000",
        SIGIL_RATE_LIMIT_PER_IP: "100000000",
        // Nor a share of admission's places per client: its 32 clients are one to the edge.
        SIGIL_EDGE_CLIENT_SHARE_PERCENT: "100",
      },
    });
    stopEdge = () => edge.stop();
    const api = `${edge.url}/core/v1`;
    const json = async (path: string, key: string | undefined, body: unknown) => {
      const r = await post(new URL(`${api}${path}`), key ? { "x-api-key": key } : {}, JSON.stringify(body));
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
      return JSON.parse(r.text) as Record<string, string>;
    };
    const { api_key: apiKey } = await json("/new_account", undefined, { account_name: "bench" });
    const { wallet_address: wallet } = await json("/create_wallet", apiKey, {});
    await json("/add_group", apiKey, {
      group_name: "bench",
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: [await computeCid(HELLO), await computeCid(SIGN)],
    });

    const edgeUrl = new URL(`${api}/sigil_action`);
    const edgeHeaders = { "x-api-key": apiKey as string };
    const channel = newTestChannel({ fetch: agentFetch, aead: nodeAead });
    const targets = (code: string, params: unknown) => ({
      edge: httpTarget(edgeUrl, edgeHeaders, JSON.stringify({ code, js_params: params })),
      // Straight to the enclave, sealed through the channel as the edge seals it.
      enclave: channelTarget(channel, stack.enclaveUrl, "sigil_action", { api_key: apiKey, code, js_params: params }),
    });
    const byName = { hello: targets(HELLO, null), sign: targets(SIGN, { wallet }) };
    // Warm-up of both paths (JIT, caches, the instances 32 runs in flight need, workerd, the channel pins).
    for (const t of Object.values(byName)) {
      await measure(t.edge, 32, 1_500);
      await measure(t.enclave, 32, 1_500);
    }
    const pids = { edge: edge.pid, enclave: stack.enclavePid, client: process.pid };
    const repeats = Number(
      process.argv.includes("--repeats") ? process.argv[process.argv.indexOf("--repeats") + 1] : 3,
    );
    console.log(
      `latency: one client, the two paths taking turns; runs/s and CPU: each path alone, the median of ${repeats} measurements; CPU = user + system time of each process over the window, per run`,
    );
    console.log(
      "script  c    edge p50   edge p99   enclave p50  edge adds  edge runs/s  edge CPU/run  enclave CPU/run  client CPU/run  RSS edge / enclave (steady)",
    );
    const results = [];
    for (const name of ["hello", "sign"] as const) {
      const { edge: viaEdge, enclave: direct } = byName[name];
      // One client: the two paths take turns, so both see the same moments of the machine's load.
      const ones = 1_000;
      const [edgeTurns, enclaveTurns] = (await measureInTurn([viaEdge, direct], ones)) as [Measured, Measured];
      // Each path alone, for its rate and what each process spends on a run.
      const edge1 = await measureRepeated(viaEdge, 1, ones, pids, repeats);
      const runs = 3_000;
      const enclave32 = await measureRepeated(direct, 32, runs, pids, repeats);
      const edge32 = await measureRepeated(viaEdge, 32, runs, pids, repeats);
      const rows = [
        { concurrency: 1, runs: ones, latency: edgeTurns, enclaveLatency: enclaveTurns, alone: edge1 },
        { concurrency: 32, runs, latency: edge32, enclaveLatency: enclave32, alone: edge32 },
      ];
      for (const { concurrency, runs, latency, enclaveLatency, alone } of rows) {
        const r = {
          name,
          concurrency,
          runs,
          p50_ms: latency.p50_ms,
          p99_ms: latency.p99_ms,
          rps: alone.rps,
          enclave_p50_ms: enclaveLatency.p50_ms,
          enclave_p99_ms: enclaveLatency.p99_ms,
          enclave_rps: concurrency === 32 ? enclave32.rps : enclaveTurns.rps,
          cpu_ms_per_run: alone.cpu_ms_per_run,
          rss_mib: alone.rss_mib,
        };
        results.push(r);
        const cpu = (v: number | undefined) => (v === undefined ? "—" : `${(v * 1000).toFixed(0)} µs`);
        console.log(
          `${name.padEnd(6)}  ${String(concurrency).padEnd(3)}  ${`${r.p50_ms.toFixed(2)} ms`.padEnd(9)}  ${`${r.p99_ms.toFixed(2)} ms`.padEnd(9)}  ${`${r.enclave_p50_ms.toFixed(2)} ms`.padEnd(11)}  ${`+${(r.p50_ms - r.enclave_p50_ms).toFixed(2)} ms`.padEnd(9)}  ${String(r.rps).padEnd(11)}  ${cpu(r.cpu_ms_per_run?.edge).padEnd(12)}  ${cpu(r.cpu_ms_per_run?.enclave).padEnd(15)}  ${cpu(r.cpu_ms_per_run?.client).padEnd(14)}  ${r.rss_mib?.edge?.steady} / ${r.rss_mib?.enclave?.steady} MiB`,
        );
      }
    }
    console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}`);
    console.log(JSON.stringify({ bench: "edge", results }));
  } finally {
    closeAgent();
    await stopEdge();
    await stack.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
