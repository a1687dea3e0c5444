// The guardrail check (docs/design/guardrails.md): a signature request, parsed, against a wallet's
// guardrail (schema.ts), compiled once per document — the ABIs parsed and indexed by selector — so a
// check is a few lookups and comparisons. A decision names the rule that decided it, as a path into
// the document ("transactions.contracts[0].functions[1]"), and a refusal says which condition did not
// hold and what value it saw. Deny by default: what no section allows is refused, and says so.
import {
  decodeFunctionData,
  parseAbiItem,
  toFunctionSelector,
  type AbiFunction,
  type Hex,
  type TransactionSerializable,
  type TypedDataDefinition,
} from "viem";
import { guardrailSchema, type Condition, type Guardrail } from "./schema.ts";
import { checkSolanaMessage, checkSolanaTransaction, solanaDocumentProblem } from "./solana.ts";

/** What a script asked the wallet to sign, parsed (enclave/sandbox/hostOps.ts makes these). */
export type SignRequest =
  | { kind: "transaction"; transaction: TransactionSerializable }
  | { kind: "typed_data"; typedData: TypedDataDefinition }
  | { kind: "message"; message: string | { raw: Hex } }
  | { kind: "hash"; digest: Hex }
  | { kind: "export" }
  /**
   * With the wallet's Solana key: a message's bytes, or a transaction's message bytes; `signer`, the
   * wallet's Solana address when the checker knows it (the enclave always does), says which
   * transfers and fees are the wallet's own for its budgets of lamports.
   */
  | { kind: "solana_message" | "solana_transaction"; message: Uint8Array; signer?: string };

/** Allowed by `rule`, or refused at `rule` because `reason` (with the value seen, when there is one). */
/** A contract call as the guardrail's ABI decoded it: the function and its arguments by name (integers as decimal strings). */
export type DecodedCall = { function: string; args: Record<string, unknown> };

export type Decision =
  | { allowed: true; rule: string; call?: DecodedCall }
  | { allowed: false; rule: string; reason: string; observed?: string; call?: DecodedCall };

const allow = (rule: string): Decision => ({ allowed: true, rule });
const deny = (rule: string, reason: string, observed?: unknown): Decision => ({
  allowed: false,
  rule,
  reason,
  ...(observed === undefined ? {} : { observed: show(observed) }),
});

