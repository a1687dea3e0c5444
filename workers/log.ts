// The edge's request ids and logs: shared/log.ts's one JSON line per event, written with console
// (workerd's stdout and stderr). Every line written for a request carries its ids: the request-id
// middleware makes them and puts `requestLog(ids)` in the context as `log`, and code that has the ids
// but no context (the enclave client) makes the same logger from them.
import { createLogger, type Logger } from "../shared/log.ts";

/** A request's ids (docs/design/api.md, Request ids): its own, and the client's correlation id when it sent one. */
export type RequestIds = { requestId: string; correlationId: string | null };

/** The edge's root logger, for lines that belong to no request (what a function without one logs). */
export const edgeLog: Logger = createLogger("info", { service: "edge" });

/** The logger of one request: every line carries `requestId`, and `correlationId` when the client sent one. */
export function requestLog(ids: RequestIds): Logger {
  return edgeLog.child({
    requestId: ids.requestId,
    ...(ids.correlationId ? { correlationId: ids.correlationId } : {}),
  });
}
