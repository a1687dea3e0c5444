// `sigil verify`'s file and time options through the CLI (verifyCommand), against the real dstack
// fixture served on 127.0.0.1: --os-allow (check 8), --collateral and --now (check 1). Always with
// --collateral, so nothing is fetched from a PCCS; --no-nonce because the recorded quote has fixed
// report data.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FIXTURE_COLLATERAL_FILE,
  FIXTURE_NOW,
  fixtureQuote,
  runVerifyCli,
  serveFixtureDeployment,
  type FixtureDeployment,
} from "../../test/fixtures/dstackDeployment.ts";

let deployment: FixtureDeployment;
let dir: string;

beforeAll(async () => {
  deployment = await serveFixtureDeployment();
  dir = mkdtempSync(join(tmpdir(), "sigil-verify-options-"));
});

afterAll(async () => {
  await deployment?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let files = 0;
function file(content: string): string {
  const path = join(dir, `file-${files++}.json`);
  writeFileSync(path, content);
  return path;
}

const cli = (extra: string[], now = FIXTURE_NOW) =>
  runVerifyCli([
    deployment.url,
    "--json",
    "--no-nonce",
    "--collateral",
    FIXTURE_COLLATERAL_FILE,
    "--now",
    String(now),
    ...extra,
  ]);

const quoteOs = {
  mrtd: fixtureQuote.mrTd,
  rtmr0: fixtureQuote.rtmrs[0],
  rtmr1: fixtureQuote.rtmrs[1],
  rtmr2: fixtureQuote.rtmrs[2],
};
const other = (hex: string) => `${hex.slice(0, -2)}${hex.endsWith("00") ? "01" : "00"}`;

describe("sigil verify --os-allow (check 8)", () => {
  it("reports the OS as not verified (skipped) without --os-allow", async () => {
    const run = await cli([]);
    expect(run.checks.os).toMatchObject({ status: "skipped" });
    expect(run.checks.os?.detail).toMatch(/OS not verified/);
  });

  it("passes when the file lists the quote's MRTD and RTMR0–2 (among other sets, 0x-prefixed and upper case)", async () => {
    const listed = {
      mrtd: `0x${quoteOs.mrtd.toUpperCase()}`,
      rtmr0: quoteOs.rtmr0,
      rtmr1: quoteOs.rtmr1,
      rtmr2: quoteOs.rtmr2,
      label: "dstack 0.x",
    };
    const run = await cli(["--os-allow", file(JSON.stringify([{ ...quoteOs, mrtd: other(quoteOs.mrtd) }, listed]))]);
    expect(run.checks.os).toMatchObject({ status: "pass", detail: "MRTD and RTMR0–2 are on the allow-list" });
  });

  it("fails when the file lists other measurements, even when only one of the four differs", async () => {
    for (const key of ["mrtd", "rtmr0", "rtmr1", "rtmr2"] as const) {
      const run = await cli(["--os-allow", file(JSON.stringify([{ ...quoteOs, [key]: other(quoteOs[key]) }]))]);
      expect(run.checks.os?.status, key).toBe("fail");
      expect(run.checks.os?.detail, key).toMatch(/not on the allow-list/);
      expect(run.code, key).toBe(1);
    }
  });

  it("refuses a malformed or unreadable --os-allow file as a usage error (exit 2) naming the flag, without checking anything", async () => {
    const cases: Array<[string, RegExp]> = [
      [file("not json"), /--os-allow .*: is not JSON/],
      [file(JSON.stringify(quoteOs)), /--os-allow .*: .*expected a JSON array/],
      [file("[]"), /--os-allow .*: lists no measurement set/],
      [file(JSON.stringify([{ ...quoteOs, rtmr2: undefined }])), /--os-allow .*: \[0\]\.rtmr2: /],
      [file(JSON.stringify([{ ...quoteOs, rtmr1: "abcd" }])), /--os-allow .*: \[0\]\.rtmr1: must be 48 bytes of hex/],
      [join(dir, "missing.json"), /--os-allow .*missing\.json: cannot read it \(ENOENT\)/],
    ];
    for (const [path, message] of cases) {
      deployment.asked.length = 0;
      const run = await cli(["--os-allow", path]);
      expect(run.code, path).toBe(2);
      expect(run.err, path).toMatch(message);
      expect(run.out, path).toBe("");
      expect(deployment.asked, path).toEqual([]);
    }
  });
});

describe("sigil verify --collateral and --now (check 1)", () => {
  it("verifies the fixture quote UpToDate with the given collateral at the fixture's time, without asking a PCCS", async () => {
    const run = await cli([]);
    expect(run.checks.quote?.status).toBe("pass");
    expect(run.checks.quote?.detail).toMatch(/Intel's root is valid; TCB UpToDate/);
    expect(run.checks.event_log?.status).toBe("pass");
  });

  it("fails the quote at a time far past the collateral's validity (TCB info expired)", async () => {
    const run = await cli([], FIXTURE_NOW + 365 * 86_400);
    expect(run.checks.quote?.status).toBe("fail");
    expect(run.checks.quote?.detail).toMatch(/expired/i);
    expect(run.code).toBe(1);
  });

  it("fails the quote at a time before the collateral was issued", async () => {
    const run = await cli([], FIXTURE_NOW - 365 * 86_400);
    expect(run.checks.quote?.status).toBe("fail");
  });

  it("refuses a malformed --collateral file as a usage error (exit 2) naming the flag", async () => {
    for (const [content, message] of [
      ["not json", /--collateral .*: /],
      ['{"tcb_info": 1}', /--collateral .*: /],
    ] as const) {
      const run = await runVerifyCli([
        deployment.url,
        "--no-nonce",
        "--collateral",
        file(content),
        "--now",
        String(FIXTURE_NOW),
      ]);
      expect(run.code, content).toBe(2);
      expect(run.err, content).toMatch(message);
    }
  });
});
