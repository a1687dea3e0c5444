// `sigil verify` against a stand-in on 127.0.0.1 that serves a real dstack quote and event log
// (the shared fixtures, read in place) with Intel's collateral for it: checks 1–3 pass at the
// collateral's time and fail a day after it expires; a recorded quote cannot be fresh, so it is
// checked with --no-nonce. Nothing leaves the machine: the collateral is given, never fetched.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCollateral } from "../../shared/attestation/index.ts";
import { verifyCommand, verifyDeployment } from "./verify.ts";

const fixtures = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const report = JSON.parse(readFileSync(join(fixtures, "dstack-quote-report.json"), "utf8")) as {
  quote: string;
  event_log: string;
};
const collateral = parseCollateral(
  JSON.parse(readFileSync(join(fixtures, "dcap-collateral-for-dstack-quote-report.json"), "utf8")),
);
const NOW = 1772323200;

let server: Server;
let base = "";
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? "");
    if (new URL(req.url ?? "/", "http://x").pathname === "/attestation")
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ quote: report.quote, event_log: report.event_log }));
    else
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: "not_found" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const statusOf = (lines: Awaited<ReturnType<typeof verifyDeployment>>) =>
  Object.fromEntries(lines.map((l) => [l.check, l.status]));

describe("sigil verify, on a real dstack quote", () => {
  it("passes the quote, the event log and the claims at the collateral's time, skips what cannot apply, and fails what it could not check", async () => {
    const lines = await verifyDeployment(base, { collateral, now: NOW, noNonce: true });
    const status = statusOf(lines);
    expect(status).toMatchObject({
      quote: "pass",
      event_log: "pass",
      claims: "pass",
      freshness: "skipped",
      tls: "skipped",
      os: "skipped",
    });
    // The stand-in serves no /info and no evidences: those fail rather than pass unseen; and a real
    // deployment's governance is required, so without --rpc-url it fails too (governance.test.ts).
    expect(status.info).toBe("fail");
    expect(status.evidence).toBe("fail");
    expect(status.governance).toBe("fail");
    expect(lines.some((l) => l.simulated)).toBe(false);
    expect(asked).toContain("/attestation");
  });

  it("fails the quote once the collateral has expired", async () => {
    expect(statusOf(await verifyDeployment(base, { collateral, now: NOW + 40 * 86_400, noNonce: true })).quote).toBe(
      "fail",
    );
  });

  it("asks for a fresh quote by default, which a recorded quote cannot be", async () => {
    asked.length = 0;
    const lines = await verifyDeployment(base, { collateral, now: NOW });
    expect(asked[0]).toMatch(/^\/attestation\?nonce=[0-9a-f]{64}$/);
    expect(statusOf(lines)).toMatchObject({ quote: "pass", freshness: "fail" });
  });

  it("refuses bad usage with exit code 2", async () => {
    expect(await verifyCommand([])).toBe(2);
    expect(await verifyCommand(["ftp://x"])).toBe(2);
    expect(await verifyCommand([base, "--now", "yesterday"])).toBe(2);
    expect(await verifyCommand([base, "--expect-compose-hash", "abc"])).toBe(2);
  });
});
