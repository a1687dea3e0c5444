// The API as the MCP tools (server.ts) call it: a method, a path under /core/v1, and the input (the
// query of a GET, the JSON body of a POST), sent with the caller's API key. Two callers share the tools:
// `sigil mcp` over the network (fetch to the API's URL) and the edge's own /core/v1/mcp, which sends
// each call through its own app in-process — the same authentication, rate limits, admission and
// billing as the call made directly. A refusal is the API's own error (code, message, details,
// request id), never rewritten.

/**
 * A call of the API: its answer's JSON, or a SigilApiError. A POST carries `idempotencyKey` as its
 * Idempotency-Key (an agent's own, so that its retry of a tool call is the same run), else a fresh one.
 */
export type SigilApi = (
  method: "GET" | "POST",
  path: string,
  input?: Record<string, unknown>,
  options?: { idempotencyKey?: string | undefined },
) => Promise<unknown>;

/** The API refused a call (or did not answer): its status, error code, message, details and request id. */
export class SigilApiError extends Error {
  override name = "SigilApiError";
  readonly status: number;
  readonly code: string;
  readonly details: unknown;
  readonly requestId: string | undefined;
  constructor(status: number, code: string, message: string, details?: unknown, requestId?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
  }
}

type ErrorBody = { error?: { code?: string; message?: string; details?: unknown; request_id?: string } };

/**
 * The API at `baseUrl` (an origin) through `fetch`, as the key `apiKey`; `headers` go on every call
 * (a correlation id, the client's address for the edge's own calls).
 */
export function httpApi(
  baseUrl: string,
  apiKey: string,
  fetch: (request: Request) => Promise<Response>,
  headers: Record<string, string> = {},
): SigilApi {
  const origin = baseUrl.replace(/\/+$/, "");
  return async (method, path, input = {}, options = {}) => {
    const url = new URL(`${origin}/core/v1/${path}`);
    if (method === "GET")
      for (const [k, v] of Object.entries(input)) if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    const request = new Request(url, {
      method,
      headers: {
        ...headers,
        authorization: `Bearer ${apiKey}`,
        ...(method === "POST"
          ? { "content-type": "application/json", "idempotency-key": options.idempotencyKey ?? crypto.randomUUID() }
          : {}),
      },
      ...(method === "POST" ? { body: JSON.stringify(input) } : {}),
    });
    let res: Response;
    try {
      res = await fetch(request);
    } catch (err) {
      throw new SigilApiError(0, "network_error", `the API could not be reached: ${(err as Error).message}`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text === "" ? null : JSON.parse(text);
    } catch {
      throw new SigilApiError(res.status, "unexpected_response", `the API answered ${res.status} with no JSON`);
    }
    if (!res.ok) {
      const e = (body as ErrorBody | null)?.error;
      throw new SigilApiError(
        res.status,
        e?.code ?? "unexpected_response",
        e?.message ?? `the API answered ${res.status}`,
        e?.details,
        e?.request_id ?? res.headers.get("x-request-id") ?? undefined,
      );
    }
    return body;
  };
}
