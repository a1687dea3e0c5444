// `npx sigil` after `npm ci` runs this repository's command: bin/ is an npm workspace whose `bin`
// npm links into node_modules/.bin (a root package's own `bin` is never linked there, and npx then
// fetched an unrelated "sigil" package from the registry).
import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

describe("npx sigil", () => {
  it("node_modules/.bin/sigil is bin/sigil.ts, and runs it on the project's Node", async () => {
    expect(realpathSync(join(root, "node_modules/.bin/sigil"))).toBe(realpathSync(join(root, "bin/sigil.ts")));
    const env = { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}` };
    const { stdout } = await promisify(execFile)(join(root, "node_modules/.bin/sigil"), ["--help"], { cwd: root, env });
    expect(stdout).toMatch(/^usage: /);
    expect(stdout).toContain("edge-identity");
  });
});
