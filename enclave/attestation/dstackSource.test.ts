// DstackSource over @phala/dstack-sdk, against the guest-agent stand-in
// (emulators/dstackGuestAgent.ts) answering in the real agent's format: quotes pass through
// unchanged, Info's `tcb_info` becomes an object with `app_compose` the raw string, keys come from
// GetKey, and a malformed answer from the agent is refused rather than passed on.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { QuoteVerifier } from "@phala/dcap-qvl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replayRtmrs, type EventLogEntry } from "../../shared/attestation/eventLog.ts";
import { STAND_IN_APP_COMPOSE, startGuestAgent, type GuestAgent } from "../../emulators/dstackGuestAgent.ts";
import { DstackSource } from "./dstackSource.ts";

const SECRET = new Uint8Array(32).fill(3);
let agent: GuestAgent;
let source: DstackSource;

beforeAll(async () => {
  agent = await startGuestAgent(SECRET);
  source = new DstackSource(agent.endpoint);
});
afterAll(() => agent.close());

describe("getQuote", () => {
  it("returns the agent's quote over exactly the given 64 bytes, its event log and vm_config", async () => {
    const reportData = Uint8Array.from({ length: 64 }, (_, i) => 255 - i);
    const answer = await source.getQuote(reportData);
    const quote = hexToBytes(answer.quote);
    expect(bytesToHex(quote.subarray(568, 632))).toBe(bytesToHex(reportData));
    expect(agent.calls.at(-1)).toEqual({ path: "/GetQuote", body: { report_data: bytesToHex(reportData) } });

    const tee = await agent.attestation();
    const report = QuoteVerifier.newWithRootCa(Buffer.from(tee.rootCaDer)).verify(
      quote,
      await tee.collateral(),
      Math.floor(Date.now() / 1000),
    );
    expect(report.status).toBe("UpToDate");
    const log = JSON.parse(answer.event_log) as EventLogEntry[];
    expect(replayRtmrs(log)[3]).toBe(bytesToHex(quote.subarray(520, 568)));
    expect(JSON.parse(answer.vm_config ?? "{}")).toHaveProperty("os_image_hash");
  });

  it("refuses report data that is not 64 bytes before asking the agent", async () => {
    const before = agent.calls.length;
    await expect(source.getQuote(new Uint8Array(63))).rejects.toThrow(/64 bytes/);
    expect(agent.calls.length).toBe(before);
  });
});

describe("info", () => {
  it("parses tcb_info into an object and keeps app_compose the raw string its compose hash covers", async () => {
    const info = await source.info();
    expect(typeof info.tcb_info).toBe("object");
    expect(info.tcb_info.app_compose).toBe(STAND_IN_APP_COMPOSE);
    expect(info.compose_hash).toBe(bytesToHex(sha256(utf8ToBytes(info.tcb_info.app_compose))));
    expect(info.app_id).toBe(info.compose_hash.slice(0, 40));
    expect(Array.isArray(info.tcb_info.event_log)).toBe(true);
    expect(replayRtmrs(info.tcb_info.event_log)[3]).toBe(info.tcb_info.rtmr3);
    // Fields beyond the ones Sigil reads pass through.
    expect(info).toHaveProperty("key_provider_info");
    expect(info).toHaveProperty("app_cert");
  });

  it("refuses an Info answer without the fields a verifier needs", async () => {
    const junk = createServer((_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ app_id: "ab", tcb_info: JSON.stringify({ mrtd: "00" }) })),
    );
    await new Promise<void>((resolve) => junk.listen(0, "127.0.0.1", resolve));
    try {
      const bad = new DstackSource(`http://127.0.0.1:${(junk.address() as AddressInfo).port}`);
      await expect(bad.info()).rejects.toThrow(/info is malformed/);
    } finally {
      await new Promise<void>((resolve) => junk.close(() => resolve()));
    }
  });
});

describe("getKey", () => {
  it("returns the agent's key for the path", async () => {
    const expected = hkdf(sha256, SECRET, utf8ToBytes("dstack-stand-in"), utf8ToBytes("sigil/test/v1"), 32);
    expect(bytesToHex(await source.getKey("sigil/test/v1"))).toBe(bytesToHex(expected));
  });
});
