// "No client mistake produces a 500" (docs/design/api.md, Conventions): for every operation of the edge's own
// OpenAPI document, send the mistakes a client can make — bodies that are not JSON, of the wrong
// type, missing fields, with an unknown field, over the size limit; keys that are garbage, a public
// hash, two different ones, none; an X-Wallet-Auth that is not one — and insist on a 4xx that the
// operation documents, with the one error body whose request_id is the X-Request-Id header, and on
// the exact status and code where docs/design/api.md fixes them. The cases come from the document, so a new
// route is swept as soon as it is served. Then what the document does not list: the attestation
// paths at the base URL (docs/design/api.md, Attestation; docs/design/attestation.md), which an enclave answers through
// the edge.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { errorStatus } from "../../shared/errors.ts";

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
  pattern?: string;
  minLength?: number;
  format?: string;
  enum?: unknown[];
  $ref?: string;
};
type Operation = {
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, unknown>;
};
type OpenApiDoc = {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
};

/** The statuses a client mistake may get (docs/design/api.md, Errors); 5xx is never one of them. */
const CLIENT_MISTAKE_STATUSES = [400, 401, 403, 404, 409, 413, 429];

/**
 * The body limits of the edge's routes (workers/routes/*.ts: `bodyLimit`): the routes that take a
 * script 6 MiB (docs/design/sandbox.md), the signature endpoints 64 KiB. Routes not listed set no limit of their own; the
 * oversized case sends them a body over the largest limit and still wants a 4xx.
 */
const BODY_LIMITS: Record<string, number> = {
  "/core/v1/sigil_action": 6 << 20,
  "/core/v1/get_sigil_action_ipfs_id": 6 << 20,
  "/core/v1/create_wallet_with_signature": 64 << 10,
  "/core/v1/add_usage_api_key_with_signature": 64 << 10,
  "/core/v1/convert_to_chain_secured_account": 64 << 10,
};
/** Every other route: the edge-wide limit (DEFAULT_BODY_LIMIT of the operation table, shared/operations.ts). */
const DEFAULT_LIMIT = 256 << 10;

const doc = (await (await SELF.fetch("http://edge/core/v1/openapi.json")).json()) as OpenApiDoc;

function deref(schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++)
    s = doc.components?.schemas?.[s.$ref.replace("#/components/schemas/", "")] ?? {};
  return s;
}

/** A value that looks right for `schema` (it need not pass every rule: the unknown field fails it anyway). */
function sample(schema: Schema | undefined): unknown {
  const s = deref(schema);
  if (s.enum?.length) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf;
  if (alt?.length) return sample(alt[alt.length - 1]);
  if (s.allOf?.length) return sample(s.allOf[0]);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  switch (type) {
    case "string":
      if (s.pattern?.includes("{64}")) return `0x${"ab".repeat(32)}`;
      if (s.pattern?.includes("{40}")) return `0x${"11".repeat(20)}`;
      if (s.pattern?.includes("\\d")) return "1";
      if (s.format === "email") return "a@example.com";
      return "x".repeat(Math.max(1, s.minLength ?? 1));
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, sample(v)]));
    default:
      return {};
  }
}

type Case = {
  name: string;
  headers?: Record<string, string>;
  body?: string;
  query?: string;
  /** The exact answer the case must get, when the conventions fix it. */
  expect?: { status: number; code: string };
  /** A details message that must be among the answer's (invalid_request). */
  detail?: RegExp;
  /** invalid_request's details must be `{path, message}` entries, one of them at one of these fields. */
  detailPaths?: string[];
};

const wellFormedKey = generateApiKey(); // a key nobody holds: it passes the format check, so the body is looked at
const JSON_HEADERS = { "content-type": "application/json" };

/**
 * The master key of a real account (billing is off in this project, so it may write): a body of
 * the wrong type is refused as such even from a caller who may do everything.
 */
const validKey = await (async () => {
  const res = await SELF.fetch("http://edge/core/v1/new_account", {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({ account_name: "sweep" }),
  });
  const body = (await res.json()) as { api_key?: string };
  if (res.status !== 200 || typeof body.api_key !== "string")
    throw new Error(`new_account answered ${res.status}: ${JSON.stringify(body)}`);
  return body.api_key;
})();