function show(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  // Addresses as the document writes them: lowercase (viem decodes them checksummed).
  if (typeof value === "string") return /^0x[0-9a-fA-F]{40}$/.test(value) ? value.toLowerCase() : value;
  try {
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A function rule with its ABI parsed. */
type CompiledFunction = { path: string; abi: AbiFunction; args: Record<string, Condition> };
type CompiledContract = {
  path: string;
  address: string;
  chains: number[] | undefined;
  maxValue: bigint;
  /** By 4-byte selector, lowercase hex. */
  functions: Map<string, CompiledFunction[]>;
};

/** A document that does not hold together (an unparseable signature, a condition on an argument the function lacks). */
export class GuardrailError extends Error {
  override readonly name = "GuardrailError";
  readonly path: string;
  constructor(path: string, message: string) {
    super(`${path}: ${message}`);
    this.path = path;
  }
}

export type CompiledGuardrail = {
  readonly document: Guardrail;
  check(request: SignRequest): Decision;
};

/**
 * The document as the API takes it: the schema, and a document that compiles (its function
 * signatures parse, its conditions name arguments the functions have), each problem at its path.
 */
export const guardrailDocumentSchema = guardrailSchema.superRefine((document, ctx) => {
  try {
    compileGuardrail(document);
  } catch (err) {
    // A document the schema itself refused already has its issues (zod runs refinements on it too).
    if (!(err instanceof GuardrailError)) return;
    ctx.addIssue({
      code: "custom",
      message: err.message.slice(err.path.length + 2),
      path: err.path
        .split(/[.[\]]+/)
        .filter((p) => p !== "")
        .map((p) => (/^\d+$/.test(p) ? Number(p) : p)),
    });
  }
});

/** Parses `input` with the schema and compiles it; a GuardrailError (or zod's error) for one that does not hold together. */
export function compileGuardrail(input: unknown): CompiledGuardrail {
  const document = guardrailSchema.parse(input);
  checkBudgets(document);
  const solanaProblem = solanaDocumentProblem(document);
  if (solanaProblem) throw new GuardrailError(solanaProblem.path, solanaProblem.message);
  const contracts = (document.transactions?.contracts ?? []).map((c, i) => compileContract(c, i));
  return {
    document,
    check(request) {
      switch (request.kind) {
        case "transaction":
          return checkTransaction(document, contracts, request.transaction);
        case "typed_data":
          return checkTypedData(document, request.typedData);
        case "message":
          return checkMessage(document, request.message);
        case "hash":
          return document.raw_digests === true
            ? allow("raw_digests")
            : deny(
                "raw_digests",
                "signing a raw digest is not allowed: it could be the hash of anything",
                request.digest,
              );
        case "export":
          return document.key_export === true
            ? allow("key_export")
            : deny("key_export", "exporting the private key is not allowed: it would sign past every rule");
        case "solana_message":
          return checkSolanaMessage(document, request.message, globMatch);
        case "solana_transaction":
          return checkSolanaTransaction(document, request.message);
      }
    },
  };
}

/** Budgets that a document's other sections would let a script sign past are a document that does not hold together. */
function checkBudgets(document: Guardrail): void {
  const budgets = document.budgets ?? [];
  if (budgets.length === 0) return;
  const seen = new Set<string>();
  budgets.forEach((b, i) => {
    if (seen.has(b.name)) throw new GuardrailError(`budgets[${i}].name`, `"${b.name}" names two budgets`);
    seen.add(b.name);
  });
  if (document.key_export === true)
    throw new GuardrailError("key_export", "cannot be true beside budgets: an exported key signs past every budget");
  const inLamports = budgets.findIndex((b) => b.max_lamports !== undefined);
  if (inLamports >= 0 && document.solana?.transactions?.programs)
    throw new GuardrailError(
      "solana.transactions.programs",
      `cannot list programs beside budgets[${inLamports}].max_lamports: a program the wallet signs for may move its SOL unseen by the budget`,
    );
  const valued = budgets.findIndex((b) => b.max_value_wei !== undefined);
  if (document.raw_digests === true && valued >= 0)
    throw new GuardrailError(
      "raw_digests",
      `cannot be true beside budgets[${valued}].max_value_wei: a raw digest may be a transaction of any value`,
    );
}

function compileContract(c: NonNullable<NonNullable<Guardrail["transactions"]>["contracts"]>[number], i: number) {
  const path = `transactions.contracts[${i}]`;
  const functions = new Map<string, CompiledFunction[]>();
  c.functions.forEach((f, j) => {
    const fpath = `${path}.functions[${j}]`;
    let abi: AbiFunction;
    try {
      abi = parseAbiItem(f.signature) as AbiFunction;
    } catch (err) {
      throw new GuardrailError(
        `${fpath}.signature`,
        `not a Solidity function signature: ${(err as Error).message.split("\n")[0]}`,
      );
    }
    if (abi.type !== "function") throw new GuardrailError(`${fpath}.signature`, "not a function");
    const names = new Set(abi.inputs.map((input) => input.name));
    for (const name of Object.keys(f.args ?? {})) {
      if (!names.has(name))
        throw new GuardrailError(`${fpath}.args.${name}`, `${abi.name} has no argument named ${name}`);
    }
    const selector = toFunctionSelector(abi);
    const list = functions.get(selector) ?? [];
    list.push({ path: fpath, abi, args: f.args ?? {} });
    functions.set(selector, list);
  });
  return {
    path,
    address: c.address,
    chains: c.chains,
    maxValue: BigInt(c.max_value_wei ?? "0"),
    functions,
  } satisfies CompiledContract;
}

// ——— transactions ———

function checkTransaction(doc: Guardrail, contracts: CompiledContract[], tx: TransactionSerializable): Decision {
  const section = doc.transactions;
  if (!section) return deny("transactions", "this wallet may not sign transactions");
  const chainId = tx.chainId;
  if (chainId === undefined || chainId === null)
    return deny("transactions.chains", "a transaction without a chain id could be replayed on any chain");
  if (!section.chains.includes(Number(chainId)))
    return deny("transactions.chains", `chain ${chainId} is not one of ${section.chains.join(", ")}`, chainId);
  const value = BigInt(tx.value ?? 0n);
  if (section.max_value_wei !== undefined && value > BigInt(section.max_value_wei))
    return deny("transactions.max_value_wei", `the value is more than ${section.max_value_wei} wei`, value);
  const authorizations = (tx as { authorizationList?: ReadonlyArray<Record<string, unknown>> }).authorizationList;
  if (authorizations && authorizations.length > 0) {
    if (!section.authorizations)
      return deny("transactions.authorizations", "this wallet may not sign EIP-7702 authorizations");
    for (const a of authorizations) {
      const delegate = String(a.address ?? a.contractAddress ?? "").toLowerCase();
      if (!section.authorizations.allow.includes(delegate))
        return deny(
          "transactions.authorizations.allow",
          "the authorization delegates to a contract not allowed",
          delegate,
        );
      const authChain = Number(a.chainId ?? -1);
      if (authChain === 0)
        return deny(
          "transactions.authorizations",
          "an authorization valid on every chain (chain id 0) is not allowed",
          0,
        );
      if (!section.chains.includes(authChain))
        return deny("transactions.chains", `the authorization names chain ${authChain}`, authChain);
    }
  }
  const data = (tx.data ?? "0x").toLowerCase();
  const to = tx.to ? tx.to.toLowerCase() : undefined;
  if (to === undefined) {
    return section.deploy === true
      ? allow("transactions.deploy")
      : deny("transactions.deploy", "this wallet may not deploy contracts (a transaction with no recipient)");
  }
  if (data === "0x") return checkTransfer(section.transfers, to, authorizations);
  return checkCall(contracts, Number(chainId), to, data as Hex, value);
}

function checkTransfer(
  transfers: NonNullable<Guardrail["transactions"]>["transfers"],
  to: string,
  authorizations: unknown,
): Decision {
  if (!transfers) {
    // A transaction whose only purpose is its authorizations (sent to the wallet itself, no data).
    if (authorizations) return allow("transactions.authorizations");
    return deny("transactions.transfers", "this wallet may not send plain transfers", to);
  }
  if (transfers.deny?.includes(to)) return deny("transactions.transfers.deny", "the recipient is on the deny list", to);
  if (transfers.allow && !transfers.allow.includes(to))
    return deny("transactions.transfers.allow", "the recipient is not on the allow list", to);
  return allow("transactions.transfers");
}

function checkCall(contracts: CompiledContract[], chainId: number, to: string, data: Hex, value: bigint): Decision {
  const candidates = contracts.filter((c) => c.address === to && (!c.chains || c.chains.includes(chainId)));
  if (candidates.length === 0) return deny("transactions.contracts", "calls to this contract are not allowed", to);
  const selector = data.slice(0, 10);
  let refusal: Decision | undefined;
  for (const contract of candidates) {
    if (value > contract.maxValue) {
      refusal ??= deny(`${contract.path}.max_value_wei`, `the call sends more than ${contract.maxValue} wei`, value);
      continue;
    }
    const functions = contract.functions.get(selector);
    if (!functions) {
      refusal ??= deny(`${contract.path}.functions`, "this function of the contract is not allowed", selector);
      continue;
    }
    for (const f of functions) {
      const decision = checkArguments(f, data);
      if (decision.allowed) return decision;
      refusal ??= decision;
    }
  }
  return refusal as Decision;
}

function checkArguments(f: CompiledFunction, data: Hex): Decision {
  let args: readonly unknown[];
  try {
    args = decodeFunctionData({ abi: [f.abi], data }).args ?? [];
  } catch {
    return deny(f.path, `the calldata does not decode as ${f.abi.name}'s arguments`, data.slice(0, 74));
  }
  const call: DecodedCall = {
    function: f.abi.name,
    args: Object.fromEntries(f.abi.inputs.map((input, i) => [input.name || `arg${i}`, jsonSafe(args[i])])),
  };
  for (const [name, condition] of Object.entries(f.args)) {
    const index = f.abi.inputs.findIndex((input) => input.name === name);
    const failed = unmet(condition, args[index]);
    if (failed) return { ...deny(`${f.path}.args.${name}`, `${name} ${failed}`, args[index]), call };
  }
  return { ...allow(f.path), call };
}

/** A decoded value as JSON: integers as decimal strings, addresses lowercase, arrays and tuples through. */
function jsonSafe(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string") return /^0x[0-9a-fA-F]{40}$/.test(value) ? value.toLowerCase() : value;
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  return value;
}

// ——— typed data ———

type TypedField = { name: string; type: string };

function checkTypedData(doc: Guardrail, typedData: TypedDataDefinition): Decision {
  const rules = doc.typed_data;
  if (!rules || rules.length === 0) return deny("typed_data", "this wallet may not sign typed data");
  const domain = (typedData.domain ?? {}) as Record<string, unknown>;
  // The refusal told is the nearest miss: a rule whose fields failed, else whose domain did, else the first.
  let refusal: { decision: Decision; rank: number } | undefined;
  const missed = (decision: Decision, rank: number) => {
    if (!refusal || rank > refusal.rank) refusal = { decision, rank };
  };
  for (const [i, rule] of rules.entries()) {
    const path = `typed_data[${i}]`;
    if (typedData.primaryType !== rule.primary_type) {
      missed(deny(`${path}.primary_type`, `the primary type is not ${rule.primary_type}`, typedData.primaryType), 1);
      continue;
    }
    const domainFailure = checkDomain(path, rule.domain, domain);
    if (domainFailure) {
      missed(domainFailure, 2);
      continue;
    }
    const types = typedData.types as Record<string, readonly TypedField[]>;
    let failed: Decision | undefined;
    for (const [field, condition] of Object.entries(rule.fields ?? {})) {
      const found = fieldValue(
        types,
        typedData.primaryType as string,
        typedData.message as Record<string, unknown>,
        field,
      );
      if ("missing" in found) {
        failed = deny(`${path}.fields.${field}`, found.missing);
        break;
      }
      const why = unmet(condition, found.value);
      if (why) {
        failed = deny(`${path}.fields.${field}`, `${field} ${why}`, found.value);
        break;
      }
    }
    if (!failed) return allow(path);
    missed(failed, 3);
  }
  return refusal?.decision ?? deny("typed_data", "no typed-data rule allows this");
}

function checkDomain(
  path: string,
  want: NonNullable<Guardrail["typed_data"]>[number]["domain"],
  domain: Record<string, unknown>,
): Decision | undefined {
  if (want.name !== undefined && domain.name !== want.name)
    return deny(`${path}.domain.name`, `the domain's name is not ${JSON.stringify(want.name)}`, domain.name ?? null);
  if (want.version !== undefined && domain.version !== want.version)
    return deny(
      `${path}.domain.version`,
      `the domain's version is not ${JSON.stringify(want.version)}`,
      domain.version ?? null,
    );
  if (want.chain_id !== undefined && (domain.chainId === undefined || Number(domain.chainId) !== want.chain_id))
    return deny(`${path}.domain.chain_id`, `the domain's chain id is not ${want.chain_id}`, domain.chainId ?? null);
  if (
    want.verifying_contract !== undefined &&
    String(domain.verifyingContract ?? "").toLowerCase() !== want.verifying_contract
  )
    return deny(
      `${path}.domain.verifying_contract`,
      `the domain's verifying contract is not ${want.verifying_contract}`,
      domain.verifyingContract ?? null,
    );
  return undefined;
}

/**
 * The value at a dotted path of the message, walked through the declared types — what the signature
 * covers. A key of the message the types do not declare is not signed, so a condition never reads one.
 */
function fieldValue(
  types: Record<string, readonly TypedField[]>,
  primaryType: string,
  message: Record<string, unknown>,
  path: string,
): { value: unknown } | { missing: string } {
  let type = primaryType;
  let value: unknown = message;
  for (const part of path.split(".")) {
    const field = types[type]?.find((f) => f.name === part);
    if (!field) return { missing: `${part} is not a field of ${type}` };
    if (value === null || typeof value !== "object") return { missing: `${path} is not in the message` };
    value = (value as Record<string, unknown>)[part];
    type = field.type;
  }
  return { value };
}

// ——— messages ———

function checkMessage(doc: Guardrail, message: string | { raw: Hex }): Decision {
  const section = doc.messages;
  if (!section) return deny("messages", "this wallet may not sign messages");
  let text: string;
  if (typeof message === "string") text = message;
  else {
    if (section.raw !== true) return deny("messages.raw", "this wallet may not sign raw-byte messages", message.raw);
    if (section.pattern === undefined) return allow("messages.raw");
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(hexBytes(message.raw));
    } catch {
      return deny("messages.pattern", "the raw message is not UTF-8 text to match against the pattern", message.raw);
    }
  }
  if (section.pattern !== undefined && !globMatch(section.pattern, text))
    return deny(
      "messages.pattern",
      `the message does not match ${JSON.stringify(section.pattern)}`,
      text.slice(0, 256),
    );
  return allow(section.pattern === undefined ? "messages" : "messages.pattern");
}

function hexBytes(hex: Hex): Uint8Array {
  const out = new Uint8Array((hex.length - 2) / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 + 2 * i, 4 + 2 * i), 16);
  return out;
}

