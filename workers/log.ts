// The edge's logs: shared/log.ts's one JSON line per event, written with console (workerd's
// stdout and stderr). Every line written for a request carries its ids: the request-id middleware
// puts `requestLog(ids)` in the context as `log`, and code that has the ids but no context makes
// the same logger from them.
import { createLogger, type Logger } from "../shared/log.ts";

/** The edge's root logger, for lines that belong to no request (what a function without one logs). */
export const edgeLog: Logger = createLogger("info", { service: "edge" });

/** The logger of one request: every line carries `requestId`, and `correlationId` when the client sent one. */
export function requestLog(ids: { requestId: string; correlationId: string | null }): Logger {
  return edgeLog.child({
    requestId: ids.requestId,
    ...(ids.correlationId ? { correlationId: ids.correlationId } : {}),
  });
}
