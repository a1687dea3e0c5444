// The dev stand-in for dstack-ingress's /evidences/ (docs/design/attestation.md, Endpoints): the same files,
// made at start for a self-signed localhost certificate. As the ingress does, `sha256sum.txt` is
// `sha256sum acme-account.json cert-*.pem` and `quote.json` is the guest agent's GetQuote answer
// for report_data = SHA-256(sha256sum.txt) ‖ 32 zero bytes, so the verifier's evidence checks run
// unchanged against a local stack.
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";
import type { AttestationSource } from "./source.ts";
import { x509 } from "./x509.ts";

export type EvidenceFile = { body: Uint8Array; contentType: string };

export type DevEvidences = {
  domain: string;
  /** By file name, in listing order: acme-account.json, cert-<domain>.pem, sha256sum.txt, quote.json. */
  files: ReadonlyMap<string, EvidenceFile>;
  /** The certificate's key pair, for a local TLS listener that wants to serve the evidence's certificate. */
  certificateKeys: CryptoKeyPair;
};

const DAY_MS = 86_400_000;

export async function createDevEvidences(
  source: AttestationSource,
  options: { domain?: string; nowMs?: number } = {},
): Promise<DevEvidences> {
  const domain = options.domain ?? "localhost";
  const nowMs = options.nowMs ?? Date.now();
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
  const certificateKeys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${domain}, O=Sigil development (SIMULATED evidence)`,
    keys: certificateKeys,
    signingAlgorithm: alg,
    notBefore: new Date(nowMs - 60_000),
    notAfter: new Date(nowMs + 90 * DAY_MS),
    extensions: [
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: domain },
        ...(domain === "localhost" ? [{ type: "ip" as const, value: "127.0.0.1" }] : []),
      ]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.BasicConstraintsExtension(false),
    ],
  });

  const account = utf8ToBytes(
    `${JSON.stringify(
      {
        body: { status: "valid", contact: [] },
        uri: "https://acme.invalid/acme/acct/sigil-simulated",
        simulated: true,
        note: "SIMULATED evidence for local development: no ACME server issued this certificate",
      },
      null,
      2,
    )}\n`,
  );
  const certName = `cert-${domain}.pem`;
  const pem = utf8ToBytes(`${certificate.toString("pem")}\n`);
  const sums = utf8ToBytes(
    `${bytesToHex(sha256(account))}  acme-account.json\n${bytesToHex(sha256(pem))}  ${certName}\n`,
  );

  const reportData = new Uint8Array(64);
  reportData.set(sha256(sums));
  const answer = await source.getQuote(reportData);
  const quote = utf8ToBytes(
    JSON.stringify({
      quote: answer.quote,
      event_log: answer.event_log,
      report_data: bytesToHex(reportData),
      vm_config: answer.vm_config ?? "",
      simulated: true,
    }),
  );

  const files = new Map<string, EvidenceFile>([
    ["acme-account.json", { body: account, contentType: "application/json" }],
    [certName, { body: pem, contentType: "application/x-pem-file" }],
    ["sha256sum.txt", { body: sums, contentType: "text/plain; charset=utf-8" }],
    ["quote.json", { body: quote, contentType: "application/json" }],
  ]);
  return { domain, files, certificateKeys };
}
