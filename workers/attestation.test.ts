// The attestation core inside workerd, where the edge verifies the enclave's channel quote
// (docs/design/attestation.md, Channel: step 2): dcap-qvl verifies the real dstack quote with its collateral, the
// event log replays, and the negative cases fail with the same messages as in Node. Fixtures come
// in as JSON modules from ../shared/fixtures (beside the clone, as in CI): workerd has no node:fs.
import { describe, expect, it } from "vitest";
import collateral from "../../shared/fixtures/attestation/dcap-collateral-for-dstack-quote-report.json";
import report from "../../shared/fixtures/attestation/dstack-quote-report.json";
import lite from "../../shared/fixtures/attestation/dstack-tdx-lite-getquote.json";
import {
  QuoteVerificationError,
  channelReportData,
  toBytes,
  verifyAttestation,
  verifyQuote,
  type Collateral,
} from "../shared/attestation/index.ts";

const NOW = 1772323200;
const bundle = { quote: report.quote, event_log: report.event_log };

function refusal(quote: Uint8Array | string, now: number): string {
  try {
    verifyQuote(quote, collateral as Collateral, { now });
  } catch (err) {
    expect(err).toBeInstanceOf(QuoteVerificationError);
    return (err as QuoteVerificationError).dcapMessage;
  }
  throw new Error("expected a refusal");
}

describe("attestation in workerd", () => {
  it("verifies the dstack quote UpToDate and replays its event log (checks 1–3)", () => {
    const v = verifyAttestation(bundle, {
      collateral: collateral as Collateral,
      now: NOW,
      expectedReportData: report.report_data,
    });
    expect(v.checks.map((c) => [c.check, c.ok])).toEqual([
      ["quote", true],
      ["report_data", true],
      ["event_log", true],
      ["claims", true],
    ]);
    expect(v.ok).toBe(true);
    expect(v.tcb?.status).toBe("UpToDate");
    expect(v.replayed?.[3].slice(0, 8)).toBe("0f787c38");
    expect(v.claims?.composeHash).toBe("3763bc34552cf3a27ff71ad5f7a90471562a1a2df552dfc1998cba2d60da27e7");
  });

  it("refuses a flipped RTMR3 byte, expired collateral, and a certificate outside its validity", () => {
    const flipped = toBytes(report.quote, "quote").slice();
    flipped[520]! ^= 0x01;
    expect(refusal(flipped, NOW)).toBe("ISV enclave report signature is invalid");
    expect(refusal(report.quote, Date.parse("2026-03-20T10:58:52Z") / 1000)).toBe("TCBInfo expired");
    // Certificate validity dates are checked here too (the lite quote's PCK certificate is newer).
    expect(refusal(lite.quote, NOW)).toBe("Certificate is expired or not yet valid");
  });

  it("binds a channel key the same way as in Node", () => {
    const rd = channelReportData(new Uint8Array(32));
    expect(rd).toHaveLength(64);
    expect(
      verifyAttestation(bundle, { collateral: collateral as Collateral, now: NOW, expectedReportData: rd }).checks.find(
        (c) => c.check === "report_data",
      )?.ok,
    ).toBe(false);
  });
});
