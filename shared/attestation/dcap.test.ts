// Quote verification with dcap-qvl against the real fixtures (docs/design/attestation.md, Fixtures): both
// quotes verify UpToDate inside their collateral's window and each negative case fails with
// dcap-qvl's own message. A root other than Intel's is really what gets trusted when given.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseCollateral, verifyQuote, type Collateral, type VerifyQuoteOptions } from "./dcap.ts";
import { AttestationError, QuoteVerificationError } from "./errors.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const json = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
const dstack = json("dstack-quote-report.json") as { quote: string };
const lite = json("dstack-tdx-lite-getquote.json") as { quote: string };
const dstackCollateral = json("dcap-collateral-for-dstack-quote-report.json") as Collateral;
const binQuote = new Uint8Array(readFileSync(join(FIXTURES, "dcap-tdx-quote.bin")));
const binCollateral = json("dcap-tdx-quote-collateral.json") as Collateral;
const at = (iso: string) => Date.parse(iso) / 1000;

/** The instant the fixtures README gives: 2026-03-01T00:00:00Z. */
const NOW = 1772323200;
/** The second quote's window (README): UpToDate from its QE identity's issue to its TCB info's nextUpdate. */
const BIN_FROM = at("2025-06-19T10:32:27Z");
const BIN_TO = at("2025-07-19T10:16:03Z");

/** dcap-qvl's message for a refused quote; fails the test if it verifies. */
function refused(quote: string | Uint8Array, collateral: Collateral, options: VerifyQuoteOptions): string {
  try {
    verifyQuote(quote, collateral, options);
  } catch (err) {
    expect(err).toBeInstanceOf(QuoteVerificationError);
    expect((err as QuoteVerificationError).reason).toBe("quote_rejected");
    return (err as QuoteVerificationError).dcapMessage;
  }
  throw new Error("expected dcap-qvl to refuse the quote");
}

function flipped(hex: string, offset: number): Uint8Array {
  const bytes = new Uint8Array(Buffer.from(hex, "hex"));
  bytes[offset]! ^= 0x01;
  return bytes;
}

describe("the real quotes verify UpToDate", () => {
  it("the dstack quote at now = 1772323200 (FMSPC 90C06F000000)", () => {
    const v = verifyQuote(dstack.quote, dstackCollateral, { now: NOW });
    expect(v.status).toBe("UpToDate");
    expect(v.advisoryIds).toEqual([]);
    expect(v.fmspc).toBe("90c06f000000");
    expect(v.tcbInfoNextUpdate).toBe("2026-03-20T10:58:51Z");
    expect(v.customRoot).toBe(false);
    expect(v.report.rtmrs[3].slice(0, 8)).toBe("0f787c38");
    expect(v.report.reportData).toBe(`1234${"0".repeat(124)}`);
  });

  it("the dstack quote at both ends of its collateral's window, and not a second outside", () => {
    expect(verifyQuote(dstack.quote, dstackCollateral, { now: at("2026-02-18T10:58:51Z") }).status).toBe("UpToDate");
    expect(verifyQuote(dstack.quote, dstackCollateral, { now: at("2026-03-20T10:42:15Z") }).status).toBe("UpToDate");
    expect(refused(dstack.quote, dstackCollateral, { now: at("2026-02-18T10:58:50Z") })).toBe(
      "TCBInfo issue date is in the future",
    );
    // The QE identity's nextUpdate comes 16 minutes before the TCB info's.
    expect(refused(dstack.quote, dstackCollateral, { now: at("2026-03-20T10:42:16Z") })).toBe("QE Identity expired");
  });

  it("the second quote (dcap-tdx-quote.bin) inside its window (FMSPC B0C06F000000)", () => {
    for (const now of [BIN_FROM, at("2025-07-01T00:00:00Z"), BIN_TO]) {
      const v = verifyQuote(binQuote, binCollateral, { now });
      expect(v.status).toBe("UpToDate");
      expect(v.fmspc).toBe("b0c06f000000");
    }
    expect(refused(binQuote, binCollateral, { now: BIN_FROM - 1 })).toBe("QE Identity issue date is in the future");
    expect(refused(binQuote, binCollateral, { now: BIN_TO + 1 })).toBe("TCBInfo expired");
  });
});

