// Pieces the keyed routers share: the OpenAPI shapes of bodies, answers and errors, the key check
// that runs before body validation, and the JSON form of a validated body for the enclave.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { errorBodySchema } from "../../shared/errorBodySchema.ts";
import type { EdgeEnv } from "../router.ts";
import { callerKey } from "../middleware/auth/index.ts";

export const errorResponse = { description: "error", content: { "application/json": { schema: errorBodySchema } } };

export function jsonResponse<T extends z.ZodType>(schema: T, description = "ok") {
  return { description, content: { "application/json": { schema } } };
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } };
}

/** Either header names the caller's key (keys-and-authz.md, API keys). */
export const keySecurity: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Bearer: [] }];

export function registerKeySecurity(r: OpenAPIHono<EdgeEnv>): void {
  r.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", { type: "apiKey", in: "header", name: "X-Api-Key" });
  r.openAPIRegistry.registerComponent("securitySchemes", "Bearer", { type: "http", scheme: "bearer" });
}

/** Checks the caller's key headers before the request is validated, so auth failures come first. */
export const requireKey = createMiddleware<EdgeEnv>(async (c, next) => {
  callerKey(c);
  await next();
});

/** A validated body as JSON for the enclave: group ids (bigints) go as decimal strings. */
export function toWire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
}

/**
 * A paged list endpoint (api.md, Pagination): a GET with the caller's key, `query` (the page
 * fields, maybe more), a JSON array of `item`, and the total in X-Total-Count. `notFound` when the
 * query names something that may not exist (a group).
 */
export function listRoute<Q extends z.ZodObject, I extends z.ZodType>(args: { path: string; summary: string; query: Q; item: I; notFound?: boolean }) {
  return createRoute({
    method: "get",
    path: args.path,
    summary: `${args.summary}; the total is in X-Total-Count`,
    security: keySecurity,
    middleware: [requireKey] as const,
    request: { query: args.query },
    responses: {
      200: { ...jsonResponse(z.array(args.item)), headers: z.object({ "X-Total-Count": z.string() }) },
      400: errorResponse,
      401: errorResponse,
      ...(args.notFound ? { 404: errorResponse } : {}),
      503: errorResponse,
    },
  });
}
