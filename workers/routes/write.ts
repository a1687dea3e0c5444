// A managed write on behalf of the caller: the validated body plus the caller's raw key, forwarded
// to an enclave, which checks permissions itself and submits the transaction, charged 1 cent
// (billing/meter.ts: held before forwarding, settled once the transaction is sent, released when
// the enclave refuses it). X-Sigil-Charged-Cents says what it cost. Under an Idempotency-Key a
// write is made once however often it is sent (idempotency/). The plain writes (groups, actions,
// usage keys) share one route shape, built here.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import {
  requestSchemas,
  responseSchemas,
  type EnclaveOperation,
  type EnclaveResponse,
  type OperationInput,
} from "../../shared/operations.ts";
import type { EdgeEnv } from "../router.ts";
import { meteredWrite, payerOf } from "../billing/meter.ts";
import { enclave } from "../enclave/client.ts";
import {
  idempotencyHeaders,
  idempotentAnswerHeaders,
  routeRetry,
  serveOnce,
  type Attempt,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { afterMetered, emitterOf } from "../webhooks/emit.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import {
  endpoint,
  errors,
  jsonBody as body,
  jsonResponse as json,
  keySecurity,
  requireKey,
  tag,
  toWire,
  type Tag,
} from "./openapi.ts";

async function forwardWrite<Op extends EnclaveOperation>(
  c: Context<EdgeEnv>,
  op: Op,
  input: unknown,
  attempt: Attempt | undefined,
): Promise<EnclaveResponse<Op>> {
  if (attempt) await routeRetry(c, attempt, "write");
  const key = callerKey(c);
  // Every metered answer says what it cost: a refusal before the write was sent, nothing.
  c.header("X-Sigil-Charged-Cents", "0");
  const payer = await payerOf(c.get("config"), c.env.LEDGER, key);
  const ref = attempt?.ref ?? c.get("ids").requestId;
  let write: Awaited<ReturnType<typeof meteredWrite<EnclaveResponse<Op>>>>;
  try {
    write = await meteredWrite(payer, ref, op, () =>
      enclave.call(op, { ...(toWire(input) as object), api_key: key.apiKey } as OperationInput<Op>, {
        config: c.get("config"),
        ids: c.get("ids"),
        idempotent: attempt?.send,
      }),
    );
  } catch (error) {
    afterMetered(emitterOf(c), c.get("config"), key, ref, { error });
    throw error;
  }
  // Webhooks (balance.low, usage_key.cap_reached) after the answer, never delaying it.
  afterMetered(emitterOf(c), c.get("config"), key, ref, { settled: write.settled });
  c.header("X-Sigil-Charged-Cents", String(write.chargedCents));
  if (!write.ok) throw write.error;
  return write.result;
}

/**
 * Answers a managed write: `input` (the validated body) forwarded as `op`, made once per
 * Idempotency-Key. `check` runs before it is forwarded (not before a replay: a check that expires,
 * such as a signature's time window, must not turn a replay into an error); `decorate` adds what
 * the route's answer carries besides the result.
 */
export function serveWrite<Op extends EnclaveOperation>(
  c: Context<EdgeEnv>,
  op: Op,
  input: unknown,
  options: { check?: () => Promise<void>; decorate?: () => void } = {},
): Promise<Response> {
  return serveOnce(c, input, async (attempt) => {
    await options.check?.();
    const result = await forwardWrite(c, op, input, attempt);
    options.decorate?.();
    return c.json(result, 200);
  });
}

/** The writes whose public body is the enclave's request without `api_key` (it comes from the header). */
export type PlainWrite =
  | "add_usage_api_key"
  | "update_usage_api_key"
  | "update_usage_api_key_metadata"
  | "remove_usage_api_key"
  | "add_group"
  | "remove_group"
  | "update_group"
  | "add_action_to_group"
  | "remove_action_from_group"
  | "add_pkp_to_group"
  | "remove_pkp_from_group"
  | "add_action"
  | "delete_action"
  | "update_action_metadata";

/**
 * What every managed write may answer besides 200 (402: no credit to hold its cent; 403 and 404:
 * the contract's refusals; 409 and 422 also for an Idempotency-Key in flight or reused).
 */
export const writeErrors = errors(400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 503);
export const chargedHeader = z.object({
  "X-Sigil-Charged-Cents": z.string().describe("credits this call cost, in cents"),
  ...idempotentAnswerHeaders,
});

export function writeRoute<Op extends PlainWrite>(op: Op, tagName: Tag, summary: string) {
  return createRoute({
    method: "post",
    ...endpoint(op),
    tags: tag(tagName),
    summary,
    security: keySecurity,
    middleware: [operationBodyLimit(op), requireKey] as const,
    request: { headers: idempotencyHeaders, body: body((requestSchemas[op] as z.ZodObject).omit({ api_key: true })) },
    responses: { 200: { ...json(responseSchemas[op] as z.ZodType), headers: chargedHeader }, ...writeErrors },
  });
}

/** Serves each route of `routes` by forwarding its validated body as the write its path names. */
export function serveWrites(r: OpenAPIHono<EdgeEnv>, routes: ReadonlyArray<ReturnType<typeof writeRoute>>): void {
  for (const route of routes) {
    const op = route.path.slice(1) as PlainWrite;
    r.openapi(route, (c) => serveWrite(c, op, (c.req as { valid(target: "json"): unknown }).valid("json")) as never);
  }
}
