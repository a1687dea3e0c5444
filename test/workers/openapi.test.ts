// The edge's OpenAPI document (docs/design/api.md, Conventions: OpenAPI) as the running edge serves it. Its
// validity against the official OpenAPI 3.1 schema is test/unit/openapi.test.ts's (a real
// validator, @seriousme/openapi-schema-validator); these are the rules the schema cannot state —
// every operation with responses, its 2xx answer and its request body each with a JSON schema
// (not only a description), errors with the one error body, every $ref resolving, security naming
// declared schemes, parameters well-formed, request bodies JSON — plus every route of docs/design/api.md's
// endpoint tables served with its method and auth.
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };
type Doc = Obj & {
  openapi: string;
  info: Obj;
  paths: Record<string, Record<string, Obj>>;
  components?: Record<string, Record<string, Obj>>;
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const PATH_ITEM_FIELDS = [...METHODS, "$ref", "summary", "description", "servers", "parameters"];
const TOP_LEVEL_FIELDS = [
  "openapi",
  "info",
  "jsonSchemaDialect",
  "servers",
  "paths",
  "webhooks",
  "components",
  "security",
  "tags",
  "externalDocs",
];
const isExtension = (k: string) => k.startsWith("x-");

/**
 * docs/design/api.md's endpoint tables under /core/v1 (Accounts and keys, Wallets, Groups and actions,
 * Execution, Public information, Signature endpoints, Billing), with their auth: `none`, or `key` for
 * `key`, `acct` and `header` (all of them read the caller's key from a header), and the capability
 * they are tagged with (docs/design/api.md's sections, the signature endpoints apart).
 */
const API_MD_ROUTES: Array<[method: string, path: string, auth: "none" | "key", tag: string]> = [
  ["post", "/new_account", "none", "Accounts"],
  ["get", "/account_exists", "key", "Accounts"],
  // Added after docs/design/api.md (issue 29): the account's name and id for the dashboard's header.
  ["get", "/get_account", "key", "Accounts"],
  ["post", "/add_usage_api_key", "key", "Usage keys"],
  ["post", "/update_usage_api_key", "key", "Usage keys"],
  ["post", "/update_usage_api_key_metadata", "key", "Usage keys"],
  ["post", "/remove_usage_api_key", "key", "Usage keys"],
  ["post", "/set_usage_key_guardrail", "key", "Usage keys"],
  ["get", "/get_usage_key_guardrail", "key", "Usage keys"],
  ["get", "/list_api_keys", "key", "Usage keys"],
  // Added after docs/design/api.md (issue 33): delegated keys minted from a usage key, and revoked.
  ["post", "/delegate_key", "key", "Usage keys"],
  ["post", "/revoke_delegation", "key", "Usage keys"],
  ["post", "/create_wallet", "key", "Wallets"],
  ["get", "/create_wallet", "key", "Wallets"],
  ["get", "/list_wallets", "key", "Wallets"],
  ["get", "/list_wallets_in_group", "key", "Wallets"],
  // Added after docs/design/api.md (issue 29): a wallet's balance on the chain, for the dashboard's wallet page.
  ["get", "/get_wallet_balance", "key", "Wallets"],
  // Added after docs/design/api.md (issue 30): what a wallet may sign, set by the master key and read by any key.
  ["post", "/set_wallet_guardrail", "key", "Wallets"],
  ["get", "/get_wallet_guardrail", "key", "Wallets"],
  ["get", "/get_wallet_budgets", "key", "Wallets"],
  ["post", "/check_guardrail", "key", "Wallets"],
  ["post", "/add_group", "key", "Groups"],
  ["get", "/list_groups", "key", "Groups"],
  ["post", "/remove_group", "key", "Groups"],
  ["post", "/update_group", "key", "Groups"],
  ["post", "/add_action_to_group", "key", "Groups"],
  ["post", "/remove_action_from_group", "key", "Groups"],
  ["post", "/add_pkp_to_group", "key", "Groups"],
  ["post", "/remove_pkp_from_group", "key", "Groups"],
  ["post", "/add_action", "key", "Actions"],
  ["post", "/delete_action", "key", "Actions"],
  ["post", "/update_action_metadata", "key", "Actions"],
  ["get", "/list_actions", "key", "Actions"],
  ["post", "/get_sigil_action_ipfs_id", "none", "Actions"],
  ["post", "/sigil_action", "key", "Execution"],
  ["get", "/get_sigil_action_client_config", "none", "Execution"],
  ["get", "/get_node_chain_config", "none", "Public"],
  ["get", "/get_api_payers", "none", "Public"],
  ["get", "/get_admin_api_payer", "none", "Public"],
  ["get", "/health", "none", "Public"],
  ["get", "/version", "none", "Public"],
  ["post", "/create_wallet_with_signature", "none", "Signatures"],
  ["post", "/convert_to_chain_secured_account", "key", "Signatures"],
  ["post", "/add_usage_api_key_with_signature", "none", "Signatures"],
  // The transactions scripts sent with sendTransaction (issue 32).
  ["get", "/transactions", "key", "Execution"],
  // The audit log (issue 14): a key, or X-Wallet-Auth as on billing's reads.
  ["get", "/audit", "key", "Audit"],
  // Billing: the keyed ones also take X-Wallet-Auth instead of a key.
  ["get", "/billing/stripe_config", "none", "Billing"],
  ["get", "/billing/balance", "key", "Billing"],
  ["post", "/billing/create_payment_intent", "key", "Billing"],
  ["post", "/billing/confirm_payment", "key", "Billing"],
  ["post", "/billing/webhook", "none", "Billing"],
  // Added after docs/design/api.md (issue 14): the usage history, keyed like the billing reads.
  ["get", "/usage", "key", "Billing"],
  // Users' webhooks (issue 14; not yet in docs/design/api.md's tables: the README's Webhooks section is their
  // description until it is): the master key, or X-Wallet-Auth like billing.
  ["post", "/webhooks", "key", "Webhooks"],
  ["get", "/webhooks", "key", "Webhooks"],
  ["delete", "/webhooks/{webhook_id}", "key", "Webhooks"],
  ["get", "/webhooks/{webhook_id}/deliveries", "key", "Webhooks"],
  ["post", "/webhooks/{webhook_id}/deliveries/{delivery_id}/resend", "key", "Webhooks"],
  ["get", "/webhooks/settings", "key", "Webhooks"],
  ["put", "/webhooks/settings", "key", "Webhooks"],
];

/**
 * docs/design/api.md's attestation endpoints, at the base URL rather than under /core/v1 (docs/design/attestation.md,
 * Endpoints): none is keyed; each may be pinned to an instance (issue 11, point 15).
 */
const ATTESTATION_ROUTES: Array<[method: string, path: string]> = [
  ["get", "/attestation"],
  ["get", "/attestation/simulated-collateral"],
  // The key run receipts are signed with (issue 14, point 4; docs/guides/receipts.md, Run receipts).
  ["get", "/attestation/receipt-key"],
  // Where a receipt is anchored on chain (issue 34; docs/guides/receipts.md, Anchored receipts).
  ["get", "/attestation/receipt-anchor"],
  ["get", "/info"],
  ["get", "/evidences/"],
  ["get", "/evidences/{name}"],
];
const ATTESTATION_PATHS = new Set(ATTESTATION_ROUTES.map(([, p]) => p));

/**
 * An operation's operationId (the SDK's method name) is its endpoint's name — the path's last
 * segment, `billing/` dropped — in camelCase; these are the exceptions: an endpoint named by a noun
 * takes a verb, and the specification's GET alias of POST /create_wallet a name of its own.
 */
const OPERATION_ID_EXCEPTIONS: Record<string, string> = {
  "get /core/v1/version": "getVersion",
  "get /core/v1/health": "getHealth",
  "get /core/v1/billing/balance": "getBalance",
  "get /core/v1/billing/stripe_config": "getStripeConfig",
  "post /core/v1/billing/webhook": "stripeWebhook",
  "get /core/v1/create_wallet": "createWalletByGet",
  "get /core/v1/usage": "listUsage",
  "get /core/v1/transactions": "listTransactions",
  // The webhook routes are REST-shaped (a resource and its sub-resources): each takes a verb.
  "post /core/v1/webhooks": "createWebhook",
  "get /core/v1/webhooks": "listWebhooks",
  "delete /core/v1/webhooks/{webhook_id}": "deleteWebhook",
  "get /core/v1/webhooks/{webhook_id}/deliveries": "listWebhookDeliveries",
  "post /core/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend": "resendWebhookDelivery",
  "get /core/v1/webhooks/settings": "getWebhookSettings",
  "put /core/v1/webhooks/settings": "updateWebhookSettings",
  "get /attestation": "getAttestation",
  "get /attestation/simulated-collateral": "getSimulatedCollateral",
  "get /attestation/receipt-key": "getReceiptKey",
  "get /attestation/receipt-anchor": "getReceiptAnchor",
  "get /info": "getInfo",
  "get /evidences/": "listEvidences",
  "get /evidences/{name}": "getEvidence",
};
const camelCase = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The document's tags, one per capability, in this order. */
const TAG_NAMES = [
  "Accounts",
  "Usage keys",
  "Wallets",
  "Groups",
  "Actions",
  "Execution",
  "Signatures",
  "Audit",
  "Billing",
  "Webhooks",
  "Public",
  "Attestation",
];

/** Operations that are neither GET nor take a body: they are named entirely by their path. */
const BODYLESS = new Set([
  "delete /core/v1/webhooks/{webhook_id}",
  "post /core/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend",
]);

/** The 4xx statuses of docs/design/api.md's Errors table an operation may answer (405 answers a method it does not have), and 408 body_timeout, which the table lacks. */
const OPERATION_4XX = ["400", "401", "402", "403", "404", "408", "409", "413", "422", "429"];

let doc: Doc;

beforeAll(async () => {
  const res = await SELF.fetch("http://edge/core/v1/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await res.json()) as Doc;
});

function operations(): Array<{ method: string; path: string; op: Obj }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ method, path, op })),
  );
}

