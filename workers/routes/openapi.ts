// Pieces the routers share: `route`, which declares an endpoint of the OpenAPI document from what it
// is (method and path, tag, summary, who may call it, request, answer, error statuses); the shapes
// of bodies, answers and errors; the key check that runs before body validation; and the JSON form
// of a validated body for the enclave.
import { createRoute, type OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { errorBodySchema } from "../../shared/errorBodySchema.ts";
import { errorStatus, SigilError } from "../../shared/errors.ts";
import type { EdgeEnv } from "../router.ts";
import { callerKey, takesDelegatedKey } from "../middleware/auth/index.ts";

/** The document's `info.description`: what the API is, how a caller authenticates, how it answers. */
export const API_DESCRIPTION = [
  "Sigil's public API: accounts whose wallets' private keys are derived on demand inside an attested confidential VM and never stored;",
  "usage keys scoped to groups of wallets and actions; JavaScript runs that may sign with those wallets, billed per second in prepaid credits;",
  "and the attestation endpoints (at the base URL; everything else is under /core/v1) with which anyone can check what code serves them.",
  "A keyed operation takes the account's master key or a usage key in X-Api-Key or as Authorization: Bearer.",
  "Every error answer has one body, ErrorBody, whose error.code is stable; list answers carry their total in X-Total-Count.",
].join(" ");

/**
 * The document's tags, one per capability, in the order Swagger UI shows them; every operation has
 * exactly one (`tag`).
 */
export const TAGS = {
  Accounts: "Create a managed account (its master key and Account Master Wallet) and check a key",
  "Usage keys": "The scoped keys an account's master key makes, changes, lists and removes",
  Wallets: "Wallets (PKPs) whose keys the enclave derives on demand and never stores",
  Groups: "Groups: which wallets and which actions a usage key may use together",
  Actions: "The account's registry of scripts, named by CID, and the CID of a script",
  Execution: "Run a script that may sign with the account's wallets, and the limits of a run",
  Signatures: "ChainSecured accounts: what a wallet's EIP-712 signature authorizes instead of a key",
  Audit: "The account's administrative history, read from the contract's events",
  Billing: "Prepaid credit: the balance, buying credit through Stripe, and Stripe's webhook",
  Webhooks:
    "Signed events the service POSTs to the account's own endpoints (payments, low balance, spend caps, failed runs), their delivery log and re-sends",
  Public: "What the service is and whether it can serve: version, health, chain, payers",
  Attestation: "The enclaves' TDX quotes, app info and evidence files, at the base URL, for verifiers",
} as const;
export type Tag = keyof typeof TAGS;

/** An operation's `tags`: the one capability it belongs to. */
export function tag(name: Tag): [Tag] {
  return [name];
}

/**
 * An operation's operationId, the SDK's name for it: the endpoint's name (the path's last segment,
 * so `billing/` is dropped) in camelCase, `list_api_keys` → `listApiKeys`. Endpoints named by a
 * noun take an id with a verb where they are declared (`/version` → `getVersion`).
 */
export function operationIdOf(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1).replace(/[_-]([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The one error body (docs/design/api.md, Errors), a named schema that every error answer refers to. */
export const errorBody = errorBodySchema.openapi("ErrorBody");

/** The error statuses an operation may document (docs/design/api.md, Errors: 405 answers a method no operation has). */
export type ErrorAnswerStatus = 400 | 401 | 402 | 403 | 404 | 408 | 409 | 413 | 422 | 429 | 500 | 503;

const REASONS: Record<ErrorAnswerStatus, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

const retryAfter = z.string().describe("seconds to wait before retrying");

type ErrorAnswer = {
  description: string;
  headers?: z.ZodObject;
  content: { "application/json": { schema: typeof errorBody } };
};

/** One error answer: the status's reason and the codes of that status (shared/errors.ts), with the one error body. */
export function errorAnswer(status: ErrorAnswerStatus): ErrorAnswer {
  const codes = Object.entries(errorStatus)
    .filter(([, s]) => s === status)
    .map(([code]) => code);
  const answer: ErrorAnswer = {
    description: `${REASONS[status]} (error.code: ${codes.join(", ")})`,
    content: { "application/json": { schema: errorBody } },
  };
  // docs/design/api.md, Errors: 429 always comes with Retry-After, 503 when the edge knows when to retry.
  if (status === 429) answer.headers = z.object({ "Retry-After": retryAfter });
  if (status === 503) answer.headers = z.object({ "Retry-After": retryAfter.optional() });
  return answer;
}

/**
 * An operation's error answers, by status: what its middleware and handler may answer. Every route
 * under /core/v1 passes the rate limit (429); one with a body has a body limit (413), the body
 * deadline (408) and validation (400); one with a key checks it (400 conflicting_credentials, 401).
 */
export function errors<S extends ErrorAnswerStatus>(...statuses: S[]): { [K in S]: ErrorAnswer } {
  return Object.fromEntries(statuses.map((s) => [s, errorAnswer(s)])) as { [K in S]: ErrorAnswer };
}

export function jsonResponse<T extends z.ZodType>(schema: T, description = "ok") {
  return { description, content: { "application/json": { schema } } };
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } };
}

type Method = "get" | "post" | "put" | "delete";
type Answer = NonNullable<RouteConfig["responses"][string]>;

/**
 * One endpoint of the document, declared as what it is: `at` its method and path (`"POST
 * /sigil_action"`; its operationId is the path's last segment in camelCase unless given), its one
 * tag and summary, who may call it (`"key"`: the caller's key; `"open"`: anyone), its request and
 * its answer (`ok`, the 200), and the statuses it may answer an error with (`errors`), each with the
 * one error body. `answers` adds or replaces answers that are not plain errors (a 503 with a report,
 * a 400 with its own description). What it leaves out (`description`, `deprecated`, the paging
 * extension) goes into the document as given.
 */
export function route<
  const Req extends NonNullable<RouteConfig["request"]> = Record<never, never>,
  const Ok extends Answer = Answer,
  const S extends ErrorAnswerStatus = never,
  const More extends Record<number, Answer> = Record<never, never>,
  const M extends MiddlewareHandler<EdgeEnv>[] = [],
>(
  at: `${Uppercase<Method>} /${string}`,
  tagName: Tag,
  spec: {
    summary: string;
    security: "key" | "open" | Array<Record<string, string[]>>;
    middleware?: M;
    request?: Req;
    ok: Ok;
    errors: readonly S[];
    answers?: More;
    operationId?: string;
    description?: string;
    deprecated?: true;
    "x-sigil-paging"?: { style: "cursor"; items: string };
  },
) {
  const [method, path] = at.split(" ") as [Uppercase<Method>, `/${string}`];
  const { summary, security, middleware, request, ok, errors: statuses, answers, operationId, ...extra } = spec;
  return createRoute({
    method: method.toLowerCase() as Method,
    path,
    operationId: operationId ?? operationIdOf(path.slice(1)),
    tags: tag(tagName),
    summary,
    ...extra,
    security: security === "key" ? keySecurity : security === "open" ? [] : security,
    middleware: middleware as M,
    request: request as Req,
    // Any operation may fail in a way that is not the client's: 500 internal_error, with a request id.
    responses: { 200: ok, ...errors<S | 500>(...statuses, 500), ...(answers as More) } as { 200: Ok } & {
      [K in S | 500]: ErrorAnswer;
    } & More,
  });
}

/** Either header names the caller's key (docs/design/keys-and-authz.md, API keys). */
export const keySecurity: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Bearer: [] }];

