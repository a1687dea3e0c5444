// Check 5 (evidences): sha256sum.txt is read strictly, each listed file must hash to its line, and
// the evidence quote's report_data must start with SHA-256(sha256sum.txt).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AttestationError } from "./errors.ts";
import { checkEvidenceFiles, checkEvidenceReportData, parseSha256Sums } from "./evidence.ts";
import { evidenceReportData } from "./reportData.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const dstack = JSON.parse(readFileSync(join(FIXTURES, "dstack-quote-report.json"), "utf8")) as { quote: string };
const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

const ACCOUNT = '{"account":"acme"}\n';
const CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const SUMS = `${sha256(ACCOUNT)}  acme-account.json\n${sha256(CERT)}  cert-sigil.example.pem\n`;

describe("parseSha256Sums", () => {
  it("reads text and binary mode lines, CRLF and blank lines", () => {
    expect(
      parseSha256Sums(`${sha256(ACCOUNT).toUpperCase()} *acme-account.json\r\n\n${sha256(CERT)}  cert-a.pem\n`),
    ).toEqual([
      { sha256: sha256(ACCOUNT), name: "acme-account.json" },
      { sha256: sha256(CERT), name: "cert-a.pem" },
    ]);
  });

  it("refuses malformed lines, paths, duplicates and an empty list", () => {
    const refuse = (text: string) => () => parseSha256Sums(text);
    expect(refuse(`${sha256(CERT)} cert.pem`)).toThrow(
      new AttestationError("invalid_evidence", 'sha256sum.txt line 1 is not "<sha256>  <name>"'),
    );
    expect(refuse(`\n${"a".repeat(63)}  cert.pem`)).toThrow('sha256sum.txt line 2 is not "<sha256>  <name>"');
    expect(refuse(`${sha256(CERT)}  ../secret`)).toThrow(
      'sha256sum.txt line 1 names "../secret", not a file under /evidences/',
    );
    expect(refuse(`${sha256(CERT)}  ..`)).toThrow('sha256sum.txt line 1 names "..", not a file under /evidences/');
    expect(refuse(`${sha256(CERT)}  a.pem\n${sha256(ACCOUNT)}  a.pem`)).toThrow(
      "sha256sum.txt lists a.pem more than once",
    );
    expect(refuse("\n\n")).toThrow("sha256sum.txt lists no file");
  });
});

describe("checkEvidenceFiles", () => {
  it("passes when every listed file hashes to its line", () => {
    const results = checkEvidenceFiles(SUMS, {
      "acme-account.json": ACCOUNT,
      "cert-sigil.example.pem": new TextEncoder().encode(CERT),
    });
    expect(results).toEqual([
      {
        check: "evidence.file:acme-account.json",
        ok: true,
        detail: `acme-account.json has SHA-256 ${sha256(ACCOUNT)}`,
      },
      {
        check: "evidence.file:cert-sigil.example.pem",
        ok: true,
        detail: `cert-sigil.example.pem has SHA-256 ${sha256(CERT)}`,
      },
    ]);
  });

  it("fails a changed file and a missing one, each on its own line", () => {
    const results = checkEvidenceFiles(SUMS, { "acme-account.json": `${ACCOUNT} ` });
    expect(results).toEqual([
      {
        check: "evidence.file:acme-account.json",
        ok: false,
        detail: `acme-account.json has SHA-256 ${sha256(`${ACCOUNT} `)}, sha256sum.txt says ${sha256(ACCOUNT)}`,
      },
      {
        check: "evidence.file:cert-sigil.example.pem",
        ok: false,
        detail: "cert-sigil.example.pem is listed in sha256sum.txt but was not provided",
      },
    ]);
    expect(checkEvidenceFiles("garbage", {})).toEqual([
      { check: "evidence.sha256sum", ok: false, detail: 'sha256sum.txt line 1 is not "<sha256>  <name>"' },
    ]);
  });
});

describe("checkEvidenceReportData", () => {
  it("passes when report_data starts with SHA-256(sha256sum.txt), fails otherwise", () => {
    const quote = new Uint8Array(Buffer.from(dstack.quote, "hex"));
    quote.set(evidenceReportData(SUMS), 568);
    expect(checkEvidenceReportData(quote, SUMS)).toEqual({
      check: "evidence.report_data",
      ok: true,
      detail: `report_data starts with SHA-256(sha256sum.txt) = ${sha256(SUMS)}`,
    });
    expect(checkEvidenceReportData(quote, `${SUMS}\n`)).toMatchObject({ ok: false });
    expect(checkEvidenceReportData(dstack.quote, SUMS)).toEqual({
      check: "evidence.report_data",
      ok: false,
      detail: `report_data starts with 1234${"0".repeat(60)}, not SHA-256(sha256sum.txt) = ${sha256(SUMS)}`,
    });
    expect(checkEvidenceReportData("00", SUMS)).toEqual({
      check: "evidence.report_data",
      ok: false,
      detail: "quote is 1 bytes, shorter than its 48-byte header",
    });
  });
});
