// The production code's imports run one way (issue 12): no file reaches itself again through what it
// imports, type-only imports included, in any of the folders that ship. dpdm reads the imports with
// its own TypeScript parser; the check fails with the circles it found.
import { parseCircular, parseDependencyTree } from "dpdm";
import { describe, expect, it } from "vitest";

const SHIPPED = ["workers", "enclave", "shared", "bin", "deploy", "contracts"];

describe("imports", () => {
  it("form no circle in the shipped folders (workers, enclave, shared, bin, deploy, contracts)", async () => {
    const tree = await parseDependencyTree(
      SHIPPED.map((dir) => `${dir}/**/*.ts`),
      { context: process.cwd(), exclude: /\.test\.ts$|node_modules/, transform: false, skipDynamicImports: false },
    );
    // The check reads the files it was meant to read.
    expect(Object.keys(tree)).toEqual(expect.arrayContaining(["workers/app.ts", "enclave/main.ts", "shared/errors.ts", "bin/sigil.ts"]));
    expect(parseCircular(tree).map((circle) => circle.join(" -> "))).toEqual([]);
  });
});
