// Webhooks to users (issue 14; docs/guides/webhooks.md): an account registers up to 10 endpoints that
// receive signed events (payment.credited, payment.failed, balance.low, usage_key.cap_reached,
// run.failed), lists them, removes them, reads each one's delivery log and sends a delivery again,
// and sets balance.low's threshold. The account's Webhooks Durable Object (webhooks/store.ts) keeps
// and delivers them; webhooks/emit.ts is where events come from.
//
// Auth: these endpoints configure the account, so they are `acct` endpoints like the usage-key writes
// (docs/design/api.md): the account's master key — a usage key is 403 account_key_required — or, for a
// ChainSecured account, X-Wallet-Auth signed by its admin wallet (as on the billing endpoints). A
// converted account's old master key may still read (list, deliveries, settings) but not change.
import { z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { keyRefusal } from "../../shared/apiKey.ts";
import { SigilError } from "../../shared/errors.ts";
import { DEFAULT_WEBHOOK_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from "../../shared/webhooks.ts";
import {
  billingCaller,
  decodeWalletAuth,
  keyThatMayAct,
  ledgerToRead,
  WALLET_AUTH_HEADER,
} from "../billing/account.ts";
import { readView } from "../chain/client.ts";
import {
  idempotencyHeaders,
  idempotentAnswerHeaders,
  keyHolder,
  idempotent,
  walletHolder,
  type HolderOf,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { defaultBodyLimit } from "../middleware/bodyLimit/index.ts";
import { newRouter, perRequest, pipeline, type EdgeEnv, type Stage } from "../router.ts";
import { accountIdOf, webhooksOf } from "../webhooks/emit.ts";
import { MAX_ENDPOINTS } from "../webhooks/policy.ts";
import { checkWebhookUrl, MAX_WEBHOOK_URL_CHARS } from "../webhooks/url.ts";
import { errorAnswer, jsonBody as body, jsonResponse as json, keySecurity, route } from "./openapi.ts";
import { pageQuerySchema } from "./paging.ts";

const security: Array<Record<string, string[]>> = [...keySecurity, { WalletAuth: [] }];

/**
 * The master key or X-Wallet-Auth must be there, and well-formed, before the path, query or body is
 * validated (as on every keyed route); whose it is the handler asks the chain after validation.
 */
const requireCredentials = createMiddleware<EdgeEnv>(async (c, next) => {
  const walletAuth = c.req.header(WALLET_AUTH_HEADER);
  if (walletAuth === undefined) callerKey(c);
  else decodeWalletAuth(walletAuth);
  await next();
});

/** Who a webhook request is from: the account, and how it authenticated (for an Idempotency-Key's holder). */
type WebhookCaller = { master: bigint; via: "api_key" | "wallet"; wallet?: string | undefined };

/**
 * The account whose webhooks the request is about. `change` needs the live master key (or the admin
 * wallet's X-Wallet-Auth); `read` also lets a converted account's old master key look.
 */
async function webhookCaller(c: Context<EdgeEnv>, use: "read" | "change"): Promise<WebhookCaller> {
  const config = c.get("config");
  const walletAuth = c.req.header(WALLET_AUTH_HEADER);
  if (walletAuth !== undefined) {
    if (c.req.header("x-api-key") !== undefined || c.req.header("authorization") !== undefined) {
      throw new SigilError("conflicting_credentials", "send either an API key or X-Wallet-Auth, not both");
    }
    const caller = await billingCaller(config, { walletAuth }, "pay");
    return { master: caller.master, via: "wallet", wallet: caller.wallet };
  }
  // A key that may act is found as a run's is (the key cache); any other is read live.
  const acting = await keyThatMayAct(config, callerKey(c));
  if (acting?.isMaster) return { master: acting.master, via: "api_key" };
  const { keyHash } = callerKey(c);
  const [master, live] = await readView(config, "billingOf", [keyHash], keyHash);
  if (master === 0n) throw new SigilError("invalid_api_key", "the API key is not valid");
  if (keyHash !== master) {
    const refusal = keyRefusal({ known: true, isMaster: false, live });
    if (refusal) throw refusal;
    throw new SigilError(
      "account_key_required",
      "webhooks are managed with the account's master key (or X-Wallet-Auth of a ChainSecured account's admin wallet), not a usage key",
    );
  }
  if (use === "change") {
    const refusal = keyRefusal({ known: true, isMaster: true, live });
    if (refusal) throw refusal;
  }
  return { master, via: "api_key" };
}

const webhookAccount = async (c: Context<EdgeEnv>, use: "read" | "change") => (await webhookCaller(c, use)).master;

/**
 * The holder of a webhook write's Idempotency-Key, as on the billing writes: the account's object,
 * and in it the master key or the wallet that signed X-Wallet-Auth (whose records are sealed under
 * the key and the body, so that key must be unguessable).
 */
const webhookHolder: HolderOf = async (c, key, body) => {
  const caller = await changingCaller(c);
  if (caller.via === "wallet" && caller.wallet) return walletHolder(caller.master, caller.wallet, key, body);
  const { apiKey, keyHash } = callerKey(c);
  return keyHolder(caller.master, keyHash, apiKey, key);
};

/** The caller of a webhook write (allowed to change the account's webhooks): one chain read per request. */
const changingCaller = perRequest<WebhookCaller>((c) => webhookCaller(c, "change"));

/** The Idempotency-Key of the webhook writes (idempotency/): a retried registration makes one endpoint and answers its secret again. */
const webhookIdempotencyHeaders = z.object({
  "idempotency-key": idempotencyHeaders.shape["idempotency-key"].describe(
    "Makes the request safe to retry: the same key with the same body within 24 h answers the first answer again (Idempotent-Replayed: true) without acting again; with another body 422 idempotency_key_reused; while the first is in flight 409 request_in_progress (Retry-After). Under X-Wallet-Auth the key also seals the kept answer: use an unguessable one, a random UUID",
  ),
});
const replayHeaders = z.object(idempotentAnswerHeaders);

const eventType = z.enum(WEBHOOK_EVENT_TYPES);
const endpointSchema = z
  .object({
    id: z.string().describe("the endpoint's id, we_…"),
    url: z.string().describe("where events are POSTed"),
    events: z.array(eventType).describe("the event types it receives"),
    created: z.number().int().describe("unix seconds"),
    disabled: z.boolean(),
  })
  .openapi("WebhookEndpoint");
const attemptSchema = z.object({
  n: z.number().int().describe("1 for the first attempt"),
  at: z.number().int().describe("unix seconds when it was sent"),
  status_code: z
    .number()
    .int()
    .nullable()
    .describe("the receiver's HTTP status; null when none came (timeout, connection refused)"),
  error: z.string().nullable().describe("why the attempt failed; null when it delivered (2xx)"),
  duration_ms: z.number().int(),
});
const deliverySchema = z
  .object({
    id: z.string().describe("the delivery's id, dlv_…"),
    endpoint_id: z.string(),
    event_id: z.string().describe("the event's id, evt_… (also the Sigil-Event-Id header): the same on every attempt"),
    event_type: eventType,
    status: z
      .enum(["pending", "succeeded", "failed"])
      .describe("pending: retrying on the schedule; succeeded: a 2xx came; failed: the 24 h window is over"),
    created: z.number().int().describe("unix seconds"),
    next_attempt_at: z.number().int().nullable().describe("unix seconds of the next attempt while pending"),
    attempts: z.array(attemptSchema).describe("every attempt, oldest first"),
  })
  .openapi("WebhookDelivery");
const settingsSchema = z.object({
  balance_low_cents: z
    .number()
    .int()
    .nonnegative()
    .describe("balance.low fires when the free balance goes from at least this to under it; 0 = off"),
});

const webhookIdParam = z.object({
  webhook_id: z
    .string()
    .regex(/^we_[0-9a-f]{24}$/, "a webhook endpoint id (we_…)")
    .openapi({ param: { name: "webhook_id", in: "path" }, example: "we_0123456789abcdef01234567" }),
});
const deliveryParams = webhookIdParam.extend({
  delivery_id: z
    .string()
    .regex(/^(dlv|evt)_[0-9a-f]{24}$/, "a delivery id (dlv_…) or an event id (evt_…)")
    .openapi({ param: { name: "delivery_id", in: "path" }, example: "dlv_0123456789abcdef01234567" }),
});
const totalHeader = z.object({ "X-Total-Count": z.string() });

/** Who may use these endpoints: the account's key, or its admin wallet's X-Wallet-Auth. */
const caller = { security, middleware: [requireCredentials] };
/** What every webhook endpoint may answer besides its own: the credentials and the account (docs/design/api.md, Webhooks). */
const callerErrors = [400, 401, 403, 404, 413, 429, 503] as const;

const createWebhook = route("POST /webhooks", "Webhooks", {
  operationId: "createWebhook",
  summary: `Register a webhook endpoint (at most ${MAX_ENDPOINTS} per account); its signing secret is in this answer only`,
  security,
  middleware: [defaultBodyLimit, requireCredentials],
  request: {
    headers: webhookIdempotencyHeaders,
    body: body(
      z.strictObject({
        url: z
          .string()
          .min(1)
          .max(MAX_WEBHOOK_URL_CHARS)
          .describe(
            "https URL that receives the events (http and loopback only on a local deployment); never a private, loopback or link-local address in production",
          ),
        events: z
          .array(eventType)
          .min(1)
          .max(WEBHOOK_EVENT_TYPES.length)
          .refine((e) => new Set(e).size === e.length, "each event type once")
          .optional()
          .describe(
            `the event types to receive (default: ${DEFAULT_WEBHOOK_EVENT_TYPES.join(", ")}; run.failed only when named)`,
          ),
      }),
    ),
  },
  ok: {
    ...json(
      endpointSchema.extend({
        secret: z
          .string()
          .describe(
            "whsec_…: the key of every delivery's Sigil-Signature; shown only here (and to a replay under the same Idempotency-Key), keep it",
          ),
      }),
    ),
    headers: replayHeaders,
  },
  errors: [...callerErrors, 408, 422],
  answers: {
    400: {
      ...errorAnswer(400),
      description:
        "Bad Request (error.code: invalid_request, invalid_json, conflicting_credentials, invalid_webhook_url: malformed, not https in production, or a private/loopback/link-local host; details.reason says which)",
    },
    409: {
      ...errorAnswer(409),
      description: `Conflict (error.code: webhook_limit: the account has ${MAX_ENDPOINTS} endpoints already; request_in_progress: the Idempotency-Key's first request is in flight)`,
    },
  },
});

const listWebhooks = route("GET /webhooks", "Webhooks", {
  operationId: "listWebhooks",
  summary: "The account's webhook endpoints (never their secrets); the total is in X-Total-Count",
  ...caller,
  ok: { ...json(z.array(endpointSchema)), headers: totalHeader },
  errors: callerErrors,
});

const deleteWebhook = route("DELETE /webhooks/{webhook_id}", "Webhooks", {
  operationId: "deleteWebhook",
  summary: "Remove a webhook endpoint, with its pending deliveries and its delivery log",
  ...caller,
  request: { params: webhookIdParam },
  ok: json(z.object({ deleted: z.literal(true), id: z.string() })),
  errors: callerErrors,
});

const listDeliveries = route("GET /webhooks/{webhook_id}/deliveries", "Webhooks", {
  operationId: "listWebhookDeliveries",
  summary: "An endpoint's delivery log, newest first: each delivery with every attempt; the total is in X-Total-Count",
  ...caller,
  request: { params: webhookIdParam, query: pageQuerySchema },
  ok: { ...json(z.array(deliverySchema)), headers: totalHeader },
  errors: callerErrors,
});

const resendDelivery = route("POST /webhooks/{webhook_id}/deliveries/{delivery_id}/resend", "Webhooks", {
  operationId: "resendWebhookDelivery",
  summary:
    "Send a delivery (dlv_…) or an event (evt_…) to this endpoint again, now, with a new 24 h retry window; the event keeps its id",
  ...caller,
  request: { params: deliveryParams, headers: webhookIdempotencyHeaders },
  ok: { ...json(deliverySchema), headers: replayHeaders },
  errors: [...callerErrors, 409, 422],
});

const getSettings = route("GET /webhooks/settings", "Webhooks", {
  operationId: "getWebhookSettings",
  summary: "The account's webhook settings: balance.low's threshold",
  ...caller,
  ok: json(settingsSchema),
  errors: callerErrors,
});

const putSettings = route("PUT /webhooks/settings", "Webhooks", {
  operationId: "updateWebhookSettings",
  summary:
    "Set balance.low's threshold in cents (0 turns it off); it fires when the free balance goes from at least the threshold to under it, once per crossing",
  security,
  middleware: [defaultBodyLimit, requireCredentials],
  request: { body: body(z.strictObject({ balance_low_cents: z.number().int().min(0).max(99_999_999) })) },
  ok: json(settingsSchema),
  errors: [...callerErrors, 408],
});

/** The URL first: a registration that could never succeed is refused before the chain is read. */
const urlFirst: Stage = async (c, next) => {
  const input = (c.req as { valid(target: "json"): { url: string } }).valid("json");
  checkWebhookUrl(input.url, c.get("config").webhooks);
  await next();
};

const notFound = (id: string) => new SigilError("webhook_not_found", `this account has no webhook endpoint ${id}`);

export function webhooksRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(
    createWebhook,
    pipeline<typeof createWebhook>([urlFirst, idempotent({ holder: webhookHolder })], async (c) => {
      const input = c.req.valid("json");
      const url = checkWebhookUrl(input.url, c.get("config").webhooks);
      const caller = await changingCaller(c);
      const added = await webhooksOf(c.env.WEBHOOKS, caller.master).addEndpoint(
        accountIdOf(caller.master),
        url.href,
        input.events ?? [...DEFAULT_WEBHOOK_EVENT_TYPES],
      );
      if ("limit" in added) {
        throw new SigilError(
          "webhook_limit",
          `an account has at most ${MAX_ENDPOINTS} webhook endpoints; remove one first`,
          { details: { limit: MAX_ENDPOINTS } },
        );
      }
      return c.json({ ...added.endpoint, secret: added.secret }, 200);
    }),
  );

  r.openapi(listWebhooks, async (c) => {
    const master = await webhookAccount(c, "read");
    const endpoints = await webhooksOf(c.env.WEBHOOKS, master).listEndpoints();
    c.header("X-Total-Count", String(endpoints.length));
    return c.json(endpoints, 200);
  });

  // Registered before /webhooks/{webhook_id} routes would matter: "settings" is no endpoint id (we_…).
  r.openapi(getSettings, async (c) => {
    const master = await webhookAccount(c, "read");
    const s = await webhooksOf(c.env.WEBHOOKS, master).settings();
    return c.json({ balance_low_cents: s.balanceLowCents }, 200);
  });

  r.openapi(putSettings, async (c) => {
    const input = c.req.valid("json");
    const master = await webhookAccount(c, "change");
    // Armed only when the balance is at the threshold or above now: it fires on the way down.
    const freeCents = c.env.LEDGER ? (await (await ledgerToRead(c.env.LEDGER, master)).balance()).freeCents : 0;
    const s = await webhooksOf(c.env.WEBHOOKS, master).setBalanceLow(
      accountIdOf(master),
      input.balance_low_cents,
      freeCents,
    );
    return c.json({ balance_low_cents: s.balanceLowCents }, 200);
  });

  r.openapi(deleteWebhook, async (c) => {
    const { webhook_id } = c.req.valid("param");
    const master = await webhookAccount(c, "change");
    if (!(await webhooksOf(c.env.WEBHOOKS, master).removeEndpoint(accountIdOf(master), webhook_id)))
      throw notFound(webhook_id);
    return c.json({ deleted: true as const, id: webhook_id }, 200);
  });

  r.openapi(listDeliveries, async (c) => {
    const { webhook_id } = c.req.valid("param");
    const { page_number, page_size } = c.req.valid("query");
    const master = await webhookAccount(c, "read");
    const page = await webhooksOf(c.env.WEBHOOKS, master).deliveries(webhook_id, page_number * page_size, page_size);
    if (!page) throw notFound(webhook_id);
    c.header("X-Total-Count", String(page.total));
    return c.json(page.items, 200);
  });

  r.openapi(
    resendDelivery,
    pipeline<typeof resendDelivery>([idempotent({ holder: webhookHolder })], async (c) => {
      const { webhook_id, delivery_id } = c.req.valid("param");
      const caller = await changingCaller(c);
      const result = await webhooksOf(c.env.WEBHOOKS, caller.master).resend(webhook_id, delivery_id);
      if (result === "endpoint_not_found") throw notFound(webhook_id);
      if (result === "delivery_not_found")
        throw new SigilError("delivery_not_found", `endpoint ${webhook_id} has no delivery or event ${delivery_id}`);
      return c.json(result, 200);
    }),
  );

  return r;
}
