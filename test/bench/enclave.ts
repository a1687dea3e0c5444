// `npm run bench:enclave`: hello-world and signing runs through the enclave's internal API on
// loopback, at concurrency 1 and 32 — p50/p99 latency and runs per second. It starts its own anvil
// and enclave (dev root key, payers registered and funded), like the test suites. The last line of
// output is one JSON object with every result.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "node:http";
import { createPublicClient, createWalletClient, http } from "viem";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { startAnvil } from "../../bin/stack/anvil.ts";
import { spawnEnclave } from "../../bin/stack/enclave.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { computeCid } from "../../shared/cid.ts";
import { ENCLAVE_SECRET_HEADER } from "../../shared/enclaveApi.ts";

const SECRET = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
const HELLO = "async function main() { return 'hello' }";
const SIGN = "async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: 'bench' }) }";

type Result = { name: string; concurrency: number; runs: number; p50_ms: number; p99_ms: number; rps: number };

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function post(url: URL, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), [ENCLAVE_SECRET_HEADER]: SECRET } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function call(base: string, op: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await post(new URL(`${base}/internal/v1/${op}`), JSON.stringify(body));
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as Record<string, unknown>;
}

async function measure(base: string, name: string, body: string, concurrency: number, runs: number): Promise<Result> {
  const url = new URL(`${base}/internal/v1/execute`);
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < runs) {
      next++;
      const t = performance.now();
      const r = await post(url, body);
      latencies.push(performance.now() - t);
      if (r.status !== 200 || (JSON.parse(r.text) as { has_error: boolean }).has_error) throw new Error(`${name}: ${r.status} ${r.text}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 100) / 100;
  return { name, concurrency, runs, p50_ms: pct(0.5), p99_ms: pct(0.99), rps: Math.round(runs / seconds) };
}

async function main(): Promise<void> {
  const anvil = await startAnvil({ accounts: 2 });
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-bench-"));
  let stopEnclave = async () => {};
  try {
    const transport = http(anvil.rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 50 });
    const walletClient = createWalletClient({ transport });
    const [owner] = await walletClient.getAddresses();
    if (!owner) throw new Error("anvil has no accounts");
    const deployment = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
    const enclave = await spawnEnclave({
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_ENCLAVE_SECRET: SECRET,
      SIGIL_RPC_URL: anvil.rpcUrl,
      SIGIL_CONTRACT_ADDRESS: deployment.proxy,
      SIGIL_STATE_DIR: stateDir,
      SIGIL_LOG_LEVEL: "warn",
    });
    stopEnclave = () => enclave.stop();
    await registerLocalPayers({ rpcUrl: anvil.rpcUrl, publicClient, walletClient, owner, contract: deployment.proxy, payers: enclave.payers });

    const base = enclave.url;
    const { api_key: apiKey } = (await call(base, "new_account", { account_name: "bench" })) as { api_key: string };
    const { wallet_address: wallet } = (await call(base, "create_wallet", { api_key: apiKey })) as { wallet_address: string };
    await call(base, "add_group", { api_key: apiKey, group_name: "bench", group_description: "", pkp_ids_permitted: [wallet], cid_hashes_permitted: [await computeCid(HELLO), await computeCid(SIGN)] });

    const hello = JSON.stringify({ api_key: apiKey, code: HELLO, js_params: null });
    const sign = JSON.stringify({ api_key: apiKey, code: SIGN, js_params: { wallet } });
    // Warm-up: JIT, the CID and permission caches, the workers' QuickJS modules.
    await measure(base, "warmup", hello, 8, 400);
    await measure(base, "warmup", sign, 8, 400);

    const results: Result[] = [];
    for (const [name, body] of [["hello", hello], ["sign", sign]] as const) {
      for (const [concurrency, runs] of [[1, 1_000], [32, 4_000]] as const) {
        const r = await measure(base, name, body, concurrency, runs);
        results.push(r);
        console.log(`${name.padEnd(6)} c=${String(concurrency).padEnd(3)} p50 ${r.p50_ms.toFixed(2)} ms  p99 ${r.p99_ms.toFixed(2)} ms  ${r.rps} runs/s`);
      }
    }
    console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}`);
    console.log(JSON.stringify({ bench: "enclave", results }));
  } finally {
    agent.destroy();
    await stopEnclave();
    await anvil.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
