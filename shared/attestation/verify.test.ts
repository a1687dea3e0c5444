// The pipeline of checks 1–3 (docs/design/attestation.md, The verifier) over the real fixtures: the dstack
// bundle passes every check; each negative case fails the checks it should, with its own message,
// and the others keep their answers. Imports go through index.ts, the module's public face.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  nonceReportData,
  verifyAttestation,
  type AttestationVerification,
  type Collateral,
  type EventLogEntry,
} from "./index.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const json = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
const dstack = json("dstack-quote-report.json") as { quote: string; event_log: string; report_data: string };
const lite = json("dstack-tdx-lite-getquote.json") as { quote: string; event_log: string };
const collateral = json("dcap-collateral-for-dstack-quote-report.json") as Collateral;
const binQuote = new Uint8Array(readFileSync(join(FIXTURES, "dcap-tdx-quote.bin")));
const NOW = 1772323200;
const RTMR3 = "0f787c3877f3e95095d5a4d13dd0fe0233803b30120d8469866719dc28f519ce021fe1e53459121e7a5a4443147185a8";
const CLAIMS =
  "app-id 3763bc34552cf3a27ff71ad5f7a90471562a1a2d, compose-hash 3763bc34552cf3a27ff71ad5f7a90471562a1a2df552dfc1998cba2d60da27e7, " +
  "instance-id c3714eb66990eace777b4e664c16e09375dec4c9, key-provider local-sgx";

/** check name → [ok, detail] */
const table = (v: AttestationVerification) => Object.fromEntries(v.checks.map((c) => [c.check, [c.ok, c.detail]]));
const flipped = (offset: number) => {
  const bytes = new Uint8Array(Buffer.from(dstack.quote, "hex"));
  bytes[offset]! ^= 0x01;
  return bytes;
};
const entries = () => JSON.parse(dstack.event_log) as EventLogEntry[];

