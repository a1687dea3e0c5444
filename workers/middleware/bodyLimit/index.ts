// Request bodies (docs/design/api.md: over the size limit → 413 payload_too_large). Each route that takes a body
// declares its limit in its middleware: its operation's (the operation table, shared/operations.ts,
// which the enclave holds to as well), the small default, or the larger one for a script.
//
// A body is read whole, once, before its route runs and within a deadline (config.bodyTimeoutMs,
// SIGIL_EDGE_BODY_TIMEOUT_MS): one that has not arrived by then is refused 408 body_timeout, so a
// client that sends its body slowly, or never ends it, holds its socket for that long and no more.
// Admission (middleware/admission) reads it here before it gives the request a place, with the limit
// of the route that matched (`routeBodyLimit`), so a body still on its way holds no place (issue 26).
// The bytes go into Hono's own body cache (`c.req.bodyCache`), from which `c.req.json()`, `text()`
// and the validators read them; nothing reads the request's stream a second time.
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { DEFAULT_BODY_LIMIT, operations, SCRIPT_BODY_LIMIT, type OperationName } from "../../../shared/operations.ts";
import { isExposed, SigilError } from "../../../shared/errors.ts";
import type { EdgeEnv } from "../../router.ts";

/** The size of the body read for each request (keyed by the request, which Hono keeps for its whole life). */
const readSizes = new WeakMap<Request, number>();

/** The limit each body-limit middleware stands for, so admission can find the one of the route that matched. */
const declaredLimits = new WeakMap<object, number>();

/**
 * Reads the request's body whole, at most `maxSize` bytes, within the deadline, into Hono's body
 * cache; a request without a body passes. Once read, a later call only checks the size it had
 * against its own `maxSize`. Over the limit → 413 payload_too_large (at once when Content-Length
 * says so); not whole within the deadline → 408 body_timeout; a stream that breaks (the client went
 * away) → 400 invalid_request. Whatever is refused, the rest of the stream is let go.
 */
export async function readBody(c: Context<EdgeEnv>, maxSize: number): Promise<void> {
  const raw = c.req.raw;
  const known = readSizes.get(raw);
  if (known !== undefined) {
    if (known > maxSize) throw tooLarge(maxSize);
    return;
  }
  if (raw.body === null) return;
  const declared = Number(raw.headers.get("content-length") ?? "0");
  if (declared > maxSize) throw tooLarge(maxSize);
  const bytes = await readWithin(raw.body, maxSize, c.get("config").bodyTimeoutMs);
  readSizes.set(raw, bytes.byteLength);
  // Hono's cache holds each way of reading as a promise (its type says the value): `json()` and
  // `text()` decode these bytes, as they would have decoded the stream.
  (c.req.bodyCache as { arrayBuffer?: Promise<ArrayBuffer> }).arrayBuffer = Promise.resolve(
    bytes.buffer as ArrayBuffer,
  );
}

async function readWithin(body: ReadableStream<Uint8Array>, maxSize: number, deadlineMs: number): Promise<Uint8Array> {
  const reader = body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), deadlineMs);
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const read = reader.read();
      // A read still pending at the deadline may yet fail (the client goes away): nobody awaits it then.
      read.catch(() => {});
      const step = await Promise.race([read, late]);
      if (step === "late") {
        throw new SigilError(
          "body_timeout",
          `the request body did not arrive within ${deadlineMs / 1000} s; send it again, whole`,
        );
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > maxSize) throw tooLarge(maxSize);
      chunks.push(step.value);
    }
  } catch (err) {
    // The rest of the body is not wanted: cancelling lets go of the stream (and of a pending read).
    reader.cancel().catch(() => {});
    if (isExposed(err)) throw err;
    throw new SigilError("invalid_request", "the request body ended before it was complete");
  } finally {
    clearTimeout(timer);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function tooLarge(maxSize: number): SigilError {
  return new SigilError("payload_too_large", `the request body must be at most ${maxSize} bytes`);
}

function limit(maxSize: number): MiddlewareHandler<EdgeEnv> {
  const middleware: MiddlewareHandler<EdgeEnv> = async (c, next) => {
    await readBody(c, maxSize);
    await next();
  };
  declaredLimits.set(middleware, maxSize);
  return middleware;
}

/**
 * The body limit of the route that matched `c`: that of the first body-limit middleware among the
 * handlers still to run for it (the route's own, whatever its path's spelling), or the default for
 * a route that declares none (it takes no body; one sent anyway is read within the default).
 */
export function routeBodyLimit(c: Context<EdgeEnv>): number {
  for (const route of matchedRoutes(c).slice(c.req.routeIndex + 1)) {
    const declared = declaredLimits.get(route.handler);
    if (declared !== undefined) return declared;
  }
  return DEFAULT_BODY_LIMIT;
}

/** The body limit of every route that does not set its own. */
export const defaultBodyLimit = limit(DEFAULT_BODY_LIMIT);

/** The body limit of the routes that take a script: sigil_action and get_sigil_action_ipfs_id take the same scripts, so the same bodies. */
export const scriptBodyLimit = limit(SCRIPT_BODY_LIMIT);

const byOperation = new Map<number, MiddlewareHandler<EdgeEnv>>([
  [DEFAULT_BODY_LIMIT, defaultBodyLimit],
  [SCRIPT_BODY_LIMIT, scriptBodyLimit],
]);

/** The body limit of the route that calls `op`: the operation table's. */
export function operationBodyLimit(op: OperationName): MiddlewareHandler<EdgeEnv> {
  const size = operations[op].bodyLimit;
  let middleware = byOperation.get(size);
  if (!middleware) byOperation.set(size, (middleware = limit(size)));
  return middleware;
}
