// Event-log replay and RTMR3 claims against the two real dstack logs (docs/design/attestation.md, Fixtures):
// both replay to their quotes' RTMR0–3, and any edit, reordering or extra claim is caught.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AttestationError } from "./errors.ts";
import {
  RUNTIME_EVENT_TYPE,
  parseEventLog,
  replayRtmrs,
  rtmr3Claims,
  runtimeEventDigest,
  type EventLogEntry,
} from "./eventLog.ts";
import { parseQuote } from "./quote.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/attestation");
const json = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
const dstack = json("dstack-quote-report.json") as { quote: string; event_log: string };
const lite = json("dstack-tdx-lite-getquote.json") as { quote: string; event_log: string };
const utf8hex = (text: string) => Buffer.from(text, "utf8").toString("hex");

function runtime(event: string, payloadHex = ""): EventLogEntry {
  return { imr: 3, event_type: RUNTIME_EVENT_TYPE, digest: "", event, event_payload: payloadHex };
}
/** A minimal dstack RTMR3 sequence, in the order the guest agent logs it. */
function rtmr3Log(overrides: { instanceId?: string | null; keyProvider?: string } = {}): EventLogEntry[] {
  const instance = overrides.instanceId === undefined ? "11".repeat(20) : overrides.instanceId;
  return [
    runtime("system-preparing"),
    runtime("app-id", "aa".repeat(20)),
    runtime("compose-hash", "bb".repeat(32)),
    ...(instance === null ? [] : [runtime("instance-id", instance)]),
    runtime("boot-mr-done"),
    runtime("key-provider", utf8hex(overrides.keyProvider ?? '{"name":"kms","id":"k1"}')),
    runtime("system-ready"),
  ];
}

function refusal(fn: () => unknown, reason: string): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AttestationError);
    expect((err as AttestationError).reason).toBe(reason);
    return (err as Error).message;
  }
  throw new Error("expected a refusal");
}

