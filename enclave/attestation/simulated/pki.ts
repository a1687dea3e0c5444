// A mock of Intel's DCAP PKI, made at start for the simulated TEE (docs/design/attestation.md, Sources): a root
// that says it is not Intel's, a PCK platform CA and a PCK leaf carrying the Intel SGX extension
// (FMSPC, TCB components, PCE SVN, …) exactly where @phala/dcap-qvl reads it, a TCB-info signer and
// a QE-identity signer, empty CRLs, and the signed TCB info and QE identity that rate this mock
// platform UpToDate. Nothing here is secret: it proves only that the simulated source signed.
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";
import type { X509Certificate } from "@peculiar/x509";
import { x509 } from "../x509.ts";
import { derEnumerated, derInteger, derOctetString, derOid, derSequence } from "./der.ts";

export const SIMULATED_ROOT_CA_NAME = "SIMULATED DCAP Root CA (NOT INTEL)";

/** Intel's SGX extension OIDs (1.2.840.113741.1.13.1.*), as dcap-qvl looks them up. */
const SGX = "1.2.840.113741.1.13.1";
const OID = { ppid: `${SGX}.1`, tcb: `${SGX}.2`, pceId: `${SGX}.3`, fmspc: `${SGX}.4`, sgxType: `${SGX}.5` } as const;

/**
 * The mock platform: what its PCK certificate, its TD reports and its QE report claim, and what the
 * TCB info and QE identity accept. "SIMULA" is the FMSPC, so no real platform's collateral fits.
 */
