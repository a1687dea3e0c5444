// Every operation the edge serves has its SDK method: the app's OpenAPI document (built in Node
// from the same code the worker runs) against the SDK's generated table, name, method and path.
// A route added to the edge without a build, or one the generator skipped, fails here.
import { describe, expect, it } from "vitest";
import { createApp } from "../../workers/app.ts";
import { createSigilClient, operations } from "../../sdk/src/index.ts";

describe("@sigil/sdk covers the edge", () => {
  it("has a method for every operation of the served document, with its method and path", async () => {
    const res = await createApp().request("/core/v1/openapi.json", {}, { SIGIL_ENV: "test" });
    const doc = (await res.json()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const served = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ["get", "post", "put", "patch", "delete", "head", "options"].includes(method))
        .map(([method, op]) => ({ name: op.operationId, method: method.toUpperCase(), path })),
    );
    const client = createSigilClient({ baseUrl: "http://127.0.0.1:1" }) as unknown as Record<string, unknown>;
    for (const op of served) {
      expect(op.name, `${op.method} ${op.path} has no operationId`).toBeTypeOf("string");
      expect(operations[op.name as keyof typeof operations], `${op.name}: no SDK operation`).toMatchObject({
        method: op.method,
        path: op.path,
      });
      expect(typeof client[op.name!], `${op.name}: no SDK method`).toBe("function");
    }
    expect(Object.keys(operations).sort()).toEqual(served.map((op) => op.name).sort());
  });
});
