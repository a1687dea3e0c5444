// A guardrail's Solana rules (docs/design/guardrails.md, Solana): a transaction's compiled message
// read instruction by instruction — what the wallet's signature makes happen — and checked against
// the document's `solana` section. The message is decoded with @solana/transaction-messages (legacy
// and v0); the few instructions a guardrail understands are read from their documented layouts:
//
// - System program: Transfer (u32 2, u64 lamports; accounts [from, to]) and AdvanceNonceAccount
//   (u32 4, a durable nonce's use). Anything else it does — create, assign, allocate — is refused.
// - SPL Token and Token-2022: TransferChecked (u8 12, u64 amount, u8 decimals; accounts [source,
//   mint, destination, authority]). An unchecked Transfer (u8 3) does not name its mint, so no rule
//   on a mint can hold for it: refused.
// - Associated Token Account program: Create and CreateIdempotent (accounts [payer, account, owner,
//   mint, system, token program]) of an allowed recipient's account for a listed mint.
// - Compute Budget program: its settings, read for the fee (5000 lamports a signature, and the
//   priority fee: the unit price times the unit limit).
//
// Every other program is allowed only when `programs` lists it, and then unchecked — a program the
// wallet signs for may move the wallet's SOL and tokens as it chooses, which is why the list is the
// document's and not a default. An account loaded from an address lookup table is not in the
// message: a rule that must read one (a transfer's recipient) refuses the instruction.
//
// A recipient's associated token account is derived here (the program-derived address of [owner,
// token program, mint]) with @noble's SHA-256 and ed25519, synchronously, because a check runs in
// one step on the enclave's service thread; @solana/kit derives the same addresses asynchronously
// (a test compares them).
import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import { getAddressDecoder, getAddressEncoder, type Address } from "@solana/addresses";
import { getCompiledTransactionMessageDecoder } from "@solana/transaction-messages";
import type { Guardrail } from "./schema.ts";

export const SYSTEM_PROGRAM = "11111111111111111111111111111111";
export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";

/** The programs a guardrail reads itself; `programs` may not list them (they would skip their own rules). */
export const READ_PROGRAMS: ReadonlySet<string> = new Set([
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
]);

/** Lamports a signature costs (Solana's base fee). */
export const LAMPORTS_PER_SIGNATURE = 5000n;
const DEFAULT_UNITS_PER_INSTRUCTION = 200_000n;
const MAX_COMPUTE_UNITS = 1_400_000n;

type SolanaDecision =
  | { allowed: true; rule: string }
  | { allowed: false; rule: string; reason: string; observed?: string };

const allow = (rule: string): SolanaDecision => ({ allowed: true, rule });
const deny = (rule: string, reason: string, observed?: string | bigint): SolanaDecision => ({
  allowed: false,
  rule,
  reason,
  ...(observed === undefined ? {} : { observed: String(observed) }),
});

/** An instruction's account: an address, or a slot of an address lookup table the message does not resolve. */
type Account = { address: string } | { lookup: string };

/** A transaction message, read: its fee payer, signers, instructions with their accounts resolved as far as the message says. */
export type ReadMessage = {
  version: "legacy" | 0;
  feePayer: string;
  signers: string[];
  instructions: { program: Account; accounts: Account[]; data: Uint8Array }[];
};

