// The guardrail check, rule kind by rule kind: what each allows, what it refuses and at which rule,
// the values at the edges, and the ways round a guardrail a script could try — a raw digest, the
// key's export, another chain, a transaction without a chain id, a permit, calldata encoded by hand,
// a key the types do not declare.
import {
  concatHex,
  encodeAbiParameters,
  encodeFunctionData,
  parseAbi,
  toFunctionSelector,
  type Hex,
  type TransactionSerializable,
  type TypedDataDefinition,
} from "viem";
import { describe, expect, it } from "vitest";
import { compileGuardrail, globMatch, GuardrailError, guardrailDocumentSchema, type SignRequest } from "./evaluate.ts";

const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";
const MALLORY = "0x000000000000000000000000000000000000bad0";
const USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const ROUTER = "0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD";
const DELEGATE = "0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B";
const ERC20 = parseAbi([
  "function transfer(address to, uint256 amount)",
  "function approve(address spender, uint256 amount)",
  "function transferFrom(address from, address to, uint256 amount)",
]);

const treasury = compileGuardrail({
  version: 1,
  name: "treasury",
  transactions: {
    chains: [1, 8453],
    max_value_wei: "500000000000000000",
    transfers: { allow: [ALICE, BOB], deny: [BOB] },
    contracts: [
      {
        address: USDC,
        functions: [
          {
            signature: "function transfer(address to, uint256 amount)",
            args: { to: { in: [ALICE] }, amount: { lte: "1000000" } },
          },
        ],
      },
    ],
  },
});

const tx = (t: Partial<TransactionSerializable>): SignRequest => ({
  kind: "transaction",
  transaction: { chainId: 1, ...t } as TransactionSerializable,
});

