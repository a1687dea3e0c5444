// `npm run bench:edge`: the enclave benchmark's hello-world and signing runs through the edge
// under workerd (the production bundle served by workerd itself, see workerd.ts), measured in the same run as the same runs sent straight to the
// enclave, so the difference is what the edge adds. It starts its own anvil, enclave and edge. The
// last line of output is one JSON object: {"bench":"edge","results":[{…, "p50_ms", "enclave_p50_ms"}]}.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { computeCid } from "../../shared/cid.ts";
import { ENCLAVE_SECRET_HEADER } from "../../shared/enclaveApi.ts";
import { TEST_ENCLAVE_SECRET } from "../enclave/constants.ts";
import { startTestStack } from "../harness/stack.ts";
import { closeAgent, measure, measureInTurn, post } from "./measure.ts";
import { startWorkerd } from "./workerd.ts";

const HELLO = "async function main() { return 'hello' }";
const SIGN = "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";

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
        SIGIL_ENCLAVE_SECRET: TEST_ENCLAVE_SECRET,
        SIGIL_RPC_URL: stack.rpcUrl,
        SIGIL_CONTRACT_ADDRESS: stack.contract,
        // The benchmark is one client: rate limits would only measure themselves.
        // The benchmark measures the edge without its ledger round trips (billing has its own tests).
        SIGIL_BILLING: "off",
        SIGIL_RATE_LIMIT_PER_KEY: "100000000",
        SIGIL_RATE_LIMIT_PER_IP: "100000000",
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
    await json("/add_group", apiKey, { group_name: "bench", group_description: "", pkp_ids_permitted: [wallet], cid_hashes_permitted: [await computeCid(HELLO), await computeCid(SIGN)] });

    const edgeUrl = new URL(`${api}/sigil_action`);
    const enclaveUrl = new URL(`${stack.enclaveUrl}/internal/v1/execute`);
    const edgeHeaders = { "x-api-key": apiKey as string };
    const enclaveHeaders = { [ENCLAVE_SECRET_HEADER]: TEST_ENCLAVE_SECRET };
    const bodies = {
      hello: { edge: JSON.stringify({ code: HELLO, js_params: null }), enclave: JSON.stringify({ api_key: apiKey, code: HELLO, js_params: null }) },
      sign: { edge: JSON.stringify({ code: SIGN, js_params: { wallet } }), enclave: JSON.stringify({ api_key: apiKey, code: SIGN, js_params: { wallet } }) },
    };
    // Warm-up of both paths (JIT, caches, the workers' QuickJS modules, workerd).
    for (const b of Object.values(bodies)) {
      await measure(edgeUrl, edgeHeaders, b.edge, 8, 300);
      await measure(enclaveUrl, enclaveHeaders, b.enclave, 8, 300);
    }
    const results = [];
    for (const name of ["hello", "sign"] as const) {
      const edge = { url: edgeUrl, headers: edgeHeaders, body: bodies[name].edge };
      const enclave = { url: enclaveUrl, headers: enclaveHeaders, body: bodies[name].enclave };
      // One client: the two paths take turns, so both see the same moments of the machine's load.
      const ones = 1_000;
      const [viaEdge1, viaEnclave1] = await measureInTurn([edge, enclave], ones);
      // 32 clients: one path after the other (taking turns would halve each one's load).
      const runs = 3_000;
      const viaEnclave32 = await measure(enclaveUrl, enclaveHeaders, enclave.body, 32, runs);
      const viaEdge32 = await measure(edgeUrl, edgeHeaders, edge.body, 32, runs);
      const rows = [
        { concurrency: 1, runs: ones, viaEdge: viaEdge1!, viaEnclave: viaEnclave1! },
        { concurrency: 32, runs, viaEdge: viaEdge32, viaEnclave: viaEnclave32 },
      ];
      for (const { concurrency, runs, viaEdge, viaEnclave } of rows) {
        results.push({ name, concurrency, runs, ...viaEdge, enclave_p50_ms: viaEnclave.p50_ms, enclave_p99_ms: viaEnclave.p99_ms, enclave_rps: viaEnclave.rps });
        console.log(
          `${name.padEnd(6)} c=${String(concurrency).padEnd(3)} edge p50 ${viaEdge.p50_ms.toFixed(2)} ms (enclave ${viaEnclave.p50_ms.toFixed(2)} ms, +${(viaEdge.p50_ms - viaEnclave.p50_ms).toFixed(2)})  p99 ${viaEdge.p99_ms.toFixed(2)} ms  ${viaEdge.rps} runs/s`,
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
