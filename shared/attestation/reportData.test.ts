// The report_data bindings, each checked against node:crypto's hashes (an independent
// implementation): a nonce's hex-decoded bytes, the channel key, and the evidence list.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AttestationError } from "./errors.ts";
import { channelReportData, evidenceReportData, nonceReportData } from "./reportData.ts";

const sha512 = (...parts: Uint8Array[]) => new Uint8Array(createHash("sha512").update(Buffer.concat(parts)).digest());
const bytes = (text: string) => new Uint8Array(Buffer.from(text, "utf8"));

describe("nonceReportData", () => {
  it("is SHA-512('sigil-nonce:' ‖ the nonce's bytes), not of its hex text", () => {
    const rd = nonceReportData("abcd");
    expect(rd).toHaveLength(64);
    expect(rd).toEqual(sha512(bytes("sigil-nonce:"), new Uint8Array([0xab, 0xcd])));
    expect(rd).not.toEqual(sha512(bytes("sigil-nonce:abcd")));
    expect(nonceReportData("0xABCD")).toEqual(rd);
  });

  it("takes up to 32 bytes", () => {
    expect(nonceReportData("ff".repeat(32))).toEqual(sha512(bytes("sigil-nonce:"), new Uint8Array(32).fill(0xff)));
    expect(() => nonceReportData("ff".repeat(33))).toThrow(
      new AttestationError("invalid_input", "nonce is 33 bytes; at most 32"),
    );
    expect(() => nonceReportData("")).toThrow("nonce is empty");
    expect(() => nonceReportData("abc")).toThrow("nonce has an odd number of hex digits");
    expect(() => nonceReportData("nonce")).toThrow("nonce is not hex");
  });
});

describe("channelReportData", () => {
  it("is SHA-512('sigil-channel-v1:' ‖ public key)", () => {
    const key = new Uint8Array(32).map((_, i) => i);
    expect(channelReportData(key)).toEqual(sha512(bytes("sigil-channel-v1:"), key));
    expect(channelReportData(key)).not.toEqual(nonceReportData(Buffer.from(key).toString("hex")));
    expect(() => channelReportData(new Uint8Array())).toThrow("channel public key is empty");
  });
});

describe("evidenceReportData", () => {
  it("is SHA-256(sha256sum.txt) followed by 32 zero bytes", () => {
    const text = `${"a".repeat(64)}  acme-account.json\n`;
    const rd = evidenceReportData(text);
    expect(rd).toHaveLength(64);
    expect(Buffer.from(rd.subarray(0, 32)).toString("hex")).toBe(createHash("sha256").update(text).digest("hex"));
    expect(rd.subarray(32)).toEqual(new Uint8Array(32));
    expect(evidenceReportData(bytes(text))).toEqual(rd);
  });
});