describe("transactions", () => {
  it("a transfer to a listed recipient, up to the per-transaction value, is allowed by transactions.transfers", () => {
    expect(treasury.check(tx({ to: ALICE, value: 500_000_000_000_000_000n }))).toEqual({
      allowed: true,
      rule: "transactions.transfers",
    });
  });

  it("one wei over the value cap, another recipient, a denied one, or no recipient are refused at their rule", () => {
    expect(treasury.check(tx({ to: ALICE, value: 500_000_000_000_000_001n }))).toEqual({
      allowed: false,
      rule: "transactions.max_value_wei",
      reason: "the value is more than 500000000000000000 wei",
      observed: "500000000000000001",
    });
    expect(treasury.check(tx({ to: MALLORY, value: 1n }))).toMatchObject({
      allowed: false,
      rule: "transactions.transfers.allow",
      observed: MALLORY,
    });
    // The deny list wins over the allow list.
    expect(treasury.check(tx({ to: BOB, value: 1n }))).toMatchObject({
      allowed: false,
      rule: "transactions.transfers.deny",
    });
    expect(treasury.check(tx({ data: "0x6080" }))).toMatchObject({ allowed: false, rule: "transactions.deploy" });
  });

  it("another chain, or no chain id at all (replayable anywhere), is refused at transactions.chains", () => {
    expect(treasury.check(tx({ to: ALICE, chainId: 10 }))).toEqual({
      allowed: false,
      rule: "transactions.chains",
      reason: "chain 10 is not one of 1, 8453",
      observed: "10",
    });
    expect(
      treasury.check({ kind: "transaction", transaction: { to: ALICE, value: 1n, type: "legacy", gasPrice: 1n } }),
    ).toMatchObject({
      allowed: false,
      rule: "transactions.chains",
    });
    expect(treasury.check(tx({ to: ALICE, chainId: 8453 })).allowed).toBe(true);
  });

  it("an ERC-20 transfer is decoded by the ABI the guardrail carries: listed recipient and amount at the cap allowed, one unit more refused", () => {
    const call = (to: string, amount: bigint) =>
      tx({ to: USDC, data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as Hex, amount] }) });
    // The decision carries the call as the ABI decoded it.
    expect(treasury.check(call(ALICE, 1_000_000n))).toEqual({
      allowed: true,
      rule: "transactions.contracts[0].functions[0]",
      call: { function: "transfer", args: { to: ALICE, amount: "1000000" } },
    });
    expect(treasury.check(call(ALICE, 1_000_001n))).toEqual({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.amount",
      reason: "amount is more than 1000000",
      observed: "1000001",
      call: { function: "transfer", args: { to: ALICE, amount: "1000001" } },
    });
    expect(treasury.check(call(MALLORY, 1n))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.to",
      observed: MALLORY,
    });
  });

  it("calldata encoded by hand is the same bytes, decoded the same: no way round the argument check", () => {
    const selector = toFunctionSelector("function transfer(address to, uint256 amount)");
    const byHand = concatHex([
      selector,
      encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [MALLORY, 5n]),
    ]);
    expect(treasury.check(tx({ to: USDC, data: byHand }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0].args.to",
    });
    // Truncated arguments do not decode: refused, not read as zeros.
    expect(treasury.check(tx({ to: USDC, data: byHand.slice(0, 40) as Hex }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions[0]",
    });
  });

  it("another function, another contract, or native value sent with a call are refused", () => {
    const approve = encodeFunctionData({ abi: ERC20, functionName: "approve", args: [MALLORY, 2n ** 256n - 1n] });
    expect(treasury.check(tx({ to: USDC, data: approve }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].functions",
      observed: approve.slice(0, 10),
    });
    const transfer = encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [ALICE, 1n] });
    expect(treasury.check(tx({ to: ROUTER, data: transfer }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts",
    });
    expect(treasury.check(tx({ to: USDC, data: transfer, value: 1n }))).toMatchObject({
      allowed: false,
      rule: "transactions.contracts[0].max_value_wei",
    });
  });

  it("EIP-7702 authorizations: only to listed delegates, never for chain 0, never without the section", () => {
    const guarded = compileGuardrail({
      version: 1,
      transactions: { chains: [1], authorizations: { allow: [DELEGATE] } },
    });
    const auth = (address: string, chainId: number) =>
      tx({
        type: "eip7702",
        to: ALICE,
        authorizationList: [{ address: address as Hex, chainId, nonce: 0, r: "0x1", s: "0x1", yParity: 0 }],
      } as Partial<TransactionSerializable>);
    expect(guarded.check(auth(DELEGATE, 1))).toEqual({ allowed: true, rule: "transactions.authorizations" });
    expect(guarded.check(auth(MALLORY, 1))).toMatchObject({
      allowed: false,
      rule: "transactions.authorizations.allow",
    });
    expect(guarded.check(auth(DELEGATE, 0))).toMatchObject({ allowed: false, rule: "transactions.authorizations" });
    expect(guarded.check(auth(DELEGATE, 5))).toMatchObject({ allowed: false, rule: "transactions.chains" });
    expect(treasury.check(auth(DELEGATE, 1))).toMatchObject({ allowed: false, rule: "transactions.authorizations" });
  });

  it("a guardrail without a transactions section refuses every transaction", () => {
    expect(compileGuardrail({ version: 1, messages: {} }).check(tx({ to: ALICE }))).toEqual({
      allowed: false,
      rule: "transactions",
      reason: "this wallet may not sign transactions",
    });
  });
});

const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;
const permit = (spender: string, value: bigint, domain: Record<string, unknown> = {}): SignRequest => ({
  kind: "typed_data",
  typedData: {
    domain: { name: "USD Coin", version: "2", chainId: 1, verifyingContract: USDC, ...domain },
    types: PERMIT_TYPES,
    primaryType: "Permit",
    message: { owner: ALICE, spender, value, nonce: 0n, deadline: 2n ** 40n },
  } as TypedDataDefinition,
});

