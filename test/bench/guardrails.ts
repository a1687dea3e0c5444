// `npm run bench:guardrails`: what a guardrail check costs the enclave's service thread per signature
// (docs/design/guardrails.md), as provideKey makes it on a document already compiled: an ERC-20
// transfer whose calldata is decoded by the ABI the guardrail carries (issue 30's target: under 100 µs),
// a plain transfer, an EIP-712 permit read through its declared types, a message against a glob, and
// a refusal; then what compiling a document costs once per hash. Each figure is the median of 5
// batches of 20 000 checks (2 000 compiles) after a warm-up, in microseconds. The last line of output
// is one JSON object with every result.
import { encodeFunctionData, parseAbi, type TransactionSerializable, type TypedDataDefinition } from "viem";
import { compileGuardrail, type SignRequest } from "../../shared/guardrails/evaluate.ts";

const ALICE = "0x00000000000000000000000000000000000a11ce";
const TOKEN = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const ROUTER = "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad";
const ERC20 = parseAbi(["function transfer(address to, uint256 amount)"]);

const DOCUMENT = {
  version: 1,
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
          { signature: "function approve(address spender, uint256 amount)", args: { spender: { in: [ROUTER] } } },
        ],
      },
    ],
  },
  typed_data: [
    {
      domain: { name: "USD Coin", chain_id: 1, verifying_contract: TOKEN },
      primary_type: "Permit",
      fields: { spender: { in: [ROUTER] }, value: { lte: "1000000" } },
    },
  ],
  messages: { pattern: "Sign in to example.com*nonce: *" },
};

const tx = (t: Partial<TransactionSerializable>): SignRequest => ({
  kind: "transaction",
  transaction: { chainId: 1, type: "eip1559", ...t } as TransactionSerializable,
});

const CASES: Record<string, SignRequest> = {
  "erc20 transfer (ABI-decoded)": tx({
    to: TOKEN,
    data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [ALICE, 1_000_000n] }),
  }),
  "plain transfer": tx({ to: ALICE, value: 1000n }),
  "EIP-712 permit": {
    kind: "typed_data",
    typedData: {
      domain: { name: "USD Coin", version: "2", chainId: 1, verifyingContract: TOKEN },
      types: {
        Permit: [
          { name: "owner", type: "address" },
          { name: "spender", type: "address" },
          { name: "value", type: "uint256" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      primaryType: "Permit",
      message: { owner: ALICE, spender: ROUTER, value: 5n, nonce: 0n, deadline: 2n ** 40n },
    } as TypedDataDefinition,
  },
  "message glob": { kind: "message", message: "Sign in to example.com at 12:00, nonce: 7" },
  "refusal (another chain)": tx({ to: ALICE, chainId: 10 }),
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function perCall(run: () => void, calls: number, batches = 5): number {
  for (let i = 0; i < calls; i++) run(); // warm-up
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) run();
    times.push(((performance.now() - start) * 1000) / calls);
  }
  return median(times);
}

const compiled = compileGuardrail(DOCUMENT);
const results: Record<string, number> = {};
for (const [name, request] of Object.entries(CASES)) {
  const expected = !name.startsWith("refusal");
  if (compiled.check(request).allowed !== expected) throw new Error(`${name}: unexpected decision`);
  results[name] = perCall(() => compiled.check(request), 20_000);
}
results["compile the document (once per hash)"] = perCall(() => compileGuardrail(DOCUMENT), 2_000);

const width = Math.max(...Object.keys(results).map((k) => k.length));
console.log("guardrail check, µs per call (median of 5 batches):");
for (const [name, us] of Object.entries(results)) console.log(`  ${name.padEnd(width)}  ${us.toFixed(2)}`);
console.log(
  JSON.stringify({
    guardrails: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, Number(v.toFixed(2))])),
  }),
);
