// A client generated from the served OpenAPI document by openapi-typescript (what a developer runs
// against /core/v1/openapi.json) calls every operation without a cast and type-checks, and refuses
// what the API refuses: both or neither of code and ipfs_id, a page size as a string
// (test/generatedClient/calls.ts). openapi-typescript needs TypeScript 5's compiler API, so the
// generator and the type check run on that workspace's own TypeScript, not the project's 7.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createApp } from "../../workers/app.ts";

const dir = join(import.meta.dirname, "../generatedClient");

describe("a client generated from the OpenAPI document", () => {
  it("calls every operation without a cast, and refuses both and neither of code and ipfs_id", async () => {
    const res = await createApp().request("http://127.0.0.1:8787/core/v1/openapi.json", {}, { SIGIL_ENV: "test" });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    type Generator = {
      default: (schema: unknown) => Promise<unknown>;
      astToString: (ast: unknown) => string;
    };
    const generator = (await import(join(dir, "node_modules/openapi-typescript/dist/index.mjs"))) as Generator;
    writeFileSync(join(dir, "api.ts"), generator.astToString(await generator.default(doc)));

    // What a generator names and what it must expect: the resources as named types, a 500 on every
    // operation, every field /info answers.
    const named = Object.keys((doc as { components?: { schemas?: object } }).components?.schemas ?? {});
    for (const name of ["Wallet", "Group", "UsageKey", "Action", "RunResult", "RunReceipt", "Info", "ReceiptKey"])
      expect(named, name).toContain(name);
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods))
        expect(Object.keys((op as { responses: object }).responses), `${method} ${path}`).toContain("500");
    const info = (doc as { components: { schemas: Record<string, { properties: object }> } }).components.schemas.Info;
    expect(Object.keys(info?.properties ?? {})).toEqual(
      expect.arrayContaining(["app_name", "device_id", "os_image_hash", "key_provider_info", "vm_config"]),
    );

    // calls.ts names every operation of the document: one a route adds must be added there too.
    const calls = (await import("node:fs")).readFileSync(join(dir, "calls.ts"), "utf8");
    for (const [path, methods] of Object.entries(doc.paths))
      for (const method of Object.keys(methods))
        expect(calls, `${method.toUpperCase()} ${path}`).toContain(`c.${method.toUpperCase()}("${path}"`);

    const tsc = join(dir, "node_modules/typescript/bin/tsc");
    const checked = await promisify(execFile)(process.execPath, [tsc, "-p", dir], { timeout: 120_000 }).then(
      () => "",
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(checked).toBe("");
  }, 180_000);
});