/** The message's bytes read, or why they are not a transaction message a guardrail can read. */
export function readSolanaMessage(bytes: Uint8Array): ReadMessage | { unreadable: string } {
  let compiled: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]>;
  try {
    compiled = getCompiledTransactionMessageDecoder().decode(bytes);
  } catch (err) {
    return { unreadable: `not a Solana transaction message: ${(err as Error).message.split("\n")[0]}` };
  }
  if (compiled.version !== "legacy" && compiled.version !== 0)
    return {
      unreadable: `a version ${String(compiled.version)} transaction message, which guardrails do not read yet`,
    };
  const statics = compiled.staticAccounts as string[];
  // Loaded accounts follow the static ones: every table's writable indexes, then every table's read-only ones.
  const loaded: string[] = [];
  const lookups = compiled.version === 0 ? (compiled.addressTableLookups ?? []) : [];
  for (const l of lookups) for (const i of l.writableIndexes) loaded.push(`${l.lookupTableAddress}[${i}]`);
  for (const l of lookups) for (const i of l.readonlyIndexes) loaded.push(`${l.lookupTableAddress}[${i}]`);
  const account = (index: number): Account =>
    index < statics.length
      ? { address: statics[index] as string }
      : { lookup: loaded[index - statics.length] ?? `#${index}` };
  return {
    version: compiled.version,
    feePayer: statics[0] as string,
    signers: statics.slice(0, compiled.header.numSignerAccounts),
    instructions: compiled.instructions.map((ix) => ({
      program: account(ix.programAddressIndex),
      accounts: (ix.accountIndices ?? []).map(account),
      data: new Uint8Array(ix.data ?? []),
    })),
  };
}

const nameOf = (a: Account | undefined): string =>
  a === undefined ? "(missing)" : "address" in a ? a.address : `a lookup table's ${a.lookup}`;

function u32(data: Uint8Array, at: number): number | undefined {
  if (data.length < at + 4) return undefined;
  return new DataView(data.buffer, data.byteOffset + at, 4).getUint32(0, true);
}

function u64(data: Uint8Array, at: number): bigint | undefined {
  if (data.length < at + 8) return undefined;
  return new DataView(data.buffer, data.byteOffset + at, 8).getBigUint64(0, true);
}

/** What a transaction moves and costs, as its instructions say (budgets count it; the dry run shows it). */
export type SolanaSpend = {
  /** Lamports its System transfers send, all of them. */
  lamports: bigint;
  /** Its fee: a signature's 5000 lamports each, and the priority fee at its compute-unit limit. */
  feeLamports: bigint;
  feePayer: string;
};

/** The fee the message's Compute Budget settings and signatures make (the most it can cost its payer). */
function feeOf(message: ReadMessage): bigint | { unreadable: string } {
  let price = 0n;
  let limit: bigint | undefined;
  let others = 0n;
  for (const ix of message.instructions) {
    if (nameOf(ix.program) !== COMPUTE_BUDGET_PROGRAM) {
      others++;
      continue;
    }
    const kind = ix.data[0];
    if (kind === 2 && ix.data.length === 5) limit = BigInt(u32(ix.data, 1) as number);
    else if (kind === 3 && ix.data.length === 9) price = u64(ix.data, 1) as bigint;
    else if ((kind === 1 || kind === 4) && ix.data.length === 5) continue;
    else return { unreadable: `a Compute Budget instruction this guardrail does not know (kind ${String(kind)})` };
  }
  const units =
    limit ??
    (others * DEFAULT_UNITS_PER_INSTRUCTION > MAX_COMPUTE_UNITS
      ? MAX_COMPUTE_UNITS
      : others * DEFAULT_UNITS_PER_INSTRUCTION);
  const capped = units > MAX_COMPUTE_UNITS ? MAX_COMPUTE_UNITS : units;
  // Micro-lamports per unit, rounded up as the runtime does.
  const priority = (price * capped + 999_999n) / 1_000_000n;
  return LAMPORTS_PER_SIGNATURE * BigInt(message.signers.length) + priority;
}

/**
 * The lamports a message's System transfers send — from `from` only, when given — and its fee
 * (budgets count them), or why it cannot be read.
 */
export function solanaSpend(bytes: Uint8Array, from?: string): SolanaSpend | { unreadable: string } {
  const message = readSolanaMessage(bytes);
  if ("unreadable" in message) return message;
  const fee = feeOf(message);
  if (typeof fee !== "bigint") return fee;
  let lamports = 0n;
  for (const ix of message.instructions) {
    if (nameOf(ix.program) !== SYSTEM_PROGRAM || u32(ix.data, 0) !== 2) continue;
    if (from !== undefined && nameOf(ix.accounts[0]) !== from) continue;
    lamports += u64(ix.data, 4) ?? 0n;
  }
  return { lamports, feeLamports: fee, feePayer: message.feePayer };
}

