// A TDX quote's header and TD report (docs/design/attestation.md, Facts): the 48-byte header, then for version
// 4 the TD report at byte 48, for version 5 after a 6-byte body descriptor (type u16, size u32).
// dcap-qvl parses it (the same parser dcap.ts verifies with, so the fields read here are the ones
// its signature check covers); what is written here is the checks before it, each with its own
// message: a quote that is not TDX, a v5 body that is not a TD report, a short or truncated quote.
// Parsing proves nothing: only dcap.ts's signature check makes these values trustworthy.
import * as dcap from "@phala/dcap-qvl";
import { toBytes, toHex } from "./bytes.ts";
import { AttestationError } from "./errors.ts";
import type { Rtmrs } from "./eventLog.ts";

export const QUOTE_HEADER_BYTES = 48;
/** The v5 body descriptor: type (u16) and size (u32). */
export const QUOTE_V5_BODY_DESCRIPTOR_BYTES = 6;
export const TD_REPORT10_BYTES = 584;
export const TD_REPORT15_BYTES = 648;
export const TEE_TYPE_TDX = 0x81;
/** v5 body types: 2 = TD report 1.0 (TDX 1.0), 3 = TD report 1.5 (TDX 1.5). SGX (1) is not a TDX quote. */
export const BODY_TD_REPORT10 = 2;
export const BODY_TD_REPORT15 = 3;

/** A parsed quote. Hex fields are lowercase without 0x. */
export type TdxQuote = {
  version: 4 | 5;
  /** 2 = ECDSA-256 with P-256, the only type dcap-qvl accepts. */
  attestationKeyType: number;
  /** 0x81 for TDX. */
  teeType: number;
  /** v5 only: 2 (TD report 1.0) or 3 (TD report 1.5). */
  bodyType?: number;
  /** Where the TD report starts: 48 (v4) or 54 (v5). */
  reportOffset: number;
  teeTcbSvn: string;
  mrSeam: string;
  tdAttributes: string;
  xfam: string;
  mrTd: string;
  mrConfigId: string;
  mrOwner: string;
  mrOwnerConfig: string;
  rtmrs: Rtmrs;
  /** 64 bytes as 128 hex digits. */
  reportData: string;
  /** Header and report: the bytes the quote's signature covers. */
  signedLength: number;
  /** The whole quote. */
  bytes: Uint8Array;
};

/** Reads a TDX quote (hex with or without 0x, or bytes). Throws `invalid_quote` for anything else. */
export function parseQuote(input: string | Uint8Array): TdxQuote {
  let bytes: Uint8Array;
  try {
    bytes = toBytes(input, "quote");
  } catch (err) {
    throw new AttestationError("invalid_quote", (err as Error).message);
  }
  const fail = (message: string): never => {
    throw new AttestationError("invalid_quote", message);
  };
  if (bytes.length < QUOTE_HEADER_BYTES)
    fail(`quote is ${bytes.length} bytes, shorter than its ${QUOTE_HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint16(0, true);
  const attestationKeyType = view.getUint16(2, true);
  const teeType = view.getUint32(4, true);
  if (version !== 4 && version !== 5) fail(`quote version ${version} is not a TDX quote (versions 4 and 5)`);
  if (teeType !== TEE_TYPE_TDX)
    fail(`quote tee type 0x${teeType.toString(16).padStart(8, "0")} is not TDX (0x00000081)`);

  let reportOffset = QUOTE_HEADER_BYTES;
  let reportBytes = TD_REPORT10_BYTES;
  let bodyType: number | undefined;
  if (version === 5) {
    if (bytes.length < QUOTE_HEADER_BYTES + QUOTE_V5_BODY_DESCRIPTOR_BYTES)
      fail(`quote is ${bytes.length} bytes, too short for a v5 body descriptor`);
    bodyType = view.getUint16(QUOTE_HEADER_BYTES, true);
    const bodySize = view.getUint32(QUOTE_HEADER_BYTES + 2, true);
    if (bodyType === BODY_TD_REPORT10) reportBytes = TD_REPORT10_BYTES;
    else if (bodyType === BODY_TD_REPORT15) reportBytes = TD_REPORT15_BYTES;
    else fail(`quote v5 body type ${bodyType} is not a TD report (2 or 3)`);
    if (bodySize !== reportBytes)
      fail(`quote v5 body size ${bodySize} does not match its type ${bodyType} (${reportBytes} bytes)`);
    reportOffset += QUOTE_V5_BODY_DESCRIPTOR_BYTES;
  }
  const signedLength = reportOffset + reportBytes;
  if (bytes.length < signedLength + 4)
    fail(
      `quote is ${bytes.length} bytes, too short for a version ${version} TD report (${signedLength + 4} bytes with the signature data's length)`,
    );
  const authDataSize = view.getUint32(signedLength, true);
  const remaining = bytes.length - signedLength - 4;
  if (authDataSize > remaining)
    fail(`quote is truncated: its signature data declares ${authDataSize} bytes, ${remaining} follow`);

  let td: dcap.TDReport10 | null;
  try {
    td = dcap.Quote.parse(bytes).report.asTd10();
  } catch (err) {
    return fail(`quote could not be read: ${(err as Error).message}`);
  }
  if (!td) return fail("quote carries no TD report");
  return {
    version: version as 4 | 5,
    attestationKeyType,
    teeType,
    ...(bodyType === undefined ? {} : { bodyType }),
    reportOffset,
    teeTcbSvn: toHex(td.teeTcbSvn),
    mrSeam: toHex(td.mrSeam),
    tdAttributes: toHex(td.tdAttributes),
    xfam: toHex(td.xfam),
    mrTd: toHex(td.mrTd),
    mrConfigId: toHex(td.mrConfigId),
    mrOwner: toHex(td.mrOwner),
    mrOwnerConfig: toHex(td.mrOwnerConfig),
    rtmrs: [toHex(td.rtMr0), toHex(td.rtMr1), toHex(td.rtMr2), toHex(td.rtMr3)],
    reportData: toHex(td.reportData),
    signedLength,
    bytes,
  };
}
