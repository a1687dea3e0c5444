// The edge's conventions, inside workerd (docs/design/api.md, Conventions): request ids, the error body on
// every failure, CORS, the OpenAPI document, and the public endpoints that need no enclave.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { computeCid } from "../shared/cid.ts";
import { clientConfigOf, runLimitsSchema } from "../shared/limits.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function errorOf(res: Response) {
  const body = (await res.json()) as {
    error: { code: string; message: string; request_id: string; details?: unknown };
  };
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  return body.error;
}

describe("request ids", () => {
  it("every response carries a fresh UUID v4 X-Request-Id; a client-sent one is ignored", async () => {
    const a = await SELF.fetch("http://edge/core/v1/version", { headers: { "x-request-id": "mine" } });
    const b = await SELF.fetch("http://edge/core/v1/version");
    expect(a.headers.get("x-request-id")).toMatch(UUID_V4);
    expect(b.headers.get("x-request-id")).toMatch(UUID_V4);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
  });

  it("a non-empty X-Correlation-Id is echoed; without one the header is absent", async () => {
    const a = await SELF.fetch("http://edge/core/v1/version", { headers: { "x-correlation-id": "trace-7" } });
    expect(a.headers.get("x-correlation-id")).toBe("trace-7");
    const b = await SELF.fetch("http://edge/core/v1/version");
    expect(b.headers.get("x-correlation-id")).toBeNull();
  });
});

