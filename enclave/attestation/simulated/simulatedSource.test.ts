// The simulated TEE (docs/design/attestation.md, Sources and Facts): its quotes are real-format TDX v4 quotes
// that dcap-qvl verifies UpToDate under the mock root and refuses under Intel's; the measured fields
// sit at the documented offsets; its event log replays (shared/attestation) to the quote's RTMR0–3
// and carries dstack's runtime events for the app-compose it was given.
import { X509Certificate } from "node:crypto";
import { sha256, sha512 } from "@noble/hashes/sha2";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { Quote, QuoteVerifier } from "@phala/dcap-qvl";
import { beforeAll, describe, expect, it } from "vitest";
import { replayRtmrs, type EventLogEntry } from "../../../shared/attestation/eventLog.ts";
import { RUNTIME_EVENT_TYPE, SIMULATED_MRTD_LABEL } from "./boot.ts";
import type { DcapCollateral } from "./pki.ts";
import { TDX_QUOTE_V4 } from "./quote.ts";
import { SimulatedSource } from "./simulatedSource.ts";

const COMPOSE_YAML = `services:\n  enclave:\n    image: sigil@sha256:${"ab".repeat(32)}\n`;
const APP_COMPOSE = `${JSON.stringify({ manifest_version: 2, name: "sigil-unit", runner: "docker-compose", docker_compose_file: COMPOSE_YAML }, null, 2)}\n`;
const INSTANCE_ID = hexToBytes("c0ffee".padEnd(40, "0"));
const REPORT_DATA = Uint8Array.from({ length: 64 }, (_, i) => i + 1);
const nowSecs = () => Math.floor(Date.now() / 1000);

let source: SimulatedSource;
let collateral: DcapCollateral;
let quote: Uint8Array;
let eventLog: EventLogEntry[];

beforeAll(async () => {
  source = await SimulatedSource.create({ appCompose: APP_COMPOSE, instanceId: INSTANCE_ID });
  collateral = await source.collateral();
  const answer = await source.getQuote(REPORT_DATA);
  quote = hexToBytes(answer.quote);
  eventLog = JSON.parse(answer.event_log) as EventLogEntry[];
});

const mockVerifier = () => QuoteVerifier.newWithRootCa(Buffer.from(source.rootCaDer));
const field = (at: number, size: number) => bytesToHex(quote.subarray(at, at + size));

describe("quote signature and collateral (dcap-qvl)", () => {
  it("verifies UpToDate under the mock root with the served collateral", () => {
    const report = mockVerifier().verify(quote, collateral, nowSecs());
    expect(report.status).toBe("UpToDate");
    expect(bytesToHex(report.report.asTd10()?.reportData ?? new Uint8Array())).toBe(bytesToHex(REPORT_DATA));
  });

  it("fails under Intel's root: the PCK chain does not lead to it", () => {
    expect(() => QuoteVerifier.newProd().verify(quote, collateral, nowSecs())).toThrow(/certificate chain/i);
  });

  it("names its root SIMULATED DCAP Root CA (NOT INTEL), self-signed", () => {
    const root = new X509Certificate(Buffer.from(source.rootCaDer));
    expect(root.subject).toContain("CN=SIMULATED DCAP Root CA (NOT INTEL)");
    expect(root.issuer).toBe(root.subject);
    expect(root.ca).toBe(true);
    expect(source.rootCaPem).toContain("-----BEGIN CERTIFICATE-----");
  });

  it.each([
    ["report_data", TDX_QUOTE_V4.offset.reportData + 5],
    ["RTMR3", TDX_QUOTE_V4.offset.rtmr3],
    ["MRTD", TDX_QUOTE_V4.offset.mrTd + 47],
  ])("refuses a quote with one flipped byte in %s", (_name, at) => {
    const tampered = quote.slice();
    tampered[at] = (tampered[at] as number) ^ 1;
    expect(() => mockVerifier().verify(tampered, collateral, nowSecs())).toThrow(
      "ISV enclave report signature is invalid",
    );
  });

  it("refuses the collateral of another simulated platform (its own signers and root)", async () => {
    const other = await SimulatedSource.create({ appCompose: APP_COMPOSE });
    const foreign = await other.collateral();
    expect(() => mockVerifier().verify(quote, foreign, nowSecs())).toThrow(/certificate chain/i);
  });

  it("issues collateral valid for 30 days from now, expired after", () => {
    expect(mockVerifier().verify(quote, collateral, nowSecs() + 29 * 86_400).status).toBe("UpToDate");
    expect(() => mockVerifier().verify(quote, collateral, nowSecs() + 31 * 86_400)).toThrow("TCBInfo expired");
  });
});

