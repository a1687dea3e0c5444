// Calls the enclave's internal API from tests, as the edge will: JSON over HTTP with the shared secret.
import { inject } from "vitest";
import { ENCLAVE_SECRET_HEADER, type EnclaveOperation } from "../../shared/enclaveApi.ts";
import { TEST_ENCLAVE_SECRET } from "./constants.ts";

export type Reply<T = Record<string, unknown>> = { status: number; body: T; headers: Headers };

export async function callEnclave<T = Record<string, unknown>>(op: EnclaveOperation | string, body: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const res = await fetch(`${inject("enclaveUrl")}/internal/v1/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", [ENCLAVE_SECRET_HEADER]: TEST_ENCLAVE_SECRET, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Calls and insists on 200, showing the error body otherwise. */
export async function ok<T = Record<string, unknown>>(op: EnclaveOperation, body: unknown): Promise<T> {
  const r = await callEnclave<T>(op, body);
  if (r.status !== 200) throw new Error(`${op} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export type RunResult = {
  response: unknown;
  logs: string;
  has_error: boolean;
  error?: { code: string; message: string; stack?: string };
  cid: string;
  duration_ms: number;
};

export async function run(apiKey: string, code: string, params: unknown = null, extra: Record<string, unknown> = {}): Promise<Reply<RunResult>> {
  return callEnclave<RunResult>("execute", { api_key: apiKey, code, js_params: params, ...extra });
}