/**
 * A body that is not JSON (docs/design/api.md, Conventions: "a body that is not JSON → 400"): malformed, absent,
 * or sent with a content type other than JSON. All three are the one answer, 400 invalid_json (the
 * edge cannot read a JSON body it was not sent).
 */
const NOT_JSON = { status: 400, code: "invalid_json" };
/**
 * Routes whose body is signed by its sender (Stripe's webhook): an unsigned request is refused
 * before its body is looked at, with docs/design/api.md's 400 invalid_signature (the one code whose status
 * differs from its usual one).
 */
const SIGNED_BODY_ROUTES = new Set(["/core/v1/billing/webhook"]);
const UNSIGNED = { status: 400, code: "invalid_signature" };

const base64url = (text: string) => btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
/** The WalletAuth security scheme of the document: billing's alternative to a key (docs/design/api.md, Billing). */
const WALLET_AUTH_SCHEME = "WalletAuth";
/**
 * X-Wallet-Auth values that are not base64url(JSON {"typed_data", "signature"}): docs/design/api.md (Signature
 * endpoints) answers each with 401 invalid_signature.
 */
const GARBAGE_WALLET_AUTH: Array<[label: string, value: string]> = [
  ["not base64url", "garbage!!"],
  ["base64url of text that is not JSON", base64url("not json at all")],
  ["base64url JSON without a signature", base64url(JSON.stringify({ typed_data: {} }))],
];
/**
 * A body each X-Wallet-Auth operation accepts, so the header is what is judged (the body is
 * validated before the handler reads the header).
 */
const VALID_BODIES: Record<string, unknown> = {
  "/core/v1/billing/create_payment_intent": { amount_cents: 500 },
  "/core/v1/billing/confirm_payment": { payment_intent_id: "pi_sweep0000000000" },
  "/core/v1/webhooks": { url: "http://127.0.0.1:9/sweep" },
  "/core/v1/webhooks/settings": { balance_low_cents: 0 },
};
const takesWalletAuth = (op: Operation) => (op.security ?? []).some((requirement) => WALLET_AUTH_SCHEME in requirement);

