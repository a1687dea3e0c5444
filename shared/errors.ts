// The error vocabulary the edge and the enclave share (docs/design/api.md): stable codes, the HTTP status of
// each, the one error body every non-2xx answer has, and the codes a script run can end with.
// Free of zod (its schema is in errorBodySchema.ts), so the sandbox's worker threads can load it.

/** Every HTTP error code and its status. A code's status never changes; add codes, never reuse them. */
export const errorStatus = {
  invalid_request: 400,
  /** The script's code does not compile (details: line, column, cid): nothing ran, nothing is charged. */
  compile_error: 400,
  invalid_json: 400,
  conflicting_credentials: 400,
  invalid_typed_data: 400,
  wrong_primary_type: 400,
  wrong_chain_id: 400,
  amount_below_minimum: 400,
  /** A list's `cursor` that no page of it gave (garbled, or from another list). */
  invalid_cursor: 400,
  /** A webhook URL that is malformed, not https in production, or names a private/loopback/link-local host (issue 14). */
  invalid_webhook_url: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  invalid_signature: 401,
  signature_expired: 401,
  insufficient_credits: 402,
  permission_denied: 403,
  /** A wallet's guardrail refused what a script asked it to sign (a run's error code; docs/design/guardrails.md). */
  guardrail_denied: 403,
  account_key_required: 403,
  chain_secured_account: 403,
  not_found: 404,
  group_not_found: 404,
  wallet_not_found: 404,
  action_not_found: 404,
  account_not_found: 404,
  payment_not_found: 404,
  webhook_not_found: 404,
  delivery_not_found: 404,
  method_not_allowed: 405,
  instance_not_found: 404,
  already_exists: 409,
  payment_not_succeeded: 409,
  payment_belongs_to_another_account: 409,
  request_in_progress: 409,
  write_outcome_unknown: 409,
  /** The account has the most webhook endpoints it may have (10). */
  webhook_limit: 409,
  /**
   * The request's body did not arrive whole within the edge's deadline (SIGIL_EDGE_BODY_TIMEOUT_MS,
   * 10 s): nothing was done for it; send it again, whole.
   */
  body_timeout: 408,
  payload_too_large: 413,
  idempotency_key_reused: 422,
  rate_limited: 429,
  executor_busy: 429,
  internal_error: 500,
  chain_unavailable: 503,
  enclave_unavailable: 503,
  /** The enclave is up but the IPFS gateway it fetches `ipfs_id` code from is not (unreachable, timed out, 5xx). */
  ipfs_unavailable: 503,
  payments_unavailable: 503,
  /**
   * This edge instance is already serving as many requests as it serves promptly
   * (SIGIL_EDGE_MAX_IN_FLIGHT), or as many of this client's — its address's, or its API key's — as
   * one client may hold (SIGIL_EDGE_CLIENT_SHARE_PERCENT of them): refused before any work, with a
   * short Retry-After.
   */
  edge_busy: 503,
} as const satisfies Record<string, 400 | 401 | 402 | 403 | 404 | 405 | 408 | 409 | 413 | 422 | 429 | 500 | 503>;

export type ErrorCode = keyof typeof errorStatus;
export type ErrorStatus = (typeof errorStatus)[ErrorCode];

/** Codes a script run reports in a 200 response's `error.code` (docs/design/sandbox.md). */
export const runErrorCodes = [
  "script_error",
  "timeout",
  "memory_limit",
  "limit_exceeded",
  "insufficient_credits",
  "permission_denied",
  "guardrail_denied",
  "wallet_key_mismatch",
] as const;
export type RunErrorCode = (typeof runErrorCodes)[number];

/** One entry of `details` for `invalid_request`: where the input was wrong and why. */
export type IssueDetail = { path: string; message: string };

/**
 * The one base of every error the code throws on purpose, on either side: a stable `code` from
 * `errorStatus`, its HTTP `status`, `details`, and optionally `retryAfterSeconds` and `cause`. One
 * error middleware per side maps it to an HTTP answer.
 *
 * `expose` says whether `message` is written for the client. It is true for a SigilError made
 * directly (the domain's refusals: `not_found`, `permission_denied`, …), whose message never holds
 * secrets, stack traces or RPC/revert internals. The specialised errors of the channel, the
 * attestation checks and the sandbox are subclasses with `expose` false: their messages name
 * enclave URLs, peers and internals, so a handler that meets one answers `internal_error` and logs
 * the message instead. Code that asks "is this an answer for the client?" tests `isExposed(err)`,
 * never `instanceof SigilError` alone.
 */
export class SigilError extends Error {
  override readonly name: string = "SigilError";
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  readonly details: unknown;
  /** Seconds a client should wait before retrying (429 and 503 answers carry it as Retry-After). */
  readonly retryAfterSeconds: number | undefined;
  /** Whether `code` and `message` may be the client's answer as they are (see the class comment). */
  readonly expose: boolean;

  /**
   * `status` overrides the code's usual status where docs/design/api.md answers otherwise: the one case is the
   * Stripe webhook, whose bad signature is a 400 `invalid_signature` (the payload is refused; no
   * credential of a caller is at stake).
   */
  constructor(
    code: ErrorCode,
    message: string,
    options: {
      details?: unknown;
      retryAfterSeconds?: number;
      cause?: unknown;
      status?: ErrorStatus;
      expose?: boolean;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status ?? errorStatus[code];
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.expose = options.expose ?? true;
  }
}

/** Whether `err` is an answer for the client: a SigilError whose message is written for it. */
export function isExposed(err: unknown): err is SigilError {
  return err instanceof SigilError && err.expose;
}

/** `{"error": {code, message, request_id, details?}}`: the body of every non-2xx answer (errorBodySchema.ts checks it). */
export type ErrorBody = { error: { code: ErrorCode; message: string; request_id: string; details?: unknown } };

/** The body for `error`; one whose message is not for the client (see `expose`) becomes a bare `internal_error`. */
export function errorBody(error: SigilError, requestId: string): ErrorBody {
  if (!error.expose)
    return { error: { code: "internal_error", message: "an internal error occurred", request_id: requestId } };
  return {
    error: {
      code: error.code,
      message: error.message,
      request_id: requestId,
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
}

/**
 * A managed write that failed after its transaction was sent (it reverted on chain, or its receipt
 * never came): the same error, with the transaction's hash in `details.transaction_hash`. The
 * client learns which transaction it was; the edge's meter learns that the write was sent, which
 * costs its cent (docs/design/billing.md, Fees).
 */
export function sentTransactionError(err: SigilError, transactionHash: string): SigilError {
  const details =
    err.details !== null && typeof err.details === "object" && !Array.isArray(err.details)
      ? err.details
      : err.details === undefined
        ? {}
        : { reason: err.details };
  return new SigilError(err.code, err.message, {
    details: { ...details, transaction_hash: transactionHash },
    ...(err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds }),
    ...(err.cause === undefined ? {} : { cause: err.cause }),
    status: err.status,
    expose: err.expose,
  });
}

/** The hash of the transaction a failed write had sent (see sentTransactionError), if it had sent one. */
export function sentTransactionOf(err: unknown): string | undefined {
  return isExposed(err) ? transactionHashIn(err.details) : undefined;
}

/** `details.transaction_hash` of an error body (or a SigilError's details), when it is a transaction hash. */
export function transactionHashIn(details: unknown): string | undefined {
  if (details === null || typeof details !== "object") return undefined;
  const hash = (details as { transaction_hash?: unknown }).transaction_hash;
  return typeof hash === "string" && /^0x[0-9a-fA-F]{64}$/.test(hash) ? hash : undefined;
}
