// Pieces the keyed routers share: the OpenAPI shapes of bodies, answers and errors, the key check
// that runs before body validation, and the JSON form of a validated body for the enclave.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { z } from "zod";
import { errorBodySchema } from "../../shared/errors.ts";
import type { EdgeEnv } from "../app.ts";
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
