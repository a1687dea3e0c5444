// `npm run bench:edge`: the enclave benchmark's hello-world and signing runs through the edge
// under workerd (the production bundle served by workerd itself, see workerd.ts), measured in the
// same run as the same runs sent straight to the enclave — both through the attested channel, the
// edge's sealed by the edge — so the difference is what the edge adds. It starts its own anvil, enclave and edge. The
// last line of output is one JSON object: {"bench":"edge","results":[{…, "p50_ms", "enclave_p50_ms"}]}.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { computeCid } from "../../shared/cid.ts";
import { nodeAead } from "../../enclave/channel/nodeAead.ts";
import { newTestChannel } from "../harness/channel.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack } from "../harness/stack.ts";
import { agentFetch, channelTarget, closeAgent, httpTarget, measure, measureInTurn, post } from "./measure.ts";
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
    const edgeHeaders = { "x-api-key": apiKey as string };
    const channel = newTestChannel({ fetch: agentFetch, aead: nodeAead });
    const targets = (code: string, params: unknown) => ({
      edge: httpTarget(edgeUrl, edgeHeaders, JSON.stringify({ code, js_params: params })),
      // Straight to the enclave, sealed through the channel as the edge seals it.
      enclave: channelTarget(channel, stack.enclaveUrl, "sigil_action", { api_key: apiKey, code, js_params: params }),
    });
    const byName = { hello: targets(HELLO, null), sign: targets(SIGN, { wallet }) };
    // Warm-up of both paths (JIT, caches, the workers' QuickJS modules, workerd, the channel pins).
    for (const t of Object.values(byName)) {
      await measure(t.edge, 8, 300);
      await measure(t.enclave, 8, 300);
    }
    const results = [];
    for (const name of ["hello", "sign"] as const) {
      const { edge, enclave } = byName[name];
      // One client: the two paths take turns, so both see the same moments of the machine's load.
      const ones = 1_000;
      const [viaEdge1, viaEnclave1] = await measureInTurn([edge, enclave], ones);
      // 32 clients: one path after the other (taking turns would halve each one's load).
      const runs = 3_000;
      const viaEnclave32 = await measure(enclave, 32, runs);
      const viaEdge32 = await measure(edge, 32, runs);
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
