// The internal API the edge forwards to (shared/enclaveApi.ts): `POST /internal/v1/<op>` with the
// operation's JSON, `GET /internal/v1/client_config`, `GET /internal/v1/health` (the whole health
// report, health.ts: what the public /health keeps to itself) and `GET /internal/v1/attestation?…`
// (the public /attestation as the edge's client would get it: the edge names that client in
// `x-sigil-client-ip`, and its nonce quotes count against that client's budget, not the edge's). It is reached only through the attested
// channel (channel/channel.ts), which hands it each opened request: a plain function from request
// to answer, with no second pass through an HTTP router. It validates with the shared zod schemas
// and calls the operation; operations know nothing of HTTP. An operation sent with an
// `idempotency-key` header is done once per key (idempotency.ts): a repeat joins it or gets its
// answer, marked `idempotent-replayed: true`.
import type { z } from "zod";
import { enclaveOperations, requestSchemas, type EnclaveOperation } from "../shared/enclaveApi.ts";
import { errorBody, isExposed, SigilError, type IssueDetail } from "../shared/errors.ts";
import { OperationMemory } from "./idempotency.ts";
import type { Logger } from "../shared/log.ts";
import { addAction, deleteAction, updateActionMetadata } from "./operations/actions.ts";
import { newAccount } from "./operations/accounts.ts";
import type { Enclave, RequestContext } from "./operations/context.ts";
import { sigilAction } from "./operations/sigilAction.ts";
import {
  addActionToGroup,
  addGroup,
  addPkpToGroup,
  removeActionFromGroup,
  removeGroup,
  removePkpFromGroup,
  updateGroup,
} from "./operations/groups.ts";
import { addUsageApiKeyWithSignature, convertToChainSecuredAccount, createWalletWithSignature } from "./operations/signatures.ts";
import { addUsageApiKey, removeUsageApiKey, updateUsageApiKey, updateUsageApiKeyMetadata } from "./operations/usageKeys.ts";
import { createWallet } from "./operations/wallets.ts";

type Operation<Op extends EnclaveOperation> = (enclave: Enclave, input: z.output<(typeof requestSchemas)[Op]>, ctx: RequestContext) => Promise<unknown>;

const operations: { [Op in EnclaveOperation]: Operation<Op> } = {
  new_account: newAccount,
  create_wallet: createWallet,
  add_usage_api_key: addUsageApiKey,
  update_usage_api_key: updateUsageApiKey,
  update_usage_api_key_metadata: updateUsageApiKeyMetadata,
  remove_usage_api_key: removeUsageApiKey,
  add_group: addGroup,
  remove_group: removeGroup,
  update_group: updateGroup,
  add_action_to_group: addActionToGroup,
  remove_action_from_group: removeActionFromGroup,
  add_pkp_to_group: addPkpToGroup,
  remove_pkp_from_group: removePkpFromGroup,
  add_action: addAction,
  delete_action: deleteAction,
  update_action_metadata: updateActionMetadata,
  convert_to_chain_secured_account: convertToChainSecuredAccount,
  create_wallet_with_signature: createWalletWithSignature,
  add_usage_api_key_with_signature: addUsageApiKeyWithSignature,
  sigil_action: sigilAction,
};

/** Request body cap: 6 MiB (code ≤ 4 MiB plus params and JSON overhead, sandbox.md). */
export const MAX_BODY_BYTES = 6 << 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const OPERATION_PATH = /^\/internal\/v1\/([a-z_]+)$/;
/** The longest Idempotency-Key the edge lets through (api.md). */
const MAX_IDEMPOTENCY_KEY = 255;

export type InternalRequest = { method: string; path: string; headers: Record<string, string>; body: string };
export type InternalAnswer = { status: number; headers: Record<string, string>; body: string };

/** The request's ids: the edge makes the request id; one missing or malformed is replaced. */
export function requestContext(log: Logger, header: (name: string) => string | undefined): RequestContext {
  const sent = header("x-request-id");
  const requestId = sent && UUID.test(sent) ? sent : crypto.randomUUID();
  const correlation = header("x-correlation-id");
  const correlationId = correlation && correlation.length <= 200 ? correlation : null;
  return { requestId, correlationId, log: log.child({ requestId, ...(correlationId ? { correlationId } : {}) }) };
}

/**
 * What an error becomes for the client: its code, status and message for an exposed SigilError (Retry-After
 * when it has one), `internal_error` with nothing of the cause for anything else (the cause goes
 * to the log with the request id).
 */
