// Hex in and out for the attestation core. Quotes, digests and nonces arrive as hex from JSON
// (with or without 0x, either case); a wrong digit or an odd length is an input error with the
// field's name, never a silently shorter value.
import { AttestationError } from "./errors.ts";

const HEX = /^[0-9a-fA-F]*$/;

/** Decodes hex (an optional 0x, either case) or passes bytes through; `what` names the field in errors. */
export function toBytes(input: string | Uint8Array, what: string): Uint8Array {
  if (input instanceof Uint8Array) return input;
  if (typeof input !== "string") throw new AttestationError("invalid_input", `${what} must be hex or bytes`);
  const digits = input.startsWith("0x") || input.startsWith("0X") ? input.slice(2) : input;
  if (!HEX.test(digits)) throw new AttestationError("invalid_input", `${what} is not hex`);
  if (digits.length % 2 !== 0) throw new AttestationError("invalid_input", `${what} has an odd number of hex digits`);
  const bytes = new Uint8Array(digits.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(digits.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** Lowercase hex without 0x. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Hex for comparison: lowercase, without 0x. */
export function normalizeHex(value: string): string {
  return (value.startsWith("0x") || value.startsWith("0X") ? value.slice(2) : value).toLowerCase();
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
