// Every response carries a fresh `X-Request-Id` (a client-sent one is ignored) and echoes a
// non-empty `X-Correlation-Id` (api.md, Request ids); both go on to the enclave and its logs.
// The id is hono's request-id middleware's, told to read no header (a client's id would be taken
// as the request's otherwise); what is written here is the correlation id and the `ids` pair.
import type { MiddlewareHandler } from "hono";
import { every } from "hono/combine";
import { requestId as freshRequestId, type RequestIdVariables } from "hono/request-id";

export type RequestIds = { requestId: string; correlationId: string | null };

const MAX_CORRELATION_ID = 200;

export function requestId(): MiddlewareHandler<{ Variables: RequestIdVariables & { ids: RequestIds } }> {
  return every(freshRequestId({ headerName: "" }), async (c, next) => {
    const requestId = c.get("requestId");
    const sent = c.req.header("x-correlation-id")?.trim();
    const correlationId = sent && sent.length <= MAX_CORRELATION_ID ? sent : null;
    c.set("ids", { requestId, correlationId });
    await next();
    c.header("X-Request-Id", requestId);
    if (correlationId) c.header("X-Correlation-Id", correlationId);
  });
}