describe("typed data", () => {
  const permits = compileGuardrail({
    version: 1,
    typed_data: [
      {
        domain: { name: "USD Coin", chain_id: 1, verifying_contract: USDC },
        primary_type: "Permit",
        fields: { spender: { in: [ROUTER] }, value: { lte: "1000000" } },
      },
    ],
  });

  it("a permit to the listed spender for up to the amount, on the named domain, is allowed", () => {
    expect(permits.check(permit(ROUTER, 1_000_000n))).toEqual({ allowed: true, rule: "typed_data[0]" });
  });

  it("another spender, one unit more, another chain or another verifying contract is refused at its condition", () => {
    expect(permits.check(permit(MALLORY, 1n))).toMatchObject({ allowed: false, rule: "typed_data[0].fields.spender" });
    expect(permits.check(permit(ROUTER, 1_000_001n))).toMatchObject({
      allowed: false,
      rule: "typed_data[0].fields.value",
      observed: "1000001",
    });
    expect(permits.check(permit(ROUTER, 1n, { chainId: 8453 }))).toMatchObject({
      allowed: false,
      rule: "typed_data[0].domain.chain_id",
    });
    expect(permits.check(permit(ROUTER, 1n, { verifyingContract: MALLORY }))).toMatchObject({
      allowed: false,
      rule: "typed_data[0].domain.verifying_contract",
    });
  });

  it("a key the types do not declare is not what is signed, so a condition never reads it", () => {
    // The signed field is `spender_` (MALLORY); `spender` (ROUTER) is in the message but not in the types.
    const sneaky: SignRequest = {
      kind: "typed_data",
      typedData: {
        domain: { name: "USD Coin", chainId: 1, verifyingContract: USDC },
        types: {
          Permit: [
            { name: "spender_", type: "address" },
            { name: "value", type: "uint256" },
          ],
        },
        primaryType: "Permit",
        message: { spender: ROUTER, spender_: MALLORY, value: 1n },
      } as unknown as TypedDataDefinition,
    };
    expect(permits.check(sneaky)).toEqual({
      allowed: false,
      rule: "typed_data[0].fields.spender",
      reason: "spender is not a field of Permit",
    });
  });

  it("nested fields by dotted path; a guardrail without typed_data refuses all typed data", () => {
    const nested = compileGuardrail({
      version: 1,
      typed_data: [{ domain: {}, primary_type: "Order", fields: { "details.amount": { lte: "10" } } }],
    });
    const order = (amount: bigint): SignRequest => ({
      kind: "typed_data",
      typedData: {
        domain: { name: "x" },
        types: { Order: [{ name: "details", type: "Details" }], Details: [{ name: "amount", type: "uint256" }] },
        primaryType: "Order",
        message: { details: { amount } },
      } as unknown as TypedDataDefinition,
    });
    expect(nested.check(order(10n)).allowed).toBe(true);
    expect(nested.check(order(11n))).toMatchObject({ allowed: false, rule: "typed_data[0].fields.details.amount" });
    expect(treasury.check(permit(ROUTER, 1n))).toMatchObject({ allowed: false, rule: "typed_data" });
  });
});

describe("messages, raw digests and the key's export", () => {
  const login = compileGuardrail({ version: 1, messages: { pattern: "Sign in to example.com*nonce: *" } });

  it("a message matching the pattern is allowed; another is refused with the text seen", () => {
    expect(login.check({ kind: "message", message: "Sign in to example.com at 12:00, nonce: 7" })).toEqual({
      allowed: true,
      rule: "messages.pattern",
    });
    expect(login.check({ kind: "message", message: "Transfer everything" })).toMatchObject({
      allowed: false,
      rule: "messages.pattern",
      observed: "Transfer everything",
    });
  });

  it("raw-byte messages only when the section says raw, and then matched as UTF-8 text", () => {
    const raw = { kind: "message", message: { raw: "0xdeadbeef" } } as const;
    expect(login.check(raw)).toMatchObject({ allowed: false, rule: "messages.raw" });
    expect(compileGuardrail({ version: 1, messages: { raw: true } }).check(raw)).toEqual({
      allowed: true,
      rule: "messages.raw",
    });
    const text = {
      kind: "message",
      message: { raw: "0x5369676e20696e20746f206578616d706c652e636f6d206e6f6e63653a2031" },
    } as const;
    expect(
      compileGuardrail({ version: 1, messages: { raw: true, pattern: "Sign in to example.com*nonce: *" } }).check(text)
        .allowed,
    ).toBe(true);
  });

  it("a raw digest and the key's export are refused unless the guardrail names them, whatever else it allows", () => {
    const digest = { kind: "hash", digest: `0x${"ab".repeat(32)}` } as const;
    expect(treasury.check(digest)).toMatchObject({ allowed: false, rule: "raw_digests" });
    expect(treasury.check({ kind: "export" })).toMatchObject({ allowed: false, rule: "key_export" });
    const open = compileGuardrail({ version: 1, raw_digests: true, key_export: true });
    expect(open.check(digest)).toEqual({ allowed: true, rule: "raw_digests" });
    expect(open.check({ kind: "export" })).toEqual({ allowed: true, rule: "key_export" });
    expect(compileGuardrail({ version: 1 }).check({ kind: "message", message: "hi" })).toMatchObject({
      allowed: false,
      rule: "messages",
    });
  });
});

