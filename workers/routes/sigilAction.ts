// `POST /sigil_action` (api.md, Execution): the caller's code (or its CID) and parameters go to an
// enclave with the caller's key as `api_key`; the enclave authorizes the key for that exact code,
// runs it and answers the run's outcome, which reaches the client as it is, with what it cost.
// Under an Idempotency-Key a run is charged once however often it is sent, and a retry of one whose
// first attempt gave no answer says what became of it (`first_attempt`; idempotency/).
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { sigilActionResponseSchema, sigilActionRequestSchema } from "../../shared/operations.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { meteredRun, payerOf, RUN_FORWARD_MARGIN_MS } from "../billing/meter.ts";
import { enclave } from "../enclave/client.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import {
  firstAttemptOf,
  firstAttemptSchema,
  idempotencyHeaders,
  idempotentAnswerHeaders,
  routeRetry,
  serveOnce,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { afterMetered, emitterOf } from "../webhooks/emit.ts";
import { endpoint, errors, jsonBody as body, jsonResponse as json, keySecurity, requireKey, tag } from "./openapi.ts";

const sigilAction = createRoute({
  method: "post",
  ...endpoint("sigil_action"),
  tags: tag("Execution"),
  summary:
    "Run a script (code, or ipfs_id fetched and verified by its CID) with js_params; the key must be allowed to execute that CID in some group",
  security: keySecurity,
  middleware: [requireKey, operationBodyLimit("sigil_action")] as const,
  request: { headers: idempotencyHeaders, body: body(sigilActionRequestSchema) },
  responses: {
    200: {
      ...json(
        sigilActionResponseSchema.extend({
          charged_cents: z
            .number()
            .int()
            .nonnegative()
            .describe(
              "credits the run cost, in cents (0 while billing is off); under an Idempotency-Key, what the key was charged, once",
            ),
          first_attempt: firstAttemptSchema.optional(),
        }),
        "the run's outcome (a script failure is has_error: true with error)",
      ),
      headers: z.object({ "X-Sigil-Charged-Cents": z.string(), ...idempotentAnswerHeaders }),
    },
    ...errors(400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 503),
  },
});

export function sigilActionRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(sigilAction, (c) => {
    const input = c.req.valid("json");
    return serveOnce(c, input, async (attempt) => {
      if (attempt) await routeRetry(c, attempt, "run");
      const key = callerKey(c);
      const config = c.get("config");
      const payer = await payerOf(config, c.env.LEDGER, key);
      const ref = attempt?.ref ?? c.get("ids").requestId;
      // Charged by its started seconds and given only the seconds its credit covers (billing/meter.ts).
      let metered: Awaited<ReturnType<typeof meteredRun>>;
      try {
        // The CID is known here only for a run by ipfs_id; the settle records the answer's.
        metered = await meteredRun(
          payer,
          config.limits.timeoutMs,
          ref,
          input.ipfs_id,
          (timeoutMs) =>
            enclave.call(
              "sigil_action",
              {
                ...input,
                api_key: key.apiKey,
                // Billing on: the seconds granted, so the enclave signs into the receipt what the ledger charges.
                ...(timeoutMs === undefined
                  ? {}
                  : { timeout_ms: timeoutMs, billing: { granted_seconds: Math.floor(timeoutMs / 1000) } }),
              },
              {
                config,
                ids: c.get("ids"),
                timeoutMs: (timeoutMs ?? config.limits.maxTimeoutMs) + RUN_FORWARD_MARGIN_MS,
                idempotent: attempt?.send,
              },
            ),
          c.get("log"),
        );
      } catch (error) {
        afterMetered(emitterOf(c), config, key, ref, { error });
        throw error;
      }
      const { result: run, chargedCents } = metered;
      // Webhooks (balance.low, usage_key.cap_reached, run.failed) after the answer, never delaying it.
      afterMetered(emitterOf(c), config, key, ref, { settled: metered.settled, run });
      c.header("X-Sigil-Charged-Cents", String(chargedCents));
      return c.json({ ...run, charged_cents: chargedCents, ...firstAttemptOf(attempt) }, 200);
    }) as never;
  });

  return r;
}
