// The 64-byte report_data values Sigil's quotes carry (docs/design/attestation.md, Endpoints and Channel): each
// binds a quote to one purpose, with a label so a quote made for one can never pass for another.
import { sha256 } from "@noble/hashes/sha256";
import { sha512 } from "@noble/hashes/sha512";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { toBytes } from "./bytes.ts";
import { AttestationError } from "./errors.ts";

export const REPORT_DATA_BYTES = 64;
export const MAX_NONCE_BYTES = 32;
export const NONCE_LABEL = "sigil-nonce:";
export const CHANNEL_LABEL = "sigil-channel-v1:";

/**
 * `/attestation?nonce=<hex>`: SHA-512("sigil-nonce:" ‖ nonce bytes), the hex-decoded bytes, not the
 * text. The nonce is 1–32 bytes of hex (an optional 0x, either case).
 */
export function nonceReportData(nonceHex: string): Uint8Array {
  const nonce = toBytes(nonceHex, "nonce");
  if (nonce.length === 0) throw new AttestationError("invalid_input", "nonce is empty");
  if (nonce.length > MAX_NONCE_BYTES)
    throw new AttestationError("invalid_input", `nonce is ${nonce.length} bytes; at most ${MAX_NONCE_BYTES}`);
  return sha512(concatBytes(utf8ToBytes(NONCE_LABEL), nonce));
}

/** The channel quote (`GET /channel`): SHA-512("sigil-channel-v1:" ‖ the HPKE public key's bytes). */
export function channelReportData(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length === 0) throw new AttestationError("invalid_input", "channel public key is empty");
  return sha512(concatBytes(utf8ToBytes(CHANNEL_LABEL), publicKey));
}

/**
 * The evidence quote (dstack-ingress): SHA-256(sha256sum.txt) ‖ 32 zero bytes. Pass the file's bytes
 * as served when you have them; text is hashed as UTF-8.
 */
export function evidenceReportData(sha256sumText: string | Uint8Array): Uint8Array {
  const bytes = typeof sha256sumText === "string" ? utf8ToBytes(sha256sumText) : sha256sumText;
  const out = new Uint8Array(REPORT_DATA_BYTES);
  out.set(sha256(bytes));
  return out;
}
