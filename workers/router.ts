// What every part of the edge shares about the Hono app, and nothing else: the app's environment
// type, the hook that turns a validation failure into the one error body, the factory of the
// routers the routes are declared on, and the pipeline an acting route declares its stages in.
// app.ts mounts the routers; routes, middleware and billing import from here, never from app.ts, so
// the imports only run one way.
import { OpenAPIHono, type RouteConfig, type RouteHandler } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler, Next } from "hono";
import { SigilError, type IssueDetail } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import type { EdgeConfig } from "./config.ts";
import type { Env } from "./env.ts";
import { errorResponse } from "./errors.ts";
import type { RequestIds } from "./log.ts";

export type EdgeEnv = {
  Bindings: Env;
  Variables: {
    ids: RequestIds;
    config: EdgeConfig;
    log: Logger;
    /**
     * What the request is charged under, when not its own request id: under an Idempotency-Key, the
     * first attempt's (idempotency/), so that every attempt holds and settles one ledger row.
     */
    ref?: string;
  };
};

/**
 * `read` made once per request however many steps ask (a route's caller, say, which its idempotency
 * holder and its handler both need): the first call's promise is kept for the request's life.
 */
export function perRequest<T>(read: (c: Context<EdgeEnv>) => Promise<T>): (c: Context<EdgeEnv>) => Promise<T> {
  const known = new WeakMap<Request, Promise<T>>();
  return (c) => {
    let value = known.get(c.req.raw);
    if (!value) known.set(c.req.raw, (value = read(c)));
    return value;
  };
}

/** One stage of an acting route's pipeline: Hono middleware that runs once the request is validated. */
export type Stage = MiddlewareHandler<EdgeEnv>;

/**
 * An acting route's handler as its stages and its call: `pipeline<typeof route>([idempotent(),
 * meteredRun()], (c) => …)`. Each stage is middleware (`await next()`), run in order once the route has validated
 * the request (a route's own `middleware` runs before that: the body and the key are checked first,
 * and nothing is held, charged or recorded for a request that is refused as invalid). As in Hono's
 * own chain, what a stage or the handler throws becomes its error answer at once (`c.error` says
 * what was thrown), so each stage before it sees an answer, error or not, and may keep it, settle
 * for it or add to it; the pipeline answers with the answer that stands at the end.
 */
export function pipeline<R extends RouteConfig>(
  stages: readonly Stage[],
  handler: RouteHandler<R, EdgeEnv>,
): RouteHandler<R, EdgeEnv> {
  const piped = async (c: Context<EdgeEnv>, next: Next): Promise<Response> => {
    const step = async (index: number): Promise<void> => {
      try {
        const stage = stages[index];
        if (stage) await stage(c, () => step(index + 1));
        else c.res = await (handler as unknown as (c: Context<EdgeEnv>, next: Next) => Promise<Response>)(c, next);
      } catch (err) {
        c.error = err instanceof Error ? err : new Error(String(err));
        c.res = errorResponse(c, err);
      }
    };
    await step(0);
    return c.res;
  };
  // The answer that stands is the handler's typed one, or an error or a kept answer a stage gave instead.
  return piped as unknown as RouteHandler<R, EdgeEnv>;
}

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
