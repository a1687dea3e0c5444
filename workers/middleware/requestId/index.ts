// Every response carries a fresh `X-Request-Id` (a client-sent one is ignored) and echoes a
// non-empty `X-Correlation-Id` (docs/design/api.md, Request ids); both go on to the enclave and its logs, and
// on every line the edge logs for the request (`log`, a logger that carries them).
// Not hono/request-id: it takes a client's X-Request-Id as the request's, which docs/design/api.md forbids, and
// told to read no header it would only supply the randomUUID() made here, kept a second time.
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../../shared/log.ts";
import { type RequestIds, requestLog } from "../../log.ts";

const MAX_CORRELATION_ID = 200;

export function requestId(): MiddlewareHandler<{ Variables: { ids: RequestIds; log: Logger } }> {
  return async (c, next) => {
    const requestId = crypto.randomUUID();
    const sent = c.req.header("x-correlation-id")?.trim();
    const correlationId = sent && sent.length <= MAX_CORRELATION_ID ? sent : null;
    const ids = { requestId, correlationId };
    c.set("ids", ids);
    c.set("log", requestLog(ids));
    await next();
    c.header("X-Request-Id", requestId);
    if (correlationId) c.header("X-Correlation-Id", correlationId);
  };
}
