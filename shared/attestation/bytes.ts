// Hex in and out for the attestation core. Quotes, digests and nonces arrive as hex from JSON
// (with or without 0x, either case); a wrong digit or an odd length is an input error with the
// field's name, never a silently shorter value. The conversions are @noble's; what is written here
// is only what they do not do: the optional 0x, and errors that name the field.
import { equalBytes } from "@noble/curves/abstract/utils";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { AttestationError } from "./errors.ts";

const HEX = /^[0-9a-fA-F]*$/;

/** Decodes hex (an optional 0x, either case) or passes bytes through; `what` names the field in errors. */
export function toBytes(input: string | Uint8Array, what: string): Uint8Array {
  if (input instanceof Uint8Array) return input;
  if (typeof input !== "string") throw new AttestationError("invalid_input", `${what} must be hex or bytes`);
  const digits = input.startsWith("0x") || input.startsWith("0X") ? input.slice(2) : input;
  if (!HEX.test(digits)) throw new AttestationError("invalid_input", `${what} is not hex`);
  if (digits.length % 2 !== 0) throw new AttestationError("invalid_input", `${what} has an odd number of hex digits`);
  return hexToBytes(digits);
}

/** Lowercase hex without 0x. */
export const toHex = (bytes: Uint8Array): string => bytesToHex(bytes);

/** Hex for comparison: lowercase, without 0x. */
export function normalizeHex(value: string): string {
  return (value.startsWith("0x") || value.startsWith("0X") ? value.slice(2) : value).toLowerCase();
}

export const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => equalBytes(a, b);
