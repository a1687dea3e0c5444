// The edge's Hono app (docs/design/api.md): request ids, CORS and the error body for everything; one router per
// resource under /core/v1; the OpenAPI document generated from the same zod schemas that validate.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import { edgeConfig } from "./config.ts";
import { errorResponse } from "./errors.ts";
import { notFound } from "./notFound.ts";
import { admission } from "./middleware/admission/index.ts";
import { rateLimit } from "./middleware/rateLimit/index.ts";
import { requestId } from "./middleware/requestId/index.ts";
import { accountsRoutes } from "./routes/accounts.ts";
import { actionsRoutes } from "./routes/actions.ts";
import { auditRoutes } from "./routes/audit.ts";
import { attestationRoutes } from "./routes/attestation.ts";
import { billingRoutes, stripeWebhookRoutes } from "./routes/billing.ts";
import { usageRoutes } from "./routes/usage.ts";
import { budgetRoutes } from "./routes/budgets.ts";
import { transactionListRoutes, transactionRoutes } from "./routes/transactions.ts";
import { settlementRoutes } from "./routes/settlements.ts";
import { sigilActionRoutes } from "./routes/sigilAction.ts";
import { groupsRoutes } from "./routes/groups.ts";
import { publicRoutes } from "./routes/public.ts";
import { signaturesRoutes } from "./routes/signatures.ts";
import { usageKeysRoutes } from "./routes/usageKeys.ts";
import { walletsRoutes } from "./routes/wallets.ts";
import { guardrailsRoutes } from "./routes/guardrails.ts";
import { webhooksRoutes } from "./routes/webhooks.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { delegatedKeys } from "./delegations/verify.ts";
import { delegationRoutes, delegationUseRoutes } from "./routes/delegations.ts";
import { API_DESCRIPTION, TAGS } from "./routes/openapi.ts";
import { newRouter, type EdgeEnv } from "./router.ts";
import { serveDashboard } from "./dashboard.ts";
import { serveSwaggerUi } from "./swaggerUi.ts";

export function createApp(): OpenAPIHono<EdgeEnv> {
  const app = newRouter();
  app.use(requestId());
  app.use(
    cors({
      origin: "*",
      allowHeaders: [
        "Content-Type",
        "X-Api-Key",
        "Authorization",
        "X-Correlation-Id",
        "X-Wallet-Auth",
        "Idempotency-Key",
        "X-Sigil-Instance",
      ],
      exposeHeaders: [
        "X-Request-Id",
        "X-Correlation-Id",
        "X-Total-Count",
        "X-Sigil-Charged-Cents",
        "Retry-After",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "Deprecation",
        "Link",
        "X-Sigil-Instance",
        "X-Attestation-Simulated",
        "Idempotent-Replayed",
        "Original-Request",
        "Sigil-Stale",
      ],
    }),
  );
  app.use(async (c, next) => {
    c.set("config", edgeConfig(c.env));
    await next();
  });
  app.use("/core/v1/*", rateLimit());
  // Body limits (docs/design/api.md: over the limit → 413) are each route's own middleware: the small default
  // (middleware/bodyLimit) on every route that takes a body, the script limit on the two that take a
  // script, a smaller one on the signature endpoints. No middleware here reads a route's path.

  // Health, the service's public facts and Stripe's webhook are always served; every other route
  // only within this isolate's admission (middleware/admission): Hono runs what is mounted in order,
  // and a route answered above never reaches the middleware below it.
  app.route("/core/v1", publicRoutes());
  // The enclaves' budget reservations: a run's token, not a client's key (routes/budgets.ts).
  app.route("/", budgetRoutes());
  // The enclaves' transaction nonces: a run's token too (routes/transactions.ts).
  app.route("/", transactionRoutes());
  // The enclaves' settlements of runs' charges: each run's token (routes/settlements.ts).
  app.route("/", settlementRoutes());
  // The enclaves' counts of delegated keys' uses: a run's token too (routes/delegations.ts).
  app.route("/", delegationUseRoutes());
  app.route("/core/v1", stripeWebhookRoutes());
  app.use("/core/v1/*", admission());
  // A delegated key acts only once an enclave has vouched for it (delegations/verify.ts).
  app.use("/core/v1/*", delegatedKeys());
  app.route("/core/v1", accountsRoutes());
  app.route("/core/v1", usageKeysRoutes());
  app.route("/core/v1", delegationRoutes());
  app.route("/core/v1", walletsRoutes());
  app.route("/core/v1", transactionListRoutes());
  app.route("/core/v1", guardrailsRoutes());
  app.route("/core/v1", groupsRoutes());
  app.route("/core/v1", actionsRoutes());
  app.route("/core/v1", sigilActionRoutes());
  app.route("/core/v1", signaturesRoutes());
  app.route("/core/v1", billingRoutes());
  app.route("/core/v1", usageRoutes());
  app.route("/core/v1", auditRoutes());
  app.route("/core/v1", webhooksRoutes());
  // Sigil's MCP server for agents: its tools call the routes above through this app (routes/mcp.ts).
  app.route(
    "/core/v1",
    mcpRoutes(() => app),
  );
  app.route("/", attestationRoutes());

  // The document of every route above (docs/design/api.md, Conventions: OpenAPI). Its one server is the origin
  // it was asked from: `npm start`'s names http://127.0.0.1:8787, production's its own domain.
  app.doc31("/core/v1/openapi.json", (c) => ({
    openapi: "3.1.0",
    info: {
      title: "Sigil",
      version: "1",
      description: API_DESCRIPTION,
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: new URL(c.req.url).origin }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
  }));
  // The page, and Swagger UI's own files from the static assets (wrangler.toml [assets]).
  serveSwaggerUi(app);
  serveDashboard(app);

  app.notFound(notFound(app));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}
