// The enclave's HTTP surface besides the channel's hot path (`POST /channel/v1`, served by
// channel/channel.ts straight from the HTTP server, the only way to the internal API): `GET /channel`,
// `GET /health`, and the public attestation endpoints (attestation/routes.ts). A request sent to
// `/internal/…` directly is refused.
import { Hono } from "hono";
import { errorBody, SigilError } from "../shared/errors.ts";
import { attestationRoutes, type AttestationRoutesOptions } from "./attestation/routes.ts";
import type { ChainListener } from "./authz/listener.ts";
import { channelRoutes, type Channel } from "./channel/channel.ts";
import { errorAnswer, requestContext } from "./internalApi.ts";
import type { Enclave, RequestContext } from "./operations/context.ts";

type Env = { Variables: { ctx: RequestContext } };

export function createEnclaveApp(enclave: Enclave, listener: ChainListener, attestation: AttestationRoutesOptions, channel: Channel): Hono<Env> {
  const app = new Hono<Env>();

  app.use(async (c, next) => {
    const ctx = requestContext(enclave.log, (name) => c.req.header(name));
    c.set("ctx", ctx);
    c.header("X-Request-Id", ctx.requestId);
    if (ctx.correlationId) c.header("X-Correlation-Id", ctx.correlationId);
    await next();
  });

  app.all("/internal/*", () => {
    throw new SigilError("permission_denied", "the internal API is served only through the attested channel (GET /channel, then POST /channel/v1)");
  });
  channelRoutes(app, channel);

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
        channel: { sessions: channel.recipient.sessions },
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
    const ctx = c.get("ctx") ?? requestContext(enclave.log, () => undefined);
    // The rest of an oversized body was never read: this connection cannot carry another request.
    if (err instanceof SigilError && err.code === "payload_too_large") c.header("Connection", "close");
    const answer = errorAnswer(err, ctx);
    if (answer.headers["retry-after"]) c.header("Retry-After", answer.headers["retry-after"]);
    c.header("Content-Type", "application/json");
    return c.body(answer.body, answer.status as 400);
  });

  return app;
}

function memoryReport() {
  const m = process.memoryUsage();
  const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
  // rss covers the sandbox workers too (they are threads of this process); heap is this thread's.
  return { rss_mb: mb(m.rss), heap_used_mb: mb(m.heapUsed), external_mb: mb(m.external) };
}
