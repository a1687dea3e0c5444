// Check 5 of the verifier (docs/design/attestation.md): the evidence files dstack-ingress publishes under
// `/evidences/`. `sha256sum.txt` lists the SHA-256 of each file (the ACME account, the certificate),
// and the evidence quote binds that list: its report_data starts with SHA-256(sha256sum.txt). The
// quote's own signature is checked like any other (verify.ts, quoteCheck).
import { sha256 } from "@noble/hashes/sha256";
import { utf8ToBytes } from "@noble/hashes/utils";
import { toHex } from "./bytes.ts";
import { failed, passed, type CheckResult } from "./check.ts";
import { AttestationError } from "./errors.ts";
import { parseQuote, type TdxQuote } from "./quote.ts";

export type Sha256SumEntry = { sha256: string; name: string };

// GNU sha256sum: `<64 hex><space><space or *><name>` (text or binary mode).
const LINE = /^([0-9a-fA-F]{64}) [ *](.+)$/;

/**
 * Reads `sha256sum.txt`. Every non-blank line must be `<64 hex>  <name>`; a name is one file under
 * `/evidences/` (no path separators, not `.` or `..`, no control characters) and appears once.
 */
export function parseSha256Sums(text: string | Uint8Array): Sha256SumEntry[] {
  const content = typeof text === "string" ? text : new TextDecoder().decode(text);
  const entries: Sha256SumEntry[] = [];
  const seen = new Set<string>();
  content.split("\n").forEach((rawLine, index) => {
    const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
    if (line.trim() === "") return;
    const match = LINE.exec(line);
    if (!match)
      throw new AttestationError("invalid_evidence", `sha256sum.txt line ${index + 1} is not "<sha256>  <name>"`);
    const [, digest, name] = match as unknown as [string, string, string];
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a file name with a control character is refused
    if (name === "." || name === ".." || /[/\\\u0000-\u001f\u007f]/.test(name)) {
      throw new AttestationError(
        "invalid_evidence",
        `sha256sum.txt line ${index + 1} names ${JSON.stringify(name)}, not a file under /evidences/`,
      );
    }
    if (seen.has(name)) throw new AttestationError("invalid_evidence", `sha256sum.txt lists ${name} more than once`);
    seen.add(name);
    entries.push({ sha256: digest.toLowerCase(), name });
  });
  if (entries.length === 0) throw new AttestationError("invalid_evidence", "sha256sum.txt lists no file");
  return entries;
}

/**
 * One result per line of `sha256sum.txt` (`evidence.file:<name>`): the file's bytes hash to the listed
 * digest. `files` maps names to the bytes served (a string is taken as UTF-8); a listed name without
 * bytes fails.
 */
export function checkEvidenceFiles(
  sha256sum: string | Uint8Array,
  files: Readonly<Record<string, Uint8Array | string | undefined>>,
): CheckResult[] {
  let entries: Sha256SumEntry[];
  try {
    entries = parseSha256Sums(sha256sum);
  } catch (err) {
    return [failed("evidence.sha256sum", (err as Error).message)];
  }
  return entries.map(({ sha256: expected, name }) => {
    const check = `evidence.file:${name}`;
    const body = Object.hasOwn(files, name) ? files[name] : undefined;
    if (body === undefined) return failed(check, `${name} is listed in sha256sum.txt but was not provided`);
    const actual = toHex(sha256(typeof body === "string" ? utf8ToBytes(body) : body));
    return actual === expected
      ? passed(check, `${name} has SHA-256 ${actual}`)
      : failed(check, `${name} has SHA-256 ${actual}, sha256sum.txt says ${expected}`);
  });
}

/** `evidence.report_data`: the evidence quote's report_data starts with SHA-256(sha256sum.txt). */
export function checkEvidenceReportData(
  quote: string | Uint8Array | TdxQuote,
  sha256sum: string | Uint8Array,
): CheckResult {
  const check = "evidence.report_data";
  let parsed: TdxQuote;
  try {
    parsed = typeof quote === "object" && !(quote instanceof Uint8Array) ? quote : parseQuote(quote);
  } catch (err) {
    return failed(check, (err as Error).message);
  }
  const digest = toHex(sha256(typeof sha256sum === "string" ? utf8ToBytes(sha256sum) : sha256sum));
  const head = parsed.reportData.slice(0, 64);
  return head === digest
    ? passed(check, `report_data starts with SHA-256(sha256sum.txt) = ${digest}`)
    : failed(check, `report_data starts with ${head}, not SHA-256(sha256sum.txt) = ${digest}`);
}
