// The engine's known memory-safety bugs, each a probe (test/fuzz/engineCases.ts: the fixes of both
// engines' public histories and probes of the same classes), run as scripts on the sandbox as it is
// (issue 26): each must be refused (the sandbox removed what it needs, or the engine throws), or find
// nothing unsafe, or end its own run harmlessly — WebAssembly stopped the engine (a trap) or the
// engine aborted, and its instance was dropped. After every probe the same checks from outside as
// the fuzzing's: the whole memory its image, the run's canary in no memory, the next run's world unchanged.
import { describe, expect, it } from "vitest";
import { ENGINE_CASES } from "../../test/fuzz/engineCases.ts";
import { runEngineCasesInWorker, type EngineCaseResult } from "../../test/fuzz/runner.ts";

describe("the engine's memory-safety probes on the sandbox (test/fuzz/engineCases.ts)", { timeout: 120_000 }, () => {
  let results: EngineCaseResult[] = [];

  it("runs every probe but the heavy ones", async () => {
    const ids = ENGINE_CASES.filter((c) => !c.heavy).map((c) => c.id);
    results = await runEngineCasesInWorker(ids);
    expect(results.map((r) => r.id)).toEqual(ids);
  });

  it("no probe finds memory-unsafety: each is refused, safe, or ends its own run with its instance dropped", () => {
    const unsafe = results
      .filter((r) => r.verdict === "violation" || r.verdict === "no verdict")
      .map((r) => `${r.id}: ${r.verdict}: ${r.detail}`);
    expect(unsafe).toEqual([]);
  });

  it("no probe leaves anything behind: every memory its image, no canary, the next run's world unchanged (a trap only where the run ended and its instance was dropped)", () => {
    const harmful = results
      .filter((r) => r.findings.some((f) => f !== "trap") || (r.findings.includes("trap") && r.verdict !== "ended"))
      .map((r) => `${r.id}: ${r.findings.join(", ")}`);
    expect(harmful).toEqual([]);
  });

  it("the issue's class of bugs is refused: SharedArrayBuffer's grow, a typed array or DataView over a buffer resized or detached under it, Array's copying methods under a collection", () => {
    const verdict = (id: string) => results.find((r) => r.id === id)?.verdict;
    for (const id of [
      "sab-grow-read",
      "sab-grow-write",
      "ta-ctor-newtarget-shrink",
      "ta-ctor-newtarget-detach",
      "ta-ctor-ta-newtarget-shrink",
      "ta-with-valueOf-shrink",
    ]) {
      expect(["refused", "script_error"], id).toContain(verdict(id));
    }
    expect(verdict("array-toReversed-gc-uninit")).toBe("safe");
  });
});
