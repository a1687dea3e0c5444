// Request body limits (api.md: over the size limit → 413 payload_too_large). Each route that takes a
// body declares one in its middleware: the small default, or the larger one for a script.
import { bodyLimit } from "hono/body-limit";
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
export const DEFAULT_BODY_LIMIT = 256 << 10;
export const defaultBodyLimit = limit(DEFAULT_BODY_LIMIT);

/**
 * The body limit of the routes that take a script (sandbox.md, Limits: code 4 MiB, request body
 * 6 MiB): sigil_action and get_sigil_action_ipfs_id take the same scripts, so the same bodies.
 */
export const SCRIPT_BODY_LIMIT = 6 << 20;
export const scriptBodyLimit = limit(SCRIPT_BODY_LIMIT);