describe("globMatch", () => {
  it("matches literal text with * for any run, anchored at both ends", () => {
    expect(globMatch("abc", "abc")).toBe(true);
    expect(globMatch("abc", "abcd")).toBe(false);
    expect(globMatch("a*c", "abbbc")).toBe(true);
    expect(globMatch("a*c", "ac")).toBe(true);
    expect(globMatch("a*b*c", "acb")).toBe(false);
    expect(globMatch("*", "")).toBe(true);
    expect(globMatch("ab*ba", "aba")).toBe(false);
    expect(globMatch("*.com", "example.com")).toBe(true);
    // No special characters but *: a regex's metacharacters are text.
    expect(globMatch("a.c", "abc")).toBe(false);
  });

  it("answers a pattern made to backtrack at once, on a long text", () => {
    const text = "a".repeat(200_000);
    expect(globMatch(`${"a*".repeat(500)}b`, text)).toBe(false);
  });
});

describe("guardrailDocumentSchema", () => {
  it("says every problem at its path, the schema's and the compiler's, and throws none", () => {
    const r = guardrailDocumentSchema.safeParse({
      version: 1,
      transactions: {
        chains: [1],
        max_value_wei: "1.5",
        contracts: [
          {
            address: USDC,
            functions: [{ signature: "function transfer(address to)", args: { amount: { lte: "1" } } }],
          },
        ],
      },
    });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join("."))).toContain("transactions.max_value_wei");
    const compiled = guardrailDocumentSchema.safeParse({
      version: 1,
      transactions: {
        chains: [1],
        contracts: [
          {
            address: USDC,
            functions: [{ signature: "function transfer(address to)", args: { amount: { lte: "1" } } }],
          },
        ],
      },
    });
    expect(compiled.error?.issues).toEqual([
      expect.objectContaining({
        path: ["transactions", "contracts", 0, "functions", 0, "args", "amount"],
        message: "transfer has no argument named amount",
      }),
    ]);
  });
});

describe("compiling a document", () => {
  it("refuses unknown keys, amounts that are not decimal strings, and empty conditions", () => {
    expect(() => compileGuardrail({ version: 1, transaction: {} })).toThrow();
    expect(() => compileGuardrail({ version: 1, transactions: { chains: [1], max_value_wei: 5 } })).toThrow();
    expect(() =>
      compileGuardrail({ version: 1, typed_data: [{ domain: {}, primary_type: "P", fields: { a: {} } }] }),
    ).toThrow(/at least one operator/);
  });

  it("refuses a signature that does not parse and a condition on an argument the function lacks, naming where", () => {
    const contract = (signature: string, args: Record<string, unknown>) => ({
      version: 1,
      transactions: { chains: [1], contracts: [{ address: USDC, functions: [{ signature, args }] }] },
    });
    expect(() => compileGuardrail(contract("function transfer(address to, uint256", {}))).toThrow(GuardrailError);
    expect(() =>
      compileGuardrail(contract("function transfer(address to, uint256 amount)", { value: { lte: "1" } })),
    ).toThrow("transactions.contracts[0].functions[0].args.value: transfer has no argument named value");
  });
});
