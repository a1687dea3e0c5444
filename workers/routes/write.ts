// A managed write on behalf of the caller: the validated body plus the caller's raw key, forwarded
// to an enclave, which checks permissions itself and submits the transaction, charged 1 cent
// (billing/meter.ts: held before forwarding, settled once the transaction is sent, released when
// the enclave refuses it). X-Sigil-Charged-Cents says what it cost. Under an Idempotency-Key a
// write is made once however often it is sent (idempotency/). The plain writes (groups, actions,
// usage keys) share one route shape, built here.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import {
  requestSchemas,
  responseSchemas,
  type EnclaveOperation,
  type EnclaveResponse,
  type OperationInput,
} from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { pipeline, type EdgeEnv, type Stage } from "../router.ts";
import { accountWrote } from "./accountRead.ts";
import { meteredWrite, meterOf } from "../billing/meter.ts";
import { enclave } from "../enclave/client.ts";
import { attemptOf, idempotencyHeaders, idempotent, idempotentAnswerHeaders } from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { notices } from "../webhooks/emit.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import { jsonBody as body, jsonResponse as json, requireKey, route, toWire, type Tag } from "./openapi.ts";

/**
 * The stages of a managed write `op` (router.ts `pipeline`): made once per Idempotency-Key (a retry
 * goes back to the enclave process the first attempt reached, or answers write_outcome_unknown),
 * then the route's own `checks` (not run for a replay: a check that expires, such as a signature's
 * time window, must not turn a replay into an error), the account's webhooks told, its cent metered.
 */
export function writeStages(op: EnclaveOperation, ...checks: Stage[]): Stage[] {
  return [idempotent({ retry: "write" }), ...checks, notices(), meteredWrite(op)];
}

/**
 * The call of a managed write: `input` (the validated body) forwarded as `op` with the caller's raw
 * key, which the enclave checks itself; once it answers, the write is settled (its cent), and its
 * result is the answer. A write that fails is settled by its stage, by whether it was sent.
 */
export async function forwardWrite<Op extends EnclaveOperation>(
  c: Context<EdgeEnv>,
  op: Op,
  input: unknown,
): Promise<EnclaveResponse<Op>> {
  let result: EnclaveResponse<Op>;
  try {
    result = await enclave.call(
      op,
      { ...(toWire(input) as object), api_key: callerKey(c).apiKey } as OperationInput<Op>,
      { config: c.get("config"), ids: c.get("ids"), idempotent: attemptOf(c)?.send },
    );
  } catch (err) {
    // Refused before it was sent (the chain down) it changed nothing; otherwise it may have landed.
    if (!(err instanceof SigilError && err.code === "chain_unavailable")) await accountWrote(c);
    throw err;
  }
  await accountWrote(c);
  await meterOf(c)?.settleWrite(op, { result });
  return result;
}

/** The writes whose public body is the enclave's request without `api_key` (it comes from the header). */
export type PlainWrite =
  | "add_usage_api_key"
  | "update_usage_api_key"
  | "update_usage_api_key_metadata"
  | "remove_usage_api_key"
  | "set_usage_key_guardrail"
  | "add_group"
  | "remove_group"
  | "update_group"
  | "add_action_to_group"
  | "remove_action_from_group"
  | "add_pkp_to_group"
  | "remove_pkp_from_group"
  | "add_action"
  | "delete_action"
  | "update_action_metadata"
  | "set_wallet_guardrail";

/**
 * What every managed write may answer besides 200 (402: no credit to hold its cent; 403 and 404:
 * the contract's refusals; 409 and 422 also for an Idempotency-Key in flight or reused).
 */
export const writeErrors = [400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 503] as const;
export const chargedHeader = z.object({
  "X-Sigil-Charged-Cents": z.string().describe("credits this call cost, in cents"),
  ...idempotentAnswerHeaders,
});

export function writeRoute<Op extends PlainWrite>(op: Op, tagName: Tag, summary: string) {
  return route(`POST /${op}`, tagName, {
    summary,
    security: "key",
    middleware: [operationBodyLimit(op), requireKey],
    request: { headers: idempotencyHeaders, body: body((requestSchemas[op] as z.ZodObject).omit({ api_key: true })) },
    ok: { ...json(responseSchemas[op] as z.ZodType), headers: chargedHeader },
    errors: writeErrors,
  });
}

/** Serves each route of `routes` by forwarding its validated body as the write its path names. */
export function serveWrites(r: OpenAPIHono<EdgeEnv>, routes: ReadonlyArray<ReturnType<typeof writeRoute>>): void {
  for (const route of routes) {
    const op = route.path.slice(1) as PlainWrite;
    r.openapi(
      route,
      pipeline<typeof route>(writeStages(op), async (c) => {
        // The route is one of several shapes here: its body is validated all the same, as its own schema says.
        const input = (c.req as { valid(target: "json"): unknown }).valid("json");
        return c.json(await forwardWrite(c, op, input), 200);
      }),
    );
  }
}
