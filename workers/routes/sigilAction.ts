// `POST /sigil_action` (docs/design/api.md, Execution): the caller's code (or its CID) and parameters go to an
// enclave with the caller's key as `api_key`; the enclave authorizes the key for that exact code,
// runs it and answers the run's outcome, which reaches the client as it is, with what it cost.
// Under an Idempotency-Key a run is charged once however often it is sent, and a retry of one whose
// first attempt gave no answer says what became of it (`first_attempt`; idempotency/). The route is
// its pipeline (router.ts): made once, the account's webhooks told, metered; then the call.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { sigilActionResponseSchema, sigilActionRequestSchema } from "../../shared/operations.ts";
import { newRouter, pipeline, type EdgeEnv } from "../router.ts";
import { meteredRun, meterOf, RUN_FORWARD_MARGIN_MS } from "../billing/meter.ts";
import { enclave } from "../enclave/client.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import {
  attemptOf,
  firstAttemptOf,
  firstAttemptSchema,
  idempotencyHeaders,
  idempotent,
  idempotentAnswerHeaders,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { notices } from "../webhooks/emit.ts";
import { budgetAccess } from "../budgets/token.ts";

import { jsonBody as body, jsonResponse as json, requireRunKey, route } from "./openapi.ts";

const sigilAction = route("POST /sigil_action", "Execution", {
  summary:
    "Run a script (code, or ipfs_id fetched and verified by its CID) with js_params; the key must be allowed to execute that CID in some group",
  security: "key",
  middleware: [requireRunKey, operationBodyLimit("sigil_action")],
  request: { headers: idempotencyHeaders, body: body(sigilActionRequestSchema) },
  ok: {
    ...json(
      sigilActionResponseSchema
        .extend({
          charged_cents: z
            .number()
            .int()
            .nonnegative()
            .describe(
              "credits the run cost, in cents (0 while billing is off); under an Idempotency-Key, what the key was charged, once",
            ),
          first_attempt: firstAttemptSchema.optional(),
        })
        .openapi("RunResult"),
      "the run's outcome (a script failure is has_error: true with error)",
    ),
    headers: z.object({ "X-Sigil-Charged-Cents": z.string(), ...idempotentAnswerHeaders }),
  },
  errors: [400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 503],
});

export function sigilActionRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(
    sigilAction,
    pipeline<typeof sigilAction>([idempotent({ retry: "run" }), notices(), meteredRun()], async (c) => {
      const input = c.req.valid("json");
      const config = c.get("config");
      const attempt = attemptOf(c);
      // Billing on: the run is given the seconds its credit covers, and the enclave signs into the
      // receipt what the ledger charges.
      const grantedMs = meterOf(c)?.grantedMs;
      // Budgets are reserved by the enclave, at this edge, under the run's billing ref (routes/budgets.ts);
      // billing on, the enclave settles the run's charge here too, should this edge not (routes/settlements.ts).
      const ref = meterOf(c)?.ref ?? attempt?.ref ?? c.get("ids").requestId;
      const budget = await budgetAccess(config, c.req.url, ref, Date.now(), meterOf(c)?.bill);
      const answer = await enclave.call(
        "sigil_action",
        {
          ...input,
          api_key: callerKey(c).apiKey,
          ...(budget ? { budget } : {}),
          ...(grantedMs === undefined
            ? {}
            : {
                // Whole seconds are held; the run stops at the caller's own limit when it is shorter.
                timeout_ms: Math.min(grantedMs, input.timeout_ms ?? grantedMs),
                billing: { granted_seconds: Math.floor(grantedMs / 1000) },
              }),
        },
        {
          config,
          ids: c.get("ids"),
          timeoutMs: (grantedMs ?? config.limits.maxTimeoutMs) + RUN_FORWARD_MARGIN_MS,
          idempotent: attempt?.send,
        },
      );
      const meter = meterOf(c);
      const run = meter ? await meter.settleRun(answer) : answer;
      return c.json({ ...run, charged_cents: meter?.chargedCents ?? 0, ...firstAttemptOf(attempt) }, 200);
    }),
  );

  return r;
}
