// `POST /core/v1/mcp`: Sigil's MCP server (mcp/server.ts) over MCP's streamable HTTP transport,
// stateless — each request is one JSON-RPC exchange answered as JSON, no session, so any isolate
// answers any request. The caller's API key (X-Api-Key or Authorization: Bearer) is required before
// anything else (401 with the API's error body), and the request is under /core/v1's rate limits and
// admission, its body within sigil_action's limit; each tool's API call goes through this same app
// in-process with the caller's key and address, so it is authenticated, rate-limited, admitted and
// billed as the call made directly.
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { Hono } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { admitWithin } from "../middleware/admission/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { scriptBodyLimit } from "../middleware/bodyLimit/index.ts";
import { requireRunKey } from "./openapi.ts";
import { httpApi, SigilApiError } from "../mcp/api.ts";
import { sigilMcpServer } from "../mcp/server.ts";
import type { EdgeEnv } from "../router.ts";

/** The MCP route; `app` answers the tools' API calls (the edge's own app, in-process). */
export function mcpRoutes(app: () => Hono<EdgeEnv>): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  // A tool call may carry a script (run_code): the body is limited as sigil_action's.
  r.all("/mcp", requireRunKey, scriptBodyLimit, async (c) => {
    const { apiKey } = callerKey(c);
    const origin = new URL(c.req.url).origin;
    const forwarded: Record<string, string> = { "x-correlation-id": c.get("ids").requestId };
    const address = c.req.header("cf-connecting-ip");
    if (address) forwarded["cf-connecting-ip"] = address;
    // Each tool call runs within this request's admission place (not a second one it could wait on).
    const api = httpApi(
      origin,
      apiKey,
      async (request) => app().fetch(admitWithin(request), c.env, c.executionCtx),
      forwarded,
    );
    let server: Awaited<ReturnType<typeof sigilMcpServer>>;
    try {
      server = await sigilMcpServer(api, {
        version: c.get("config").version,
        validator: new CfWorkerJsonSchemaValidator(),
      });
    } catch (err) {
      // The key's account could not be read (a removed key, a limit, the chain): the API's own answer.
      if (err instanceof SigilApiError)
        return c.json(
          {
            error: {
              code: err.code,
              message: err.message,
              ...(err.details === undefined ? {} : { details: err.details }),
              request_id: c.get("ids").requestId,
            },
          },
          (err.status >= 400 && err.status <= 599 ? err.status : 503) as 400,
        );
      throw err instanceof Error ? err : new SigilError("internal_error", String(err));
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    // The body as read once for the whole app (admission waits for it): the raw stream is spent.
    const body = c.req.method === "POST" ? await c.req.text() : undefined;
    const request = new Request(c.req.url, {
      method: c.req.method,
      headers: c.req.raw.headers,
      ...(body === undefined ? {} : { body }),
    });
    try {
      return await transport.handleRequest(request);
    } finally {
      c.executionCtx.waitUntil(server.close());
    }
  });
  return r;
}
