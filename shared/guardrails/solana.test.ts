// A guardrail's Solana rules (solana.ts) on transactions @solana/kit and the programs' own clients
// build — what a script would pass to signSolanaTransaction — decided as the enclave decides them.
import { getTransferSolInstruction, getCreateAccountInstruction } from "@solana-program/system";
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  getTransferInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import {
  address,
  appendTransactionMessageInstructions,
  compileTransactionMessage,
  compressTransactionMessageUsingAddressLookupTables,
  createNoopSigner,
  createTransactionMessage,
  getCompiledTransactionMessageEncoder,
  pipe,
  setTransactionMessageComputeUnitLimit,
  setTransactionMessageComputeUnitPrice,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
} from "@solana/kit";
import { describe, expect, it } from "vitest";
import { budgetCharge, budgetRefusal, countedValue, showLamports } from "./budgets.ts";
import { compileGuardrail, guardrailDocumentSchema, type SignRequest } from "./evaluate.ts";
import type { GuardrailInput } from "./schema.ts";
import {
  associatedTokenAddress,
  LAMPORTS_PER_SIGNATURE,
  solanaSpend,
  SYSTEM_PROGRAM,
  TOKEN_2022_PROGRAM,
} from "./solana.ts";

const WALLET = address("DrieaSzgi7KzGJuJRtoVsf9TGmu3C8WfueZxVacMyuJG");
const ALICE = address("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM");
const BOB = address("4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T");
const SPONSOR = address("Gh9ZwEmdLJ8DscKNTkTqPbNwLNNBjuSzaG9Vp2KGtKJr");
const USDC = address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
const MEMO = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
const BLOCKHASH = "EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k" as Blockhash;

/** The compiled message bytes of a transaction of `instructions`, paid by `payer`. */
function message(
  instructions: Instruction[],
  options: {
    payer?: Address;
    version?: "legacy" | 0;
    units?: number;
    microLamports?: bigint;
    tables?: Record<Address, Address[]>;
  } = {},
): Uint8Array {
  const built = pipe(
    createTransactionMessage({ version: options.version ?? 0 }),
    (m) => setTransactionMessageFeePayer(options.payer ?? WALLET, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: BLOCKHASH, lastValidBlockHeight: 100n }, m),
    (m) => (options.units === undefined ? m : setTransactionMessageComputeUnitLimit(options.units, m)),
    (m) => (options.microLamports === undefined ? m : setTransactionMessageComputeUnitPrice(options.microLamports, m)),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  // Only a v0 message loads accounts from tables (the tests that pass tables build one).
  const compiled = options.tables
    ? compileTransactionMessage(
        compressTransactionMessageUsingAddressLookupTables(
          built as Parameters<typeof compressTransactionMessageUsingAddressLookupTables>[0] & typeof built,
          options.tables,
        ),
      )
    : compileTransactionMessage(built);
  return new Uint8Array(getCompiledTransactionMessageEncoder().encode(compiled));
}

const sol = (to: Address, amount: bigint, from: Address = WALLET) =>
  getTransferSolInstruction({ source: createNoopSigner(from), destination: to, amount });

const tx = (bytes: Uint8Array, signer?: string): SignRequest => ({
  kind: "solana_transaction",
  message: bytes,
  ...(signer ? { signer } : {}),
});

function guard(solana: GuardrailInput["solana"], extra: Partial<GuardrailInput> = {}) {
  return compileGuardrail({ version: 1, solana, ...extra });
}

async function ata(owner: Address, mint: Address): Promise<Address> {
  const [found] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
  return found;
}

describe("associated token accounts", () => {
  it("are the addresses @solana/kit derives, for either token program", async () => {
    const owners = [WALLET, ALICE, BOB, SPONSOR, MEMO];
    for (const owner of owners) {
      for (const tokenProgram of [TOKEN_PROGRAM_ADDRESS, address(TOKEN_2022_PROGRAM)]) {
        const [want] = await findAssociatedTokenPda({ owner, mint: USDC, tokenProgram });
        expect(associatedTokenAddress(owner, USDC, tokenProgram)).toBe(want);
      }
    }
  });
});

