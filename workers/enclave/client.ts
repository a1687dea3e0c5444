// Forwards an operation to an enclave's internal API (shared/enclaveApi.ts) and routes around
// enclaves that do not answer: one that fails to connect (or answers 503) is skipped for a few
// seconds and the next one is tried; when none answers the client gets 503 enclave_unavailable
// with Retry-After. An enclave's own error answer (4xx) reaches the client as it is.
import { ENCLAVE_SECRET_HEADER, type EnclaveOperation } from "../../shared/enclaveApi.ts";
import { errorStatus, SigilError, type ErrorCode } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";
import type { RequestIds } from "../middleware/requestId/index.ts";

const SKIP_FAILED_MS = 5_000;
/** Per isolate: enclaves that failed recently, until when they are skipped. */
const failedUntil = new Map<string, number>();
let nextStart = 0;

export type EnclaveCall = { method?: "GET" | "POST"; path: string; body?: unknown; timeoutMs?: number };

/** The enclaves in the order to try them: healthy ones first, rotating, then the recently failed. */
function candidates(urls: string[]): string[] {
  const now = Date.now();
  const start = nextStart++ % Math.max(1, urls.length);
  const rotated = [...urls.slice(start), ...urls.slice(0, start)];
  const healthy = rotated.filter((u) => (failedUntil.get(u) ?? 0) <= now);
  const failed = rotated.filter((u) => (failedUntil.get(u) ?? 0) > now);
  return [...healthy, ...failed];
}

/**
 * Sends `request` to one enclave after another until one answers with something other than 503;
 * an enclave that cannot be reached or answers 503 is skipped for a few seconds.
 */
async function firstAnswer(config: EdgeConfig, request: (base: string) => Promise<Response>): Promise<Response> {
  for (const base of candidates(config.enclaveUrls)) {
    let res: Response;
    try {
      res = await request(base);
    } catch {
      failedUntil.set(base, Date.now() + SKIP_FAILED_MS);
      continue;
    }
    if (res.status === 503) {
      failedUntil.set(base, Date.now() + SKIP_FAILED_MS);
      continue;
    }
    failedUntil.delete(base);
    return res;
  }
  throw new SigilError("enclave_unavailable", "no enclave is reachable right now; try again shortly", { retryAfterSeconds: 5 });
}

function forwardedIds(ids: RequestIds): Record<string, string> {
  return { "x-request-id": ids.requestId, ...(ids.correlationId ? { "x-correlation-id": ids.correlationId } : {}) };
}

export async function callEnclave<T>(config: EdgeConfig, ids: RequestIds, call: EnclaveCall): Promise<T> {
  if (config.enclaveUrls.length === 0) {
    throw new SigilError("enclave_unavailable", "no enclave is configured", { retryAfterSeconds: 30 });
  }
  const res = await firstAnswer(config, (base) =>
    fetch(`${base}${call.path}`, {
      method: call.method ?? "POST",
      headers: { "content-type": "application/json", [ENCLAVE_SECRET_HEADER]: config.enclaveSecret, ...forwardedIds(ids) },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      signal: AbortSignal.timeout(call.timeoutMs ?? 150_000),
    }),
  );
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SigilError("internal_error", "the enclave answered something that is not JSON");
  }
  if (res.ok) return body as T;
  const error = (body as { error?: { code?: string; message?: string; details?: unknown } }).error;
  const code = error?.code && error.code in errorStatus ? (error.code as ErrorCode) : "internal_error";
  const retry = Number(res.headers.get("retry-after") ?? NaN);
  throw new SigilError(code, code === "internal_error" ? "an internal error occurred" : (error?.message ?? "the request failed"), {
    ...(error?.details === undefined ? {} : { details: error.details }),
    ...(Number.isFinite(retry) ? { retryAfterSeconds: retry } : {}),
  });
}

/** An internal operation with the caller's validated body. */
export function forward<T>(config: EdgeConfig, ids: RequestIds, op: EnclaveOperation, body: unknown, timeoutMs?: number): Promise<T> {
  return callEnclave<T>(config, ids, { path: `/internal/v1/${op}`, body, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

/**
 * Passes a public GET through to an enclave as it is (status, type, body): the attestation
 * endpoints, whose answers a verifier checks byte for byte.
 */
export async function proxyToEnclave(config: EdgeConfig, ids: RequestIds, pathAndQuery: string): Promise<Response> {
  const res = await firstAnswer(config, (base) => fetch(`${base}${pathAndQuery}`, { headers: forwardedIds(ids), signal: AbortSignal.timeout(30_000) }));
  const headers = new Headers();
  for (const name of ["content-type", "cache-control", "etag", "last-modified"]) {
    const v = res.headers.get(name);
    if (v) headers.set(name, v);
  }
  return new Response(res.body, { status: res.status, headers });
}
