// @sigil/sdk's own README: in the packed tarball (npm pack, as `npm run pack` makes it), and its
// quickstart the same code as the repository README's, which test/e2e/quickstart.test.ts runs
// against a stack — so the snippet a package user copies is one that works.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");

/** The first ```ts block after `marker` in `text`. */
function tsBlockAfter(text: string, marker: RegExp): string | undefined {
  const at = text.search(marker);
  if (at < 0) return undefined;
  return /```ts\n([\s\S]*?)```/.exec(text.slice(at))?.[1];
}

describe("@sigil/sdk's README", () => {
  it("has the repository README's quickstart, as written", () => {
    const sdk = tsBlockAfter(readFileSync(join(root, "sdk/README.md"), "utf8"), /## Quickstart/);
    const repo = tsBlockAfter(readFileSync(join(root, "README.md"), "utf8"), /<!-- quickstart:sdk/);
    expect(repo).toBeDefined();
    expect(sdk).toBe(repo);
  });

  it("is in the packed tarball, with the module, its types and the script API's types", async () => {
    const { stdout } = await promisify(execFile)("npm", ["pack", "-w", "sdk", "--dry-run", "--json"], {
      cwd: root,
      timeout: 120_000,
    });
    const [packed] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
    const files = (packed?.files ?? []).map((f) => f.path);
    const manifest = JSON.parse(readFileSync(join(root, "sdk/package.json"), "utf8")) as {
      types: string;
      exports: Record<string, { types?: string; default?: string }>;
    };
    expect(files).toEqual(expect.arrayContaining(["README.md", "package.json", "sigil-actions.d.ts"]));
    for (const path of [manifest.types, manifest.exports["."]?.default])
      expect(files, String(path)).toContain(String(path).replace(/^\.\//, ""));
  }, 150_000);
});
