// Checks 1–3 of the verifier (docs/design/attestation.md) as one pipeline over what `/attestation` or
// `/channel` serves: the quote's signature and TCB status, the event log replayed against the
// quote's RTMRs, and the claims RTMR3 makes. It never throws: each check answers with its own
// result and message, so the `sigil verify` CLI prints them and the edge decides on `ok`.
import { bytesEqual, toBytes, toHex } from "./bytes.ts";
import { failed, passed, type CheckResult } from "./check.ts";
import { verifyQuote, type Collateral, type QuoteVerification, type TcbStatus } from "./dcap.ts";
import { QuoteVerificationError } from "./errors.ts";
import {
  parseEventLog,
  replayRtmrs,
  rtmr3Claims,
  type EventLogEntry,
  type Rtmr3Claims,
  type Rtmrs,
} from "./eventLog.ts";
import { parseQuote, type TdxQuote } from "./quote.ts";

/** TCB statuses accepted unless the caller says otherwise. */
export const DEFAULT_ACCEPTED_STATUSES: readonly TcbStatus[] = ["UpToDate"];

export type AttestationBundle = {
  /** The quote, hex (with or without 0x) or bytes. */
  quote: string | Uint8Array;
  /** The event log: the JSON string `/attestation` serves, or its parsed array. */
  event_log: unknown;
};

export type VerifyAttestationOptions = {
  collateral: Collateral;
  /** Unix seconds. */
  now: number;
  /** A root CA (DER) to trust instead of Intel's: the simulated TEE's. Every check is then `simulated`. */
  rootCaDer?: Uint8Array;
  /** The 64 bytes report_data must equal (a nonce's or a channel key's); adds the `report_data` check. */
  expectedReportData?: string | Uint8Array;
  /** TCB statuses that pass (default: UpToDate only). */
  acceptedStatuses?: readonly TcbStatus[];
};

export type AttestationVerification = {
  /** Every check passed. */
  ok: boolean;
  /** Verified against a root other than Intel's: nothing here is about real hardware. */
  simulated: boolean;
  checks: CheckResult[];
  quote?: TdxQuote;
  tcb?: QuoteVerification;
  /** RTMR0–3 as the event log replays them. */
  replayed?: Rtmrs;
  /** Present when the claims check passed. */
  claims?: Rtmr3Claims;
};

/** Check 1 alone: `quote` — dcap-qvl accepts the quote and its TCB status is accepted. */
export function quoteCheck(
  quote: string | Uint8Array | TdxQuote,
  options: Pick<VerifyAttestationOptions, "collateral" | "now" | "rootCaDer" | "acceptedStatuses">,
): { result: CheckResult; tcb?: QuoteVerification } {
  const check = "quote";
  let parsed: TdxQuote;
  let tcb: QuoteVerification;
  try {
    parsed = typeof quote === "object" && !(quote instanceof Uint8Array) ? quote : parseQuote(quote);
    tcb = verifyQuote(parsed.bytes, options.collateral, {
      now: options.now,
      ...(options.rootCaDer ? { rootCaDer: options.rootCaDer } : {}),
    });
  } catch (err) {
    const message =
      err instanceof QuoteVerificationError ? `dcap-qvl refused the quote: ${err.message}` : (err as Error).message;
    return { result: failed(check, message) };
  }
  // Our offsets and dcap-qvl's must name the same signed bytes; a disagreement is a parser bug.
  const sameReport =
    parsed.mrTd === tcb.report.mrTd &&
    parsed.reportData === tcb.report.reportData &&
    parsed.rtmrs.every((r, i) => r === tcb.report.rtmrs[i]);
  if (!sameReport) return { result: failed(check, "the quote parser and dcap-qvl read different report fields"), tcb };
  const accepted = options.acceptedStatuses ?? DEFAULT_ACCEPTED_STATUSES;
  const advisories = tcb.advisoryIds.length > 0 ? `, advisories ${tcb.advisoryIds.join(" ")}` : "";
  const root = options.rootCaDer ? "a non-Intel root" : "Intel's root";
  if (!accepted.includes(tcb.status)) {
    return {
      result: failed(
        check,
        `signature chain to ${root} is valid but TCB status ${tcb.status} is not accepted (${accepted.join(", ")})${advisories}`,
      ),
      tcb,
    };
  }
  return {
    result: passed(
      check,
      `signature chain to ${root} is valid; TCB ${tcb.status}${advisories}; FMSPC ${tcb.fmspc}; TCB info valid until ${tcb.tcbInfoNextUpdate}`,
    ),
    tcb,
  };
}

