// A dstack event log and the RTMRs it must reproduce (docs/design/attestation.md, Facts). The log is a JSON
// array of `{imr, event_type, digest, event, event_payload}`; each event extends RTMR[imr] as
// SHA-384(old ‖ digest), starting from 48 zero bytes. Runtime events (type 0x08000001, RTMR3)
// arrive with an empty digest from current guest agents, so their digest is always recomputed:
// SHA-384(le32(type) ‖ ":" ‖ name ‖ ":" ‖ payload). Also: reading a served log (parseEventLog)
// and the claims RTMR3's runtime events make (rtmr3Claims). No Node-only APIs: the edge uses this too.
import { sha384 } from "@noble/hashes/sha512";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import * as z from "./schema.ts";
import { AttestationError, parsedOr } from "./errors.ts";

/** The event type of dstack's runtime events (app-id, compose-hash, …), all extended into RTMR3. */
export const RUNTIME_EVENT_TYPE = 0x08000001;

export type EventLogEntry = { imr: number; event_type: number; digest: string; event: string; event_payload: string };

/** Four RTMRs, each 48 bytes as lowercase hex without 0x. */
export type Rtmrs = [string, string, string, string];

/** The digest a runtime event extends RTMR3 with. */
export function runtimeEventDigest(name: string, payload: Uint8Array): Uint8Array {
  const type = new Uint8Array(4);
  new DataView(type.buffer).setUint32(0, RUNTIME_EVENT_TYPE, true);
  return sha384(concatBytes(type, utf8ToBytes(":"), utf8ToBytes(name), utf8ToBytes(":"), payload));
}

/** One RTMR extension: SHA-384(old ‖ digest), the digest zero-padded to 48 bytes. */
export function extendRtmr(current: Uint8Array, digest: Uint8Array): Uint8Array {
  const padded = new Uint8Array(48);
  padded.set(digest.slice(0, 48));
  return sha384(concatBytes(current, padded));
}

/** The digest an entry extends its RTMR with: recomputed for runtime events, as logged otherwise. */
export function entryDigest(entry: EventLogEntry): Uint8Array {
  if (entry.event_type === RUNTIME_EVENT_TYPE) return runtimeEventDigest(entry.event, hexToBytes(entry.event_payload));
  return hexToBytes(entry.digest);
}

/** Replays every entry from zeroed registers: the RTMR0–3 a quote must carry. */
export function replayRtmrs(entries: readonly EventLogEntry[]): Rtmrs {
  const rtmrs: Uint8Array[] = [0, 1, 2, 3].map(() => new Uint8Array(48));
  for (const entry of entries) {
    if (!Number.isInteger(entry.imr) || entry.imr < 0 || entry.imr > 3) {
      throw new AttestationError("invalid_event_log", `event log entry with imr ${entry.imr}: only RTMR0–3 exist`);
    }
    rtmrs[entry.imr] = extendRtmr(rtmrs[entry.imr] as Uint8Array, entryDigest(entry));
  }
  return rtmrs.map((r) => bytesToHex(r)) as Rtmrs;
}

const hexDigits = z.string().check(z.regex(/^(?:[0-9a-fA-F]{2})*$/, "must be hex with an even number of digits"));
const entrySchema = z.object({
  imr: z.int().check(z.minimum(0), z.maximum(3)),
  event_type: z.int().check(z.minimum(0), z.maximum(0xffffffff)),
  digest: hexDigits,
  event: z.string(),
  event_payload: hexDigits,
});

/**
 * Reads an event log as `/attestation` serves it (a JSON string) or already parsed, and checks its
 * shape: every entry `{imr 0–3, event_type u32, digest hex, event, event_payload hex}`; events other
 * than runtime events must log their 48-byte digest (they cannot be recomputed). Throws
 * `invalid_event_log` naming the first bad entry.
 */
export function parseEventLog(input: unknown): EventLogEntry[] {
  const raw = parsedOr("invalid_event_log", input, "event log is not valid JSON");
  if (!Array.isArray(raw)) throw new AttestationError("invalid_event_log", "event log must be a JSON array of entries");
  return raw.map((item, index) => {
    const parsed = entrySchema.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `.${issue.path.join(".")}` : "";
      throw new AttestationError(
        "invalid_event_log",
        `event log entry ${index}${where}: ${issue?.message ?? "invalid"}`,
      );
    }
    const entry = parsed.data;
    if (entry.event_type !== RUNTIME_EVENT_TYPE && entry.digest.length !== 96) {
      throw new AttestationError(
        "invalid_event_log",
        `event log entry ${index}: a non-runtime event must log a 48-byte digest`,
      );
    }
    return entry;
  });
}

