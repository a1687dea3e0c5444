// The errors of the attestation core (docs/design/attestation.md, The verifier): one class with a reason a
// caller can branch on, and a sentence that says what was wrong. The pipeline in verify.ts turns
// them into failed checks; the parsers throw them.
import { SigilError } from "../errors.ts";

/** What kind of input or check failed. */
export type AttestationFailure =
  | "invalid_input"
  | "invalid_quote"
  | "quote_rejected"
  | "invalid_event_log"
  | "invalid_claims"
  | "invalid_info"
  | "invalid_evidence";

/**
 * Evidence that does not parse or does not verify: `invalid_request` (the input is not valid
 * evidence), not for a client as it is (`expose` false: the message can quote the evidence).
 */
export class AttestationError extends SigilError {
  override readonly name: string = "AttestationError";
  readonly reason: AttestationFailure;
  constructor(reason: AttestationFailure, message: string, options: { cause?: unknown } = {}) {
    super("invalid_request", message, { ...options, expose: false });
    this.reason = reason;
  }
}

/** `text` parsed as JSON, or an AttestationError of `reason` saying `notJson`. */
export function parseJsonAs(reason: AttestationFailure, text: string, notJson: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new AttestationError(reason, notJson, { cause });
  }
}

/** Evidence that may come as JSON text or already parsed: the text parsed (as `parseJsonAs`), anything else as it is. */
export function parsedOr(reason: AttestationFailure, input: unknown, notJson: string): unknown {
  return typeof input === "string" ? parseJsonAs(reason, input, notJson) : input;
}

/**
 * dcap-qvl refused a quote. `dcapMessage` is dcap-qvl's own sentence, unchanged ("ISV enclave report
 * signature is invalid", "TCBInfo expired", "Fmspc mismatch", …), so callers and tests can match it;
 * `message` adds the inner cause where dcap-qvl wraps one ("Failed to decode quote: …").
 */
export class QuoteVerificationError extends AttestationError {
  override readonly name = "QuoteVerificationError";
  readonly dcapMessage: string;
  constructor(dcapMessage: string, options: { cause?: unknown } = {}) {
    const inner = options.cause instanceof Error ? options.cause.message : undefined;
    super("quote_rejected", inner === undefined ? dcapMessage : `${dcapMessage}: ${inner}`, options);
    this.dcapMessage = dcapMessage;
  }
}
