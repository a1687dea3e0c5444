// A guardrail in words, a line per thing the wallet may sign (`sigil guardrail show`, the dashboard):
// what a reviewer reads instead of the JSON. Everything not listed is refused, and the last lines say
// so for the two that matter most, raw digests and the key's export.
import type { BudgetState } from "./budgets.ts";
import { showLamports, showWei } from "./wei.ts";
import type { Budget, Condition, Guardrail } from "./schema.ts";

function condition(name: string, c: Condition): string {
  const parts: string[] = [];
  if (c.eq !== undefined) parts.push(`${name} = ${String(c.eq)}`);
  if (c.in) parts.push(`${name} one of ${c.in.join(", ")}`);
  if (c.not_in) parts.push(`${name} none of ${c.not_in.join(", ")}`);
  if (c.lte !== undefined) parts.push(`${name} ≤ ${c.lte}`);
  if (c.gte !== undefined) parts.push(`${name} ≥ ${c.gte}`);
  return parts.join(", ");
}

const conditions = (cs: Record<string, Condition> | undefined) =>
  Object.entries(cs ?? {})
    .map(([name, c]) => condition(name, c))
    .join("; ");

export function describeGuardrail(g: Guardrail): string[] {
  const lines: string[] = [];
  const t = g.transactions;
  if (!t) lines.push("transactions: none");
  else {
    lines.push(
      `transactions on chain ${t.chains.join(", ")}${t.max_value_wei === undefined ? "" : `, each sending at most ${t.max_value_wei} wei`}:`,
    );
    if (t.transfers) {
      const to = t.transfers.allow ? `to ${t.transfers.allow.join(", ")}` : "to anyone";
      lines.push(`  plain transfers ${to}${t.transfers.deny ? `, never to ${t.transfers.deny.join(", ")}` : ""}`);
    }
    for (const c of t.contracts ?? []) {
      for (const f of c.functions) {
        const args = conditions(f.args);
        lines.push(
          `  calls to ${c.address}${c.chains ? ` (chain ${c.chains.join(", ")})` : ""}: ${f.signature.replace(/^function /, "")}${args ? ` with ${args}` : ""}${c.max_value_wei && c.max_value_wei !== "0" ? `, sending at most ${c.max_value_wei} wei` : ""}`,
        );
      }
    }
    if (t.authorizations) lines.push(`  EIP-7702 delegation to ${t.authorizations.allow.join(", ")}`);
    if (t.deploy) lines.push("  contract deployments");
    if (!t.transfers && !t.contracts?.length && !t.authorizations && !t.deploy)
      lines.push("  (none: the section lists no transfers, calls, delegations or deployments)");
  }
  if (!g.typed_data?.length) lines.push("typed data: none");
  for (const rule of g.typed_data ?? []) {
    const d = rule.domain;
    const domain = [
      d.name === undefined ? undefined : `name ${JSON.stringify(d.name)}`,
      d.version === undefined ? undefined : `version ${JSON.stringify(d.version)}`,
      d.chain_id === undefined ? undefined : `chain ${d.chain_id}`,
      d.verifying_contract === undefined ? undefined : `contract ${d.verifying_contract}`,
    ].filter((x) => x !== undefined);
    const fields = conditions(rule.fields);
    lines.push(
      `typed data: ${rule.primary_type}${domain.length ? ` (${domain.join(", ")})` : " (any domain)"}${fields ? ` with ${fields}` : ""}`,
    );
  }
  if (!g.messages) lines.push("messages: none");
  else
    lines.push(
      `messages${g.messages.pattern === undefined ? ": any text" : ` matching ${JSON.stringify(g.messages.pattern)}`}${g.messages.raw ? ", raw bytes too" : ""}`,
    );
  lines.push(...describeSolana(g.solana));
  lines.push(g.raw_digests ? "raw digests: ANY (signDigest can sign any transaction's hash)" : "raw digests: never");
  lines.push(g.key_export ? "key export: ALLOWED (the key signs past every rule)" : "key export: never");
  if (g.delegation)
    lines.push(
      `delegation: this usage key may mint narrower keys${g.delegation.max_lifetime_seconds === undefined ? "" : `, each living at most ${g.delegation.max_lifetime_seconds} s`}`,
    );
  for (const b of g.budgets ?? []) lines.push(describeBudget(b));
  return lines;
}

