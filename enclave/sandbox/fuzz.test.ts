// The sandbox's fuzzing (test/fuzz/, issue 26), a short fixed-seed run: generated scripts of
// typed-array, ArrayBuffer, DataView, String, RegExp, JSON and Array operations at and around their
// limits, with resizing, detaching, species and getter tricks, each followed by the checks from
// outside — no canary in any QuickJS memory, the whole memory its image, the next run's world
// unchanged — and the script's own (no view past its buffer, no foreign bytes in one). Longer runs:
// `npm run fuzz:sandbox -- --minutes N`. The harness is first shown to fail when the image is not
// written back.
import { describe, expect, it } from "vitest";
import { isFailure, reproduction, runInWorker } from "../../test/fuzz/runner.ts";

describe("the sandbox under generated scripts (test/fuzz)", { timeout: 120_000 }, () => {
  it("finds what a run leaves when the image is not written back: the memory is not its image and the canary is still there", async () => {
    const report = await runInWorker({ seed: 1, cases: 3, breakReset: true });
    const kinds = new Set(report.findings.map((f) => f.kind));
    expect(kinds.has("not pristine")).toBe(true);
    expect(kinds.has("residue")).toBe(true);
  });

  it("120 cases from seed 20261128: no finding breaks isolation or memory safety", async () => {
    const report = await runInWorker({ seed: 20_261_128, cases: 120 });
    expect(report.cases).toBe(120);
    const failures = report.findings
      .filter(isFailure)
      .map((f) => `seed ${f.seed}: ${f.kind}: ${f.detail} (${reproduction(f.seed)})`);
    expect(failures).toEqual([]);
    // Most scripts ran to their end and checked themselves; the engine refused some operations.
    expect(report.endings.completed ?? 0).toBeGreaterThan(100);
    expect(report.refusedOps).toBeGreaterThan(0);
  });
});
