// The few DER encodings the mock PCK certificate's Intel SGX extension needs (SEQUENCE, OBJECT
// IDENTIFIER, OCTET STRING, INTEGER, ENUMERATED), so its layout is visible here rather than hidden
// in an ASN.1 schema library.
import { concatBytes } from "@noble/hashes/utils";

function tlv(tag: number, body: Uint8Array): Uint8Array {
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : null;
  if (!length) throw new Error("DER value too long for this encoder");
  return concatBytes(Uint8Array.of(tag, ...length), body);
}

export function derSequence(...items: Uint8Array[]): Uint8Array {
  return tlv(0x30, concatBytes(...items));
}

export function derOid(dotted: string): Uint8Array {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const out: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80);
    out.push(...base128);
  }
  return tlv(0x06, Uint8Array.from(out));
}

export function derOctetString(bytes: Uint8Array): Uint8Array {
  return tlv(0x04, bytes);
}

/** A non-negative integer below 2^31, minimally encoded (a leading zero keeps it positive). */
function unsigned(tag: number, value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff)
    throw new Error(`DER integer out of range: ${value}`);
  const bytes: number[] = [];
  for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  if (bytes.length === 0 || (bytes[0] as number) & 0x80) bytes.unshift(0);
  return tlv(tag, Uint8Array.from(bytes));
}

export const derInteger = (value: number): Uint8Array => unsigned(0x02, value);
export const derEnumerated = (value: number): Uint8Array => unsigned(0x0a, value);
