// The simulated CVM's measurements and its dstack event log. MRTD is a label. RTMR0–2 each hold one
// labelled boot event, so the log still replays to every register a quote carries (a register
// cannot itself be a label: it is only ever the result of extensions from zero). RTMR3 holds the
// runtime events dstack's guest agent emits at boot, built from the real app-compose text:
// system-preparing, app-id, compose-hash, instance-id, boot-mr-done, key-provider, system-ready —
// logged with an empty digest, as the current agent logs them.
//
// The registers are extended here as events are "measured", by the formulas of docs/design/attestation.md
// (Facts), not by replaying the log: a test then replays the log with shared/attestation and checks
// both agree.
import { sha256, sha384 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import type { EventLogEntry } from "../../../shared/attestation/eventLog.ts";
import { label } from "./pki.ts";

export const SIMULATED_MRTD_LABEL = "SIMULATED-MRTD-NOT-A-REAL-TDX-QUOTE";
export const SIMULATED_RTMR_LABELS = [
  "SIMULATED-RTMR0-NOT-A-REAL-FIRMWARE",
  "SIMULATED-RTMR1-NOT-A-REAL-KERNEL",
  "SIMULATED-RTMR2-NOT-A-REAL-INITRD",
] as const;
/** dstack's runtime events (RTMR3). */
export const RUNTIME_EVENT_TYPE = 0x08000001;
/** EV_IPL: the type the labelled RTMR0–2 events are logged with (their digest is the label). */
export const SIMULATED_BOOT_EVENT_TYPE = 0x0000000d;

export type KeyProvider = { name: string; id: string };

export type SimulatedBoot = {
  mrTd: Uint8Array;
  rtmrs: [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  eventLog: EventLogEntry[];
  /** SHA-256 of the raw app-compose text, hex. */
  composeHash: string;
  /** The first 20 bytes of the compose hash (dstack's local key provider), hex. */
  appId: string;
  instanceId: string;
  keyProvider: KeyProvider;
};

export function simulatedBoot(
  appCompose: string,
  options: { instanceId: Uint8Array; keyProvider: KeyProvider },
): SimulatedBoot {
  if (options.instanceId.length !== 20) throw new Error("the instance id must be 20 bytes");
  const rtmrs: SimulatedBoot["rtmrs"] = [
    new Uint8Array(48),
    new Uint8Array(48),
    new Uint8Array(48),
    new Uint8Array(48),
  ];
  const eventLog: EventLogEntry[] = [];
  const extend = (imr: 0 | 1 | 2 | 3, digest: Uint8Array) => {
    rtmrs[imr] = sha384(concatBytes(rtmrs[imr], digest));
  };

  SIMULATED_RTMR_LABELS.forEach((text, imr) => {
    const digest = label(text, 48);
    extend(imr as 0 | 1 | 2, digest);
    eventLog.push({
      imr,
      event_type: SIMULATED_BOOT_EVENT_TYPE,
      digest: bytesToHex(digest),
      event: text,
      event_payload: bytesToHex(utf8ToBytes(text)),
    });
  });

  const composeHash = sha256(utf8ToBytes(appCompose));
  const appId = composeHash.slice(0, 20);
  const emit = (name: string, payload: Uint8Array = new Uint8Array(0)) => {
    const type = new Uint8Array(4);
    new DataView(type.buffer).setUint32(0, RUNTIME_EVENT_TYPE, true);
    extend(3, sha384(concatBytes(type, utf8ToBytes(`:${name}:`), payload)));
    eventLog.push({
      imr: 3,
      event_type: RUNTIME_EVENT_TYPE,
      digest: "",
      event: name,
      event_payload: bytesToHex(payload),
    });
  };
  emit("system-preparing");
  emit("app-id", appId);
  emit("compose-hash", composeHash);
  emit("instance-id", options.instanceId);
  emit("boot-mr-done");
  emit("key-provider", utf8ToBytes(JSON.stringify({ name: options.keyProvider.name, id: options.keyProvider.id })));
  emit("system-ready");

  return {
    mrTd: label(SIMULATED_MRTD_LABEL, 48),
    rtmrs,
    eventLog,
    composeHash: bytesToHex(composeHash),
    appId: bytesToHex(appId),
    instanceId: bytesToHex(options.instanceId),
    keyProvider: options.keyProvider,
  };
}