/** Resolves a local JSON pointer (`#/a/b~1c`) in the document; undefined when it names nothing. */
function resolve(ref: string): Json | undefined {
  if (!ref.startsWith("#")) return undefined;
  let node: Json | undefined = doc;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[Number(key)] : node[key];
  }
  return node;
}

/**
 * Why `schema` (a response's or a request body's) does not describe a JSON value, or undefined when
 * it does: it must have a type (or a $ref, or alternatives, or an enum/const); an object lists its
 * properties, an array its items. A schema of only a description accepts anything and says nothing.
 */
function schemaGap(schema: Json | undefined): string | undefined {
  if (schema === undefined || schema === null || typeof schema !== "object" || Array.isArray(schema))
    return "no schema";
  const s = (typeof schema.$ref === "string" ? resolve(schema.$ref) : schema) as Obj | undefined;
  if (s === undefined || s === null || typeof s !== "object") return `an unresolved $ref ${String(schema.$ref)}`;
  const alternatives = (["anyOf", "oneOf", "allOf"] as const).flatMap((k) =>
    Array.isArray(s[k]) ? (s[k] as Json[]) : [],
  );
  if (alternatives.length > 0) return alternatives.map(schemaGap).find((gap) => gap !== undefined);
  if (Array.isArray(s.enum) || "const" in s) return undefined;
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  if (types.length === 0) return `only ${Object.keys(s).join(", ") || "nothing"}, no type`;
  if (
    types.includes("object") &&
    Object.keys((s.properties ?? {}) as Obj).length === 0 &&
    typeof s.additionalProperties !== "object"
  )
    return "an object without properties";
  if (types.includes("array") && (s.items === undefined || s.items === null)) return "an array without items";
  return undefined;
}