export const SIMULATED_PLATFORM = {
  fmspc: Uint8Array.from(utf8ToBytes("SIMULA")),
  pceId: Uint8Array.of(0, 0),
  pceSvn: 13,
  cpuSvn: Uint8Array.of(4, 4, 2, 2, 3, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0),
  teeTcbSvn: Uint8Array.of(6, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
  qe: {
    /** TD_QE identity values Intel uses: product id 2, attributes 0x11…, miscselect 0. */
    isvProdId: 2,
    isvSvn: 4,
    miscSelect: 0,
    attributes: Uint8Array.of(0x11, ...new Uint8Array(15)),
    mrSigner: label("SIMULATED-QE-MRSIGNER-NOT-INTEL", 32),
    mrEnclave: label("SIMULATED-QE-MRENCLAVE-NOT-INTEL", 32),
  },
} as const;

/** What dcap-qvl's `verify(quote, collateral, now)` takes, with binary fields as hex. */
export type DcapCollateral = {
  pck_crl_issuer_chain: string;
  root_ca_crl: string;
  pck_crl: string;
  tcb_info_issuer_chain: string;
  tcb_info: string;
  tcb_info_signature: string;
  qe_identity_issuer_chain: string;
  qe_identity: string;
  qe_identity_signature: string;
};

export type MockDcapPki = {
  rootCaDer: Uint8Array;
  rootCaPem: string;
  /** PCK leaf, PCK platform CA, root: the chain a quote's certification data carries. */
  pckChainPem: string;
  /** The PCK leaf's key: it signs QE reports. */
  pckKey: CryptoKey;
  /** Collateral valid at `nowSecs`: issued a day before, next update 30 days after. */
  collateral(nowSecs: number): Promise<DcapCollateral>;
};

const EC = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN = { name: "ECDSA", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;

/** ASCII zero-padded to `size` bytes: the "this is simulated" labels in quotes and logs. */
export function label(text: string, size: number): Uint8Array {
  const bytes = utf8ToBytes(text);
  if (bytes.length > size) throw new Error(`label "${text}" is longer than ${size} bytes`);
  const out = new Uint8Array(size);
  out.set(bytes);
  return out;
}

/** ECDSA P-256 over SHA-256, as the raw 64-byte r ‖ s DCAP structures carry. */
export async function signP256(key: CryptoKey, data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign(SIGN, key, Uint8Array.from(data)));
}

export async function createMockDcapPki(nowMs: number = Date.now()): Promise<MockDcapPki> {
  const notBefore = new Date(nowMs - DAY_MS);
  const notAfter = new Date(nowMs + 365 * DAY_MS);
  const keys = async () => (await crypto.subtle.generateKey(EC, false, ["sign", "verify"])) as CryptoKeyPair;
  const [rootKeys, pckCaKeys, pckKeys, tcbKeys, qeIdKeys] = await Promise.all([keys(), keys(), keys(), keys(), keys()]);
  let serial = 0;
  const issue = async (
    subject: string,
    keyPair: CryptoKeyPair,
    issuer: { name: string; keys: CryptoKeyPair },
    extensions: InstanceType<typeof x509.Extension>[],
  ) =>
    x509.X509CertificateGenerator.create({
      serialNumber: (++serial).toString(16).padStart(2, "0"),
      subject,
      issuer: issuer.name,
      notBefore,
      notAfter,
      publicKey: keyPair.publicKey,
      signingKey: issuer.keys.privateKey,
      signingAlgorithm: SIGN,
      extensions: [
        ...extensions,
        await x509.SubjectKeyIdentifierExtension.create(keyPair.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey),
      ],
    });
  const caUsage = new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true);
  const leafUsage = new x509.KeyUsagesExtension(
    x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
    true,
  );

  const root = { name: dn(SIMULATED_ROOT_CA_NAME), keys: rootKeys };
  const rootCert = await issue(root.name, rootKeys, root, [new x509.BasicConstraintsExtension(true, 1, true), caUsage]);
  const pckCa = { name: dn("SIMULATED SGX PCK Platform CA (NOT INTEL)"), keys: pckCaKeys };
  const pckCaCert = await issue(pckCa.name, pckCaKeys, root, [
    new x509.BasicConstraintsExtension(true, 0, true),
    caUsage,
  ]);
  const pckCert = await issue(dn("SIMULATED SGX PCK Certificate (NOT INTEL)"), pckKeys, pckCa, [
    new x509.BasicConstraintsExtension(false, undefined, false),
    leafUsage,
    new x509.Extension(SGX, false, Uint8Array.from(sgxExtension())),
  ]);
  const tcbCert = await issue(dn("SIMULATED SGX TCB Signing (NOT INTEL)"), tcbKeys, root, [
    new x509.BasicConstraintsExtension(false, undefined, false),
    leafUsage,
  ]);
  const qeIdCert = await issue(dn("SIMULATED SGX QE Identity Signing (NOT INTEL)"), qeIdKeys, root, [
    new x509.BasicConstraintsExtension(false, undefined, false),
    leafUsage,
  ]);

  const crl = async (issuer: { name: string; keys: CryptoKeyPair }) => {
    const list = await x509.X509CrlGenerator.create({
      issuer: issuer.name,
      signingAlgorithm: SIGN,
      signingKey: issuer.keys.privateKey,
      thisUpdate: notBefore,
      nextUpdate: notAfter,
    });
    return bytesToHex(new Uint8Array(list.rawData));
  };
  const [rootCrl, pckCrl] = await Promise.all([crl(root), crl(pckCa)]);

  const chain = (...certs: X509Certificate[]) => certs.map((c) => `${c.toString("pem")}\n`).join("");
  const collateral = async (nowSecs: number): Promise<DcapCollateral> => {
    const issueDate = isoSeconds(nowSecs * 1000 - DAY_MS);
    const nextUpdate = isoSeconds(nowSecs * 1000 + 30 * DAY_MS);
    const tcbInfo = JSON.stringify(tcbInfoBody(issueDate, nextUpdate));
    const qeIdentity = JSON.stringify(qeIdentityBody(issueDate, nextUpdate));
    const [tcbSig, qeSig] = await Promise.all([
      signP256(tcbKeys.privateKey, utf8ToBytes(tcbInfo)),
      signP256(qeIdKeys.privateKey, utf8ToBytes(qeIdentity)),
    ]);
    return {
      pck_crl_issuer_chain: chain(pckCaCert, rootCert),
      root_ca_crl: rootCrl,
      pck_crl: pckCrl,
      tcb_info_issuer_chain: chain(tcbCert, rootCert),
      tcb_info: tcbInfo,
      tcb_info_signature: bytesToHex(tcbSig),
      qe_identity_issuer_chain: chain(qeIdCert, rootCert),
      qe_identity: qeIdentity,
      qe_identity_signature: bytesToHex(qeSig),
    };
  };

  return {
    rootCaDer: new Uint8Array(rootCert.rawData),
    rootCaPem: `${rootCert.toString("pem")}\n`,
    pckChainPem: chain(pckCert, pckCaCert, rootCert),
    pckKey: pckKeys.privateKey,
    collateral,
  };
}

