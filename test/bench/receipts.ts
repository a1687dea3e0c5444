// `npm run bench:receipts`: what the SDK's default check of a run's receipt costs (sdk/src/verifiedRuns.ts;
// issue 34) after the first, which fetches and keeps the instance's attestation. It starts the local
// stack (`sigil start`, as the tests do), makes `--runs` (default 500) signing runs with the check
// off, keeping their answers, then checks each answer with a client's checker, its attestation
// already kept: the median, p99 and mean per receipt, in µs, over 3 passes (the median pass) — once
// for runs made one at a time (each receipt its own batch, so one ECDSA verification each, against
// the attested key's precomputed table: sdk/src/receiptSignature.ts) and once for runs 32 in flight
// (receipts signed in batches: a batch's signature checked once). The last
// line of output is one JSON object.
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import type { Address } from "viem";
import { createSigilClient, topUp } from "../../sdk/src/index.ts";
import { receiptChecker } from "../../sdk/src/verifiedRuns.ts";
import { startLocalStack } from "../harness/localStack.ts";

const { values: args } = parseArgs({ options: { runs: { type: "string", default: "500" } } });
const RUNS = Number(args.runs);
const CODE = `async function main({ wallet, n }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "bench " + n }) }`;

const stack = await startLocalStack();
try {
  // The two sets of runs pass the key's rate limit (600 a minute): the client waits out its 429s.
  const anon = createSigilClient({ baseUrl: stack.origin, verifyReceipts: false, retries: 5, maxRetryDelayMs: 65_000 });
  const apiKey = (await anon.newAccount({ account_name: "receipts bench" })).api_key;
  const client = anon.with({ apiKey });
  await topUp(client, { amountCents: 5_000 });
  const wallet = (await client.createWallet({ name: "bench" })).wallet_address as Address;
  const cid = await client.getSigilActionIpfsId(CODE);
  await client.addGroup({
    group_name: "b",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  /** `RUNS` answers, `inFlight` runs at a time (at 32, the enclave batches receipts: one signature for several). */
  const answersOf = async (inFlight: number): Promise<unknown[]> => {
    const answers: unknown[] = [];
    for (let i = 0; i < RUNS; i += inFlight)
      answers.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(inFlight, RUNS - i) }, (_, j) =>
            client.sigilAction({ code: CODE, js_params: { wallet, n: i + j } }),
          ),
        )),
      );
    return answers;
  };
  const round = (v: number) => Math.round(v);
  /** Each answer checked by a fresh checker whose attestation is already kept: median of 3 passes. */
  const measure = async (answers: unknown[]) => {
    const passes: Array<{ p50: number; p99: number; mean: number; first_ms: number }> = [];
    for (let pass = 0; pass < 3; pass++) {
      const check = receiptChecker(stack.origin, {}, (instance) => anon.getReceiptKey({ instance }), new Map());
      const firstStarted = performance.now();
      await check(answers[0], undefined);
      const first = performance.now() - firstStarted;
      const us: number[] = [];
      for (const answer of answers.slice(1)) {
        const started = performance.now();
        await check(answer, undefined);
        us.push((performance.now() - started) * 1000);
      }
      us.sort((a, b) => a - b);
      const at = (p: number) => us[Math.min(us.length - 1, Math.floor(p * us.length))] as number;
      passes.push({ p50: at(0.5), p99: at(0.99), mean: us.reduce((a, b) => a + b, 0) / us.length, first_ms: first });
    }
    passes.sort((a, b) => a.mean - b.mean);
    const m = passes[1] as { p50: number; p99: number; mean: number; first_ms: number };
    return {
      p50_us: round(m.p50),
      p99_us: round(m.p99),
      mean_us: round(m.mean),
      first_ms: Number(m.first_ms.toFixed(1)),
    };
  };
  const lone = await measure(await answersOf(1));
  const batched = await measure(await answersOf(32));
  for (const [name, r] of [
    ["one run at a time (each receipt its own batch)", lone],
    ["32 runs in flight (receipts in batches)", batched],
  ] as const)
    console.log(
      `${name}: a receipt's check after the first p50 ${r.p50_us} µs, p99 ${r.p99_us} µs, mean ${r.mean_us} µs; the first, its attestation fetched, ${r.first_ms} ms`,
    );
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, node ${process.version}, load average ${loadavg()[0]?.toFixed(2)}`,
  );
  console.log(JSON.stringify({ bench: "receipts", runs: RUNS, lone, batched }));
} finally {
  await stack.stop();
}