describe("errors", () => {
  it("an unknown route is 404 not_found with the error body", async () => {
    const res = await SELF.fetch("http://edge/core/v1/nope");
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe("not_found");
  });

  it("a known path with another method is 405 method_not_allowed, with Allow listing the path's methods, in the error body", async () => {
    const cases: Array<[method: string, path: string, allow: string]> = [
      ["GET", "/core/v1/new_account", "OPTIONS, POST"],
      ["PUT", "/core/v1/sigil_action", "OPTIONS, POST"],
      ["POST", "/core/v1/version", "GET, HEAD, OPTIONS"],
      ["DELETE", "/core/v1/create_wallet", "GET, HEAD, OPTIONS, POST"],
      ["PATCH", "/core/v1/billing/balance", "GET, HEAD, OPTIONS"],
      ["GET", "/core/v1/billing/webhook", "OPTIONS, POST"],
      ["POST", "/attestation", "GET, HEAD, OPTIONS"],
      ["POST", "/evidences/sha256sum.txt", "GET, HEAD, OPTIONS"],
      // However the path is spelled, it is the route's.
      ["GET", "/core/v1/new%5Faccount", "OPTIONS, POST"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await SELF.fetch(`http://edge${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
      const error = await errorOf(res);
      expect(error.code).toBe("method_not_allowed");
      expect(error.message).toContain(method);
    }
    // HEAD is a GET without the body: a GET route answers it, a POST-only one does not.
    expect((await SELF.fetch("http://edge/core/v1/version", { method: "HEAD" })).status).toBe(200);
    const head = await SELF.fetch("http://edge/core/v1/new_account", { method: "HEAD" });
    expect(head.status).toBe(405);
    expect(head.headers.get("allow")).toBe("OPTIONS, POST");
  });

  it("an unknown path is 404 not_found whatever the method; a CORS preflight of a POST-only path still answers", async () => {
    for (const method of ["GET", "POST", "PUT", "DELETE"]) {
      const res = await SELF.fetch("http://edge/core/v1/new_account_", { method });
      expect(res.status, method).toBe(404);
      expect(res.headers.get("allow")).toBeNull();
      expect((await errorOf(res)).code).toBe("not_found");
    }
    const preflight = await SELF.fetch("http://edge/core/v1/new_account", {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("a body that is not JSON is 400 invalid_json; a wrong type is 400 invalid_request with details", async () => {
    const bad = await SELF.fetch("http://edge/core/v1/get_sigil_action_ipfs_id", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{oops",
    });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).code).toBe("invalid_json");
    const wrong = await SELF.fetch("http://edge/core/v1/get_sigil_action_ipfs_id", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "42",
    });
    expect(wrong.status).toBe(400);
    const error = await errorOf(wrong);
    expect(error.code).toBe("invalid_request");
    expect(Array.isArray(error.details)).toBe(true);
  });

  it("a body without Content-Type: application/json is 400 invalid_json, never a 500", async () => {
    for (const headers of [{ "content-type": "text/plain" }, {}] as Array<Record<string, string>>) {
      const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_ipfs_id", {
        method: "POST",
        headers,
        body: JSON.stringify("x"),
      });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).code).toBe("invalid_json");
    }
  });

  it("with no enclave reachable, an endpoint that needs one answers 503 enclave_unavailable with Retry-After", async () => {
    const res = await SELF.fetch("http://edge/core/v1/new_account", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ account_name: "x" }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await errorOf(res)).code).toBe("enclave_unavailable");
  });

  it("get_sigil_action_client_config needs no enclave: the edge reports the run limits it is configured with", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_client_config");
    expect(res.status).toBe(200);
    // The defaults' values are pinned in shared/limits.test.ts.
    expect(await res.json()).toEqual(clientConfigOf(runLimitsSchema.parse({})));
  });
});

describe("the attestation endpoints", () => {
  it("answer 503 enclave_unavailable with Retry-After when no enclave is reachable", async () => {
    for (const path of ["/attestation", "/info", "/evidences/"]) {
      const res = await SELF.fetch(`http://edge${path}`);
      expect(res.status, path).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect((await errorOf(res)).code).toBe("enclave_unavailable");
    }
  });
});

describe("CORS", () => {
  it("answers a preflight from any origin and exposes the service's headers", async () => {
    const res = await SELF.fetch("http://edge/core/v1/version", {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-api-key",
      },
    });
    expect(res.status).toBeLessThan(300);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const get = await SELF.fetch("http://edge/core/v1/version", { headers: { origin: "https://app.example" } });
    expect(get.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
  });
});

describe("public endpoints", () => {
  it("get_sigil_action_ipfs_id answers the CIDv0 of the exact bytes, as a JSON string", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_ipfs_id", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify("hello world"),
    });
    expect(res.status).toBe(200);
    // `ipfs add` of the 11 bytes "hello world" (no newline).
    expect(await res.json()).toBe("Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD");
  });

  it("get_sigil_action_ipfs_id takes a script of max_code_bytes (4 MiB) as sigil_action does, and answers 413 one byte above it", async () => {
    const ipfsId = (code: string) =>
      SELF.fetch("http://edge/core/v1/get_sigil_action_ipfs_id", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(code),
      });
    const MAX_CODE_BYTES = 4 << 20;
    // Multi-byte characters: the limit counts the script's UTF-8 bytes, not its characters.
    const atLimit = `//${"é".repeat((MAX_CODE_BYTES - 2) / 2)}`;
    expect(new TextEncoder().encode(atLimit).byteLength).toBe(MAX_CODE_BYTES);
    const ok = await ipfsId(atLimit);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toBe(await computeCid(atLimit));
    const over = await ipfsId(`${atLimit}x`);
    expect(over.status).toBe(413);
    expect((await errorOf(over)).code).toBe("payload_too_large");
  });

  it("get_node_chain_config gives the chain and the EIP-712 domain", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_node_chain_config");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      chain_id: 31337,
      eip712_domain: { name: "Sigil ChainSecured", version: "1", chainId: 31337 },
    });
  });

  it("/health answers 503 when no enclave serves", async () => {
    const res = await SELF.fetch("http://edge/core/v1/health");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: "unavailable", account_event_listener_lag_seconds: null });
  });
});

describe("OpenAPI", () => {
  it("serves an OpenAPI 3.1 document listing every route, the Swagger UI, and redirects / to it", async () => {
    const res = await SELF.fetch("http://edge/core/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    for (const path of [
      "/core/v1/version",
      "/core/v1/get_node_chain_config",
      "/core/v1/get_sigil_action_ipfs_id",
      "/core/v1/get_sigil_action_client_config",
      "/core/v1/health",
    ]) {
      expect(doc.paths).toHaveProperty([path]);
    }
    const ui = await SELF.fetch("http://edge/core/v1/swagger-ui");
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain("swagger");
    const root = await SELF.fetch("http://edge/", { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/core/v1/swagger-ui");
  });
});
