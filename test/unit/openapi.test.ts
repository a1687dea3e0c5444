// The edge's OpenAPI document checked against the official OpenAPI 3.1 JSON schema, with a real
// validator (@seriousme/openapi-schema-validator), and linted with Redocly's `recommended` rules
// (@redocly/openapi-core), what client generators and API linters expect of it. The app is built in
// Node from the same code the worker runs; the document needs no bindings.
import { createConfig, lintFromString, type NormalizedProblem } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { createApp } from "../../workers/app.ts";

/** Where `npm start` serves the edge: the document names the origin it was asked from as its server. */
const ORIGIN = "http://127.0.0.1:8787";

type Doc = {
  openapi: string;
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Record<string, unknown>>>;
};

async function servedDocument(): Promise<Doc> {
  const res = await createApp().request(`${ORIGIN}/core/v1/openapi.json`, {}, { SIGIL_ENV: "test" });
  expect(res.status).toBe(200);
  return (await res.json()) as Doc;
}

/** The name the linted document goes by in Redocly's problems and ignore list. */
const SOURCE = "/core/v1/openapi.json";

/**
 * The recommended rules' findings that are the service's design, each with its reason, kept by
 * Redocly's own ignore list (as `.redocly.lint-ignore.yaml` would): the rule stays on everywhere else.
 */
const ACCEPTED: Array<{ rule: string; pointer: string; why: string }> = [
  {
    rule: "no-path-trailing-slash",
    pointer: "#/paths/~1evidences~1",
    why: "dstack-ingress serves the evidence listing at /evidences/ (attestation.md), and its links are relative to that URL",
  },
];

/** Every problem Redocly's `recommended` ruleset finds in `doc`; the ACCEPTED ones come marked `ignored`. */
async function lint(doc: unknown): Promise<NormalizedProblem[]> {
  const ignore: Record<string, Record<string, Set<string>>> = { [SOURCE]: {} };
  for (const { rule, pointer } of ACCEPTED) (ignore[SOURCE]![rule] ??= new Set()).add(pointer);
  const config = await createConfig({ extends: ["recommended"] }, { ignore });
  return lintFromString({ source: JSON.stringify(doc), absoluteRef: SOURCE, config });
}

const describeProblem = (p: NormalizedProblem) =>
  `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? "?"}: ${p.message}`;

describe("GET /core/v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const doc = await servedDocument();
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    // Every route of docs/design/api.md: 44 operations (create_wallet has a GET and a POST).
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.keys(item).filter((k) => ["get", "post", "put", "patch", "delete"].includes(k)),
    );
    expect(operations.length).toBeGreaterThanOrEqual(44);
  });

  it("passes Redocly's recommended rules: no error, and no warning either (each is printed)", async () => {
    const problems = await lint(await servedDocument());
    const found = problems.filter((p) => !p.ignored);
    for (const p of found) console.log(`redocly: ${describeProblem(p)}`);
    expect(found.filter((p) => p.severity === "error").map(describeProblem)).toEqual([]);
    // The warnings the ruleset gives are real gaps for generators (no operationId, no 4xx answer, …):
    // fix them, or accept one above with its reason.
    expect(found.filter((p) => p.severity === "warn").map(describeProblem)).toEqual([]);
    // Every accepted finding still occurs, so none outlives its reason.
    expect(problems.filter((p) => p.ignored).map((p) => `${p.ruleId} ${p.location[0]?.pointer}`)).toEqual(
      ACCEPTED.map((a) => `${a.rule} ${a.pointer}`),
    );
  });

  it("fails the same lint when the document loses what generators need: its server, an operation's security, operationId or 4xx answers", async () => {
    const doc = await servedDocument();
    delete doc.servers;
    const version = doc.paths["/core/v1/version"]?.get as Record<string, unknown>;
    delete version.security;
    delete version.operationId;
    version.responses = { 200: (version.responses as Record<string, unknown>)["200"] };
    const found = (await lint(doc)).filter((p) => !p.ignored);
    expect(found.map((p) => `${p.severity} ${p.ruleId}`)).toEqual(
      expect.arrayContaining([
        "error no-empty-servers",
        "error security-defined",
        "warn operation-operationId",
        "warn operation-4xx-response",
      ]),
    );
  });

  it("names the origin it was asked from as its one server, and carries a license", async () => {
    const doc = (await servedDocument()) as Doc & { info: { license?: unknown } };
    expect(doc.servers).toEqual([{ url: ORIGIN }]);
    const elsewhere = (await (
      await createApp().request("https://sigil.example.org/core/v1/openapi.json", {}, { SIGIL_ENV: "test" })
    ).json()) as Doc;
    expect(elsewhere.servers).toEqual([{ url: "https://sigil.example.org" }]);
    expect(doc.info.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" });
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
  const doc = (await res.json()) as {
    paths: Record<string, { post: { requestBody: { content: { "application/json": { schema: Schema } } } } }>;
  };
  return doc.paths[path]?.post.requestBody.content["application/json"].schema.properties ?? {};
}
