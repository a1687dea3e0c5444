// What every part of the edge shares about the Hono app, and nothing else: the app's environment
// type, the hook that turns a validation failure into the one error body, and the factory of the
// routers the routes are declared on. app.ts mounts the routers; routes, middleware and billing
// import from here, never from app.ts, so the imports only run one way.
import { OpenAPIHono } from "@hono/zod-openapi";
import { SigilError, type IssueDetail } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import type { EdgeConfig } from "./config.ts";
import type { Env } from "./env.ts";
import type { RequestIds } from "./log.ts";

export type EdgeEnv = { Bindings: Env; Variables: { ids: RequestIds; config: EdgeConfig; log: Logger } };

/** Validation failures become 400 invalid_request with one `{path, message}` per problem. */
export function validationHook(result: {
  success: boolean;
  error?: { issues: Array<{ path: PropertyKey[]; message: string; code: string; keys?: string[] }> };
}): void {
  if (result.success || !result.error) return;
  const details: IssueDetail[] = result.error.issues.map((i) => ({
    path: i.path.map(String).join(".") || "(body)",
    message: i.code === "unrecognized_keys" ? `unknown field(s): ${(i.keys ?? []).join(", ")}` : i.message,
  }));
  throw new SigilError("invalid_request", "the request is not valid for this endpoint", { details });
}

/** A router of the edge: its routes validate with the zod schemas they declare, through validationHook. */
export function newRouter(): OpenAPIHono<EdgeEnv> {
  return new OpenAPIHono<EdgeEnv>({ defaultHook: (result) => validationHook(result as never) });
}
