// Writes sdk/src/generated/api.ts from the OpenAPI document the edge serves, so the SDK's request
// and response types are the edge's own zod schemas (the document is generated from them) and
// never a second copy kept by hand. Build output (git-ignored), made by `npm run build`:
//
//   operations   one entry per operation: method, path, how its input travels (query, path, JSON
//                body), whether it takes an Idempotency-Key, how it is paged (`paging`: "page" for
//                the page_number lists, "cursor" for an operation the document marks with
//                `x-sigil-paging: {style: "cursor", items}`, with `pageItems` the answer's field
//                that holds the items), its auth
//   Operations   per operationId: `input` (query/path parameters or the JSON body) and `output`
//                (the 200 answer), as TypeScript types made by json-schema-to-typescript
//   SIGNER_CID   the CIDv0 of the signing action toSigilAccount runs (sdk/src/signer.ts)
//   SOLANA_SIGNER_CID   the same for toSigilSolanaSigner's (sdk/src/solanaSigner.ts)
//
// The app is built in Node from the same code the worker runs; the document needs no bindings.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { compile, type JSONSchema } from "json-schema-to-typescript";
import { computeCid } from "../../shared/cid.ts";
import { SIGNER_CODE } from "../src/signer.ts";
import { SOLANA_SIGNER_CODE } from "../src/solanaSigner.ts";

type Schema = JSONSchema & { pattern?: string };
type Parameter = {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required?: boolean;
  schema: Schema;
  description?: string;
};
type Operation = {
  operationId?: string;
  summary?: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: Schema }> }>;
  /** The edge's mark of a cursor-paged operation (workers/routes/audit.ts): where its answer keeps the items. */
  "x-sigil-paging"?: { style: "cursor"; items: string };
};
type Document = { paths: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

const METHODS = ["get", "post", "put", "patch", "delete"] as const;
const out = join(import.meta.dirname, "../src/generated/api.ts");

/** The operationId of an operation; every operation of the document has one (test/unit/openapi.test.ts). */
function nameOf(path: string, op: Operation): string {
  if (!op.operationId) throw new Error(`${path}: no operationId; the SDK names its methods after them`);
  return op.operationId;
}

/** A query parameter of digits (pages, group ids) also takes a number or a bigint: the SDK writes it out. */
function queryType(schema: Schema): Schema {
  if (schema.type === "string" && typeof schema.pattern === "string" && schema.pattern.startsWith("^\\d")) {
    return { tsType: "string | number | bigint", description: schema.description } as Schema;
  }
  return schema;
}

/**
 * How an operation pages: "page" (page_number, page_size, a JSON array), "cursor" (marked by the
 * edge with x-sigil-paging: `cursor` and `limit` in, `next_cursor` and the items' array field out;
 * checked here so a wrong mark fails the build), or null.
 */
function pagingOf(
  path: string,
  op: Operation,
  doc: Document,
): { paging: "page" | "cursor" | null; pageItems: string | null } {
  const params = op.parameters ?? [];
  const mark = op["x-sigil-paging"];
  if (mark === undefined)
    return {
      paging: params.some((p) => p.in === "query" && p.name === "page_number") ? "page" : null,
      pageItems: null,
    };
  const answer = deref(op.responses["200"]?.content?.["application/json"]?.schema, doc) as {
    properties?: Record<string, Schema>;
  };
  const items = answer.properties?.[mark.items] as Schema | undefined;
  const ok =
    mark.style === "cursor" &&
    ["cursor", "limit"].every((name) => params.some((p) => p.in === "query" && p.name === name)) &&
    answer.properties?.next_cursor !== undefined &&
    items?.type === "array";
  if (!ok)
    throw new Error(
      `${path}: x-sigil-paging needs style "cursor", query cursor and limit, and an answer with next_cursor and the array ${mark.items}`,
    );
  return { paging: "cursor", pageItems: mark.items };
}

function deref(schema: Schema | undefined, doc: Document): Schema {
  const ref = (schema as { $ref?: string } | undefined)?.$ref;
  if (!ref) return schema ?? {};
  const schemas = (doc.components as { schemas?: Record<string, Schema> } | undefined)?.schemas ?? {};
  return schemas[ref.replace("#/components/schemas/", "")] ?? {};
}

/** The JSON Schema of an operation's input: its parameters as one object, or its JSON body. */
function inputSchema(op: Operation): Schema {
  const params = (op.parameters ?? []).filter((p) => p.in === "query" || p.in === "path");
  const body = op.requestBody?.content["application/json"]?.schema;
  if (body && params.length > 0)
    throw new Error("an operation with both a JSON body and parameters: the SDK's input cannot be one of them");
  if (body) return body;
  return {
    type: "object",
    properties: Object.fromEntries(
      params.map((p) => [p.name, { ...queryType(p.schema), ...(p.description ? { description: p.description } : {}) }]),
    ),
    required: params.filter((p) => p.required).map((p) => p.name),
    additionalProperties: false,
  };
}

/**
 * The 200 answer: its JSON schema (asked for with Accept: application/json, also where the
 * operation can answer CSV instead on request, as /usage does), or a string for text answers
 * (HTML, PEM, plain text; an answer whose type the edge picks itself, as /evidences/ does).
 */
function outputSchema(op: Operation): { schema: Schema; json: boolean } {
  const content = op.responses["200"]?.content ?? {};
  const json = content["application/json"]?.schema;
  if (json && Object.keys(content).every((type) => type === "application/json" || type === "text/csv"))
    return { schema: json, json: true };
  return { schema: { tsType: "string" } as Schema, json: false };
}

const pascal = (name: string) => name[0]!.toUpperCase() + name.slice(1);

/**
 * An object schema that lists no properties and says nothing of others (js_params: "a JSON
 * object") is any object; one that lists properties is closed, as the edge's answers are.
 */
function openFreeObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(openFreeObjects);
  if (value === null || typeof value !== "object") return value;
  const o = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, openFreeObjects(v)])) as Record<
    string,
    unknown
  >;
  const isObject = o.type === "object" || (Array.isArray(o.type) && o.type.includes("object"));
  if (isObject && o.properties === undefined && o.additionalProperties === undefined) o.additionalProperties = true;
  return o;
}