describe("quote layout (v4: header 48 bytes, TD report 584)", () => {
  it("has a v4 TDX header with an ECDSA-P256 attestation key", () => {
    const view = new DataView(quote.buffer, quote.byteOffset);
    expect(view.getUint16(0, true)).toBe(4);
    expect(view.getUint16(2, true)).toBe(2);
    expect(view.getUint32(4, true)).toBe(0x81);
  });

  it("puts MRTD at 184 (the zero-padded SIMULATED label) and report_data at 568–632", () => {
    const mrtd = quote.subarray(184, 232);
    expect(new TextDecoder().decode(mrtd.subarray(0, SIMULATED_MRTD_LABEL.length))).toBe(
      "SIMULATED-MRTD-NOT-A-REAL-TDX-QUOTE",
    );
    expect([...mrtd.subarray(SIMULATED_MRTD_LABEL.length)].every((b) => b === 0)).toBe(true);
    expect(field(568, 64)).toBe(bytesToHex(REPORT_DATA));
    expect(TDX_QUOTE_V4.offset).toMatchObject({
      mrTd: 184,
      rtmr0: 376,
      rtmr1: 424,
      rtmr2: 472,
      rtmr3: 520,
      reportData: 568,
    });
  });

  it("puts RTMR0–3 at 376/424/472/520, the same registers /info reports", async () => {
    const tcb = (await source.info()).tcb_info;
    expect([field(376, 48), field(424, 48), field(472, 48), field(520, 48)]).toEqual([
      tcb.rtmr0,
      tcb.rtmr1,
      tcb.rtmr2,
      tcb.rtmr3,
    ]);
    expect(field(184, 48)).toBe(tcb.mrtd);
  });

  it("agrees with dcap-qvl's own parser on every measured field", () => {
    const td = Quote.parse(quote).report.asTd10();
    if (!td) throw new Error("not a TD 1.0 report");
    expect(bytesToHex(td.mrTd)).toBe(field(184, 48));
    expect([td.rtMr0, td.rtMr1, td.rtMr2, td.rtMr3].map((r) => bytesToHex(r))).toEqual([
      field(376, 48),
      field(424, 48),
      field(472, 48),
      field(520, 48),
    ]);
    expect(bytesToHex(td.reportData)).toBe(field(568, 64));
  });

  it("signs exactly the report data it is asked for, and only 64 bytes", async () => {
    const other = sha512(utf8ToBytes("another"));
    expect(bytesToHex(hexToBytes((await source.getQuote(other)).quote).subarray(568, 632))).toBe(bytesToHex(other));
    await expect(source.getQuote(new Uint8Array(32))).rejects.toThrow(/64 bytes/);
  });
});

describe("event log", () => {
  it("replays (shared/attestation) to the quote's RTMR0–3", () => {
    expect(replayRtmrs(eventLog)).toEqual([field(376, 48), field(424, 48), field(472, 48), field(520, 48)]);
  });

  it("holds dstack's boot runtime events in RTMR3, in order, with empty digests like the real agent", () => {
    const runtime = eventLog.filter((e) => e.imr === 3);
    expect(runtime.map((e) => e.event)).toEqual([
      "system-preparing",
      "app-id",
      "compose-hash",
      "instance-id",
      "boot-mr-done",
      "key-provider",
      "system-ready",
    ]);
    for (const e of runtime) {
      expect(e.event_type).toBe(RUNTIME_EVENT_TYPE);
      expect(e.digest).toBe("");
    }
  });

  it("measures compose-hash = SHA-256 of the raw app-compose text, app-id = its first 20 bytes, the given instance id", () => {
    const payload = (name: string) => eventLog.find((e) => e.event === name)?.event_payload;
    const composeHash = bytesToHex(sha256(utf8ToBytes(APP_COMPOSE)));
    expect(payload("compose-hash")).toBe(composeHash);
    expect(payload("app-id")).toBe(composeHash.slice(0, 40));
    expect(payload("instance-id")).toBe(bytesToHex(INSTANCE_ID));
    expect(JSON.parse(new TextDecoder().decode(hexToBytes(payload("key-provider") ?? "")))).toMatchObject({
      name: "simulated",
    });
  });

  it("labels RTMR0–2's single boot events SIMULATED, so they replay yet cannot pass for firmware", () => {
    const boot = eventLog.filter((e) => e.imr < 3);
    expect(boot.map((e) => e.imr)).toEqual([0, 1, 2]);
    for (const e of boot) expect(e.event).toMatch(/^SIMULATED-RTMR[012]-/);
  });

  it("no longer replays to the quote once an event is edited or two are swapped", () => {
    const edited = eventLog.map((e) => (e.event === "compose-hash" ? { ...e, event_payload: "00".repeat(32) } : e));
    expect(replayRtmrs(edited)[3]).not.toBe(field(520, 48));
    const swapped = [...eventLog];
    const i = swapped.findIndex((e) => e.event === "app-id");
    [swapped[i], swapped[i + 1]] = [swapped[i + 1] as EventLogEntry, swapped[i] as EventLogEntry];
    expect(replayRtmrs(swapped)[3]).not.toBe(field(520, 48));
  });
});

describe("info and keys", () => {
  it("reports the compose hash of the raw app_compose, the app id and instance id the log measured", async () => {
    const info = await source.info();
    expect(info.tcb_info.app_compose).toBe(APP_COMPOSE);
    expect(info.compose_hash).toBe(bytesToHex(sha256(utf8ToBytes(info.tcb_info.app_compose))));
    expect(info.app_id).toBe(info.compose_hash.slice(0, 40));
    expect(info.instance_id).toBe(bytesToHex(INSTANCE_ID));
    expect(info.app_name).toBe("sigil-unit");
    expect(info.tcb_info.event_log).toEqual(eventLog);
    expect(JSON.parse(String(info.vm_config))).toMatchObject({ simulated: true });
  });

  it("derives the same 32-byte key for a path every time, another for another path or another seed", async () => {
    const seed = new Uint8Array(32).fill(9);
    const a = await SimulatedSource.create({ appCompose: APP_COMPOSE, keySeed: seed });
    const b = await SimulatedSource.create({ appCompose: APP_COMPOSE, keySeed: seed });
    expect(bytesToHex(await a.getKey("sigil/x"))).toBe(bytesToHex(await b.getKey("sigil/x")));
    expect(await a.getKey("sigil/x")).toHaveLength(32);
    expect(bytesToHex(await a.getKey("sigil/y"))).not.toBe(bytesToHex(await a.getKey("sigil/x")));
    expect(bytesToHex(await source.getKey("sigil/x"))).not.toBe(bytesToHex(await a.getKey("sigil/x")));
  });
});