function casesFor(path: string, op: Operation): Case[] {
  const keyed = (op.security?.length ?? 0) > 0;
  const auth: Record<string, string> = keyed ? { "x-api-key": wellFormedKey } : {};
  const cases: Case[] = [];
  const bodySchema = op.requestBody?.content?.["application/json"]?.schema;
  if (op.requestBody) {
    const schema = deref(bodySchema);
    const isObject = schema.type === "object";
    const headers = { ...JSON_HEADERS, ...auth };
    cases.push({ name: "malformed JSON", headers, body: '{"oops": ', expect: NOT_JSON });
    cases.push({
      name: "JSON sent as text/plain",
      headers: { ...auth, "content-type": "text/plain" },
      body: JSON.stringify(sample(bodySchema)),
      expect: NOT_JSON,
    });
    cases.push({ name: "no body at all", headers, expect: NOT_JSON });
    cases.push({ name: "a JSON array", headers, body: "[1, 2]", expect: { status: 400, code: "invalid_request" } });
    cases.push({ name: "a JSON number", headers, body: "42", expect: { status: 400, code: "invalid_request" } });
    cases.push({ name: "JSON null", headers, body: "null", expect: { status: 400, code: "invalid_request" } });
    cases.push({
      name: "an empty object",
      headers,
      body: "{}",
      ...(isObject && (schema.required?.length ?? 0) > 0 ? { expect: { status: 400, code: "invalid_request" } } : {}),
    });
    if (isObject) {
      cases.push({
        name: "a valid-looking body plus an unknown field",
        headers,
        body: JSON.stringify({ ...(sample(bodySchema) as object), surely_not_a_field: true }),
        expect: { status: 400, code: "invalid_request" },
        detail: /surely_not_a_field/,
      });
      const fields = Object.keys(schema.properties ?? {});
      if (fields.length > 0) {
        cases.push({
          name: "every field of the wrong type, with a valid key",
          headers: { ...JSON_HEADERS, ...(keyed ? { "x-api-key": validKey } : {}) },
          body: JSON.stringify(Object.fromEntries(fields.map((k) => [k, { nested: [true] }]))),
          expect: { status: 400, code: "invalid_request" },
          detailPaths: fields,
        });
      }
    } else {
      cases.push({
        name: "an object instead of the declared type",
        headers,
        body: JSON.stringify({ surely_not_a_field: true }),
        expect: { status: 400, code: "invalid_request" },
      });
    }
    const limit = BODY_LIMITS[path] ?? DEFAULT_LIMIT;
    const size = limit + 1;
    const filler = "x".repeat(size);
    const firstString =
      Object.entries(schema.properties ?? {}).find(([, v]) => deref(v).type === "string")?.[0] ?? "padding";
    cases.push({
      name: `a body over the size limit (${size} bytes)`,
      headers,
      body: isObject
        ? JSON.stringify({ ...(sample(bodySchema) as object), [firstString]: filler })
        : JSON.stringify(filler),
      expect: { status: 413, code: "payload_too_large" },
    });
  }
  const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
  if (query.includes("page_size")) {
    cases.push({
      name: "page_size over 100",
      headers: auth,
      query: "?page_size=101",
      expect: { status: 400, code: "invalid_request" },
    });
    cases.push({
      name: "a negative page_number",
      headers: auth,
      query: "?page_number=-1",
      expect: { status: 400, code: "invalid_request" },
    });
    cases.push({
      name: "a page_size that is not a number",
      headers: auth,
      query: "?page_size=ten",
      expect: { status: 400, code: "invalid_request" },
    });
  }
  if (query.includes("group_id")) {
    cases.push({
      name: "a group_id that is not a number",
      headers: auth,
      query: "?group_id=abc",
      expect: { status: 400, code: "invalid_request" },
    });
    cases.push({
      name: "a group_id over u64",
      headers: auth,
      query: `?group_id=${"9".repeat(25)}`,
      expect: { status: 400, code: "invalid_request" },
    });
  }
  if (keyed) {
    // Auth is checked before the body (workers/routes/openapi.ts, requireKey), so a valid-looking
    // body gets the key's error whatever it holds.
    const body = op.requestBody ? JSON.stringify(sample(bodySchema)) : undefined;
    const withBody = (headers: Record<string, string>) => ({
      headers: body === undefined ? headers : { ...JSON_HEADERS, ...headers },
      ...(body === undefined ? {} : { body }),
    });
    cases.push({
      name: "a garbage key",
      ...withBody({ "x-api-key": "garbage" }),
      expect: { status: 401, code: "invalid_api_key" },
    });
    cases.push({
      name: "a 64-hex hash as the key",
      ...withBody({ "x-api-key": "ab".repeat(32) }),
      expect: { status: 401, code: "invalid_api_key" },
    });
    cases.push({
      name: "a 0x hash as the Bearer key",
      ...withBody({ authorization: `Bearer 0x${"ab".repeat(32)}` }),
      expect: { status: 401, code: "invalid_api_key" },
    });
    cases.push({
      name: "an Authorization header that is not Bearer",
      ...withBody({ authorization: `Basic ${wellFormedKey}` }),
      expect: { status: 401, code: "invalid_api_key" },
    });
    cases.push({
      name: "conflicting X-Api-Key and Authorization",
      ...withBody({ "x-api-key": wellFormedKey, authorization: `Bearer ${generateApiKey()}` }),
      expect: { status: 400, code: "conflicting_credentials" },
    });
    cases.push({ name: "no key", ...withBody({}), expect: { status: 401, code: "missing_api_key" } });
    cases.push({
      name: "an empty key",
      ...withBody({ "x-api-key": "" }),
      expect: { status: 401, code: "missing_api_key" },
    });
  }
  if (takesWalletAuth(op)) {
    const body = VALID_BODIES[path];
    for (const [label, value] of GARBAGE_WALLET_AUTH) {
      cases.push({
        name: `an X-Wallet-Auth that is ${label}`,
        headers: { ...(op.requestBody ? JSON_HEADERS : {}), "x-wallet-auth": value },
        ...(op.requestBody && body !== undefined ? { body: JSON.stringify(body) } : {}),
        expect: { status: 401, code: "invalid_signature" },
      });
    }
  }
  if (SIGNED_BODY_ROUTES.has(path))
    return cases.map(({ detail: _, detailPaths: __, ...c }) =>
      c.expect?.status === 413 ? c : { ...c, expect: UNSIGNED },
    );
  return cases;
}

