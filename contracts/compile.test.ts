import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildHash, compile, ownSources } from "./compile.ts";

describe("compile", () => {
  it("compiles the contracts and the test fixtures together", () => {
    const names = Object.keys(ownSources());
    expect(names).toEqual(
      expect.arrayContaining([
        "contracts/AccountConfig.sol",
        "contracts/AccountConfigViews.sol",
        "contracts/AccountConfigStorage.sol",
        "contracts/AccountConfigProxy.sol",
        "test/contract/fixtures/AccountConfigNext.sol",
      ]),
    );
  });

  it("skips solc when nothing changed since the last build (npm test builds first)", () => {
    expect(compile().skipped).toBe(true);
    for (const f of ["AccountConfig.json", "AccountConfigViews.json", "AccountConfigProxy.json"]) {
      expect(existsSync(join(import.meta.dirname, "out", f))).toBe(true);
    }
  });

  it("rebuilds when any source changes, even by one byte", () => {
    const sources = ownSources();
    const edited = structuredClone(sources);
    edited["contracts/AccountConfig.sol"]!.content += " ";
    expect(buildHash(edited)).not.toBe(buildHash(sources));
    expect(buildHash(structuredClone(sources))).toBe(buildHash(sources));
  });
});