function describeSolana(s: Guardrail["solana"]): string[] {
  if (!s) return ["Solana: none"];
  const lines: string[] = [];
  const t = s.transactions;
  if (!t) lines.push("Solana transactions: none");
  else {
    const limits = [
      t.max_lamports === undefined ? undefined : `sending at most ${showLamports(BigInt(t.max_lamports))} in all`,
      t.max_fee_lamports === undefined ? undefined : `a fee of at most ${showLamports(BigInt(t.max_fee_lamports))}`,
      t.fee_payers ? `the fee paid by ${t.fee_payers.join(", ")}` : undefined,
    ].filter((x) => x !== undefined);
    lines.push(`Solana transactions${limits.length ? `, each ${limits.join(", ")}` : ""}:`);
    if (t.transfers) {
      const to = t.transfers.allow ? `to ${t.transfers.allow.join(", ")}` : "to anyone";
      const most =
        t.transfers.max_lamports === undefined
          ? ""
          : `, each at most ${showLamports(BigInt(t.transfers.max_lamports))}`;
      lines.push(`  SOL transfers ${to}${t.transfers.deny ? `, never to ${t.transfers.deny.join(", ")}` : ""}${most}`);
    }
    for (const token of t.tokens ?? []) {
      const to = token.recipients?.allow ? `to ${token.recipients.allow.join(", ")}` : "to anyone";
      lines.push(
        `  token ${token.mint} transfers ${to}${token.recipients?.deny ? `, never to ${token.recipients.deny.join(", ")}` : ""}${token.max_amount === undefined ? "" : `, each at most ${token.max_amount} base units`}`,
      );
    }
    if (t.programs)
      lines.push(
        `  any instruction of ${t.programs.join(", ")} (UNCHECKED: these programs may move the wallet's funds)`,
      );
    if (!t.transfers && !t.tokens && !t.programs)
      lines.push("  (none: the section lists no transfers, tokens or programs)");
  }
  const m = s.messages;
  if (!m) lines.push("Solana messages: none");
  else
    lines.push(
      `Solana messages${m.pattern === undefined ? ": any text" : ` matching ${JSON.stringify(m.pattern)}`}${m.raw ? ", bytes that are not text too" : ""}`,
    );
  return lines;
}

/** A budget in words: "budget daily: at most 0.5 ETH and 20 signatures in any day, per usage key". */
export function describeBudget(b: Budget): string {
  const limits = [
    b.max_value_wei === undefined ? undefined : showWei(BigInt(b.max_value_wei)),
    b.max_lamports === undefined ? undefined : `${showLamports(BigInt(b.max_lamports))} spent on Solana`,
    b.max_signatures === undefined ? undefined : `${b.max_signatures} signature${b.max_signatures === 1 ? "" : "s"}`,
  ].filter((x) => x !== undefined);
  const per = b.per === "key" ? ", per usage key" : b.per === "action" ? ", per action" : "";
  return `budget ${b.name}: at most ${limits.join(" and ")} in any ${windowText(b.window_seconds)}${per}`;
}

function windowText(seconds: number): string {
  const unit = (n: number, word: string) => (n === 1 ? word : `${n} ${word}s`);
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, "day");
  if (seconds % 3600 === 0) return unit(seconds / 3600, "hour");
  if (seconds % 60 === 0) return unit(seconds / 60, "minute");
  return `${seconds} seconds`;
}

/** One budget's counters in words: "daily: 0.2 ETH of 0.5 ETH, 3 of 20 signatures used (…)". */
export function describeBudgetUse(b: BudgetState): string {
  const parts = [
    b.max_value_wei === undefined
      ? undefined
      : `${showWei(BigInt(b.used_value_wei))} of ${showWei(BigInt(b.max_value_wei))}`,
    b.max_lamports === undefined
      ? undefined
      : `${showLamports(BigInt(b.used_lamports ?? "0"))} of ${showLamports(BigInt(b.max_lamports))}`,
    b.max_signatures === undefined ? undefined : `${b.used_signatures} of ${b.max_signatures} signatures`,
  ].filter((x) => x !== undefined);
  const scope = b.scope === "wallet" ? "" : ` [${b.scope}]`;
  return `${b.name}${scope}: ${parts.join(", ")} used${b.frees_at ? `; the oldest leaves the window at ${b.frees_at}` : ""}`;
}
