// The templates: each makes a document the API takes (guardrailDocumentSchema), and the document
// allows what the template says and refuses the rest — checked by the evaluator the enclave runs.
// Filling from text (the CLI's options, the dashboard's form) names each problem by its parameter.
import { encodeFunctionData, parseAbi, type Hex, type TransactionSerializable, type TypedDataDefinition } from "viem";
import { describe, expect, it } from "vitest";
import { compileGuardrail, guardrailDocumentSchema, type SignRequest } from "./evaluate.ts";
import {
  fillTemplate,
  guardrailTemplates,
  loginTemplate,
  paramsOf,
  splitList,
  templateNamed,
  tradingBotTemplate,
  treasuryTemplate,
  typedDataTemplate,
} from "./templates.ts";

const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";
const MALLORY = "0x000000000000000000000000000000000000bad0";
const USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const ROUTER = "0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD";
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const ABI = parseAbi([
  "function transfer(address to, uint256 amount)",
  "function approve(address spender, uint256 amount)",
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline)",
  "function withdraw(address to)",
]);
const SWAP =
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline)";

const tx = (t: Partial<TransactionSerializable>): SignRequest => ({
  kind: "transaction",
  transaction: { chainId: 1, ...t } as TransactionSerializable,
});
const call = (to: string, data: Hex, t: Partial<TransactionSerializable> = {}) => tx({ to: to as Hex, data, ...t });
const transfer = (to: string, amount: bigint) =>
  encodeFunctionData({ abi: ABI, functionName: "transfer", args: [to as Hex, amount] });
const approve = (spender: string) =>
  encodeFunctionData({ abi: ABI, functionName: "approve", args: [spender as Hex, 2n ** 256n - 1n] });
const message = (text: string): SignRequest => ({ kind: "message", message: text });
const digest: SignRequest = { kind: "hash", digest: `0x${"12".repeat(32)}` };

describe("every template", () => {
  it.each(guardrailTemplates.map((t) => [t.name, t]))(
    "%s: found by its name, each parameter with a title and a description",
    (_name, t) => {
      for (const p of paramsOf(t)) {
        expect(p.description, `${t.name}.${p.name}`).not.toBe("");
        expect(p.title, `${t.name}.${p.name}`).not.toBe(p.name);
      }
      expect(templateNamed(t.name)).toBe(t);
    },
  );
});

describe("treasury", () => {
  const params = {
    chains: [1, 8453],
    recipients: [ALICE.toLowerCase(), BOB],
    max_value_wei: "500000000000000000",
    tokens: [USDC.toLowerCase()],
    max_token_amount: "1000000",
  };
  const doc = treasuryTemplate.make(params);
  const g = compileGuardrail(doc);

  it("validates as the API checks it", () => {
    expect(guardrailDocumentSchema.safeParse(doc).success).toBe(true);
    expect(guardrailDocumentSchema.safeParse(treasuryTemplate.make({ ...params, tokens: undefined })).success).toBe(
      true,
    );
  });

  it("pays a recipient up to the cap, in ether and in the token; on a listed chain only", () => {
    expect(g.check(tx({ to: ALICE, value: 500_000_000_000_000_000n }))).toEqual({
      allowed: true,
      rule: "transactions.transfers",
    });
    expect(g.check(tx({ to: BOB, value: 1n, chainId: 8453 })).allowed).toBe(true);
    expect(g.check(call(USDC, transfer(BOB, 1_000_000n)))).toMatchObject({
      allowed: true,
      rule: "transactions.contracts[0].functions[0]",
    });
  });

  it("refuses one wei over, another recipient, another chain, a token transfer over the cap or elsewhere, an approve, messages and digests", () => {
    expect(g.check(tx({ to: ALICE, value: 500_000_000_000_000_001n }))).toMatchObject({
      allowed: false,
      rule: "transactions.max_value_wei",
    });
    expect(g.check(tx({ to: MALLORY, value: 1n }))).toMatchObject({
      allowed: false,
      rule: "transactions.transfers.allow",
      observed: MALLORY,
    });
    expect(g.check(tx({ to: ALICE, value: 1n, chainId: 10 }))).toMatchObject({
      allowed: false,
      rule: "transactions.chains",
    });
    expect(g.check(call(USDC, transfer(ALICE, 1_000_001n)))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.amount",
      observed: "1000001",
    });
    expect(g.check(call(USDC, transfer(MALLORY, 1n)))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.to",
    });
    expect(g.check(call(USDC, approve(MALLORY)))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions",
    });
    expect(g.check(message("anything")).allowed).toBe(false);
    expect(g.check(digest).allowed).toBe(false);
    expect(g.check({ kind: "export" }).allowed).toBe(false);
  });

  it("without tokens, no contract call at all", () => {
    const plain = compileGuardrail(
      treasuryTemplate.make({ ...params, tokens: undefined, max_token_amount: undefined }),
    );
    expect(plain.check(call(USDC, transfer(ALICE, 1n)))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts",
    });
  });
});