describe("verifyAttestation", () => {
  it("the dstack bundle passes checks 1–3", () => {
    const v = verifyAttestation({ quote: dstack.quote, event_log: dstack.event_log }, { collateral, now: NOW });
    expect(v.ok).toBe(true);
    expect(v.simulated).toBe(false);
    expect(v.checks).toEqual([
      {
        check: "quote",
        ok: true,
        detail:
          "signature chain to Intel's root is valid; TCB UpToDate; FMSPC 90c06f000000; TCB info valid until 2026-03-20T10:58:51Z",
      },
      { check: "event_log", ok: true, detail: "28 events replay to the quote's RTMR0–3" },
      { check: "claims", ok: true, detail: CLAIMS },
    ]);
    expect(v.claims?.keyProvider.name).toBe("local-sgx");
    expect(v.replayed?.[3]).toBe(RTMR3);
    expect(v.tcb?.status).toBe("UpToDate");
  });

  it("checks report_data when one is expected", () => {
    const good = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: NOW, expectedReportData: `0x${dstack.report_data}` },
    );
    expect(table(good).report_data).toEqual([true, "report_data is the expected value"]);
    expect(good.ok).toBe(true);
    const nonce = nonceReportData("abcd");
    const bad = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: NOW, expectedReportData: nonce },
    );
    expect(bad.ok).toBe(false);
    expect(table(bad).report_data).toEqual([
      false,
      `report_data is 1234${"0".repeat(124)}, expected ${Buffer.from(nonce).toString("hex")}`,
    ]);
    expect(table(bad).quote![0]).toBe(true);
  });

  it("a flipped byte in RTMR3: the signature fails, and the log no longer replays to the quote", () => {
    const v = verifyAttestation({ quote: flipped(520), event_log: dstack.event_log }, { collateral, now: NOW });
    expect(v.ok).toBe(false);
    const quoted = `0e${RTMR3.slice(2)}`;
    expect(table(v)).toEqual({
      quote: [false, "dcap-qvl refused the quote: ISV enclave report signature is invalid"],
      event_log: [false, `RTMR3 replays to ${RTMR3} but the quote has ${quoted}`],
      claims: [false, "the event log does not replay to the quote's RTMR3, so its claims are unproven"],
    });
  });

  it("a flipped byte in report_data or in the signature fails the quote check alone", () => {
    for (const offset of [568, 636]) {
      const v = verifyAttestation({ quote: flipped(offset), event_log: dstack.event_log }, { collateral, now: NOW });
      expect(table(v)).toEqual({
        quote: [false, "dcap-qvl refused the quote: ISV enclave report signature is invalid"],
        event_log: [true, "28 events replay to the quote's RTMR0–3"],
        claims: [true, CLAIMS],
      });
    }
  });

  it("expired collateral and collateral for another FMSPC", () => {
    const expired = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: Date.parse("2026-03-21T00:00:00Z") / 1000 },
    );
    expect(table(expired).quote).toEqual([false, "dcap-qvl refused the quote: TCBInfo expired"]);
    expect(expired.ok).toBe(false);
    const fmspc = verifyAttestation({ quote: binQuote, event_log: [] }, { collateral, now: NOW });
    expect(table(fmspc).quote).toEqual([false, "dcap-qvl refused the quote: Fmspc mismatch"]);
  });

  it("an edited event-log payload: replay mismatch on RTMR3", () => {
    const edited = entries().map((e) =>
      e.event === "key-provider" ? { ...e, event_payload: Buffer.from('{"name":"none"}').toString("hex") } : e,
    );
    const v = verifyAttestation({ quote: dstack.quote, event_log: JSON.stringify(edited) }, { collateral, now: NOW });
    const t = table(v);
    expect(t.quote![0]).toBe(true);
    expect(t.event_log![0]).toBe(false);
    expect(t.event_log![1]).toMatch(new RegExp(`^RTMR3 replays to [0-9a-f]{96} but the quote has ${RTMR3}$`));
    expect(t.claims).toEqual([false, "the event log does not replay to the quote's RTMR3, so its claims are unproven"]);
  });

  it("a reordered event log: replay mismatch", () => {
    const log = entries();
    const i = log.findIndex((e) => e.event === "compose-hash");
    [log[i], log[i + 1]] = [log[i + 1]!, log[i]!];
    const v = verifyAttestation({ quote: dstack.quote, event_log: log }, { collateral, now: NOW });
    expect(table(v).event_log![1]).toMatch(/^RTMR3 replays to [0-9a-f]{96} but the quote has 0f787c38/);
    expect(v.ok).toBe(false);
  });

  it("an edited event in RTMR0 names RTMR0", () => {
    const log = entries();
    log[0] = { ...log[0]!, digest: "00".repeat(48) };
    const v = verifyAttestation({ quote: dstack.quote, event_log: log }, { collateral, now: NOW });
    expect(table(v).event_log![1]).toMatch(/^RTMR0 replays to [0-9a-f]{96} but the quote has 2e384326[0-9a-f]{88}$/);
    // RTMR3 still matches: its claims stand, but the bundle fails.
    expect(table(v).claims![0]).toBe(true);
    expect(v.ok).toBe(false);
  });

  it("a duplicate claim event: its own message", () => {
    const log = entries();
    const i = log.findIndex((e) => e.event === "compose-hash");
    log.splice(i + 1, 0, { ...log[i]! });
    const v = verifyAttestation({ quote: dstack.quote, event_log: log }, { collateral, now: NOW });
    expect(table(v).claims).toEqual([false, "RTMR3 logs compose-hash more than once"]);
    expect(table(v).event_log![0]).toBe(false);
  });

  it("the lite bundle: no collateral for its quote, but its log replays and its claims read", () => {
    const v = verifyAttestation({ quote: lite.quote, event_log: lite.event_log }, { collateral, now: NOW });
    expect(table(v).quote).toEqual([false, "dcap-qvl refused the quote: Certificate is expired or not yet valid"]);
    expect(table(v).event_log).toEqual([true, "29 events replay to the quote's RTMR0–3"]);
    expect(table(v).claims![1]).toMatch(
      /^app-id 86b0e55f2fa8e4fb69d890f14f54d5612707646e, .*key-provider kms, os-image-hash 07a2388c/,
    );
  });

  it("a TCB status outside the accepted ones fails", () => {
    const v = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: NOW, acceptedStatuses: ["SWHardeningNeeded"] },
    );
    expect(table(v).quote).toEqual([
      false,
      "signature chain to Intel's root is valid but TCB status UpToDate is not accepted (SWHardeningNeeded)",
    ]);
  });

  it("with another root every check is marked simulated, and Intel's chain does not verify under it", () => {
    const firstCert = /-----BEGIN CERTIFICATE-----([^-]+)-----END CERTIFICATE-----/.exec(
      collateral.tcb_info_issuer_chain,
    )![1]!;
    const notIntelRoot = new Uint8Array(Buffer.from(firstCert.replace(/\s+/g, ""), "base64"));
    const v = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: NOW, rootCaDer: notIntelRoot },
    );
    expect(v.simulated).toBe(true);
    expect(v.checks.every((c) => c.simulated === true)).toBe(true);
    expect(table(v).quote).toEqual([
      false,
      "dcap-qvl refused the quote: Failed to verify certificate chain - intermediate signature invalid",
    ]);
  });

  it("never throws: garbage quote, garbage log, bad options", () => {
    const noQuote = verifyAttestation({ quote: "zz", event_log: dstack.event_log }, { collateral, now: NOW });
    expect(table(noQuote)).toEqual({
      quote: [false, "quote is not hex"],
      event_log: [false, "no quote to compare the replayed RTMRs with"],
      claims: [false, "the event log does not replay to the quote's RTMR3, so its claims are unproven"],
    });
    const noLog = verifyAttestation({ quote: dstack.quote, event_log: "{oops" }, { collateral, now: NOW });
    expect(table(noLog)).toMatchObject({
      event_log: [false, "event log is not valid JSON"],
      claims: [false, "no event log to read claims from"],
    });
    const badNow = verifyAttestation(
      { quote: dstack.quote, event_log: dstack.event_log },
      { collateral, now: Date.now() },
    );
    expect(table(badNow).quote).toEqual([false, "now must be Unix seconds"]);
    const nothing = verifyAttestation(
      { quote: undefined as unknown as string, event_log: undefined },
      { collateral: {} as Collateral, now: NOW },
    );
    expect(nothing.ok).toBe(false);
    expect(table(nothing).quote).toEqual([false, "quote must be hex or bytes"]);
  });
});
