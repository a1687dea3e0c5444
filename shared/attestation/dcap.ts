// Check 1 of the verifier (docs/design/attestation.md): a quote's signature chain and TCB status, by
// @phala/dcap-qvl (pure JS) against Intel's SGX/TDX root CA, or against another root when one is
// given (the simulated TEE's mock root). The collateral (TCB info, QE identity, CRLs and their
// issuer chains) is passed in, never fetched here, and so is `now`: verification is a pure function
// of its inputs, in Node and in workerd alike.
import * as dcap from "@phala/dcap-qvl";
import type { Collateral, TcbStatus } from "@phala/dcap-qvl";
import { toBytes, toHex } from "./bytes.ts";
import * as z from "./schema.ts";
import { AttestationError, QuoteVerificationError } from "./errors.ts";

export type { Collateral, TcbStatus };

/** What dcap-qvl established about a quote it accepted. */
export type QuoteVerification = {
  /** dcap-qvl's TCB status of the platform and QE, merged. It throws for Revoked and Unknown. */
  status: TcbStatus;
  /** Intel security advisories that apply at that status (INTEL-SA-…). */
  advisoryIds: string[];
  /** The platform family the collateral is for; dcap-qvl checked the PCK certificate's equals it. */
  fmspc: string;
  /** When the TCB info stops being valid (ISO 8601): collateral must be fetched again by then. */
  tcbInfoNextUpdate: string;
  /** The report fields dcap-qvl read from the signed quote (lowercase hex), for cross-checking. */
  report: { mrTd: string; rtmrs: [string, string, string, string]; reportData: string };
  /** True when a root other than Intel's was used: the quote proves nothing about real hardware. */
  customRoot: boolean;
};

export type VerifyQuoteOptions = {
  /** Unix seconds. Collateral and certificates are checked for validity at this instant. */
  now: number;
  /** DER of the root CA to trust instead of Intel's (the simulated TEE's mock root). */
  rootCaDer?: Uint8Array;
};

const bytesOrHex = z.union([z.string(), z.array(z.int().check(z.minimum(0), z.maximum(255)))]);
const collateralSchema = z.looseObject({
  pck_crl_issuer_chain: z.string(),
  root_ca_crl: bytesOrHex,
  pck_crl: bytesOrHex,
  tcb_info_issuer_chain: z.string(),
  tcb_info: z.string(),
  tcb_info_signature: bytesOrHex,
  qe_identity_issuer_chain: z.string(),
  qe_identity: z.string(),
  qe_identity_signature: bytesOrHex,
});

/** Checks that collateral has the fields dcap-qvl reads (a JSON object as PCCS/dcap-qvl write it). */
export function parseCollateral(input: unknown): Collateral {
  const parsed = collateralSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AttestationError(
      "invalid_input",
      `collateral${issue && issue.path.length > 0 ? `.${issue.path.join(".")}` : ""}: ${issue?.message ?? "invalid"}`,
    );
  }
  return parsed.data as Collateral;
}

// dcap-qvl decodes certificates with asn1.js, which accepts only a `Buffer` of the class its
// "buffer" import resolves to (Node's or workerd's built-in, the npm package in a browser bundle),
// never a plain Uint8Array. Its bundled Intel root is such a Buffer, so that constructor makes a
// custom root the same kind in every runtime without this module importing "buffer" itself.
const DcapBuffer = dcap.constants.TRUSTED_ROOT_CA_DER.constructor as unknown as { from(bytes: Uint8Array): Uint8Array };

/**
 * Verifies a quote (hex or bytes) with its collateral at `now`. Returns the TCB status; throws
 * `QuoteVerificationError` carrying dcap-qvl's message when it refuses (bad signature, expired or
 * mismatched collateral, revoked or unknown TCB, debug TD, …), and `AttestationError`
 * (`invalid_input`) for inputs that are not a quote, collateral or time at all.
 */
export function verifyQuote(
  quote: string | Uint8Array,
  collateral: Collateral,
  options: VerifyQuoteOptions,
): QuoteVerification {
  const { now } = options;
  // dcap-qvl takes seconds; a millisecond clock would make every collateral look expired.
  if (!Number.isSafeInteger(now) || now < 0 || now > 1e11)
    throw new AttestationError("invalid_input", "now must be Unix seconds");
  const bytes = toBytes(quote, "quote");
  const checked = parseCollateral(collateral);
  const verifier =
    options.rootCaDer === undefined
      ? dcap.QuoteVerifier.newProd()
      : dcap.QuoteVerifier.newWithRootCa(DcapBuffer.from(options.rootCaDer) as never);

  let verified: dcap.VerifiedReport;
  try {
    verified = verifier.verify(bytes, checked, now);
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    throw new QuoteVerificationError(error.message, error.cause === undefined ? {} : { cause: error.cause });
  }
  const td = verified.report.asTd10();
  if (td === null) throw new QuoteVerificationError("not a TDX quote: dcap-qvl verified an SGX enclave report");
  const tcbInfo = JSON.parse(checked.tcb_info) as { fmspc?: unknown; nextUpdate?: unknown };
  return {
    status: verified.status,
    advisoryIds: [...verified.advisory_ids],
    fmspc: String(tcbInfo.fmspc ?? "").toLowerCase(),
    tcbInfoNextUpdate: String(tcbInfo.nextUpdate ?? ""),
    report: {
      mrTd: toHex(td.mrTd),
      rtmrs: [toHex(td.rtMr0), toHex(td.rtMr1), toHex(td.rtMr2), toHex(td.rtMr3)],
      reportData: toHex(td.reportData),
    },
    customRoot: options.rootCaDer !== undefined,
  };
}
