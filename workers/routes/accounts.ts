// Routes of this resource (api.md). Filled in by the edge issue.
import { OpenAPIHono } from "@hono/zod-openapi";
import type { EdgeEnv } from "../app.ts";
import { validationHook } from "../app.ts";

export function accountsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = new OpenAPIHono<EdgeEnv>({ defaultHook: (result) => validationHook(result as never) });
  return r;
}