const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, op, cases: casesFor(path, op) })),
);

describe("the sweep itself", () => {
  it("found the edge's operations in its OpenAPI document, with keyed and body routes among them", () => {
    expect(operations.length).toBeGreaterThanOrEqual(30);
    expect(operations.some((o) => o.op.security?.length)).toBe(true);
    expect(operations.some((o) => o.op.requestBody)).toBe(true);
    expect(operations.filter((o) => o.cases.length > 0).length).toBeGreaterThanOrEqual(25);
  });

  it("found billing's X-Wallet-Auth operations, and has a valid body for each that takes one", () => {
    const walletAuthOps = operations.filter((o) => takesWalletAuth(o.op));
    expect(walletAuthOps.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      expect.arrayContaining([
        "GET /core/v1/billing/balance",
        "POST /core/v1/billing/confirm_payment",
        "POST /core/v1/billing/create_payment_intent",
      ]),
    );
    for (const o of walletAuthOps)
      if (o.op.requestBody) expect(VALID_BODIES[o.path], `a valid body for ${o.method} ${o.path}`).toBeDefined();
  });
});

for (const { method, path, op, cases } of operations.filter((o) => o.cases.length > 0)) {
  describe(`${method} ${path}`, () => {
    for (const c of cases) {
      it(`${method} ${path}: ${c.name} → ${c.expect ? `${c.expect.status} ${c.expect.code}` : "a documented 4xx"} with the error body`, async () => {
        const res = await SELF.fetch(`http://edge${path}${c.query ?? ""}`, {
          method,
          headers: c.headers ?? {},
          ...(c.body === undefined ? {} : { body: c.body }),
        });
        const text = await res.text();
        const summary = `${res.status} ${text.slice(0, 500)}`;
        expect(CLIENT_MISTAKE_STATUSES, summary).toContain(res.status);
        // The document lists what the operation answers: a client mistake it gets is one of them.
        expect(Object.keys(op.responses ?? {}), `${res.status} is documented for ${method} ${path}`).toContain(
          String(res.status),
        );
        let body: {
          error?: {
            code?: unknown;
            message?: unknown;
            request_id?: unknown;
            details?: Array<{ path: string; message: string }>;
          };
        };
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          throw new Error(`the answer is not JSON: ${summary}`);
        }
        const error = body.error;
        expect(error, summary).toBeTypeOf("object");
        expect(error?.code, summary).toBeTypeOf("string");
        const usualStatus =
          SIGNED_BODY_ROUTES.has(path) && error?.code === UNSIGNED.code
            ? UNSIGNED.status
            : errorStatus[error?.code as keyof typeof errorStatus];
        expect(usualStatus, `${String(error?.code)} is a documented code of this status`).toBe(res.status);
        expect(error?.message, summary).toBeTypeOf("string");
        expect((error?.message as string).length).toBeGreaterThan(0);
        expect(error?.request_id).toBe(res.headers.get("x-request-id"));
        if (res.status === 429) expect(res.headers.get("retry-after")).not.toBeNull();
        if (c.expect) {
          expect({ status: res.status, code: error?.code }, summary).toEqual(c.expect);
        }
        if (c.detail) {
          expect(
            error?.details?.some((d) => c.detail?.test(d.message)),
            summary,
          ).toBe(true);
        }
        if (c.detailPaths) {
          expect(
            Array.isArray(error?.details) && error.details.length > 0,
            `details is a non-empty list: ${summary}`,
          ).toBe(true);
          for (const d of error?.details ?? [])
            expect(d, summary).toEqual({ path: expect.any(String), message: expect.any(String) });
          expect(
            error?.details?.some((d) => c.detailPaths?.includes(d.path.split(".")[0] as string)),
            `a detail names one of ${c.detailPaths.join(", ")}: ${summary}`,
          ).toBe(true);
        }
      });
    }
  });
}

