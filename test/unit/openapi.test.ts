// The edge's OpenAPI document checked against the official OpenAPI 3.1 JSON schema, with a real
// validator (@seriousme/openapi-schema-validator). The app is built in Node from the same code
// the worker runs; the document needs no bindings.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { createApp } from "../../workers/app.ts";

describe("GET /core/v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const res = await createApp().request("/core/v1/openapi.json", {}, { SIGIL_ENV: "test" });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    // Every route of api.md but billing's: 34 operations (create_wallet has a GET and a POST).
    const operations = Object.values(doc.paths).flatMap((item) => Object.keys(item).filter((k) => ["get", "post", "put", "patch", "delete"].includes(k)));
    expect(operations.length).toBeGreaterThanOrEqual(34);
  });

  it("states sigil_action's js_params as the specification does: a JSON object or null", async () => {
    const params = (await bodyProperties("/core/v1/sigil_action")).js_params;
    expect(params?.type).toEqual(["object", "null"]);
  });

  it("states create_payment_intent's minimum: amount_cents an integer of at least 500", async () => {
    const amount = (await bodyProperties("/core/v1/billing/create_payment_intent")).amount_cents;
    expect(amount).toMatchObject({ type: "integer", minimum: 500 });
  });
});

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; [k: string]: unknown };

/** The properties of an operation's JSON request body, as the served document states them. */
async function bodyProperties(path: string): Promise<Record<string, Schema>> {
  const res = await createApp().request("/core/v1/openapi.json", {}, { SIGIL_ENV: "test" });
  const doc = (await res.json()) as { paths: Record<string, { post: { requestBody: { content: { "application/json": { schema: Schema } } } } }> };
  return doc.paths[path]?.post.requestBody.content["application/json"].schema.properties ?? {};
}