/** Bodies the edge documents but does not validate: Stripe's signed event, read as exact bytes. */
const UNVALIDATED_BODIES = new Set(["post /core/v1/billing/webhook"]);

function walk(node: Json, at: string, visit: (node: Obj, at: string) => void): void {
  if (Array.isArray(node)) node.forEach((n, i) => walk(n, `${at}/${i}`, visit));
  else if (node !== null && typeof node === "object") {
    visit(node, at);
    for (const [k, v] of Object.entries(node)) walk(v, `${at}/${k}`, visit);
  }
}

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 with info.title and info.version, and only the fields 3.1 defines at the top", () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.title).toBeTypeOf("string");
    expect(doc.info.version).toBeTypeOf("string");
    for (const k of Object.keys(doc))
      expect(TOP_LEVEL_FIELDS.includes(k) || isExtension(k), `top-level field ${k}`).toBe(true);
  });

  it("has paths under /core/v1 (or api.md's attestation endpoints at the base URL), path items with only 3.1's fields, and at least one operation each", () => {
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!ATTESTATION_PATHS.has(path)) expect(path).toMatch(/^\/core\/v1\//);
      for (const k of Object.keys(item))
        expect(PATH_ITEM_FIELDS.includes(k) || isExtension(k), `${path}: field ${k}`).toBe(true);
      expect(
        Object.keys(item).some((k) => METHODS.includes(k)),
        `${path} has an operation`,
      ).toBe(true);
    }
  });

  it("gives every operation responses: status codes (or default) each with a description, errors with the one error body", () => {
    for (const { method, path, op } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const responses = op.responses as Record<string, Obj> | undefined;
      expect(responses, where).toBeTypeOf("object");
      expect(Object.keys(responses ?? {}).length, where).toBeGreaterThan(0);
      expect(
        Object.keys(responses ?? {}).some((s) => /^2\d\d$/.test(s)),
        `${where} has a 2xx answer`,
      ).toBe(true);
      for (const [status, response] of Object.entries(responses ?? {})) {
        expect(status, where).toMatch(/^([1-5](\d\d|XX)|default)$/);
        const r = (typeof response.$ref === "string" ? resolve(response.$ref) : response) as Obj;
        expect(r.description, `${where} ${status} has a description`).toBeTypeOf("string");
        if (/^[45]/.test(status)) {
          const schema = (r.content as Record<string, Obj> | undefined)?.["application/json"]?.schema as
            | Obj
            | undefined;
          expect(schema, `${where} ${status} declares its body`).toBeTypeOf("object");
          // /health's 503 is its report, not an error (docs/design/api.md: "200 when serving, 503 when not").
          if (path === "/core/v1/health" && status === "503") {
            expect(schema).toEqual(
              ((responses?.["200"]?.content as Record<string, Obj>)["application/json"] as Obj).schema,
            );
            continue;
          }
          const s = (typeof schema?.$ref === "string" ? resolve(schema.$ref) : schema) as Obj;
          const error = (s.properties as Record<string, Obj>).error as Obj;
          const e = (typeof error.$ref === "string" ? resolve(error.$ref) : error) as Obj;
          expect(Object.keys(e.properties as Obj), `${where} ${status}`).toEqual(
            expect.arrayContaining(["code", "message", "request_id"]),
          );
          expect(e.required, `${where} ${status}`).toEqual(expect.arrayContaining(["code", "message", "request_id"]));
        }
      }
    }
  });

  it("gives every operation's 2xx answer a JSON schema of its body (a type, an object's properties, an array's items), not only a description", () => {
    const gaps: string[] = [];
    let answers = 0;
    for (const { method, path, op } of operations()) {
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Obj>)) {
        if (!/^2/.test(status)) continue;
        answers++;
        const r = (typeof response.$ref === "string" ? resolve(response.$ref) : response) as Obj;
        const content = (r.content ?? {}) as Record<string, Obj>;
        // The evidence files are what dstack-ingress makes: HTML, text and PEM as well as JSON, each with its schema.
        const gap =
          ATTESTATION_PATHS.has(path) && path.startsWith("/evidences/")
            ? Object.keys(content).length === 0
              ? "no content"
              : Object.entries(content)
                  .map(([type, c]) =>
                    type === "application/json"
                      ? schemaGap(c.schema)
                      : c.schema === undefined
                        ? `${type} without a schema`
                        : undefined,
                  )
                  .find((g) => g !== undefined)
            : content["application/json"] === undefined
              ? "no application/json content"
              : schemaGap(content["application/json"].schema);
        if (gap) gaps.push(`${method.toUpperCase()} ${path} ${status}: ${gap}`);
      }
    }
    expect(answers).toBeGreaterThanOrEqual(operations().length);
    expect(gaps).toEqual([]);
  });

  it("documents a request body with a JSON schema for every operation that takes one (every POST but the path-named ones), and none for a GET", () => {
    const gaps: string[] = [];
    for (const { method, path, op } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const body = (
        typeof (op.requestBody as Obj | undefined)?.$ref === "string"
          ? resolve((op.requestBody as Obj).$ref as string)
          : op.requestBody
      ) as Obj | undefined;
      if (method === "get" || BODYLESS.has(`${method} ${path}`)) {
        if (body !== undefined) gaps.push(`${where}: a ${method.toUpperCase()} with a body`);
        continue;
      }
      if (body === undefined) {
        gaps.push(`${where}: no request body documented`);
        continue;
      }
      const gap = schemaGap(((body.content ?? {}) as Record<string, Obj>)["application/json"]?.schema);
      if (gap) gaps.push(`${where} request body: ${gap}`);
    }
    expect(gaps).toEqual([]);
  });

  it("resolves every $ref, and every one is a local reference", () => {
    const refs: string[] = [];
    walk(doc, "#", (node, at) => {
      if (typeof node.$ref === "string") {
        refs.push(node.$ref);
        expect(node.$ref, at).toMatch(/^#\//);
        expect(resolve(node.$ref), `${at}: ${node.$ref}`).toBeDefined();
      }
    });
    // The document may inline every schema; whatever it references must resolve.
    for (const ref of refs) expect(resolve(ref)).not.toBeUndefined();
  });

  it("names only declared security schemes, of valid types", () => {
    const schemes = (doc.components?.securitySchemes ?? {}) as Record<string, Obj>;
    for (const [name, s] of Object.entries(schemes)) {
      expect(["apiKey", "http", "mutualTLS", "oauth2", "openIdConnect"], name).toContain(s.type);
      if (s.type === "apiKey") expect(["query", "header", "cookie"]).toContain(s.in);
      if (s.type === "http") expect(s.scheme).toBeTypeOf("string");
    }
    for (const { method, path, op } of operations()) {
      for (const requirement of (op.security ?? []) as Obj[]) {
        for (const name of Object.keys(requirement))
          expect(Object.keys(schemes), `${method} ${path} names ${name}`).toContain(name);
      }
    }
  });

  it("has well-formed parameters: a name, a valid `in`, path parameters required and in the template", () => {
    for (const { method, path, op } of operations()) {
      const params = ((op.parameters ?? []) as Obj[]).map(
        (p) => (typeof p.$ref === "string" ? resolve(p.$ref) : p) as Obj,
      );
      const seen = new Set<string>();
      for (const p of params) {
        const where = `${method.toUpperCase()} ${path} parameter ${String(p.name)}`;
        expect(p.name, where).toBeTypeOf("string");
        expect(["query", "header", "path", "cookie"], where).toContain(p.in);
        expect(p.schema ?? p.content, `${where} has a schema`).toBeDefined();
        expect(seen.has(`${String(p.in)}:${String(p.name)}`), `${where} is not repeated`).toBe(false);
        seen.add(`${String(p.in)}:${String(p.name)}`);
        if (p.in === "path") {
          expect(p.required, where).toBe(true);
          expect(path, where).toContain(`{${String(p.name)}}`);
        }
      }
      for (const [, name] of path.matchAll(/\{([^}]+)\}/g))
        expect(
          params.some((p) => p.in === "path" && p.name === name),
          `${path}: {${name}} is declared`,
        ).toBe(true);
    }
  });

  it("declares every request body as application/json with a schema", () => {
    let bodies = 0;
    for (const { method, path, op } of operations()) {
      if (op.requestBody === undefined) continue;
      bodies++;
      const where = `${method.toUpperCase()} ${path}`;
      const body = (
        typeof (op.requestBody as Obj).$ref === "string"
          ? resolve((op.requestBody as Obj).$ref as string)
          : op.requestBody
      ) as Obj;
      const content = body.content as Record<string, Obj>;
      expect(Object.keys(content), where).toEqual(["application/json"]);
      const schema = content["application/json"]?.schema as Obj | undefined;
      expect(schema, where).toBeTypeOf("object");
      expect(Object.keys(schema ?? {}).length, `${where}: a schema that says something`).toBeGreaterThan(0);
      // Unknown fields are rejected (docs/design/api.md), so an object body says so.
      if (schema?.type === "object" && !UNVALIDATED_BODIES.has(`${method} ${path}`))
        expect(schema.additionalProperties, `${where} refuses unknown fields`).toBe(false);
      expect(method, `${where}: GET takes no body`).not.toBe("get");
    }
    expect(bodies).toBeGreaterThan(0);
  });

  it("serves every route of api.md's endpoint tables with its method, keyed exactly when api.md says so: a key (X-Api-Key or Bearer; billing's, the audit log's and webhooks' also X-Wallet-Auth), or `security: []`", () => {
    for (const [method, path, auth] of API_MD_ROUTES) {
      const where = `${method.toUpperCase()} ${path}`;
      const op = doc.paths[`/core/v1${path}`]?.[method];
      expect(op, where).toBeDefined();
      if (auth === "none") {
        // Stated, not left out: a public operation says it needs nothing (generators and linters read a missing one as unknown).
        expect(op?.security, `${where} is public`).toEqual([]);
        continue;
      }
      const walletAuth =
        path.startsWith("/billing/") || path.startsWith("/webhooks") || path === "/usage" || path === "/audit";
      const schemes = walletAuth
        ? [{ ApiKey: [] }, { Bearer: [] }, { WalletAuth: [] }]
        : [{ ApiKey: [] }, { Bearer: [] }];
      expect(op?.security, `${where} is keyed`).toEqual(schemes);
      // A keyed operation documents its key errors.
      expect(Object.keys(op?.responses as Obj), where).toContain("401");
    }
  });

  it("names every operation with a unique operationId, the endpoint's name in camelCase (the exceptions above), and marks the GET alias of create_wallet deprecated", () => {
    const wrong: string[] = [];
    for (const { method, path, op } of operations()) {
      const key = `${method} ${path}`;
      const expected = OPERATION_ID_EXCEPTIONS[key] ?? camelCase(path.split("/").pop() ?? "");
      if (op.operationId !== expected) wrong.push(`${key}: ${String(op.operationId)}, not ${expected}`);
    }
    expect(wrong).toEqual([]);
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    // Every exception names an operation the document has.
    for (const key of Object.keys(OPERATION_ID_EXCEPTIONS))
      expect(
        operations().map(({ method, path }) => `${method} ${path}`),
        key,
      ).toContain(key);
    expect(doc.paths["/core/v1/create_wallet"]?.get?.deprecated).toBe(true);
    expect(doc.paths["/core/v1/create_wallet"]?.post?.deprecated).toBeUndefined();
  });

  it("tags every operation with exactly one capability, declared at the top with a one-line description, each used", () => {
    const tags = (doc.tags ?? []) as Obj[];
    expect(tags.map((t) => t.name)).toEqual(TAG_NAMES);
    for (const t of tags) expect(t.description, String(t.name)).toEqual(expect.stringMatching(/^[^\n]{10,}$/));
    const used = new Set<string>();
    for (const { method, path, op } of operations()) {
      expect(op.tags, `${method.toUpperCase()} ${path}`).toHaveLength(1);
      const [name] = op.tags as string[];
      expect(TAG_NAMES, `${method.toUpperCase()} ${path}`).toContain(name);
      used.add(name as string);
    }
    expect([...used].sort()).toEqual([...TAG_NAMES].sort());
    for (const [method, path, , tag] of API_MD_ROUTES)
      expect(doc.paths[`/core/v1${path}`]?.[method]?.tags, `${method.toUpperCase()} ${path}`).toEqual([tag]);
    for (const [method, path] of ATTESTATION_ROUTES)
      expect(doc.paths[path]?.[method]?.tags, `${method.toUpperCase()} ${path}`).toEqual(["Attestation"]);
  });

  it("documents the 4xx answers each operation's middleware gives: 429 under /core/v1 (the rate limit), 400, 408 and 413 with a body (validation, the body deadline, the body limit), 400 with parameters, 400 and 401 with a key", () => {
    const gaps: string[] = [];
    for (const { method, path, op } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses as Obj).filter((s) => s.startsWith("4"));
      const must = new Set<string>();
      if (path.startsWith("/core/v1/")) must.add("429");
      if (op.requestBody !== undefined) ["400", "408", "413"].forEach((s) => must.add(s));
      if (((op.parameters ?? []) as Obj[]).length > 0) must.add("400");
      if (((op.security ?? []) as unknown[]).length > 0) ["400", "401"].forEach((s) => must.add(s));
      if (statuses.length === 0) gaps.push(`${where}: no 4xx answer`);
      for (const s of must) if (!statuses.includes(s)) gaps.push(`${where}: no ${s}`);
      for (const s of statuses)
        if (!OPERATION_4XX.includes(s)) gaps.push(`${where}: ${s} is not an answer of an operation`);
    }
    expect(gaps).toEqual([]);
    // 429 comes with Retry-After (docs/design/api.md, Errors).
    const limited = (doc.paths["/core/v1/version"]?.get?.responses as Record<string, Obj>)["429"] as Obj;
    expect(Object.keys(limited.headers as Obj)).toContain("Retry-After");
  });

  it("names its one server, the origin it was asked from, carries a license and describes the API", () => {
    expect(doc.servers).toEqual([{ url: "http://edge" }]);
    expect(doc.info.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" });
    expect(doc.info.contact).toBeUndefined();
    expect(doc.info.description).toEqual(expect.stringMatching(/X-Api-Key/));
  });

  it("documents the attestation endpoints at the base URL, unkeyed, each with the instance pin (X-Sigil-Instance or ?instance=) and the instance named in its answer", () => {
    for (const [method, path] of ATTESTATION_ROUTES) {
      const where = `${method.toUpperCase()} ${path}`;
      const op = doc.paths[path]?.[method];
      expect(op, where).toBeDefined();
      expect(((op?.security ?? []) as unknown[]).length, where).toBe(0);
      const params = (op?.parameters ?? []) as Obj[];
      expect(
        params.some((p) => p.in === "header" && String(p.name).toLowerCase() === "x-sigil-instance"),
        `${where} takes X-Sigil-Instance`,
      ).toBe(true);
      expect(
        params.some((p) => p.in === "query" && p.name === "instance"),
        `${where} takes ?instance=`,
      ).toBe(true);
      expect(
        Object.keys((op?.responses as Record<string, Obj>)["200"]?.headers as Obj),
        `${where} names its instance`,
      ).toContain("X-Sigil-Instance");
      expect(Object.keys(op?.responses as Obj), `${where}: an instance not served`).toContain("404");
    }
    expect(
      ((doc.paths["/attestation"]?.get?.parameters ?? []) as Obj[]).some((p) => p.in === "query" && p.name === "nonce"),
    ).toBe(true);
  });

  it("documents Idempotency-Key on every write and sigil_action — every POST but get_sigil_action_ipfs_id and check_guardrail (which write nothing), Stripe's webhook, delegate_key (minting again writes nothing and costs nothing: unused keys expire) and revoke_delegation (the same twice is the same), and GET create_wallet: the header, its 409 and 422 answers, the replay headers, and sigil_action's first_attempt", () => {
    const idempotent = API_MD_ROUTES.filter(
      ([m, p]) =>
        (m === "post" || p === "/create_wallet") &&
        p !== "/get_sigil_action_ipfs_id" &&
        p !== "/check_guardrail" &&
        p !== "/billing/webhook" &&
        p !== "/delegate_key" &&
        p !== "/revoke_delegation",
    );
    expect(idempotent.map(([m, p]) => `${m} ${p}`)).toEqual(
      expect.arrayContaining([
        "post /new_account",
        "post /create_wallet_with_signature",
        "post /add_usage_api_key_with_signature",
        "post /billing/create_payment_intent",
        "post /billing/confirm_payment",
      ]),
    );
    expect(idempotent.length).toBeGreaterThanOrEqual(22);
    // The writes that take no API key, and the billing writes (X-Wallet-Auth), say the key must be unguessable.
    const keyless = new Set([
      "/new_account",
      "/create_wallet_with_signature",
      "/add_usage_api_key_with_signature",
      "/billing/create_payment_intent",
      "/billing/confirm_payment",
    ]);
    for (const [method, path, auth] of idempotent) {
      const where = `${method.toUpperCase()} ${path}`;
      const op = doc.paths[`/core/v1${path}`]?.[method] as Obj;
      const header = ((op.parameters ?? []) as Obj[]).find(
        (p) => p.in === "header" && String(p.name).toLowerCase() === "idempotency-key",
      );
      expect(header, `${where} documents Idempotency-Key`).toBeDefined();
      expect(header?.required ?? false, where).toBe(false);
      const description = String((header?.schema as Obj | undefined)?.description ?? header?.description);
      expect(description, where).toMatch(/24 h/);
      if (keyless.has(path)) expect(description, where).toMatch(/unguessable/);
      const responses = op.responses as Record<string, Obj>;
      expect(Object.keys(responses), where).toEqual(expect.arrayContaining(["409", "422"]));
      // Only the metered writes (keyed, not billing) say what they cost.
      const metered = auth === "key" && !path.startsWith("/billing/") && !path.startsWith("/webhooks");
      expect(Object.keys((responses["200"]?.headers ?? {}) as Obj), where).toEqual(
        expect.arrayContaining([
          "Idempotent-Replayed",
          "Original-Request",
          ...(metered ? ["X-Sigil-Charged-Cents"] : []),
        ]),
      );
    }
    const runSchema = (
      (doc.paths["/core/v1/sigil_action"]?.post?.responses as Record<string, Obj>)["200"]?.content as Record<
        string,
        Obj
      >
    )["application/json"]?.schema as Obj;
    // The run's answer is a named component (RunResult): read it where the reference points.
    const run = (typeof runSchema.$ref === "string" ? resolve(runSchema.$ref) : runSchema) as Obj;
    const firstAttempt = (run.properties as Record<string, Obj>).first_attempt as Obj;
    expect(Object.keys(firstAttempt.properties as Obj)).toEqual(["request_id", "outcome", "message"]);
    expect(((firstAttempt.properties as Record<string, Obj>).outcome as Obj).enum).toEqual([
      "interrupted",
      "abandoned",
      "resumed",
    ]);
  });

  it("documents nothing api.md does not list (a new route is added to api.md first)", () => {
    const listed = new Set([
      ...API_MD_ROUTES.map(([m, p]) => `${m} /core/v1${p}`),
      ...ATTESTATION_ROUTES.map(([m, p]) => `${m} ${p}`),
    ]);
    const extra = operations()
      .map(({ method, path }) => `${method} ${path}`)
      .filter((k) => !listed.has(k));
    expect(extra).toEqual([]);
  });

  it("is what the OpenAPI route serves to every client: swagger-ui's initializer points at it and / redirects to the UI", async () => {
    const ui = await SELF.fetch("http://edge/core/v1/swagger-ui");
    expect(ui.status).toBe(200);
    const init = /<script src="([^"]*init\.js)"/.exec(await ui.text())?.[1];
    expect(init).toBeDefined();
    expect(await (await SELF.fetch(`http://edge${init}`)).text()).toContain('"/core/v1/openapi.json"');
    const root = await SELF.fetch("http://edge/", { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/core/v1/swagger-ui");
  });
});
