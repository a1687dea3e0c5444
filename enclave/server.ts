// The enclave's HTTP surface: the internal API the edge forwards to (`POST /internal/v1/<op>`,
// served only to requests that came through the attested channel, channel/channel.ts: the edge
// seals them to this boot's channel key), `GET /channel`, `GET /health`, the effective
// script limits, and the public attestation endpoints (attestation/routes.ts). Routes validate with
// the shared zod schemas and call the operation; operations know nothing of HTTP.
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { z } from "zod";
import { enclaveOperations, requestSchemas, type EnclaveOperation } from "../shared/enclaveApi.ts";
import { errorBody, SigilError, type IssueDetail } from "../shared/errors.ts";
import { attestationRoutes, type AttestationRoutesOptions } from "./attestation/routes.ts";
import type { ChainListener } from "./authz/listener.ts";
import { cameThroughChannel, channelRoutes, type Channel } from "./channel/channel.ts";
import { convertToChainSecuredAccount, newAccount } from "./operations/accounts.ts";
import type { Enclave, RequestContext } from "./operations/context.ts";
import { execute } from "./operations/execute.ts";
import {
  addAction,
  addActionToGroup,
  addGroup,
  addPkpToGroup,
  deleteAction,
  removeActionFromGroup,
  removeGroup,
  removePkpFromGroup,
  updateActionMetadata,
  updateGroup,
} from "./operations/groups.ts";
import { addUsageApiKeyWithSignature, createWalletWithSignature } from "./operations/signatures.ts";
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
  execute,
};

/** Request body cap: 6 MiB (code ≤ 4 MiB plus params and JSON overhead, sandbox.md). */
const MAX_BODY_BYTES = 6 << 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

type Env = { Variables: { ctx: RequestContext } };

export function createEnclaveApp(enclave: Enclave, listener: ChainListener, attestation: AttestationRoutesOptions, channel: Channel): Hono<Env> {
  const app = new Hono<Env>();

  app.use(async (c, next) => {
    // The edge makes the request id; a direct caller without one gets a fresh one.
    const sent = c.req.header("x-request-id");
    const requestId = sent && UUID.test(sent) ? sent : crypto.randomUUID();
    const correlation = c.req.header("x-correlation-id");
    const correlationId = correlation && correlation.length <= 200 ? correlation : null;
    c.set("ctx", { requestId, correlationId, log: enclave.log.child({ requestId, ...(correlationId ? { correlationId } : {}) }) });
    c.header("X-Request-Id", requestId);
    if (correlationId) c.header("X-Correlation-Id", correlationId);
    await next();
  });

  app.use("/internal/*", async (c, next) => {
    if (!cameThroughChannel(c.env)) {
      throw new SigilError("permission_denied", "the internal API is served only through the attested channel (GET /channel, then POST /channel/v1)");
    }
    await next();
  });
  channelRoutes(app, channel, enclave.log);

  app.use(
    "/internal/*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new SigilError("payload_too_large", `the request body must be at most ${MAX_BODY_BYTES} bytes`);
      },
    }),
  );

  app.post("/internal/v1/:op", async (c) => {
    const op = c.req.param("op") as EnclaveOperation;
    if (!(enclaveOperations as readonly string[]).includes(op)) throw new SigilError("not_found", `no internal operation named ${op}`);
    const input = parseInput(op, await readJson(c));
    const ctx = c.get("ctx");
    const started = performance.now();
    const result = await (operations[op] as Operation<typeof op>)(enclave, input as never, ctx);
    ctx.log.info("operation done", { op, ms: Math.round(performance.now() - started) });
    return c.json(result as object);
  });

  app.get("/internal/v1/client_config", (c) => {
    const l = enclave.config.limits;
    return c.json({
      timeout_ms: l.timeoutMs,
      max_timeout_ms: l.maxTimeoutMs,
      memory_limit_mb: l.memoryLimitBytes >> 20,
      max_code_bytes: l.maxCodeBytes,
      max_js_params_bytes: l.maxJsParamsBytes,
      max_response_bytes: l.maxResponseBytes,
      max_log_bytes: l.maxLogBytes,
      max_fetch_count: l.maxFetchCount,
      max_wallet_operations: l.maxWalletOperations,
    });
  });

  app.get("/health", async (c) => {
    const status = listener.status();
    let payers: Awaited<ReturnType<typeof enclave.payers.balances>> | null = null;
    let chainOk = true;
    try {
      payers = await enclave.payers.balances();
    } catch {
      chainOk = false;
    }
    const serving = chainOk;
    return c.json(
      {
        status: serving ? "ok" : "degraded",
        account_event_listener_lag_seconds: status.lagSeconds === null ? null : Math.round(status.lagSeconds * 10) / 10,
        listener: {
          last_block: status.lastBlock?.toString() ?? null,
          chain_head: status.chainHead?.toString() ?? null,
          last_error: status.lastError,
        },
        chain: { chain_id: enclave.chain.chain.id, contract_address: enclave.chain.contract.toLowerCase(), reachable: chainOk },
        payers: payers ?? enclave.payers.addresses.map((address) => ({ address, balance_wei: null, low: null })),
        sandbox: { workers: enclave.config.sandboxWorkers, active_runs: enclave.sandbox.active, capacity: enclave.sandbox.capacity, worker_restarts: enclave.sandbox.restarts },
        cache: { entries: enclave.cache.size, hits: enclave.cache.hits, misses: enclave.cache.misses },
        memory: memoryReport(),
      },
      serving ? 200 : 503,
    );
  });

  app.route("/", attestationRoutes(attestation));

  app.notFound((c) => {
    const err = new SigilError("not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
    return c.json(errorBody(err, c.get("ctx")?.requestId ?? crypto.randomUUID()), 404);
  });

  app.onError((err, c) => {
    const ctx = c.get("ctx");
    const requestId = ctx?.requestId ?? crypto.randomUUID();
    if (err instanceof SigilError) {
      if (err.retryAfterSeconds !== undefined) c.header("Retry-After", String(err.retryAfterSeconds));
      // The rest of an oversized body was never read: this connection cannot carry another request.
      if (err.code === "payload_too_large") c.header("Connection", "close");
      if (err.status >= 500) ctx?.log.error("request failed", { code: err.code, error: err.cause instanceof Error ? err.cause.message : undefined });
      return c.json(errorBody(err, requestId), err.status);
    }
    (ctx?.log ?? enclave.log).error("unexpected error", { error: err.message, stack: err.stack?.split("\n").slice(0, 6).join(" | ") });
    return c.json(errorBody(new SigilError("internal_error", "an internal error occurred"), requestId), 500);
  });

  return app;
}

function memoryReport() {
  const m = process.memoryUsage();
  const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
  // rss covers the sandbox workers too (they are threads of this process); heap is this thread's.
  return { rss_mb: mb(m.rss), heap_used_mb: mb(m.heapUsed), external_mb: mb(m.external) };
}

async function readJson(c: Context<Env>): Promise<unknown> {
  const text = await c.req.text();
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