export function errorAnswer(err: unknown, ctx: RequestContext): InternalAnswer {
  const headers: Record<string, string> = { "content-type": "application/json", "x-request-id": ctx.requestId };
  if (isExposed(err)) {
    if (err.retryAfterSeconds !== undefined) headers["retry-after"] = String(err.retryAfterSeconds);
    if (err.status >= 500) ctx.log.error("request failed", { code: err.code, error: err.cause instanceof Error ? err.cause.message : undefined });
    return { status: err.status, headers, body: JSON.stringify(errorBody(err, ctx.requestId)) };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  ctx.log.error("unexpected error", { error: e.message, stack: e.stack?.split("\n").slice(0, 6).join(" | ") });
  return { status: 500, headers, body: JSON.stringify(errorBody(new SigilError("internal_error", "an internal error occurred"), ctx.requestId)) };
}

/** What the internal API serves besides the operations. */
export type InternalParts = {
  health: () => Promise<{ body: unknown }>;
  /** The public attestation answer to `pathAndQuery` (under /attestation), for the client named `client`; `headers` carry the request's ids. */
  attestation: (pathAndQuery: string, client: string, headers: Record<string, string>) => Promise<Response>;
};

/** The header in which the edge names its client (the address it saw); trusted only inside the channel. */
export const CLIENT_IP_HEADER = "x-sigil-client-ip";
/** Headers of an attestation answer that go back to the edge with it. */
const ATTESTATION_HEADERS = ["content-type", "cache-control", "retry-after", "x-attestation-simulated", "x-sigil-instance"];

export function createInternalApi(enclave: Enclave, parts: InternalParts): (request: InternalRequest) => Promise<InternalAnswer> {
  const clientConfig = () => {
    const l = enclave.config.limits;
    return {
      timeout_ms: l.timeoutMs,
      max_timeout_ms: l.maxTimeoutMs,
      memory_limit_mb: l.memoryLimitBytes >> 20,
      max_code_bytes: l.maxCodeBytes,
      max_js_params_bytes: l.maxJsParamsBytes,
      max_response_bytes: l.maxResponseBytes,
      max_log_bytes: l.maxLogBytes,
      max_fetch_count: l.maxFetchCount,
      max_wallet_operations: l.maxWalletOperations,
    };
  };

  const memory = new OperationMemory();

  return async (request) => {
    const headers = new Map(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const ctx = requestContext(enclave.log, (name) => headers.get(name));
    if (request.method === "GET" && /^\/internal\/v1\/attestation(\?|$)/.test(request.path)) {
      const ids = { "x-request-id": ctx.requestId, ...(ctx.correlationId ? { "x-correlation-id": ctx.correlationId } : {}) };
      const res = await parts.attestation(request.path.slice("/internal/v1".length), `edge:${headers.get(CLIENT_IP_HEADER) ?? "unknown"}`, ids);
      const answerHeaders: Record<string, string> = { "x-request-id": ctx.requestId };
      for (const name of ATTESTATION_HEADERS) {
        const value = res.headers.get(name);
        if (value !== null) answerHeaders[name] = value;
      }
      return { status: res.status, headers: answerHeaders, body: await res.text() };
    }
    const answer = async (): Promise<InternalAnswer> => {
      try {
        const result = await dispatch(enclave, request, ctx, clientConfig, parts);
        return { status: 200, headers: { "content-type": "application/json", "x-request-id": ctx.requestId }, body: JSON.stringify(result) };
      } catch (err) {
        return errorAnswer(err, ctx);
      }
    };
    const key = headers.get("idempotency-key");
    const op = OPERATION_PATH.exec(request.path)?.[1];
    // Only an operation that will be done is remembered: an unknown one or an oversized body is
    // refused by dispatch before anything is parsed, and that refusal is nothing to replay.
    const remembered =
      key && key.length <= MAX_IDEMPOTENCY_KEY && request.method === "POST" && op !== undefined && (enclaveOperations as readonly string[]).includes(op) && Buffer.byteLength(request.body) <= MAX_BODY_BYTES
        ? OperationMemory.identify(op, key, request.body)
        : undefined;
    if (!remembered) return answer();
    const { answer: first, replayed } = await memory.once(remembered.scope, remembered.fingerprint, ctx.requestId, answer);
    if (replayed) ctx.log.info("answered from the idempotency memory", { op });
    return replayed ? { ...first, headers: { ...first.headers, "idempotent-replayed": "true" } } : first;
  };
}

async function dispatch(enclave: Enclave, request: InternalRequest, ctx: RequestContext, clientConfig: () => unknown, parts: InternalParts): Promise<unknown> {
  if (request.method === "GET" && request.path === "/internal/v1/client_config") return clientConfig();
  if (request.method === "GET" && request.path === "/internal/v1/health") return (await parts.health()).body;
  const op = OPERATION_PATH.exec(request.path)?.[1];
  if (request.method !== "POST" || op === undefined || !(enclaveOperations as readonly string[]).includes(op)) {
    throw new SigilError("not_found", `no internal operation at ${request.method} ${request.path}`);
  }
  if (Buffer.byteLength(request.body) > MAX_BODY_BYTES) throw new SigilError("payload_too_large", `the request body must be at most ${MAX_BODY_BYTES} bytes`);
  const input = parseInput(op as EnclaveOperation, readJson(request.body));
  const started = performance.now();
  const result = await (operations[op as EnclaveOperation] as Operation<EnclaveOperation>)(enclave, input as never, ctx);
  ctx.log.info("operation done", { op, ms: Math.round(performance.now() - started) });
  return result;
}

function readJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SigilError("invalid_json", "the request body is not valid JSON");
  }
}

function parseInput(op: EnclaveOperation, body: unknown): unknown {
  const result = requestSchemas[op].safeParse(body);
  if (result.success) return result.data;
  const details: IssueDetail[] = result.error.issues.map((i) => ({
    path: i.path.map(String).join(".") || "(body)",
    message: i.code === "unrecognized_keys" ? `unknown field(s): ${i.keys.join(", ")}` : i.message,
  }));
  throw new SigilError("invalid_request", "the request body is not valid for this operation", { details });
}