describe("negative cases, each with dcap-qvl's message", () => {
  it("a flipped byte in RTMR3, in report_data or in the signature", () => {
    const message = "ISV enclave report signature is invalid";
    expect(refused(flipped(dstack.quote, 520), dstackCollateral, { now: NOW })).toBe(message);
    expect(refused(flipped(dstack.quote, 568), dstackCollateral, { now: NOW })).toBe(message);
    // The signature is the first 64 bytes of the signature data, after its 4-byte length at 632.
    expect(refused(flipped(dstack.quote, 636), dstackCollateral, { now: NOW })).toBe(message);
  });

  it("now past the TCB info's nextUpdate: TCBInfo expired", () => {
    expect(refused(dstack.quote, dstackCollateral, { now: at("2026-03-20T10:58:52Z") })).toBe("TCBInfo expired");
  });

  it("collateral for another FMSPC: Fmspc mismatch", () => {
    // The second quote (FMSPC B0C06F000000) with the dstack quote's collateral (90C06F000000).
    expect(refused(binQuote, dstackCollateral, { now: NOW })).toBe("Fmspc mismatch");
    // The other way round never reaches the FMSPC check: the two collateral windows do not overlap
    // and the dstack quote's PCK certificate was not yet valid in the second one's.
    expect(refused(dstack.quote, binCollateral, { now: NOW })).toBe("TCBInfo expired");
    expect(refused(dstack.quote, binCollateral, { now: at("2025-07-01T00:00:00Z") })).toBe(
      "Certificate is expired or not yet valid",
    );
  });

  it("the lite quote: no public collateral covers its PCK certificate", () => {
    expect(refused(lite.quote, dstackCollateral, { now: NOW })).toBe("Certificate is expired or not yet valid");
  });

  it("a truncated quote: dcap-qvl's message and its cause", () => {
    try {
      verifyQuote(Buffer.from(dstack.quote, "hex").subarray(0, 1000), dstackCollateral, { now: NOW });
      throw new Error("expected a refusal");
    } catch (err) {
      expect(err).toBeInstanceOf(QuoteVerificationError);
      expect((err as QuoteVerificationError).dcapMessage).toBe("Failed to decode quote");
      expect((err as Error).message).toBe("Failed to decode quote: Not enough data to fill buffer");
    }
  });
});

describe("roots", () => {
  let mockRootDer: Uint8Array;
  let mockChainPem: string;

  beforeAll(async () => {
    // @peculiar/x509 loads tsyringe, which refuses to start without a Reflect metadata API; its build
    // emits no metadata, so functions that find none are enough (enclave/attestation/x509.ts does the same).
    const reflect = Reflect as unknown as Record<string, unknown>;
    reflect.getMetadata ??= () => undefined;
    reflect.getOwnMetadata ??= () => undefined;
    reflect.defineMetadata ??= () => undefined;
    const x509 = await import("@peculiar/x509");
    // A mock DCAP root and TCB signer like the simulated TEE's (docs/design/attestation.md, Sources).
    x509.cryptoProvider.set(crypto);
    const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
    const notBefore = new Date("2026-01-01T00:00:00Z");
    const notAfter = new Date("2027-01-01T00:00:00Z");
    const rootKeys = (await crypto.subtle.generateKey(alg, false, ["sign", "verify"])) as CryptoKeyPair;
    const signerKeys = (await crypto.subtle.generateKey(alg, false, ["sign", "verify"])) as CryptoKeyPair;
    const root = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "01",
      name: "CN=SIMULATED DCAP Root CA (NOT INTEL)",
      notBefore,
      notAfter,
      keys: rootKeys,
      signingAlgorithm: alg,
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
    });
    const signer = await x509.X509CertificateGenerator.create({
      serialNumber: "02",
      subject: "CN=SIMULATED TCB Signing (NOT INTEL)",
      issuer: root.subject,
      notBefore,
      notAfter,
      signingKey: rootKeys.privateKey,
      publicKey: signerKeys.publicKey,
      signingAlgorithm: alg,
      extensions: [new x509.BasicConstraintsExtension(false)],
    });
    mockRootDer = new Uint8Array(root.rawData);
    mockChainPem = `${signer.toString("pem")}\n${root.toString("pem")}\n`;
  });

  it("collateral signed under a mock root does not verify under Intel's root", () => {
    const simulated = { ...dstackCollateral, tcb_info_issuer_chain: mockChainPem };
    expect(refused(dstack.quote, simulated, { now: NOW })).toBe(
      "Failed to verify certificate chain - intermediate signature invalid",
    );
  });

  it("with a custom root, Intel's chain no longer verifies: the given root is the one trusted", () => {
    expect(refused(dstack.quote, dstackCollateral, { now: NOW, rootCaDer: mockRootDer })).toBe(
      "Failed to verify certificate chain - intermediate signature invalid",
    );
  });
});

describe("inputs that are not a quote, collateral or time", () => {
  it("now in milliseconds, negative or fractional", () => {
    for (const now of [NOW * 1000, -1, NOW + 0.5, Number.NaN]) {
      expect(() => verifyQuote(dstack.quote, dstackCollateral, { now })).toThrow(
        new AttestationError("invalid_input", "now must be Unix seconds"),
      );
    }
  });

  it("collateral without a field dcap-qvl reads", () => {
    const { tcb_info: _, ...partial } = dstackCollateral;
    expect(() => parseCollateral(partial)).toThrow(/^collateral\.tcb_info: /);
    expect(() => verifyQuote(dstack.quote, partial as Collateral, { now: NOW })).toThrow(AttestationError);
  });

  it("a quote that is not hex", () => {
    expect(() => verifyQuote("not a quote", dstackCollateral, { now: NOW })).toThrow("quote is not hex");
  });
});