// ——— associated token accounts ———

const addressBytes = getAddressEncoder();
const addressText = getAddressDecoder();
const PDA_MARKER = new TextEncoder().encode("ProgramDerivedAddress");

function onCurve(bytes: Uint8Array): boolean {
  try {
    ed25519.ExtendedPoint.fromHex(bytes);
    return true;
  } catch {
    return false;
  }
}

/** The program-derived address of `seeds` under `program`: the first bump from 255 down whose hash is off the curve. */
function programAddress(seeds: readonly Uint8Array[], program: string): string {
  const programBytes = addressBytes.encode(program as Address);
  for (let bump = 255; bump >= 0; bump--) {
    const hash = sha256
      .create()
      .update(concatBytes([...seeds, Uint8Array.of(bump), programBytes as Uint8Array, PDA_MARKER]))
      .digest();
    if (!onCurve(hash)) return addressText.decode(hash);
  }
  throw new Error("no program-derived address for these seeds");
}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const ataCache = new Map<string, string>();
const ATA_CACHE_MAX = 4096;

/** The associated token account of `owner` for `mint` under `tokenProgram` (the address wallets send tokens to). */
export function associatedTokenAddress(owner: string, mint: string, tokenProgram: string): string {
  const key = `${owner}:${mint}:${tokenProgram}`;
  const known = ataCache.get(key);
  if (known !== undefined) return known;
  const seeds = [owner, tokenProgram, mint].map((a) => addressBytes.encode(a as Address) as Uint8Array);
  const derived = programAddress(seeds, ASSOCIATED_TOKEN_PROGRAM);
  if (ataCache.size >= ATA_CACHE_MAX) ataCache.clear();
  ataCache.set(key, derived);
  return derived;
}

// ——— the checks ———

type Section = NonNullable<NonNullable<Guardrail["solana"]>["transactions"]>;
type TokenRule = NonNullable<Section["tokens"]>[number];

/** Whether `destination` (a token account) is one a token rule's recipients allow, or why not. */
function tokenRecipient(
  rule: TokenRule,
  path: string,
  destination: string,
  tokenProgram: string,
): SolanaDecision | undefined {
  const receives = (list: readonly string[]) =>
    list.some((a) => a === destination || associatedTokenAddress(a, rule.mint, tokenProgram) === destination);
  if (rule.recipients?.deny && receives(rule.recipients.deny))
    return deny(`${path}.recipients.deny`, "the recipient is on the deny list", destination);
  if (rule.recipients?.allow && !receives(rule.recipients.allow))
    return deny(
      `${path}.recipients.allow`,
      "the receiving token account is not an allowed recipient's (nor their associated token account for this mint)",
      destination,
    );
  return undefined;
}