// ─── what the OpenAPI document does not list ──────────────────────────────────────────────────
// The attestation paths at the base URL (docs/design/api.md, Attestation): an enclave answers them and the edge
// passes the answer through, so its errors must still be the one error body, with the edge's
// request id, and never a 5xx.

type ErrorBody = {
  error?: {
    code?: unknown;
    message?: unknown;
    request_id?: unknown;
    details?: Array<{ path: string; message: string }>;
  };
};

async function expectErrorBody(res: Response, status: number, code: string): Promise<NonNullable<ErrorBody["error"]>> {
  const text = await res.text();
  const summary = `${res.status} ${text.slice(0, 500)}`;
  expect(res.status, summary).toBe(status);
  expect(res.headers.get("content-type"), summary).toMatch(/^application\/json/);
  const error = (JSON.parse(text) as ErrorBody).error;
  expect(error?.code, summary).toBe(code);
  expect(error?.message, summary).toEqual(expect.stringMatching(/\S/));
  expect(error?.request_id, summary).toBe(res.headers.get("x-request-id"));
  return error!;
}

describe("GET /attestation?nonce=…", () => {
  const badNonces: Array<[label: string, query: string]> = [
    ["not hex", "nonce=zz"],
    ["an odd number of hex digits", "nonce=abc"],
    ["empty", "nonce="],
    ["only 0x", "nonce=0x"],
    ["over 32 bytes", `nonce=${"ab".repeat(33)}`],
    ["hex with a space inside", "nonce=ab%20cd"],
    ["given twice", "nonce=aa&nonce=bb"],
  ];
  for (const [label, query] of badNonces) {
    it(`a nonce that is ${label} → 400 invalid_request naming the nonce, with the error body`, async () => {
      const error = await expectErrorBody(await SELF.fetch(`http://edge/attestation?${query}`), 400, "invalid_request");
      expect(error.details?.map((d) => d.path)).toEqual(["nonce"]);
    });
  }

  it("a nonce of 32 bytes (the largest) → 200 with a fresh quote, so the refusals above are about the nonce", async () => {
    const res = await SELF.fetch(`http://edge/attestation?nonce=0x${"ab".repeat(32)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toMatchObject({
      quote: expect.stringMatching(/^[0-9a-f]+$/),
      event_log: expect.any(String),
    });
  });
});

describe("GET /info", () => {
  it("answers 200 with the app's identity and tcb_info as an object, whatever the query string holds", async () => {
    for (const query of ["", "?nonce=zz", "?x=%00"]) {
      const res = await SELF.fetch(`http://edge/info${query}`);
      expect(res.status, query).toBe(200);
      const info = (await res.json()) as Record<string, unknown>;
      expect(info, query).toMatchObject({
        app_id: expect.any(String),
        compose_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        instance_id: expect.any(String),
      });
      expect(info.tcb_info, query).toMatchObject({ app_compose: expect.any(String) });
    }
  });
});

describe("GET /evidences/…", () => {
  for (const name of ["no-such-file.json", "quote.json.bak", "..%2F..%2Fetc%2Fpasswd", "sha256sum.txt%00"]) {
    it(`an evidence file that does not exist (${name}) → 404 not_found with the error body`, async () => {
      await expectErrorBody(await SELF.fetch(`http://edge/evidences/${name}`), 404, "not_found");
    });
  }
});

describe("the attestation paths with a method they do not serve", () => {
  for (const path of ["/attestation", "/info", "/evidences/sha256sum.txt"]) {
    for (const method of ["POST", "PUT", "DELETE"]) {
      it(`${method} ${path} → 405 method_not_allowed with Allow and the error body`, async () => {
        const res = await SELF.fetch(`http://edge${path}`, { method, headers: JSON_HEADERS, body: "{}" });
        expect(res.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
        await expectErrorBody(res, 405, "method_not_allowed");
      });
    }
  }
});
