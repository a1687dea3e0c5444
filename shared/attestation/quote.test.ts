// The quote parser against the real fixtures and against dcap-qvl's own parser, for v4 and for a
// v5 layout built from the v4 bytes (no public v5 TDX quote is among the fixtures).
import * as dcap from "@phala/dcap-qvl";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AttestationError } from "./errors.ts";
import { parseQuote } from "./quote.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const json = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
const dstack = json("dstack-quote-report.json") as { quote: string; report_data: string };
const lite = json("dstack-tdx-lite-getquote.json") as { quote: string; report_data: string };
const binQuote = new Uint8Array(readFileSync(join(FIXTURES, "dcap-tdx-quote.bin")));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const unhex = (h: string) => new Uint8Array(Buffer.from(h, "hex"));

/** The same quote as version 5: header version 5, then body type 2 (TD report 1.0) and size 584. */
function asV5(v4: Uint8Array, bodyType = 2, bodySize = 584): Uint8Array {
  const v5 = new Uint8Array(v4.length + 6);
  v5.set(v4.subarray(0, 48));
  const view = new DataView(v5.buffer);
  view.setUint16(0, 5, true);
  view.setUint16(48, bodyType, true);
  view.setUint32(50, bodySize, true);
  v5.set(v4.subarray(48), 54);
  return v5;
}

function invalid(input: string | Uint8Array): string {
  try {
    parseQuote(input);
  } catch (err) {
    expect(err).toBeInstanceOf(AttestationError);
    expect((err as AttestationError).reason).toBe("invalid_quote");
    return (err as Error).message;
  }
  throw new Error("expected parseQuote to refuse");
}

describe("parseQuote, v4", () => {
  it("reads the dstack quote's header, MRTD, RTMR0–3 and report_data at the documented offsets", () => {
    const q = parseQuote(dstack.quote);
    expect(q).toMatchObject({ version: 4, attestationKeyType: 2, teeType: 0x81, reportOffset: 48, signedLength: 632 });
    expect(q.bodyType).toBeUndefined();
    expect(q.mrTd).toBe(
      "b24d3b24e9e3c16012376b52362ca09856c4adecb709d5fac33addf1c47e193da075b125b6c364115771390a5461e217",
    );
    expect(q.rtmrs).toEqual([
      "2e3843265f8ecdd4e2282694747f6f2f111605c33f2a8882f5734ee6f3a6ce63d8f34aeef06093dcda76fa5f9d33d8d6",
      "a1b79d76021970f57c45c4a7c395f780bab37011a4df27fe44e8559bd1abb4d6e52f12f866d1d08405448eb797a5970f",
      "1e31b59d605df7ee8160cf7966be9bafa6d0e1905de7e09695a24cd9748e71a603a51fae1297619fa0c30517addbcd07",
      "0f787c3877f3e95095d5a4d13dd0fe0233803b30120d8469866719dc28f519ce021fe1e53459121e7a5a4443147185a8",
    ]);
    // The fixture's report_data: "1234" then zeros, as served beside the quote.
    expect(q.reportData).toBe(`1234${"0".repeat(124)}`);
    expect(q.reportData).toBe(dstack.report_data);
    // The raw offsets of docs/design/attestation.md, Facts.
    const bytes = unhex(dstack.quote);
    expect(q.mrTd).toBe(hex(bytes.subarray(184, 232)));
    expect(q.rtmrs).toEqual([376, 424, 472, 520].map((o) => hex(bytes.subarray(o, o + 48))));
    expect(q.reportData).toBe(hex(bytes.subarray(568, 632)));
  });

  it("takes hex with or without 0x, either case, or bytes, with the same result", () => {
    const plain = parseQuote(dstack.quote);
    expect(parseQuote(`0x${dstack.quote}`).rtmrs).toEqual(plain.rtmrs);
    expect(parseQuote(dstack.quote.toUpperCase()).reportData).toBe(plain.reportData);
    expect(parseQuote(unhex(dstack.quote)).mrTd).toBe(plain.mrTd);
  });

  it("agrees with dcap-qvl's parser on every fixture", () => {
    for (const bytes of [unhex(dstack.quote), unhex(lite.quote), binQuote]) {
      const ours = parseQuote(bytes);
      const theirs = dcap.Quote.parse(bytes);
      const td = theirs.report.asTd10();
      expect(td).not.toBeNull();
      expect(ours.mrTd).toBe(hex(td!.mrTd));
      expect(ours.rtmrs).toEqual([td!.rtMr0, td!.rtMr1, td!.rtMr2, td!.rtMr3].map(hex));
      expect(ours.reportData).toBe(hex(td!.reportData));
      expect(ours.teeTcbSvn).toBe(hex(td!.teeTcbSvn));
      expect(ours.signedLength).toBe(theirs.signedLength());
    }
  });

  it("reads the second quote (dcap-tdx-quote.bin): RTMR3 all zeros, its own report_data", () => {
    const q = parseQuote(binQuote);
    expect(q.rtmrs[3]).toBe("0".repeat(96));
    expect(q.reportData.slice(0, 16)).toBe("9a9d48e7f6799642");
    expect(parseQuote(lite.quote).rtmrs[3].slice(0, 8)).toBe("6f24c170");
  });
});

