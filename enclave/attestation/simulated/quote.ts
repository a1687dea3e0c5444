// Real-format Intel TDX quotes, version 4, as a TDX quoting enclave lays them out and
// @phala/dcap-qvl parses them: a 48-byte header, the 584-byte TD report (TDREPORT 1.0), then the
// ECDSA-P256 signature data: the quote signature by the attestation key, that key, and
// certification data of type 6 (the QE report, its signature by the PCK key, the QE
// authentication data, and an inner type-5 block holding the PCK certificate chain as PEM).
// The QE report binds the attestation key the way Intel's QE does: its report_data starts with
// SHA-256(attestation key ‖ QE authentication data).
import { sha256 } from "@noble/hashes/sha2";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { SIMULATED_PLATFORM, label, signP256, type MockDcapPki } from "./pki.ts";

/** Byte layout of a v4 TDX quote (v5 puts a 6-byte body header before the report: +6). */
export const TDX_QUOTE_V4 = {
  headerBytes: 48,
  tdReportBytes: 584,
  /** Header and TD report: the bytes the attestation key signs. */
  signedBytes: 632,
  offset: {
    teeTcbSvn: 48,
    mrSeam: 64,
    mrSignerSeam: 112,
    seamAttributes: 160,
    tdAttributes: 168,
    xfam: 176,
    mrTd: 184,
    mrConfigId: 232,
    mrOwner: 280,
    mrOwnerConfig: 328,
    rtmr0: 376,
    rtmr1: 424,
    rtmr2: 472,
    rtmr3: 520,
    reportData: 568,
  },
} as const;

const TEE_TYPE_TDX = 0x81;
const ATTESTATION_KEY_ECDSA_P256 = 2;
const CERT_DATA_PCK_CHAIN = 5;
const CERT_DATA_QE_REPORT = 6;
/** Intel's QE vendor id: the format a verifier expects, not a claim (the PCK chain is the mock's). */
const INTEL_QE_VENDOR_ID = Uint8Array.from([
  0x93, 0x9a, 0x72, 0x33, 0xf7, 0x9c, 0x4c, 0xa9, 0x94, 0x0a, 0x0d, 0xb3, 0x95, 0x7f, 0x06, 0x07,
]);
const SGX_REPORT_BYTES = 384;

/** The measured fields of a TD report; the rest is fixed for the mock platform. */
export type TdMeasurements = {
  mrTd: Uint8Array;
  rtmrs: readonly [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  reportData: Uint8Array;
};

/** The attestation key and the certification data that vouches for it, made once per PKI. */
export type QuoteSigner = {
  attestationKey: CryptoKey;
  attestationPublicKey: Uint8Array;
  certificationData: Uint8Array;
};

export async function createQuoteSigner(pki: MockDcapPki): Promise<QuoteSigner> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  // Raw export is 0x04 ‖ x ‖ y; quotes carry x ‖ y.
  const attestationPublicKey = new Uint8Array(await crypto.subtle.exportKey("raw", keys.publicKey)).slice(1);
  const qeAuthData = Uint8Array.from({ length: 32 }, (_, i) => i);
  const qeReportData = new Uint8Array(64);
  qeReportData.set(sha256(concatBytes(attestationPublicKey, qeAuthData)));
  const qeReport = sgxReport(qeReportData);
  const qeReportSignature = await signP256(pki.pckKey, qeReport);
  const pckChain = certificationBlock(CERT_DATA_PCK_CHAIN, utf8ToBytes(pki.pckChainPem));
  const qeBlock = concatBytes(qeReport, qeReportSignature, u16(qeAuthData.length), qeAuthData, pckChain);
  return {
    attestationKey: keys.privateKey,
    attestationPublicKey,
    certificationData: certificationBlock(CERT_DATA_QE_REPORT, qeBlock),
  };
}

export async function signTdxQuote(signer: QuoteSigner, measured: TdMeasurements): Promise<Uint8Array> {
  if (measured.reportData.length !== 64) throw new Error("report data must be 64 bytes");
  const signed = concatBytes(header(), tdReport(measured));
  const signature = await signP256(signer.attestationKey, signed);
  const authData = concatBytes(signature, signer.attestationPublicKey, signer.certificationData);
  return concatBytes(signed, u32(authData.length), authData);
}

function header(): Uint8Array {
  return concatBytes(
    u16(4),
    u16(ATTESTATION_KEY_ECDSA_P256),
    u32(TEE_TYPE_TDX),
    u16(0),
    u16(0),
    INTEL_QE_VENDOR_ID,
    label("SIMULATED-QE", 20),
  );
}

function tdReport(m: TdMeasurements): Uint8Array {
  const o = TDX_QUOTE_V4.offset;
  const report = new Uint8Array(TDX_QUOTE_V4.signedBytes);
  const put = (at: number, bytes: Uint8Array, size: number) => {
    if (bytes.length !== size) throw new Error(`TD report field at ${at} must be ${size} bytes`);
    report.set(bytes, at);
  };
  put(o.teeTcbSvn, SIMULATED_PLATFORM.teeTcbSvn, 16);
  put(o.mrSeam, label("SIMULATED-MRSEAM-NOT-A-REAL-TDX-MODULE", 48), 48);
  // TD attributes: no debug, SEPT_VE_DISABLE set (dcap-qvl refuses a TD without it).
  put(o.tdAttributes, Uint8Array.of(0, 0, 0, 0x10, 0, 0, 0, 0), 8);
  put(o.xfam, Uint8Array.of(0xe7, 0x02, 0x06, 0, 0, 0, 0, 0), 8);
  put(o.mrTd, m.mrTd, 48);
  put(o.rtmr0, m.rtmrs[0], 48);
  put(o.rtmr1, m.rtmrs[1], 48);
  put(o.rtmr2, m.rtmrs[2], 48);
  put(o.rtmr3, m.rtmrs[3], 48);
  put(o.reportData, m.reportData, 64);
  return report.slice(TDX_QUOTE_V4.headerBytes);
}

/** The QE's own SGX enclave report (384 bytes), in the layout of Intel's sgx_report_body_t. */
function sgxReport(reportData: Uint8Array): Uint8Array {
  const qe = SIMULATED_PLATFORM.qe;
  const r = new Uint8Array(SGX_REPORT_BYTES);
  const view = new DataView(r.buffer);
  r.set(SIMULATED_PLATFORM.cpuSvn, 0);
  view.setUint32(16, qe.miscSelect, true);
  r.set(qe.attributes, 48);
  r.set(qe.mrEnclave, 64);
  r.set(qe.mrSigner, 128);
  view.setUint16(256, qe.isvProdId, true);
  view.setUint16(258, qe.isvSvn, true);
  r.set(reportData, 320);
  return r;
}

function certificationBlock(type: number, body: Uint8Array): Uint8Array {
  return concatBytes(u16(type), u32(body.length), body);
}

function u16(value: number): Uint8Array {
  const b = new Uint8Array(2);
  new DataView(b.buffer).setUint16(0, value, true);
  return b;
}

function u32(value: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, value, true);
  return b;
}
