// The enclave's HTTP surface besides the channel's hot path (`POST /channel/v1`, served by
// channel/channel.ts straight from the HTTP server, the only way to the internal API): `GET /channel`,
// `GET /health` (the public report: health.ts), and the public attestation endpoints
// (attestation/routes.ts). Every answer names this instance in `X-Sigil-Instance`, so a client
// that reached it through a load balancer or the edge knows which VM answered. A request sent to
// `/internal/…` directly is refused.
import type { IncomingMessage } from "node:http";
import { Hono, type Context } from "hono";
import { errorBody, SigilError } from "../shared/errors.ts";
import { attestationRoutes, type AttestationRoutesOptions } from "./attestation/routes.ts";
import { channelRoutes, type Channel } from "./channel/channel.ts";
import { publicHealth, type HealthParts } from "./health.ts";
import { requestContext, type RequestContext } from "./operations/context.ts";
import { errorAnswer } from "./operations/index.ts";

type Env = { Variables: { ctx: RequestContext } };

export const INSTANCE_HEADER = "X-Sigil-Instance";

/**
 * What the app is given with each request: the Node request it came on (a direct caller), or, for
 * the attestation answers the internal API asks of it on the edge's behalf, the client the edge
 * saw. Only the server sets either; no request can.
 */
export type EnclaveBindings = { incoming?: IncomingMessage; sigilClient?: string };

/** Who asks, for the per-client nonce budget: the client the edge vouched for, else the TCP peer. */
function clientOf(c: Context): string {
  const env = c.env as EnclaveBindings | undefined;
  if (env?.sigilClient) return env.sigilClient;
  return `peer:${env?.incoming?.socket.remoteAddress ?? "unknown"}`;
}

export function createEnclaveApp(
  parts: HealthParts & { attestation: AttestationRoutesOptions; channel: Channel },
): Hono<Env> {
  const { enclave, attestation, channel } = parts;
  const app = new Hono<Env>();

  app.use(async (c, next) => {
    const ctx = requestContext(enclave.log, c.req.header("x-request-id"), c.req.header("x-correlation-id"));
    c.set("ctx", ctx);
    c.header("X-Request-Id", ctx.requestId);
    c.header(INSTANCE_HEADER, parts.instanceId);
    if (ctx.correlationId) c.header("X-Correlation-Id", ctx.correlationId);
    await next();
  });

  app.all("/internal/*", () => {
    throw new SigilError(
      "permission_denied",
      "the internal API is served only through the attested channel (GET /channel, then POST /channel/v1)",
    );
  });
  channelRoutes(app, channel);

  app.get("/health", (c) => {
    const { serving, body } = publicHealth(parts);
    if (!serving) c.header("Retry-After", "5");
    return c.json(body, serving ? 200 : 503);
  });

  app.route("/", attestationRoutes({ ...attestation, clientOf }));

  app.notFound((c) => {
    const err = new SigilError("not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
    return c.json(errorBody(err, c.get("ctx")?.requestId ?? crypto.randomUUID()), 404);
  });

  app.onError((err, c) => {
    const ctx = c.get("ctx") ?? requestContext(enclave.log, undefined, undefined);
    // The rest of an oversized body was never read: this connection cannot carry another request.
    if (err instanceof SigilError && err.code === "payload_too_large") c.header("Connection", "close");
    const answer = errorAnswer(err, ctx);
    if (answer.retry_after !== undefined) c.header("Retry-After", String(answer.retry_after));
    return c.json({ error: answer.error }, answer.status as 400);
  });

  return app;
}
