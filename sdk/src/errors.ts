// The SDK's errors: one class for every answer the service refused, with the service's own code,
// status, details and request id (docs/design/api.md, Errors), and a subclass for calls that got no answer at
// all (the network failed, or the call timed out). Every failure of a client call is one of these,
// or the caller's own AbortSignal reason when the caller aborted.
import type { ErrorCode } from "../../shared/errors.ts";

/** Codes the SDK itself gives: the service never answers with these. */
export type ClientErrorCode = "network_error" | "timeout" | "unexpected_response" | "run_failed";

export class SigilError extends Error {
  override name = "SigilError";
  /** The service's error code (docs/design/api.md), or one of ClientErrorCode. */
  readonly code: ErrorCode | ClientErrorCode | (string & {});
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  readonly details: unknown;
  /** The answer's X-Request-Id: quote it when asking about a call. */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait before trying again (429, 503, 409 request_in_progress). */
  readonly retryAfter: number | undefined;

  constructor(args: {
    code: SigilError["code"];
    message: string;
    status: number;
    details?: unknown;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    cause?: unknown;
  }) {
    super(args.message, args.cause === undefined ? undefined : { cause: args.cause });
    this.code = args.code;
    this.status = args.status;
    this.details = args.details;
    this.requestId = args.requestId;
    this.retryAfter = args.retryAfter;
  }

  /** One line: code, message and request id, as the CLI prints it. */
  override toString(): string {
    return `${this.code}: ${this.message}${this.requestId ? ` (request ${this.requestId})` : ""}`;
  }
}

/** No answer came: the service could not be reached, or the connection failed mid-call. */
export class SigilNetworkError extends SigilError {
  override name = "SigilNetworkError";
}

/** No answer came within the call's timeout. */
export class SigilTimeoutError extends SigilNetworkError {
  override name = "SigilTimeoutError";
}

export function isSigilError(err: unknown): err is SigilError {
  return err instanceof SigilError;
}

/** Why a webhook did not verify (verifyWebhook, webhooks.ts). */
export type WebhookErrorCode =
  | "webhook_signature_missing"
  | "webhook_signature_invalid"
  | "webhook_timestamp_out_of_tolerance"
  | "webhook_payload_invalid";

/**
 * A webhook delivery that verifyWebhook refused: answer it 400 and act on nothing in it. Not a
 * SigilError (no call to the service failed); `code` says which check failed.
 */
export class SigilWebhookError extends Error {
  override name = "SigilWebhookError";
  readonly code: WebhookErrorCode;
  readonly details: unknown;
  constructor(code: WebhookErrorCode, message: string, details?: unknown) {
    super(message);
    this.code = code;
    this.details = details;
  }
}