describe("parseQuote, v5", () => {
  it("reads every report field 6 bytes later, as dcap-qvl does", () => {
    const v4 = parseQuote(dstack.quote);
    const v5bytes = asV5(unhex(dstack.quote));
    const v5 = parseQuote(v5bytes);
    expect(v5).toMatchObject({ version: 5, bodyType: 2, reportOffset: 54, signedLength: 638 });
    expect(v5.mrTd).toBe(v4.mrTd);
    expect(v5.rtmrs).toEqual(v4.rtmrs);
    expect(v5.reportData).toBe(v4.reportData);
    // Offsets: MRTD 190, RTMR3 526, report_data 574–638.
    expect(v5.mrTd).toBe(hex(v5bytes.subarray(190, 238)));
    expect(v5.rtmrs[3]).toBe(hex(v5bytes.subarray(526, 574)));
    expect(v5.reportData).toBe(hex(v5bytes.subarray(574, 638)));
    const theirs = dcap.Quote.parse(v5bytes);
    expect(theirs.header.version).toBe(5);
    expect(theirs.signedLength()).toBe(638);
    expect(hex(theirs.report.asTd10()!.rtMr3)).toBe(v5.rtmrs[3]);
    expect(hex(theirs.report.asTd10()!.reportData)).toBe(v5.reportData);
  });

  it("reads a TD report 1.5 body (type 3, 648 bytes) at the same offsets", () => {
    const v4 = unhex(dstack.quote);
    // Insert the 64 bytes TD report 1.5 appends (TEE_TCB_SVN2, MRSERVICETD) after the 584-byte report.
    const td15 = new Uint8Array(v4.length + 64);
    td15.set(v4.subarray(0, 632));
    td15.set(v4.subarray(632), 632 + 64);
    const bytes = asV5(td15, 3, 648);
    const q = parseQuote(bytes);
    expect(q).toMatchObject({ version: 5, bodyType: 3, signedLength: 54 + 648 });
    expect(q.rtmrs[3]).toBe(parseQuote(v4).rtmrs[3]);
    const theirs = dcap.Quote.parse(bytes);
    expect(theirs.report.type).toBe("td15");
    expect(hex(theirs.report.asTd10()!.reportData)).toBe(q.reportData);
  });

  it("refuses a v5 body that is not a TD report or whose size does not match its type", () => {
    const v4 = unhex(dstack.quote);
    expect(invalid(asV5(v4, 1))).toBe("quote v5 body type 1 is not a TD report (2 or 3)");
    expect(invalid(asV5(v4, 2, 648))).toBe("quote v5 body size 648 does not match its type 2 (584 bytes)");
  });
});

describe("parseQuote refuses what is not a TDX quote", () => {
  const bytes = unhex(dstack.quote);
  it("short or truncated input", () => {
    expect(invalid("")).toBe("quote is 0 bytes, shorter than its 48-byte header");
    expect(invalid(bytes.subarray(0, 47))).toBe("quote is 47 bytes, shorter than its 48-byte header");
    expect(invalid(bytes.subarray(0, 600))).toBe(
      "quote is 600 bytes, too short for a version 4 TD report (636 bytes with the signature data's length)",
    );
    expect(invalid(bytes.subarray(0, 4000))).toBe(
      "quote is truncated: its signature data declares 4300 bytes, 3364 follow",
    );
  });

  it("garbage: not hex, odd length, another version or TEE", () => {
    expect(invalid("zz")).toBe("quote is not hex");
    expect(invalid("abc")).toBe("quote has an odd number of hex digits");
    expect(invalid(new Uint8Array(700))).toBe("quote version 0 is not a TDX quote (versions 4 and 5)");
    const sgx = bytes.slice();
    sgx[4] = 0;
    expect(invalid(sgx)).toBe("quote tee type 0x00000000 is not TDX (0x00000081)");
    const v3 = bytes.slice();
    v3[0] = 3;
    expect(invalid(v3)).toBe("quote version 3 is not a TDX quote (versions 4 and 5)");
  });
});
