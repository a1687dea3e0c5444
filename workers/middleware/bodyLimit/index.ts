// Request body limits (api.md: over the size limit → 413 payload_too_large). Each route that takes a
// body declares one in its middleware: its operation's (the operation table, shared/operations.ts,
// which the enclave holds to as well), the small default, or the larger one for a script.
import { bodyLimit } from "hono/body-limit";
import { DEFAULT_BODY_LIMIT, operations, SCRIPT_BODY_LIMIT, type OperationName } from "../../../shared/operations.ts";
import { SigilError } from "../../../shared/errors.ts";

function limit(maxSize: number) {
  return bodyLimit({
    maxSize,
    onError: () => {
      throw new SigilError("payload_too_large", `the request body must be at most ${maxSize} bytes`);
    },
  });
}

/** The body limit of every route that does not set its own. */
export const defaultBodyLimit = limit(DEFAULT_BODY_LIMIT);

/** The body limit of the routes that take a script: sigil_action and get_sigil_action_ipfs_id take the same scripts, so the same bodies. */
export const scriptBodyLimit = limit(SCRIPT_BODY_LIMIT);

const byOperation = new Map<number, ReturnType<typeof limit>>([
  [DEFAULT_BODY_LIMIT, defaultBodyLimit],
  [SCRIPT_BODY_LIMIT, scriptBodyLimit],
]);

/** The body limit of the route that calls `op`: the operation table's. */
export function operationBodyLimit(op: OperationName): ReturnType<typeof limit> {
  const size = operations[op].bodyLimit;
  let middleware = byOperation.get(size);
  if (!middleware) byOperation.set(size, (middleware = limit(size)));
  return middleware;
}