async function typeOf(schema: Schema, name: string, components: unknown): Promise<string> {
  const text = await compile(openFreeObjects({ ...schema, components }) as JSONSchema, name, {
    bannerComment: "",
    format: false,
    additionalProperties: false,
    unknownAny: true,
    strictIndexSignatures: true,
    declareExternallyReferenced: true,
    ignoreMinAndMaxItems: true,
    $refOptions: { resolve: { external: false } },
  });
  return text.trim();
}

/** The edge's app, loaded by path: its types are Workers' (workers/tsconfig.json), not this Node script's. */
type App = { request(path: string, init: RequestInit, env: Record<string, string>): Promise<Response> };
const EDGE_APP = "../../workers/app.ts";

export async function generate(): Promise<string> {
  const { createApp } = (await import(EDGE_APP)) as { createApp(): App };
  const res = await createApp().request("/core/v1/openapi.json", {}, { SIGIL_ENV: "test" });
  const doc = (await res.json()) as Document;
  const entries: string[] = [];
  const types: string[] = [];
  const mapping: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const name = nameOf(path, op);
      const params = op.parameters ?? [];
      const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
      const output = outputSchema(op);
      entries.push(
        `  ${name}: ${JSON.stringify({
          method: method.toUpperCase(),
          path,
          input: op.requestBody?.content["application/json"] ? "body" : "params",
          pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
          idempotent: params.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"),
          ...pagingOf(path, op, doc),
          auth: schemes.includes("WalletAuth") ? "key_or_wallet" : schemes.length > 0 ? "key" : "none",
          json: output.json,
          deprecated: op.deprecated === true,
        })},`,
      );
      const type = pascal(name);
      types.push(await typeOf(inputSchema(op), `${type}Input`, doc.components));
      types.push(await typeOf(output.schema, `${type}Output`, doc.components));
      mapping.push(`  ${name}: { input: ${type}Input; output: ${type}Output };`);
    }
  }
  return [
    "// Generated by sdk/scripts/generate.ts from the edge's OpenAPI document (`npm run build`). Do not edit.",
    "/* eslint-disable */",
    "",
    `export const operations = {\n${entries.join("\n")}\n} as const;`,
    "",
    `export type OperationId = keyof typeof operations;`,
    "",
    `export type Operations = {\n${mapping.join("\n")}\n};`,
    "",
    `/** The CIDv0 of SIGNER_CODE (src/signer.ts): what a group grants so that toSigilAccount may sign. */`,
    `export const SIGNER_CID = ${JSON.stringify(await computeCid(SIGNER_CODE))};`,
    "",
    `/** The CIDv0 of SOLANA_SIGNER_CODE (src/solanaSigner.ts): what a group grants so that toSigilSolanaSigner may sign. */`,
    `export const SOLANA_SIGNER_CID = ${JSON.stringify(await computeCid(SOLANA_SIGNER_CODE))};`,
    "",
    types.join("\n\n"),
    "",
  ].join("\n");
}

if (import.meta.main) {
  const text = await generate();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, text);
  console.log(`sdk: wrote ${out}`);
}