/** The runtime events dstack extends RTMR3 with that say what runs (docs/design/attestation.md, The verifier: check 3). */
export const CLAIM_EVENTS = ["app-id", "compose-hash", "instance-id", "key-provider", "os-image-hash"] as const;
export type ClaimEvent = (typeof CLAIM_EVENTS)[number];
/** Claims every dstack boot records; instance-id and os-image-hash may be missing (see rtmr3Claims). */
export const REQUIRED_CLAIM_EVENTS = [
  "app-id",
  "compose-hash",
  "key-provider",
] as const satisfies readonly ClaimEvent[];
/** The runtime event dstack emits when boot is over and the app's containers start. */
export const SYSTEM_READY_EVENT = "system-ready";

/** What RTMR3 says about the app. Hex fields are lowercase without 0x. */
export type Rtmr3Claims = {
  /** 20 bytes: the app's contract address (without 0x). */
  appId: string;
  /** 32 bytes: SHA-256 of the raw app-compose text. */
  composeHash: string;
  /** The instance id (20 bytes in both fixtures); "" when the event is absent or empty. */
  instanceId: string;
  /** The key provider as logged: `{"name": "kms" | "local-sgx" | …, "id": …}` JSON when it parses. */
  keyProvider: { name?: string; id?: string; raw: string };
  /** 32 bytes; logged by the newer guest agent (the lite fixture), not by the older one. */
  osImageHash?: string;
};

/** Expected payload sizes; a claim of another size is not what dstack records. */
const CLAIM_BYTES: Partial<Record<ClaimEvent, number>> = { "app-id": 20, "compose-hash": 32, "os-image-hash": 32 };

/**
 * The claims RTMR3's runtime events make (docs/design/attestation.md, The verifier: check 3). Only meaningful after the log
 * replays to the quote's RTMRs. Refuses:
 * - a claim event logged twice (a later copy would let a reader pick either value);
 * - a claim event after `system-ready`: from then on the app itself emits runtime events (the
 *   dstack fixture ends with one, LIUM_MINER_HOTKEY), so a claim there is the app's word, not
 *   dstack's; both fixtures log every claim before it;
 * - a missing app-id, compose-hash or key-provider; and claims of the wrong size.
 * instance-id may be absent or empty (apps deployed with `no_instance_id` have none; dstack's own
 * verifier reads a missing one as empty); both fixtures log a 20-byte one. It is optional here and
 * the caller decides whether it needs one. os-image-hash is logged only by the newer (lite) image.
 */
export function rtmr3Claims(entries: readonly EventLogEntry[]): Rtmr3Claims {
  const fail = (message: string): never => {
    throw new AttestationError("invalid_claims", message);
  };
  const found = new Map<ClaimEvent, Uint8Array>();
  let ready = false;
  for (const entry of entries) {
    if (entry.imr !== 3 || entry.event_type !== RUNTIME_EVENT_TYPE) continue;
    const name = entry.event as ClaimEvent;
    if (!(CLAIM_EVENTS as readonly string[]).includes(name)) {
      if (entry.event === SYSTEM_READY_EVENT) ready = true;
      continue;
    }
    if (found.has(name)) fail(`RTMR3 logs ${name} more than once`);
    if (ready) fail(`RTMR3 logs ${name} after ${SYSTEM_READY_EVENT}, where the app can emit events`);
    const payload = hexToBytes(entry.event_payload);
    const size = CLAIM_BYTES[name];
    if (size !== undefined && payload.length !== size) fail(`RTMR3 ${name} is ${payload.length} bytes, not ${size}`);
    found.set(name, payload);
  }
  for (const name of REQUIRED_CLAIM_EVENTS) if (!found.has(name)) fail(`RTMR3 has no ${name} event`);

  const keyProviderBytes = found.get("key-provider") as Uint8Array;
  const raw = new TextDecoder().decode(keyProviderBytes);
  const keyProvider: Rtmr3Claims["keyProvider"] = { raw };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed !== null && typeof parsed === "object") {
      const { name, id } = parsed as { name?: unknown; id?: unknown };
      if (typeof name === "string") keyProvider.name = name;
      if (typeof id === "string") keyProvider.id = id;
    }
  } catch {
    // Not JSON: `raw` keeps the text as logged.
  }
  const osImageHash = found.get("os-image-hash");
  return {
    appId: bytesToHex(found.get("app-id") as Uint8Array),
    composeHash: bytesToHex(found.get("compose-hash") as Uint8Array),
    instanceId: bytesToHex(found.get("instance-id") ?? new Uint8Array()),
    keyProvider,
    ...(osImageHash === undefined ? {} : { osImageHash: bytesToHex(osImageHash) }),
  };
}