function checkInstruction(section: Section, ix: ReadMessage["instructions"][number], i: number): SolanaDecision {
  const at = `instruction ${i}`;
  if (!("address" in ix.program))
    return deny("solana.transactions.programs", `${at}'s program is not in the message`, nameOf(ix.program));
  const program = ix.program.address;
  switch (program) {
    case COMPUTE_BUDGET_PROGRAM:
      return allow("solana.transactions.max_fee_lamports");
    case SYSTEM_PROGRAM: {
      const kind = u32(ix.data, 0);
      if (kind === 4) return allow("solana.transactions.transfers");
      if (kind !== 2)
        return deny(
          "solana.transactions.transfers",
          `${at}: the System program may only transfer SOL (or advance a durable nonce) under this guardrail`,
          kind === undefined ? "no instruction" : `System instruction ${kind}`,
        );
      if (!section.transfers) return deny("solana.transactions.transfers", "this wallet may not send SOL transfers");
      const lamports = u64(ix.data, 4);
      if (lamports === undefined || ix.accounts.length < 2)
        return deny("solana.transactions.transfers", `${at} is not a well-formed System transfer`);
      const to = ix.accounts[1] as Account;
      if (!("address" in to))
        return deny(
          "solana.transactions.transfers",
          `${at}: the recipient comes from an address lookup table, which a guardrail cannot read`,
          nameOf(to),
        );
      if (section.transfers.deny?.includes(to.address))
        return deny("solana.transactions.transfers.deny", "the recipient is on the deny list", to.address);
      if (section.transfers.allow && !section.transfers.allow.includes(to.address))
        return deny("solana.transactions.transfers.allow", "the recipient is not on the allow list", to.address);
      if (section.transfers.max_lamports !== undefined && lamports > BigInt(section.transfers.max_lamports))
        return deny(
          "solana.transactions.transfers.max_lamports",
          `the transfer sends more than ${section.transfers.max_lamports} lamports`,
          lamports,
        );
      return allow("solana.transactions.transfers");
    }
    case TOKEN_PROGRAM:
    case TOKEN_2022_PROGRAM: {
      if (!section.tokens) return deny("solana.transactions.tokens", "this wallet may not send tokens");
      const kind = ix.data[0];
      if (kind === 3)
        return deny(
          "solana.transactions.tokens",
          `${at}: an unchecked token transfer does not name its mint; use transferChecked`,
        );
      if (kind !== 12)
        return deny(
          "solana.transactions.tokens",
          `${at}: the token program may only transferChecked under this guardrail`,
          kind === undefined ? "no instruction" : `token instruction ${kind}`,
        );
      const amount = u64(ix.data, 1);
      const [, mint, destination] = ix.accounts;
      if (amount === undefined || ix.data.length !== 10 || mint === undefined || destination === undefined)
        return deny("solana.transactions.tokens", `${at} is not a well-formed transferChecked`);
      if (!("address" in mint) || !("address" in destination))
        return deny(
          "solana.transactions.tokens",
          `${at}: the mint or the recipient comes from an address lookup table, which a guardrail cannot read`,
          nameOf("address" in mint ? destination : mint),
        );
      let refusal: SolanaDecision | undefined;
      for (const [j, rule] of section.tokens.entries()) {
        if (rule.mint !== mint.address) continue;
        const path = `solana.transactions.tokens[${j}]`;
        const recipient = tokenRecipient(rule, path, destination.address, program);
        if (recipient) {
          refusal ??= recipient;
          continue;
        }
        if (rule.max_amount !== undefined && amount > BigInt(rule.max_amount)) {
          refusal ??= deny(`${path}.max_amount`, `the transfer sends more than ${rule.max_amount}`, amount);
          continue;
        }
        return allow(path);
      }
      return refusal ?? deny("solana.transactions.tokens", "transfers of this mint are not allowed", mint.address);
    }
    case ASSOCIATED_TOKEN_PROGRAM: {
      const kind = ix.data.length === 0 ? 0 : ix.data[0];
      const [, account, owner, mint, , tokenProgram] = ix.accounts;
      if ((kind === 0 || kind === 1) && ix.data.length <= 1 && section.tokens) {
        const read = [account, owner, mint, tokenProgram].every((a) => a !== undefined && "address" in a);
        if (read) {
          const [a, o, m, p] = [account, owner, mint, tokenProgram].map((x) => (x as { address: string }).address) as [
            string,
            string,
            string,
            string,
          ];
          for (const [j, rule] of section.tokens.entries()) {
            if (rule.mint !== m || (p !== TOKEN_PROGRAM && p !== TOKEN_2022_PROGRAM)) continue;
            if (associatedTokenAddress(o, m, p) !== a) continue;
            if (!tokenRecipient(rule, `solana.transactions.tokens[${j}]`, a, p))
              return allow(`solana.transactions.tokens[${j}]`);
          }
        }
      }
      if (section.programs?.includes(program)) return allow("solana.transactions.programs");
      return deny(
        "solana.transactions.tokens",
        `${at}: creates a token account that is not an allowed recipient's associated account for a listed mint`,
        nameOf(account),
      );
    }
    default:
      if (section.programs?.includes(program)) return allow("solana.transactions.programs");
      return deny("solana.transactions.programs", `${at} calls a program that is not allowed`, program);
  }
}