describe("trading-bot", () => {
  const doc = tradingBotTemplate.make({
    chain: 8453,
    router: ROUTER.toLowerCase(),
    functions: [SWAP],
    max_value_wei: "100",
    tokens: [USDC.toLowerCase()],
  });
  const g = compileGuardrail(doc);
  const swap = encodeFunctionData({
    abi: ABI,
    functionName: "swapExactTokensForTokens",
    args: [1n, 0n, [USDC, ROUTER], ALICE, 2n ** 40n],
  });

  it("validates as the API checks it", () => {
    expect(guardrailDocumentSchema.safeParse(doc).success).toBe(true);
  });

  it("calls the router's listed functions with up to the cap in value, and approves the router on the tokens", () => {
    expect(g.check(call(ROUTER, swap, { chainId: 8453, value: 100n }))).toMatchObject({
      allowed: true,
      rule: "transactions.contracts[0].functions[0]",
    });
    expect(g.check(call(USDC, approve(ROUTER), { chainId: 8453 }))).toMatchObject({
      allowed: true,
      rule: "transactions.contracts[1].functions[0]",
    });
  });

  it("refuses plain transfers, another router function, more value, another chain, an approve to anyone else", () => {
    expect(g.check(tx({ to: ROUTER, value: 1n, chainId: 8453 }))).toMatchObject({ allowed: false });
    expect(g.check(tx({ to: ALICE, value: 1n, chainId: 8453 }))).toMatchObject({
      allowed: false,
      rule: "transactions.transfers",
    });
    const withdraw = encodeFunctionData({ abi: ABI, functionName: "withdraw", args: [MALLORY] });
    expect(g.check(call(ROUTER, withdraw, { chainId: 8453 }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions",
    });
    expect(g.check(call(ROUTER, swap, { chainId: 8453, value: 101n }))).toMatchObject({ allowed: false });
    expect(g.check(call(ROUTER, swap, { chainId: 1 }))).toMatchObject({
      allowed: false,
      rule: "transactions.chains",
    });
    expect(g.check(call(USDC, approve(MALLORY), { chainId: 8453 }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[1].functions[0].args.spender",
      observed: MALLORY,
    });
  });
});

describe("typed-data", () => {
  const doc = typedDataTemplate.make({
    domain_name: "Permit2",
    chain: 1,
    verifying_contract: PERMIT2.toLowerCase(),
    primary_types: ["PermitSingle"],
  });
  const g = compileGuardrail(doc);
  const permit = (domain: Record<string, unknown> = {}, primaryType = "PermitSingle"): SignRequest => ({
    kind: "typed_data",
    typedData: {
      domain: { name: "Permit2", chainId: 1, verifyingContract: PERMIT2, ...domain },
      types: { [primaryType]: [{ name: "spender", type: "address" }] },
      primaryType,
      message: { spender: ROUTER },
    } as unknown as TypedDataDefinition,
  });

  it("validates, and signs the protocol's primary type on its domain", () => {
    expect(guardrailDocumentSchema.safeParse(doc).success).toBe(true);
    expect(g.check(permit())).toEqual({ allowed: true, rule: "typed_data[0]" });
  });

  it("refuses another domain, chain, contract or type, and any transaction or message", () => {
    expect(g.check(permit({ name: "USD Coin" })).allowed).toBe(false);
    expect(g.check(permit({ chainId: 8453 })).allowed).toBe(false);
    expect(g.check(permit({ verifyingContract: USDC })).allowed).toBe(false);
    expect(g.check(permit({}, "PermitBatch")).allowed).toBe(false);
    expect(g.check(tx({ to: ALICE, value: 1n }))).toMatchObject({ allowed: false, rule: "transactions" });
    expect(g.check(message("hi"))).toMatchObject({ allowed: false, rule: "messages" });
  });
});

describe("login", () => {
  it("a site: its Sign-In with Ethereum messages only", () => {
    const doc = loginTemplate.make({ domain: "example.com" });
    expect(guardrailDocumentSchema.safeParse(doc).success).toBe(true);
    const g = compileGuardrail(doc);
    expect(
      g.check(
        message(
          `example.com wants you to sign in with your Ethereum account:\n${ALICE}\n\nURI: https://example.com\nVersion: 1\nChain ID: 1\nNonce: 32891756\nIssued At: 2021-09-30T16:25:24Z`,
        ),
      ),
    ).toEqual({ allowed: true, rule: "messages.pattern" });
    expect(g.check(message("evil.com wants you to sign in with your Ethereum account:\n0x…"))).toMatchObject({
      allowed: false,
      rule: "messages.pattern",
    });
    expect(g.check(tx({ to: ALICE, value: 1n })).allowed).toBe(false);
    expect(g.check(digest).allowed).toBe(false);
  });

  it("or a pattern of its own", () => {
    const g = compileGuardrail(loginTemplate.make({ pattern: "Log in to example.com: *" }));
    expect(g.check(message("Log in to example.com: 42")).allowed).toBe(true);
    expect(g.check(message("Send 1 ETH")).allowed).toBe(false);
  });
});

describe("fillTemplate: parameters as text", () => {
  it("lists comma-separated (a signature's own commas kept), numbers read, addresses lowercased", () => {
    expect(splitList(`${SWAP}, withdraw(address to)\nfunction approve(address a, uint256 b),`)).toEqual([
      SWAP,
      "withdraw(address to)",
      "function approve(address a, uint256 b)",
    ]);
    const filled = fillTemplate(treasuryTemplate, {
      chains: "1, 8453",
      recipients: `${ALICE},${BOB}`,
      max_value_wei: "10",
    });
    expect(filled.problems).toBeUndefined();
    expect(filled.document?.transactions).toEqual({
      chains: [1, 8453],
      max_value_wei: "10",
      transfers: { allow: [ALICE, BOB] },
    });
    const bot = fillTemplate(tradingBotTemplate, {
      chain: "8453",
      router: ROUTER,
      functions: `${SWAP}, withdraw(address to)`,
    });
    expect(bot.document?.transactions?.contracts?.[0]?.functions.map((f) => f.signature)).toEqual([
      SWAP,
      "function withdraw(address to)",
    ]);
  });

  it("each problem named by its parameter: missing, not a number, not an address, not a signature, one without the other", () => {
    expect(fillTemplate(treasuryTemplate, { chains: "1" }).problems).toEqual([
      { param: "recipients", message: "is required" },
      { param: "max_value_wei", message: "is required" },
    ]);
    expect(fillTemplate(treasuryTemplate, { chains: "one", recipients: ALICE, max_value_wei: "1" }).problems).toEqual([
      { param: "chains", message: 'must be a whole number, not "one"' },
    ]);
    expect(
      fillTemplate(treasuryTemplate, { chains: "1", recipients: `${ALICE},0x12`, max_value_wei: "1.5" }).problems,
    ).toEqual([
      { param: "recipients", message: "item 2 must be a 0x-prefixed 20-byte address" },
      { param: "max_value_wei", message: "must be a whole number, e.g. 1000000000000000000" },
    ]);
    expect(
      fillTemplate(treasuryTemplate, { chains: "1", recipients: ALICE, max_value_wei: "1", tokens: USDC }).problems,
    ).toEqual([
      { param: "max_token_amount", message: "is required with tokens: the most one token transfer may move" },
    ]);
    expect(
      fillTemplate(tradingBotTemplate, { chain: "1", router: ROUTER, functions: "swap(" }).problems?.[0],
    ).toMatchObject({ param: "functions", message: expect.stringContaining("is not a Solidity function signature") });
    expect(fillTemplate(loginTemplate, {}).problems).toEqual([
      { param: "domain", message: "is required (or pattern)" },
    ]);
    expect(fillTemplate(loginTemplate, { domain: "a.com", pattern: "x*" }).problems?.[0]?.param).toBe("pattern");
  });
});
