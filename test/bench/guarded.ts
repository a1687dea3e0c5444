// The guardrail and budget parts of bench:enclave (issue 30: "the cost of a guardrail check per
// signature … and of a budget reservation"): the guardrail the bench's guarded wallets carry, the
// script and the transactions their runs sign, the enclave's own check measured in this process, and
// the side Worker that drives a wallet's Budgets Durable Object inside the edge's workerd (as
// bench:ledger drives the Ledger).
import { encodeFunctionData, keccak256, parseAbi, toBytes, type Address, type Hex } from "viem";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { budgetCharge } from "../../shared/guardrails/budgets.ts";
import { compileGuardrail, type SignRequest } from "../../shared/guardrails/evaluate.ts";
import type { GuardrailInput } from "../../shared/guardrails/schema.ts";
import { decide, type LoadedGuardrail } from "../../enclave/authz/guardrails.ts";
import type { SideWorker } from "./workerd.ts";

export const ALICE = "0x00000000000000000000000000000000000a11ce";
export const TOKEN = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const ERC20 = parseAbi(["function transfer(address to, uint256 amount)"]);

/**
 * The guarded wallets' guardrail (bench:guardrails' transactions section): plain transfers to an
 * allow list, and an ERC-20 whose `transfer` is decoded by the document's ABI and its arguments checked.
 */
export const GUARDRAIL = {
  version: 1,
  name: "bench",
  transactions: {
    chains: [1, 8453],
    max_value_wei: "500000000000000000",
    transfers: { allow: [ALICE] },
    contracts: [
      {
        address: TOKEN,
        functions: [
          {
            signature: "function transfer(address to, uint256 amount)",
            args: { to: { in: [ALICE] }, amount: { lte: "1000000" } },
          },
        ],
      },
    ],
  },
} satisfies GuardrailInput;

/**
 * The same with two budgets, as a wallet would carry them: the value its transactions send in a day
 * (the whole wallet) and the signatures each usage key makes in an hour — so every reservation sums
 * two windows. Limits no bench run reaches.
 */
export const BUDGETED_GUARDRAIL = {
  ...GUARDRAIL,
  budgets: [
    { name: "daily-value", window_seconds: 86_400, max_value_wei: `1${"0".repeat(30)}` },
    { name: "hourly-count", per: "key", window_seconds: 3600, max_signatures: 1_000_000 },
  ],
} satisfies GuardrailInput;

/** A run that signs one transaction (`tx`, as a script passes it: amounts as decimal strings). */
export const SIGN_TX =
  "async function main({ wallet, tx }) { return Sigil.Actions.signTransaction({ pkpId: wallet, transaction: tx }) }";

export type TxKind = "transfer" | "erc20";

/** What each kind's rule is when the guardrail allows it. */
export const ALLOWED_BY: Record<TxKind, string> = {
  transfer: "transactions.transfers",
  erc20: "transactions.contracts[0].functions[0]",
};

/** A transaction of `kind` with `nonce`, as the script passes it: each nonce is a new payload (a new budget entry). */
export function txParams(kind: TxKind, nonce: number): Record<string, unknown> {
  const common = {
    type: "eip1559",
    chainId: 1,
    nonce,
    maxFeePerGas: "100",
    maxPriorityFeePerGas: "1",
  };
  return kind === "transfer"
    ? { ...common, to: ALICE, value: "1000", gas: "21000" }
    : {
        ...common,
        to: TOKEN,
        gas: "60000",
        data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [ALICE, 1_000_000n] }),
      };
}

/** The same as the enclave's service thread gets it from the run's worker (hostOps' toTransaction: bigints and numbers). */
export function signRequestOf(kind: TxKind, nonce: number): SignRequest {
  const tx = txParams(kind, nonce);
  return {
    kind: "transaction",
    transaction: {
      type: "eip1559",
      chainId: 1,
      nonce,
      to: tx.to as Address,
      gas: BigInt(tx.gas as string),
      maxFeePerGas: 100n,
      maxPriorityFeePerGas: 1n,
      ...(tx.value === undefined ? {} : { value: BigInt(tx.value as string) }),
      ...(tx.data === undefined ? {} : { data: tx.data as Hex }),
    },
  };
}