/** A Solana transaction's message against the document's `solana.transactions`. */
export function checkSolanaTransaction(doc: Guardrail, bytes: Uint8Array): SolanaDecision {
  const section = doc.solana?.transactions;
  if (!section) return deny("solana.transactions", "this wallet may not sign Solana transactions");
  const message = readSolanaMessage(bytes);
  if ("unreadable" in message) return deny("solana.transactions", message.unreadable);
  if (section.fee_payers && !section.fee_payers.includes(message.feePayer))
    return deny("solana.transactions.fee_payers", "the fee payer is not one allowed", message.feePayer);
  let rule = "solana.transactions";
  for (const [i, ix] of message.instructions.entries()) {
    const decision = checkInstruction(section, ix, i);
    if (!decision.allowed) return decision;
    if (decision.rule !== "solana.transactions.max_fee_lamports") rule = decision.rule;
  }
  const spend = solanaSpend(bytes);
  if ("unreadable" in spend) return deny("solana.transactions.max_fee_lamports", spend.unreadable);
  if (section.max_lamports !== undefined && spend.lamports > BigInt(section.max_lamports))
    return deny(
      "solana.transactions.max_lamports",
      `the transaction sends more than ${section.max_lamports} lamports`,
      spend.lamports,
    );
  if (section.max_fee_lamports !== undefined && spend.feeLamports > BigInt(section.max_fee_lamports))
    return deny(
      "solana.transactions.max_fee_lamports",
      `the fee may be more than ${section.max_fee_lamports} lamports`,
      spend.feeLamports,
    );
  // One instruction decides the rule the receipt names; several name the section.
  return allow(
    message.instructions.filter((ix) => nameOf(ix.program) !== COMPUTE_BUDGET_PROGRAM).length === 1
      ? rule
      : "solana.transactions",
  );
}

/** A Solana off-chain message's bytes against `solana.messages`: UTF-8 text against its pattern, other bytes only with `raw`. */
export function checkSolanaMessage(
  doc: Guardrail,
  bytes: Uint8Array,
  matches: (pattern: string, text: string) => boolean,
): SolanaDecision {
  const section = doc.solana?.messages;
  if (!section) return deny("solana.messages", "this wallet may not sign Solana messages");
  let text: string | undefined;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    text = undefined;
  }
  if (text === undefined) {
    if (section.raw !== true)
      return deny("solana.messages.raw", "this wallet may not sign messages that are not UTF-8 text");
    if (section.pattern !== undefined)
      return deny("solana.messages.pattern", "the message is not UTF-8 text to match against the pattern");
    return allow("solana.messages.raw");
  }
  if (section.pattern !== undefined && !matches(section.pattern, text))
    return deny(
      "solana.messages.pattern",
      `the message does not match ${JSON.stringify(section.pattern)}`,
      text.slice(0, 256),
    );
  return allow(section.pattern === undefined ? "solana.messages" : "solana.messages.pattern");
}

/** A document's Solana rules that do not hold together: a listed program a guardrail reads itself. */
export function solanaDocumentProblem(doc: Guardrail): { path: string; message: string } | undefined {
  const programs = doc.solana?.transactions?.programs ?? [];
  const i = programs.findIndex((p) => READ_PROGRAMS.has(p));
  if (i >= 0)
    return {
      path: `solana.transactions.programs[${i}]`,
      message: `${programs[i]} is read by the guardrail itself (transfers, tokens, the fee); listing it would skip those rules`,
    };
  const raw = doc.solana?.messages;
  if (raw?.raw === true && raw.pattern !== undefined)
    return {
      path: "solana.messages.raw",
      message: "cannot be true beside a pattern: bytes that are not text match none",
    };
  return undefined;
}
