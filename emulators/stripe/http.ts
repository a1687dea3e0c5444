// The Stripe emulator's HTTP face: Stripe's request layer (the key, the form or query parameters,
// Idempotency-Key replays) in front of each endpoint, and the routes of the slice of v1 it serves.
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  allowOnly,
  type Answer,
  apiError,
  type Auth,
  invalidParam,
  noSuch,
  stored,
  optString,
  type Params,
  parseStripeForm,
  randomToken,
  StripeApiError,
} from "./api.ts";
import type { StripeResources } from "./resources.ts";
import type { StripeEvent } from "./webhooks.ts";

const MAX_BODY_BYTES = 1024 * 1024;

/** The emulator's keys: the secret key opens every endpoint, the publishable key those that say so. */
export type Keys = { secretKey: string; publishableKey: string };

/** What the request layer keeps and uses: the keys, the answers saved under Idempotency-Keys, the log. */
type RequestLayer = {
  keys: Keys;
  saved: Map<string, { endpoint: string; params: string; requestId: string; answer: Answer }>;
  log: (line: string) => void;
};

/** What Stripe's request layer hands an endpoint: its parameters, the key's kind, the request. */
type Call = {
  params: Params;
  auth: Auth;
  version: string | undefined;
  request: { id: string; idempotencyKey: string | null };
};

function redactKey(key: string): string {
  const prefix = /^(sk|pk|rk)_(test|live)_/.exec(key)?.[0] ?? "";
  const tail = key.length > prefix.length + 4 ? key.slice(-4) : "";
  return prefix + "*".repeat(Math.max(0, key.length - prefix.length - tail.length)) + tail;
}

/** Reads `body` to its end, keeping nothing; a body already being read elsewhere is left alone. */
async function drain(body: ReadableStream<Uint8Array> | null): Promise<void> {
  if (!body || body.locked) return;
  const reader = body.getReader();
  while (!(await reader.read()).done);
}

function authenticate(keys: Keys, header: string | undefined, form: Params): Auth {
  let key: string | undefined;
  if (header) {
    const bearer = /^Bearer\s+(\S+)$/i.exec(header);
    const basic = /^Basic\s+(\S+)$/i.exec(header);
    if (bearer) key = bearer[1];
    else if (basic)
      key = Buffer.from(basic[1] as string, "base64")
        .toString()
        .split(":")[0];
  } else if (typeof form.key === "string") {
    key = form.key;
  }
  delete form.key;
  if (!key) {
    throw apiError(
      401,
      "invalid_request_error",
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
    );
  }
  if (key === keys.secretKey) return "secret";
  if (key === keys.publishableKey) return "publishable";
  throw apiError(401, "invalid_request_error", `Invalid API Key provided: ${redactKey(key)}`);
}

// Newest first, as Stripe lists them; `type` filters, `limit` 1–100 (default 10).
function listEvents(events: readonly StripeEvent[], params: Params): Answer {
  allowOnly(params, ["type", "limit"]);
  const type = optString(params, "type");
  const limitText = optString(params, "limit");
  const limit = limitText === undefined ? 10 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalidParam("This value must be between 1 and 100.", "limit");
  const matching = events.filter((e) => type === undefined || e.type === type).reverse();
  return {
    status: 200,
    body: { object: "list", data: matching.slice(0, limit), has_more: matching.length > limit, url: "/v1/events" },
  };
}

/**
 * Stripe's request layer around one endpoint: the parameters (the query of a GET, the form body of
 * a POST), the key (a publishable key opens only the endpoints that say so), and Idempotency-Key
 * (the first answer replayed, another endpoint or other parameters refused); then the answer.
 */
function handle(
  layer: RequestLayer,
  c: Context,
  raw: string,
  endpoint: (call: Call) => Answer,
  publishable: boolean,
): Answer {
  const { saved, log } = layer;
  const method = c.req.method;
  const requestId = `req_${randomToken(14)}`;
  const keyHeader = c.req.header("idempotency-key");
  const idempotencyKey = method === "POST" && keyHeader ? keyHeader : null;
  const headers: Record<string, string> = { "request-id": requestId };
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  const version = c.req.header("stripe-version");
  if (version !== undefined) headers["stripe-version"] = version;
  try {
    const params = parseStripeForm(raw);
    const auth = authenticate(layer.keys, c.req.header("authorization"), params);
    if (auth === "publishable" && !publishable) {
      throw apiError(
        401,
        "invalid_request_error",
        "This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.",
      );
    }
    const endpointName = `${method} ${c.req.path}`;
    const fingerprint = JSON.stringify(params);
    if (idempotencyKey) {
      const prior = saved.get(idempotencyKey);
      if (prior && prior.endpoint !== endpointName) {
        throw apiError(
          400,
          "idempotency_error",
          `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${endpointName}' vs '${prior.endpoint}'). Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
          {},
          false,
        );
      }
      if (prior && prior.params !== fingerprint) {
        throw apiError(
          400,
          "idempotency_error",
          `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
          {},
          false,
        );
      }
      if (prior)
        return {
          ...prior.answer,
          headers: { ...headers, "idempotent-replayed": "true", "original-request": prior.requestId },
        };
    }
    let answer: Answer;
    try {
      answer = endpoint({ params, auth, version, request: { id: requestId, idempotencyKey } });
      // The saved answer is a snapshot, as Stripe replays what it first sent.
      answer = { status: answer.status, body: structuredClone(answer.body) };
    } catch (e) {
      if (idempotencyKey && e instanceof StripeApiError && e.saved) {
        saved.set(idempotencyKey, {
          endpoint: endpointName,
          params: fingerprint,
          requestId,
          answer: { status: e.status, body: { error: e.body } },
        });
      }
      throw e;
    }
    if (idempotencyKey) saved.set(idempotencyKey, { endpoint: endpointName, params: fingerprint, requestId, answer });
    return { ...answer, headers };
  } catch (e) {
    if (e instanceof StripeApiError) {
      const body = { error: { ...e.body, request_log_url: `https://dashboard.stripe.com/test/logs/${requestId}` } };
      return { status: e.status, body, headers };
    }
    log(`stripe-emulator: internal error: ${e instanceof Error ? e.stack : String(e)}`);
    return {
      status: 500,
      body: { error: { type: "api_error", message: "An unknown error occurred in the local Stripe emulator." } },
      headers,
    };
  }
}

