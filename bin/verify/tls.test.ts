// Check 6 (TLS) of `sigil verify`, for real: the real dstack fixture deployment served over HTTPS on
// 127.0.0.1 with a self-signed certificate made here (@peculiar/x509 + WebCrypto), its /evidences/
// publishing a certificate; the verifier opens its own TLS handshake to the server and compares the
// certificate presented there with the evidence PEM. The test process trusts the test certificates
// (tls.setDefaultCACertificates) so the verifier's HTTPS requests work as they would against a
// publicly trusted certificate; the comparison itself never relies on that trust.
import "reflect-metadata";
import { readFileSync } from "node:fs";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCollateral } from "../../shared/attestation/index.ts";
import {
  FIXTURE_COLLATERAL_FILE,
  FIXTURE_NOW,
  serveFixtureDeployment,
  type FixtureDeployment,
} from "../../test/fixtures/dstackDeployment.ts";
import { servedCertificate, verifyDeployment } from "./verify.ts";

const x509 = await import("@peculiar/x509");

type TestCertificate = { pem: string; der: Uint8Array; keyPem: string };

/** A self-signed P-256 certificate for 127.0.0.1 and localhost, and its key, as PEM. */
async function makeCertificate(name: string): Promise<TestCertificate> {
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
  const keys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
  // Valid now: the HTTPS client judges it at the wall-clock time (--now is only for the quote).
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: alg,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 86_400_000),
    extensions: [
      new x509.SubjectAlternativeNameExtension([
        { type: "ip", value: "127.0.0.1" },
        { type: "dns", value: "localhost" },
      ]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.BasicConstraintsExtension(false),
    ],
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey)).toString("base64");
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${(pkcs8.match(/.{1,64}/g) ?? []).join("\n")}\n-----END PRIVATE KEY-----\n`;
  return { pem: `${cert.toString("pem")}\n`, der: new Uint8Array(cert.rawData), keyPem };
}

const collateral = parseCollateral(JSON.parse(readFileSync(FIXTURE_COLLATERAL_FILE, "utf8")));
const defaultCAs = getCACertificates("default");
let evidenceCert: TestCertificate;
let otherCert: TestCertificate;
let honest: FixtureDeployment;
let impostor: FixtureDeployment;

beforeAll(async () => {
  evidenceCert = await makeCertificate("sigil verify test: the evidence certificate");
  otherCert = await makeCertificate("sigil verify test: another certificate");
  setDefaultCACertificates([...defaultCAs, evidenceCert.pem, otherCert.pem]);
  // Both publish the same evidence certificate; only the first presents it in the handshake.
  honest = await serveFixtureDeployment({
    tls: { key: evidenceCert.keyPem, cert: evidenceCert.pem },
    evidenceCertPem: evidenceCert.pem,
  });
  impostor = await serveFixtureDeployment({
    tls: { key: otherCert.keyPem, cert: otherCert.pem },
    evidenceCertPem: evidenceCert.pem,
  });
});

afterAll(async () => {
  await honest?.close();
  await impostor?.close();
  setDefaultCACertificates(defaultCAs);
});

const verify = (url: string) => verifyDeployment(url, { collateral, now: FIXTURE_NOW, noNonce: true });

describe("sigil verify, check 6 (TLS)", () => {
  it("reads the certificate a server presents in a real handshake", async () => {
    expect(Buffer.from(await servedCertificate(new URL(honest.url))).equals(Buffer.from(evidenceCert.der))).toBe(true);
    expect(Buffer.from(await servedCertificate(new URL(impostor.url))).equals(Buffer.from(otherCert.der))).toBe(true);
  });

  it("passes when the certificate served in the handshake is the evidence PEM", async () => {
    const lines = await verify(honest.url);
    const status = Object.fromEntries(lines.map((l) => [l.check, l.status]));
    // The deployment was read over HTTPS and its evidence certificate found.
    expect(status).toMatchObject({
      quote: "pass",
      "evidence.file:cert-localhost.pem": "pass",
      "evidence.quote": "pass",
      tls: "pass",
    });
    expect(honest.asked).toContain("/evidences/cert-localhost.pem");
  });

  it("fails when the server presents a different certificate from the evidence one", async () => {
    const lines = await verify(impostor.url);
    const tls = lines.find((l) => l.check === "tls");
    expect(lines.find((l) => l.check === "evidence.file:cert-localhost.pem")?.status).toBe("pass");
    expect(tls?.status).toBe("fail");
    expect(tls?.detail).toMatch(/is not the evidence certificate/);
  });

  it("rejects, rather than reading a certificate, when the server at the https:// URL does not speak TLS", async () => {
    const plain = await serveFixtureDeployment({ evidenceCertPem: evidenceCert.pem });
    try {
      const url = plain.url.replace(/^http:/, "https:");
      await expect(servedCertificate(new URL(url))).rejects.toThrow();
    } finally {
      await plain.close();
    }
  });
});