export function registerKeySecurity(r: OpenAPIHono<EdgeEnv>): void {
  r.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-Api-Key",
    description: "The account's master key or a usage key",
  });
  r.openAPIRegistry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
    description: "The same key as `Authorization: Bearer <key>`",
  });
}

/** Checks the caller's key headers before the request is validated, so auth failures come first. */
export const requireKey = createMiddleware<EdgeEnv>(async (c, next) => {
  callerKey(c);
  await next();
});

/** requireKey for a GET that writes (the deprecated GET /create_wallet): never a delegated key. */
export const requireApiKey = createMiddleware<EdgeEnv>(async (c, next) => {
  if (callerKey(c).delegated)
    throw new SigilError("permission_denied", "a delegated key runs actions and reads; this needs an API key", {
      details: { scope: "delegated_key" },
    });
  await next();
});

/**
 * requireKey for a route a delegated key may call with another method than GET (docs/design/delegation.md):
 * a run, MCP, revoking a delegation. Every other such route refuses one with 403 (middleware/auth).
 */
export const requireRunKey = createMiddleware<EdgeEnv>(async (c, next) => {
  takesDelegatedKey(c);
  callerKey(c);
  await next();
});

/** A validated body as JSON for the enclave: group ids (bigints) go as decimal strings. */
export function toWire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
}

/**
 * A paged list endpoint (docs/design/api.md, Pagination): a GET named `name` with the caller's key, `query`
 * (the page fields, maybe more), a JSON array of `item`, and the total in X-Total-Count. `notFound`
 * when the query names something that may not exist (a group).
 */
export function listRoute<N extends string, Q extends z.ZodObject, I extends z.ZodType>(args: {
  name: N;
  tag: Tag;
  summary: string;
  query: Q;
  item: I;
  notFound?: boolean;
}) {
  return route(`GET /${args.name}`, args.tag, {
    summary: `${args.summary}; the total is in X-Total-Count`,
    security: "key",
    middleware: [requireKey],
    request: { query: args.query },
    ok: { ...jsonResponse(z.array(args.item)), headers: z.object({ "X-Total-Count": z.string() }) },
    // 400: the page or group_id, or two different keys; 401: the key; 404: the group.
    errors: args.notFound ? [400, 401, 404, 429, 503] : [400, 401, 429, 503],
  });
}