function send(c: Context, answer: Answer): Response {
  return c.body(JSON.stringify(answer.body, null, 2), answer.status as ContentfulStatusCode, {
    "content-type": "application/json",
    "cache-control": "no-cache, no-store",
    ...answer.headers,
  });
}

/** The app every route is served on: CORS as api.stripe.com answers it, and Stripe's body limit. */
function stripeApp(): Hono {
  const app = new Hono();
  // Browsers confirm from another origin, as against api.stripe.com (which allows any origin).
  app.use(
    cors({
      origin: "*",
      allowMethods: ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"],
      allowHeaders: ["Authorization", "Content-Type", "Idempotency-Key", "Stripe-Version", "Stripe-Account"],
      exposeHeaders: ["Request-Id", "Idempotency-Key", "Idempotent-Replayed", "Original-Request", "Stripe-Version"],
      maxAge: 300,
    }),
  );
  app.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: async (c) => {
        // Read to its end first: answering a body still on its way would leave the client's
        // kept-alive connection unusable for its next request (the SDK shares it).
        await drain(c.req.raw.body);
        return send(c, {
          status: 413,
          body: { error: { type: "invalid_request_error", message: "Request body too large." } },
        });
      },
    }),
  );
  return app;
}

/** The emulator's routes over `resources` and `events`, behind Stripe's request layer. */
export function stripeRouter(options: {
  keys: Keys;
  resources: StripeResources;
  events: readonly StripeEvent[];
  log: (line: string) => void;
}): Hono {
  const { resources, events, log } = options;
  const layer: RequestLayer = { keys: options.keys, saved: new Map(), log };
  /** Serves `endpoint` behind Stripe's request layer; `publishable`: a publishable key may call it. */
  const serve =
    (endpoint: (call: Call, c: Context) => Answer, { publishable = false } = {}) =>
    async (c: Context): Promise<Response> => {
      const raw =
        c.req.method === "GET" || c.req.method === "DELETE" ? new URL(c.req.url).search.slice(1) : await c.req.text();
      const answer = handle(layer, c, raw, (call) => endpoint(call, c), publishable);
      log(`stripe-emulator: ${c.req.method} ${c.req.path} ${answer.status}`);
      return send(c, answer);
    };

  const app = stripeApp();
  app.post(
    "/v1/customers",
    serve(({ params }) => resources.createCustomer(params)),
  );
  app.get(
    "/v1/customers/:id",
    serve((_, c) => ({ status: 200, body: stored("customer", resources.customers, c.req.param("id") as string) })),
  );
  app.post(
    "/v1/payment_intents",
    serve(({ params, version }) => resources.createIntent(params, version)),
  );
  app.get(
    "/v1/payment_intents/:id",
    serve(({ params }, c) => {
      allowOnly(params, ["client_secret"]);
      return { status: 200, body: resources.intentOf(c.req.param("id") as string) };
    }),
  );
  app.post(
    "/v1/payment_intents/:id/confirm",
    serve(
      ({ params, auth, request }, c) => resources.confirmIntent(c.req.param("id") as string, params, auth, request),
      {
        publishable: true,
      },
    ),
  );
  app.post(
    "/v1/payment_intents/:id/cancel",
    serve(({ params }, c) => resources.cancelIntent(c.req.param("id") as string, params)),
  );
  app.post(
    "/v1/refunds",
    serve(({ params, request }) => resources.createRefund(params, request)),
  );
  app.get(
    "/v1/refunds/:id",
    serve((_, c) => ({ status: 200, body: stored("refund", resources.refunds, c.req.param("id") as string) })),
  );
  app.get(
    "/v1/events",
    serve(({ params }) => listEvents(events, params)),
  );
  app.get(
    "/v1/events/:id",
    serve((_, c) => {
      const id = c.req.param("id") as string;
      const event = events.find((e) => e.id === id);
      if (!event) throw noSuch("event", id, "id");
      return { status: 200, body: event };
    }),
  );
  // As Stripe: the key is checked before the path is found unknown.
  app.notFound(
    serve((_, c) => {
      throw apiError(
        404,
        "invalid_request_error",
        `Unrecognized request URL (${c.req.method}: ${c.req.path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
        {},
        false,
      );
    }),
  );
  return app;
}