/** Microseconds per call: median, p99 and mean of `calls` single calls, each timed on its own. */
export type PerCall = { calls: number; median_us: number; p99_us: number; mean_us: number };

function perCall(times: number[]): PerCall {
  const sorted = [...times].sort((a, b) => a - b);
  const us = (ms: number) => Math.round(ms * 1000 * 100) / 100;
  return {
    calls: times.length,
    median_us: us(sorted[Math.floor(sorted.length / 2)]!),
    p99_us: us(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!),
    mean_us: us(times.reduce((a, b) => a + b, 0) / times.length),
  };
}

/**
 * What the enclave's service thread does per signature a guarded wallet is asked for
 * (operations/sigilAction.ts checkGuardrail): the decision (enclave/authz/guardrails.ts decide) of
 * the wallet's compiled guardrail — compiled once per hash from the document as the chain keeps it
 * (canonical JSON), then kept: the store's lookup by hash, a map's, is left out — on the request.
 * Each check is timed on its own (performance.now() around it, ~0.05 µs of its own), over 256
 * requests of different nonces taken in turn, after a warm-up; `charge`: also what a budgeted
 * signature adds on this thread before its reservation is sent (the payload's digest, budgetCharge).
 */
export function checkCost(kind: TxKind, options: { checks?: number; charge?: boolean } = {}): PerCall {
  const checks = options.checks ?? 20_000;
  const text = canonicalJson(GUARDRAIL);
  const loaded: LoadedGuardrail = { hash: keccak256(toBytes(text)), compiled: compileGuardrail(JSON.parse(text)) };
  const requests = Array.from({ length: 256 }, (_, i) => signRequestOf(kind, i));
  const one = (request: SignRequest) => {
    const decision = decide(loaded, request);
    if (!decision.allowed || decision.rule !== ALLOWED_BY[kind])
      throw new Error(`guardrail check (${kind}): unexpected decision ${JSON.stringify(decision)}`);
    if (options.charge) budgetCharge(request);
  };
  for (let i = 0; i < 5_000; i++) one(requests[i % requests.length]!);
  const times = new Array<number>(checks);
  for (let i = 0; i < checks; i++) {
    const request = requests[i % requests.length]!;
    const started = performance.now();
    one(request);
    times[i] = performance.now() - started;
  }
  return perCall(times);
}

/**
 * The side Worker for the Budgets object (workerd.ts SideWorker), bound to the edge's own class:
 * `/decide?name=&n=&c=` sends `n` decide() calls, `c` at a time, to the object named `name`
 * (`<account>:<wallet>`, as routes/budgets.ts names it), each the body's request with a digest of
 * its own (a new payload: a new entry in every budget), and answers the window's length and each
 * call's latency as the Worker sees it (workerd's clock moves at each I/O, which each call is);
 * `/states?name=` answers the object's counters for the body's limits.
 */
export const BUDGETS_SIDE: SideWorker = {
  objects: { BUDGETS: "Budgets" },
  module: `
export default {
  async fetch(request, env) {
    try {
      return await serve(request, env);
    } catch (err) {
      return new Response(String((err && err.stack) || err), { status: 500 });
    }
  },
};

async function serve(request, env) {
  const url = new URL(request.url);
  const q = (k) => url.searchParams.get(k);
  const store = env.BUDGETS.get(env.BUDGETS.idFromName(q("name")));
  const body = await request.json();
  if (url.pathname === "/states") return Response.json(await store.states(body.limits));
  if (url.pathname === "/decide") {
    const n = Number(q("n")), c = Number(q("c"));
    const prefix = crypto.randomUUID().replaceAll("-", "");
    const latencies = [];
    let next = 0;
    const client = async () => {
      while (next < n) {
        const digest = "0x" + prefix + (next++).toString(16).padStart(32, "0");
        const t = performance.now();
        const answer = await store.decide({ ...body, digest });
        latencies.push(performance.now() - t);
        if (!answer.granted) throw new Error("refused: " + JSON.stringify(answer));
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