/**
 * Whether `text` matches `pattern`, literal text with `*` for any run of characters: the pieces
 * between stars found in order, leftmost first (which is enough for a star-only glob), so the time is
 * that of a few `indexOf`s whatever the pattern.
 */
export function globMatch(pattern: string, text: string): boolean {
  const pieces = pattern.split("*");
  if (pieces.length === 1) return text === pattern;
  const first = pieces[0] as string;
  const last = pieces[pieces.length - 1] as string;
  if (!text.startsWith(first) || text.length < first.length + last.length) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = text.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return text.endsWith(last);
}

// ——— conditions ———

/** Why `value` does not meet `condition` ("is not one of …"), or undefined when it does. */
export function unmet(condition: Condition, value: unknown): string | undefined {
  if (condition.eq !== undefined && !same(value, condition.eq)) return `is not ${show(condition.eq)}`;
  if (condition.in !== undefined && !condition.in.some((v) => same(value, v)))
    return `is not one of ${condition.in.map(show).join(", ")}`;
  if (condition.not_in?.some((v) => same(value, v))) return "is one of the values not allowed";
  if (condition.lte !== undefined || condition.gte !== undefined) {
    const n = integer(value);
    if (n === undefined) return "is not an integer";
    if (condition.lte !== undefined && n > BigInt(condition.lte)) return `is more than ${condition.lte}`;
    if (condition.gte !== undefined && n < BigInt(condition.gte)) return `is less than ${condition.gte}`;
  }
  return undefined;
}

function integer(value: unknown): bigint | undefined {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === "string" && /^(0|-?[1-9][0-9]*|0x[0-9a-fA-F]+)$/.test(value)) return BigInt(value);
  return undefined;
}

function same(value: unknown, want: string | number | boolean): boolean {
  if (typeof want === "boolean") return value === want;
  if (typeof value === "string" && typeof want === "string") {
    if (value.startsWith("0x") || want.startsWith("0x")) return value.toLowerCase() === want.toLowerCase();
    return value === want;
  }
  const a = integer(value);
  const b = integer(want);
  return a !== undefined && b !== undefined && a === b;
}