describe("replay", () => {
  it("the dstack log replays to its quote's RTMR0–3 (RTMR3 starts 0f787c38)", () => {
    const replayed = replayRtmrs(parseEventLog(dstack.event_log));
    expect(replayed).toEqual(parseQuote(dstack.quote).rtmrs);
    expect(replayed[3].slice(0, 8)).toBe("0f787c38");
  });

  it("the lite log (empty runtime digests) replays to its quote's RTMR0–3 (RTMR3 starts 6f24c170)", () => {
    const entries = parseEventLog(lite.event_log);
    expect(entries.filter((e) => e.event_type === RUNTIME_EVENT_TYPE).every((e) => e.digest === "")).toBe(true);
    const replayed = replayRtmrs(entries);
    expect(replayed).toEqual(parseQuote(lite.quote).rtmrs);
    expect(replayed[3].slice(0, 8)).toBe("6f24c170");
  });

  it("a runtime digest is SHA-384(le32(type) ‖ ':' ‖ name ‖ ':' ‖ payload), whatever digest was logged", () => {
    const logged = parseEventLog(dstack.event_log).find((e) => e.event === "compose-hash")!;
    expect(
      Buffer.from(runtimeEventDigest(logged.event, Buffer.from(logged.event_payload, "hex"))).toString("hex"),
    ).toBe(logged.digest);
    const forged = parseEventLog(dstack.event_log).map((e) =>
      e.event === "compose-hash" ? { ...e, digest: "00".repeat(48) } : e,
    );
    expect(replayRtmrs(forged)).toEqual(parseQuote(dstack.quote).rtmrs);
  });

  it("an edited payload changes RTMR3 and nothing else", () => {
    const quote = parseQuote(dstack.quote);
    const edited = parseEventLog(dstack.event_log).map((e) =>
      e.event === "compose-hash" ? { ...e, event_payload: `ff${e.event_payload.slice(2)}` } : e,
    );
    const replayed = replayRtmrs(edited);
    expect(replayed.slice(0, 3)).toEqual(quote.rtmrs.slice(0, 3));
    expect(replayed[3]).not.toBe(quote.rtmrs[3]);
  });

  it("a reordered log replays to other values", () => {
    const quote = parseQuote(dstack.quote);
    const entries = parseEventLog(dstack.event_log);
    const i = entries.findIndex((e) => e.event === "app-id");
    const swapped = [...entries];
    [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
    expect(replayRtmrs(swapped)[3]).not.toBe(quote.rtmrs[3]);
    // Reversed, every RTMR (each has several events) replays to another value.
    const reversed = replayRtmrs([...entries].reverse());
    expect([0, 1, 2, 3].filter((r) => reversed[r] === quote.rtmrs[r])).toEqual([]);
    // Order matters within one RTMR only: the RTMR3 events moved first, in their order, still replay.
    const rtmr3First = [...entries.filter((e) => e.imr === 3), ...entries.filter((e) => e.imr !== 3)];
    expect(replayRtmrs(rtmr3First)).toEqual(quote.rtmrs);
  });
});

describe("parseEventLog", () => {
  it("reads the JSON string or the parsed array", () => {
    expect(parseEventLog(JSON.parse(dstack.event_log))).toEqual(parseEventLog(dstack.event_log));
    expect(parseEventLog(dstack.event_log)).toHaveLength(28);
  });

  it("refuses malformed logs, naming the entry", () => {
    expect(refusal(() => parseEventLog("{oops"), "invalid_event_log")).toBe("event log is not valid JSON");
    expect(refusal(() => parseEventLog("{}"), "invalid_event_log")).toBe("event log must be a JSON array of entries");
    const entries = JSON.parse(dstack.event_log) as EventLogEntry[];
    const bad = (i: number, patch: Record<string, unknown>) =>
      JSON.stringify(entries.map((e, j) => (j === i ? { ...e, ...patch } : e)));
    expect(refusal(() => parseEventLog(bad(2, { imr: 4 })), "invalid_event_log")).toMatch(/^event log entry 2\.imr: /);
    expect(refusal(() => parseEventLog(bad(21, { event_payload: "xyz" })), "invalid_event_log")).toBe(
      "event log entry 21.event_payload: must be hex with an even number of digits",
    );
    expect(refusal(() => parseEventLog(bad(0, { digest: "" })), "invalid_event_log")).toBe(
      "event log entry 0: a non-runtime event must log a 48-byte digest",
    );
    expect(refusal(() => parseEventLog(bad(5, { event: undefined })), "invalid_event_log")).toMatch(
      /^event log entry 5\.event: /,
    );
  });
});

describe("rtmr3Claims", () => {
  it("the dstack log: app-id = first 20 bytes of compose-hash, key-provider local-sgx", () => {
    const claims = rtmr3Claims(parseEventLog(dstack.event_log));
    expect(claims).toEqual({
      appId: "3763bc34552cf3a27ff71ad5f7a90471562a1a2d",
      composeHash: "3763bc34552cf3a27ff71ad5f7a90471562a1a2df552dfc1998cba2d60da27e7",
      instanceId: "c3714eb66990eace777b4e664c16e09375dec4c9",
      keyProvider: {
        name: "local-sgx",
        id: "1b7a49378403249b6986a907844cab0921eca32dd47e657f3c10311ccaeccf8b",
        raw: '{"name":"local-sgx","id":"1b7a49378403249b6986a907844cab0921eca32dd47e657f3c10311ccaeccf8b"}',
      },
    });
    expect(claims.composeHash.startsWith(claims.appId)).toBe(true);
  });

  it("the lite log: a KMS key provider and the OS image hash", () => {
    const claims = rtmr3Claims(parseEventLog(lite.event_log));
    expect(claims.appId).toBe("86b0e55f2fa8e4fb69d890f14f54d5612707646e");
    expect(claims.composeHash).toBe("86b0e55f2fa8e4fb69d890f14f54d5612707646e2573d54e0d2ddaaade77caa9");
    expect(claims.instanceId).toBe("050bf89570575fe8fab4cb8f0a62a9e64efe8ead");
    expect(claims.osImageHash).toBe("07a2388c7a6a1b6a646d443f1517990a4ec294471d63146cda9d56972765051d");
    expect(claims.keyProvider.name).toBe("kms");
    expect(claims.keyProvider.id).toMatch(/^3059301306072a8648ce3d0201/);
  });

  it("the app's own events after system-ready are not claims (the dstack log has one)", () => {
    const entries = parseEventLog(dstack.event_log);
    expect(entries.at(-1)!.event).toBe("LIUM_MINER_HOTKEY");
    expect(rtmr3Claims(entries).appId).toBe("3763bc34552cf3a27ff71ad5f7a90471562a1a2d");
  });

  it("refuses a duplicate claim event, wherever it is", () => {
    const log = rtmr3Log();
    const dup = [...log.slice(0, 3), runtime("compose-hash", "cc".repeat(32)), ...log.slice(3)];
    expect(refusal(() => rtmr3Claims(dup), "invalid_claims")).toBe("RTMR3 logs compose-hash more than once");
    const real = parseEventLog(dstack.event_log);
    const at = real.findIndex((e) => e.event === "app-id");
    const dupApp = [...real.slice(0, at + 1), { ...real[at]! }, ...real.slice(at + 1)];
    expect(refusal(() => rtmr3Claims(dupApp), "invalid_claims")).toBe("RTMR3 logs app-id more than once");
  });

  it("refuses a claim the app emitted after system-ready", () => {
    const late = [...rtmr3Log({ instanceId: null }), runtime("instance-id", "22".repeat(20))];
    expect(refusal(() => rtmr3Claims(late), "invalid_claims")).toBe(
      "RTMR3 logs instance-id after system-ready, where the app can emit events",
    );
  });

  it("refuses a missing app-id, compose-hash or key-provider", () => {
    for (const name of ["app-id", "compose-hash", "key-provider"]) {
      const without = rtmr3Log().filter((e) => e.event !== name);
      expect(refusal(() => rtmr3Claims(without), "invalid_claims")).toBe(`RTMR3 has no ${name} event`);
    }
    // Claims only count as runtime events in RTMR3.
    const moved = rtmr3Log().map((e) => (e.event === "app-id" ? { ...e, imr: 2 } : e));
    expect(refusal(() => rtmr3Claims(moved), "invalid_claims")).toBe("RTMR3 has no app-id event");
  });

  it("refuses claims of the wrong size", () => {
    const short = rtmr3Log().map((e) => (e.event === "compose-hash" ? { ...e, event_payload: "bb".repeat(31) } : e));
    expect(refusal(() => rtmr3Claims(short), "invalid_claims")).toBe("RTMR3 compose-hash is 31 bytes, not 32");
  });

  it("instance-id may be empty (no_instance_id) or absent: the claim is then empty", () => {
    expect(rtmr3Claims(rtmr3Log({ instanceId: "" })).instanceId).toBe("");
    expect(rtmr3Claims(rtmr3Log({ instanceId: null })).instanceId).toBe("");
  });

  it("keeps a key provider that is not JSON as raw text", () => {
    expect(rtmr3Claims(rtmr3Log({ keyProvider: "none" })).keyProvider).toEqual({ raw: "none" });
  });
});