/** Checks 1–3 (and report_data when expected): one result per check, in order; never throws. */
export function verifyAttestation(
  bundle: AttestationBundle,
  options: VerifyAttestationOptions,
): AttestationVerification {
  const checks: CheckResult[] = [];
  const out: Omit<AttestationVerification, "ok" | "checks" | "simulated"> = {};

  let quote: TdxQuote | undefined;
  try {
    quote = parseQuote(bundle.quote);
    out.quote = quote;
  } catch (err) {
    checks.push(failed("quote", (err as Error).message));
  }
  if (quote) {
    const { result, tcb } = quoteCheck(quote, options);
    checks.push(result);
    if (tcb) out.tcb = tcb;
  }

  if (options.expectedReportData !== undefined) {
    checks.push(reportDataCheck(quote, options.expectedReportData));
  }

  let entries: EventLogEntry[] | undefined;
  let rtmr3Matches = false;
  try {
    entries = parseEventLog(bundle.event_log);
    const replayed = replayRtmrs(entries);
    out.replayed = replayed;
    if (!quote) {
      checks.push(failed("event_log", "no quote to compare the replayed RTMRs with"));
    } else {
      const mismatches = [0, 1, 2, 3].filter((i) => replayed[i] !== quote.rtmrs[i]);
      rtmr3Matches = !mismatches.includes(3);
      checks.push(
        mismatches.length === 0
          ? passed("event_log", `${entries.length} events replay to the quote's RTMR0–3`)
          : failed(
              "event_log",
              mismatches
                .map((i) => `RTMR${i} replays to ${replayed[i]} but the quote has ${quote.rtmrs[i]}`)
                .join("; "),
            ),
      );
    }
  } catch (err) {
    checks.push(failed("event_log", (err as Error).message));
  }

  if (!entries) {
    checks.push(failed("claims", "no event log to read claims from"));
  } else {
    try {
      const claims = rtmr3Claims(entries);
      if (!rtmr3Matches) {
        checks.push(failed("claims", "the event log does not replay to the quote's RTMR3, so its claims are unproven"));
      } else {
        out.claims = claims;
        checks.push(passed("claims", describeClaims(claims)));
      }
    } catch (err) {
      checks.push(failed("claims", (err as Error).message));
    }
  }

  const simulated = options.rootCaDer !== undefined;
  const marked = simulated ? checks.map((c) => ({ ...c, simulated: true })) : checks;
  return { ok: marked.every((c) => c.ok), simulated, checks: marked, ...out };
}

function reportDataCheck(quote: TdxQuote | undefined, expected: string | Uint8Array): CheckResult {
  if (!quote) return failed("report_data", "no quote to read report_data from");
  let want: Uint8Array;
  try {
    want = toBytes(expected, "expected report_data");
  } catch (err) {
    return failed("report_data", (err as Error).message);
  }
  const have = toBytes(quote.reportData, "report_data");
  return bytesEqual(have, want)
    ? passed("report_data", "report_data is the expected value")
    : failed("report_data", `report_data is ${quote.reportData}, expected ${toHex(want)}`);
}

function describeClaims(claims: Rtmr3Claims): string {
  const provider = claims.keyProvider.name ?? claims.keyProvider.raw;
  return [
    `app-id ${claims.appId}`,
    `compose-hash ${claims.composeHash}`,
    `instance-id ${claims.instanceId || "(none)"}`,
    `key-provider ${provider}`,
    ...(claims.osImageHash ? [`os-image-hash ${claims.osImageHash}`] : []),
  ].join(", ");
}
