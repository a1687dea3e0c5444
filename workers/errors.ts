// The one error handler (docs/design/api.md, Errors): every non-2xx answer has the body
// `{"error": {code, message, request_id, details?}}`. Internal details (stack traces, RPC errors,
// revert data) go to the log with the request id, never to the client.
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { errorBody, isExposed, SigilError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { type RequestIds, requestLog } from "./log.ts";

export function toSigilError(err: unknown): SigilError {
  // Only an error written for the client passes as it is; the rest (channel, attestation, …) is internal_error.
  if (isExposed(err)) return err;
  if (err instanceof HTTPException) {
    if (err.status === 400) return new SigilError("invalid_json", "the request body is not valid JSON");
    // The validator refuses a body that is not declared as JSON: still the client's mistake, still 400.
    if (err.status === 415)
      return new SigilError("invalid_json", "send the request body as JSON, with Content-Type: application/json");
    if (err.status === 413) return new SigilError("payload_too_large", "the request body is too large");
  }
  return new SigilError("internal_error", "an internal error occurred", { cause: err });
}

export function errorResponse(c: Context, err: unknown): Response {
  const error = toSigilError(err);
  const ids = c.get("ids") as RequestIds | undefined;
  const requestId = ids?.requestId ?? crypto.randomUUID();
  if (error.status >= 500) {
    const cause = error.cause ?? err;
    const log =
      (c.get("log") as Logger | undefined) ?? requestLog({ requestId, correlationId: ids?.correlationId ?? null });
    log.error("request failed", { code: error.code, error: cause instanceof Error ? cause.message : String(cause) });
  }
  if (error.retryAfterSeconds !== undefined) c.header("Retry-After", String(error.retryAfterSeconds));
  c.header("X-Request-Id", requestId);
  if (ids?.correlationId) c.header("X-Correlation-Id", ids.correlationId);
  return c.json(errorBody(error, requestId), error.status);
}