function dn(commonName: string): string {
  return `CN=${commonName}, O=Sigil development (simulated TEE)`;
}

/** Intel's timestamps have no fractional seconds. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * The value of the PCK certificate's SGX extension: a SEQUENCE of (OID, value) pairs, the TCB pair
 * holding the 16 component SVNs, the PCE SVN and the CPU SVN (Intel's PCK certificate profile).
 */
function sgxExtension(): Uint8Array {
  const p = SIMULATED_PLATFORM;
  const pair = (oid: string, value: Uint8Array) => derSequence(derOid(oid), value);
  return derSequence(
    pair(OID.ppid, derOctetString(label("SIMULATED-PPID", 16))),
    pair(
      OID.tcb,
      derSequence(
        ...[...p.cpuSvn].map((svn, i) => pair(`${OID.tcb}.${i + 1}`, derInteger(svn))),
        pair(`${OID.tcb}.17`, derInteger(p.pceSvn)),
        pair(`${OID.tcb}.18`, derOctetString(p.cpuSvn)),
      ),
    ),
    pair(OID.pceId, derOctetString(p.pceId)),
    pair(OID.fmspc, derOctetString(p.fmspc)),
    pair(OID.sgxType, derEnumerated(0)),
  );
}

const svns = (bytes: Uint8Array) => [...bytes].map((svn) => ({ svn }));

/** TDX TCB info (version 3) with one level: this platform's exact SVNs, UpToDate. */
function tcbInfoBody(issueDate: string, nextUpdate: string) {
  const p = SIMULATED_PLATFORM;
  return {
    id: "TDX",
    version: 3,
    issueDate,
    nextUpdate,
    fmspc: bytesToHex(p.fmspc).toUpperCase(),
    pceId: bytesToHex(p.pceId).toUpperCase(),
    tcbType: 0,
    tcbEvaluationDataNumber: 1,
    tdxModule: { mrsigner: "0".repeat(96), attributes: "0000000000000000", attributesMask: "FFFFFFFFFFFFFFFF" },
    tcbLevels: [
      {
        tcb: { sgxtcbcomponents: svns(p.cpuSvn), pcesvn: p.pceSvn, tdxtcbcomponents: svns(p.teeTcbSvn) },
        tcbDate: issueDate,
        tcbStatus: "UpToDate",
      },
    ],
  };
}

/** TD_QE identity (version 2) matching the simulated QE report. */
function qeIdentityBody(issueDate: string, nextUpdate: string) {
  const qe = SIMULATED_PLATFORM.qe;
  return {
    id: "TD_QE",
    version: 2,
    issueDate,
    nextUpdate,
    tcbEvaluationDataNumber: 1,
    miscselect: "00000000",
    miscselectMask: "FFFFFFFF",
    attributes: bytesToHex(qe.attributes).toUpperCase(),
    attributesMask: "FBFFFFFFFFFFFFFF0000000000000000",
    mrsigner: bytesToHex(qe.mrSigner).toUpperCase(),
    isvprodid: qe.isvProdId,
    tcbLevels: [{ tcb: { isvsvn: qe.isvSvn }, tcbDate: issueDate, tcbStatus: "UpToDate" }],
  };
}
