// The one door to the TEE (docs/design/attestation.md, Sources): a quote over 64 bytes of report data, the
// CVM's info, and a key by path. `DstackSource` asks dstack's guest agent; `SimulatedSource` plays
// one in development and tests. Everything above this interface — the endpoints, the evidences, the
// attested channel — is the same for both.
import { sha512 } from "@noble/hashes/sha2";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import type { EventLogEntry } from "../../shared/attestation/eventLog.ts";

export const REPORT_DATA_BYTES = 64;

/** What dstack's GetQuote answers: the quote as hex, the event log as a JSON string of entries. */
export type QuoteAnswer = { quote: string; event_log: string; vm_config?: string };

/** The CVM's measurements and app description (dstack's Info `tcb_info`, parsed). */
export type TcbInfo = {
  mrtd: string;
  rtmr0: string;
  rtmr1: string;
  rtmr2: string;
  rtmr3: string;
  /** The app-compose text exactly as measured: its SHA-256 is the compose hash. */
  app_compose: string;
  event_log: EventLogEntry[];
  [field: string]: unknown;
};

/** dstack's Info, with `tcb_info` an object rather than the JSON string the agent sends. */
export type Info = {
  app_id: string;
  instance_id: string;
  compose_hash: string;
  tcb_info: TcbInfo;
  [field: string]: unknown;
};

export interface AttestationSource {
  readonly kind: "dstack" | "simulated";
  /** A quote whose report_data is exactly `reportData` (64 bytes). */
  getQuote(reportData: Uint8Array): Promise<QuoteAnswer>;
  info(): Promise<Info>;
  /** A key the TEE derives for this app and `path` (dstack's GetKey). */
  getKey(path: string): Promise<Uint8Array>;
}

export function assertReportData(reportData: Uint8Array): void {
  if (!(reportData instanceof Uint8Array) || reportData.length !== REPORT_DATA_BYTES) {
    throw new Error(`report data must be exactly ${REPORT_DATA_BYTES} bytes`);
  }
}

/** `GET /attestation?nonce=…`'s report data: SHA-512("sigil-nonce:" ‖ nonce bytes). */
export function nonceReportData(nonce: Uint8Array): Uint8Array {
  return sha512(concatBytes(utf8ToBytes("sigil-nonce:"), nonce));
}
