// Every response carries a fresh `X-Request-Id` (a client-sent one is ignored) and echoes a
// non-empty `X-Correlation-Id` (api.md, Request ids); both go on to the enclave and its logs.
// Not hono/request-id: it takes a client's X-Request-Id as the request's, which api.md forbids, and
// told to read no header it would only supply the randomUUID() made here, kept a second time.
import type { MiddlewareHandler } from "hono";

export type RequestIds = { requestId: string; correlationId: string | null };

const MAX_CORRELATION_ID = 200;

export function requestId(): MiddlewareHandler<{ Variables: { ids: RequestIds } }> {
  return async (c, next) => {
    const requestId = crypto.randomUUID();
    const sent = c.req.header("x-correlation-id")?.trim();
    const correlationId = sent && sent.length <= MAX_CORRELATION_ID ? sent : null;
    c.set("ids", { requestId, correlationId });
    await next();
    c.header("X-Request-Id", requestId);
    if (correlationId) c.header("X-Correlation-Id", correlationId);
  };
}