describe("Solana transactions", () => {
  it("a wallet without Solana rules signs no Solana transaction", () => {
    const g = compileGuardrail({ version: 1, messages: {} });
    expect(g.check(tx(message([sol(ALICE, 1n)])))).toMatchObject({ allowed: false, rule: "solana.transactions" });
  });

  it("SOL transfers: to allowed recipients only, never to denied ones, each at most max_lamports", () => {
    const g = guard({ transactions: { transfers: { allow: [ALICE, BOB], deny: [BOB], max_lamports: "1000000" } } });
    expect(g.check(tx(message([sol(ALICE, 1_000_000n)])))).toEqual({
      allowed: true,
      rule: "solana.transactions.transfers",
    });
    expect(g.check(tx(message([sol(SPONSOR, 1n)])))).toEqual({
      allowed: false,
      rule: "solana.transactions.transfers.allow",
      reason: "the recipient is not on the allow list",
      observed: SPONSOR,
    });
    expect(g.check(tx(message([sol(BOB, 1n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.transfers.deny",
    });
    expect(g.check(tx(message([sol(ALICE, 1_000_001n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.transfers.max_lamports",
      observed: "1000001",
    });
    // Legacy messages read the same.
    expect(g.check(tx(message([sol(ALICE, 5n)], { version: "legacy" })))).toMatchObject({ allowed: true });
  });

  it("max_lamports bounds a transaction's transfers together", () => {
    const g = guard({ transactions: { transfers: {}, max_lamports: "10" } });
    expect(g.check(tx(message([sol(ALICE, 5n), sol(BOB, 5n)])))).toEqual({
      allowed: true,
      rule: "solana.transactions",
    });
    expect(g.check(tx(message([sol(ALICE, 6n), sol(BOB, 5n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.max_lamports",
      observed: "11",
    });
  });

  it("without transfers, no SOL moves; other System instructions are refused", () => {
    expect(guard({ transactions: { programs: [MEMO] } }).check(tx(message([sol(ALICE, 1n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.transfers",
      reason: "this wallet may not send SOL transfers",
    });
    const create = getCreateAccountInstruction({
      payer: createNoopSigner(WALLET),
      newAccount: createNoopSigner(ALICE),
      lamports: 1n,
      space: 0,
      programAddress: MEMO,
    });
    expect(guard({ transactions: { transfers: {} } }).check(tx(message([create])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.transfers",
      observed: "System instruction 0",
    });
  });

  it("other programs only when listed", () => {
    const memo: Instruction = { programAddress: MEMO, data: new TextEncoder().encode("hello") };
    expect(guard({ transactions: { transfers: {} } }).check(tx(message([memo])))).toEqual({
      allowed: false,
      rule: "solana.transactions.programs",
      reason: "instruction 0 calls a program that is not allowed",
      observed: MEMO,
    });
    expect(guard({ transactions: { programs: [MEMO] } }).check(tx(message([memo])))).toEqual({
      allowed: true,
      rule: "solana.transactions.programs",
    });
  });

  it("the fee payer, and the fee at the compute-unit price and limit", () => {
    const g = guard({ transactions: { transfers: {}, fee_payers: [SPONSOR], max_fee_lamports: "15000" } });
    const sponsored = (units?: number, microLamports?: bigint) =>
      message([sol(ALICE, 1n)], {
        payer: SPONSOR,
        ...(units === undefined ? {} : { units }),
        ...(microLamports === undefined ? {} : { microLamports }),
      });
    expect(g.check(tx(message([sol(ALICE, 1n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.fee_payers",
      observed: WALLET,
    });
    // Two signatures (the sponsor's, the wallet's): 10 000 lamports; the priority fee 200 000 units × 25 000 µ-lamports = 5 000.
    expect(g.check(tx(sponsored(200_000, 25_000n)))).toMatchObject({ allowed: true });
    const spend = solanaSpend(sponsored(200_000, 25_001n));
    expect(spend).toEqual({ lamports: 1n, feeLamports: 2n * LAMPORTS_PER_SIGNATURE + 5001n, feePayer: SPONSOR });
    expect(g.check(tx(sponsored(200_000, 25_001n)))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.max_fee_lamports",
      observed: "15001",
    });
    // No limit set: 200 000 units for each instruction but the Compute Budget program's.
    expect(solanaSpend(sponsored(undefined, 1_000_000n))).toMatchObject({ feeLamports: 10_000n + 200_000n });
  });

  it("SPL tokens: transferChecked of a listed mint to an allowed owner's associated account, at most max_amount", async () => {
    const g = guard({
      transactions: { tokens: [{ mint: USDC, recipients: { allow: [ALICE] }, max_amount: "1000000" }] },
    });
    const from = await ata(WALLET, USDC);
    const send = (destination: Address, amount: bigint, mint: Address = USDC) =>
      getTransferCheckedInstruction({
        source: from,
        mint,
        destination,
        authority: createNoopSigner(WALLET),
        amount,
        decimals: 6,
      });
    expect(g.check(tx(message([send(await ata(ALICE, USDC), 1_000_000n)])))).toEqual({
      allowed: true,
      rule: "solana.transactions.tokens[0]",
    });
    expect(g.check(tx(message([send(await ata(BOB, USDC), 1n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.tokens[0].recipients.allow",
      observed: await ata(BOB, USDC),
    });
    expect(g.check(tx(message([send(await ata(ALICE, USDC), 1_000_001n)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.tokens[0].max_amount",
      observed: "1000001",
    });
    expect(g.check(tx(message([send(await ata(ALICE, MEMO), 1n, MEMO)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.tokens",
      reason: "transfers of this mint are not allowed",
    });
    const unchecked = getTransferInstruction({
      source: from,
      destination: await ata(ALICE, USDC),
      authority: createNoopSigner(WALLET),
      amount: 1n,
    });
    expect(g.check(tx(message([unchecked])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.tokens",
      reason: "instruction 0: an unchecked token transfer does not name its mint; use transferChecked",
    });
  });

  it("creating an allowed recipient's associated token account for a listed mint, and no other", async () => {
    const g = guard({ transactions: { tokens: [{ mint: USDC, recipients: { allow: [ALICE] } }] } });
    const create = async (owner: Address) =>
      getCreateAssociatedTokenIdempotentInstruction({
        payer: createNoopSigner(WALLET),
        ata: await ata(owner, USDC),
        owner,
        mint: USDC,
      });
    expect(g.check(tx(message([await create(ALICE)])))).toMatchObject({
      allowed: true,
      rule: "solana.transactions.tokens[0]",
    });
    expect(g.check(tx(message([await create(BOB)])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.tokens",
    });
  });

  it("a recipient from an address lookup table cannot be read, so it is refused", () => {
    const table = address("AddressLookupTab1e1111111111111111111111111");
    const bytes = message([sol(ALICE, 1n)], { tables: { [table]: [ALICE] } });
    expect(guard({ transactions: { transfers: {} } }).check(tx(bytes))).toMatchObject({
      allowed: false,
      rule: "solana.transactions.transfers",
      reason: "instruction 0: the recipient comes from an address lookup table, which a guardrail cannot read",
    });
  });

  it("bytes that are no transaction message are refused, saying so", () => {
    expect(guard({ transactions: { transfers: {} } }).check(tx(new Uint8Array([1, 2, 3])))).toMatchObject({
      allowed: false,
      rule: "solana.transactions",
    });
  });
});

describe("Solana messages", () => {
  const m = (text: string): SignRequest => ({ kind: "solana_message", message: new TextEncoder().encode(text) });
  it("text against the pattern; bytes that are not text only with raw", () => {
    const g = guard({ messages: { pattern: "Sign in to example.com*" } });
    expect(g.check(m("Sign in to example.com at 12:00"))).toEqual({ allowed: true, rule: "solana.messages.pattern" });
    expect(g.check(m("Send everything"))).toMatchObject({ allowed: false, rule: "solana.messages.pattern" });
    const bytes: SignRequest = { kind: "solana_message", message: new Uint8Array([0xff, 0xfe]) };
    expect(g.check(bytes)).toMatchObject({ allowed: false, rule: "solana.messages.raw" });
    expect(guard({ messages: { raw: true } }).check(bytes)).toEqual({ allowed: true, rule: "solana.messages.raw" });
    expect(guard({ transactions: { transfers: {} } }).check(m("hi"))).toMatchObject({
      allowed: false,
      rule: "solana.messages",
    });
  });
});

describe("documents", () => {
  const problems = (doc: unknown) => {
    const parsed = guardrailDocumentSchema.safeParse(doc);
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };
  it("refuse listing a program the guardrail reads itself, a lamport budget beside unchecked programs, and bad addresses", () => {
    expect(problems({ version: 1, solana: { transactions: { programs: [SYSTEM_PROGRAM] } } })).toEqual([
      expect.stringMatching(/^solana\.transactions\.programs\.0: .*read by the guardrail itself/),
    ]);
    expect(
      problems({
        version: 1,
        solana: { transactions: { programs: [MEMO] } },
        budgets: [{ name: "day", window_seconds: 86_400, max_lamports: "1000" }],
      }),
    ).toEqual([expect.stringMatching(/^solana\.transactions\.programs: cannot list programs beside budgets\[0\]/)]);
    expect(problems({ version: 1, solana: { transactions: { transfers: { allow: ["0xabc"] } } } })).not.toEqual([]);
    expect(
      problems({ version: 1, budgets: [{ name: "x", window_seconds: 60, max_value_wei: "1", max_lamports: "1" }] }),
    ).toEqual(["budgets.0.max_lamports: a budget counts wei or lamports, not both: make two budgets"]);
  });
});

describe("budgets of lamports", () => {
  it("count the wallet's own transfers and the fee when it pays; wei budgets count none of it", () => {
    const bytes = message([sol(ALICE, 700n), sol(BOB, 50n, SPONSOR)]);
    // Signers: the wallet (fee payer) and the sponsor: 10 000 lamports of fee.
    const charge = budgetCharge(tx(bytes, WALLET));
    expect(charge.valueLamports).toBe(700n + 10_000n);
    expect(charge.valueWei).toBe(0n);
    expect(countedValue({ max_lamports: "1" }, charge)).toBe(10_700n);
    expect(countedValue({}, charge)).toBe(0n);
    // Paid by the sponsor, the wallet spends only what it sends.
    expect(budgetCharge(tx(message([sol(ALICE, 700n)], { payer: SPONSOR }), WALLET)).valueLamports).toBe(700n);
    // Who the wallet is unknown (a check without one): every transfer and the fee.
    expect(budgetCharge(tx(bytes)).valueLamports).toBe(750n + 10_000n);
  });

  it("refuse past their window's lamports, in SOL and lamports", () => {
    const limit = {
      name: "day",
      per: "wallet" as const,
      scope: "wallet",
      window_seconds: 86_400,
      max_lamports: "1000000000",
    };
    expect(budgetRefusal(limit, { count: 1, value: 600_000_000n, oldest: 0 }, 500_000_000n)).toEqual({
      reason:
        'budget "day" allows 1 SOL (1000000000 lamports) a day; 0.6 SOL (600000000 lamports) is counted and this spends 0.5 SOL (500000000 lamports)',
      observed: "500000000 lamports asked, 400000000 lamports left",
    });
    expect(showLamports(5000n)).toBe("5000 lamports");
  });
});
