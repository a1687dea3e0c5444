// Receipts checked by default (issue 34, part 1): every run answer the client returns — sigilAction,
// its dry run, and so every signature toSigilAccount and sendSigilTransaction give — has had its
// receipt verified first: its Merkle path to the batch's root, the batch signature by the receipt
// key, that key's binding in its instance's quote (report_data), the receipt's instance and compose
// hash the attestation's, and that compose hash one the client allows. The attestation is fetched
// once per instance and kept (per service origin). A receipt that fails throws SigilReceiptError
// naming the check; `verifyReceipts: false` turns it all off.
//
// What is not checked here: the quote's signature chain to Intel and its TCB status (dcap-qvl and
// Intel's collateral: `sigil verify-receipt`, `sigil verify`). A compose hash is allowed by the list
// the client is given (`allowedComposeHashes`); a simulated attestation (a local stack) only when the
// client says so or its service is on loopback.
import { SigilError } from "./errors.ts";
import type { GetReceiptKeyOutput } from "./generated/api.ts";
import { type ReceiptCheck, verifyReceipt } from "./receipt.ts";
import type { ReceiptKeyAttestation } from "../../shared/receipt.ts";

/** What the client holds receipts to. */
export type ReceiptPolicy = {
  /** The compose hashes (hex, 0x optional) the service's instances may run: a receipt of any other fails `compose_hash`. */
  allowedComposeHashes?: readonly string[];
  /** Whether a simulated attestation is accepted (default: only when the service is on loopback, i.e. a local stack). */
  allowSimulated?: boolean;
};

/** The check a receipt failed: one of verifyReceipt's, or the client's policy. */
export type ReceiptFailure = ReceiptCheck["check"] | "missing" | "attestation" | "simulated" | "compose_hash";

/** A run answer whose receipt did not verify: nothing in it should be trusted. `check` names what failed. */
export class SigilReceiptError extends SigilError {
  override name = "SigilReceiptError";
  readonly check: ReceiptFailure;
  constructor(check: ReceiptFailure, message: string, details?: unknown, requestId?: string) {
    super({
      code: "receipt_invalid",
      message: `the run's receipt failed ${check}: ${message}`,
      status: 0,
      details,
      requestId,
    });
    this.check = check;
  }
}

type ReceiptCarrier = { receipt?: { instance_id?: unknown } | null };

/** Attestations by instance, fetched once and kept (an instance's receipt key never changes): one per client and the clients made from it with `with`. */
export type AttestationCache = Map<string, Promise<ReceiptKeyAttestation>>;
const MAX_KEPT = 1_000;

const LOOPBACK = /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/;
const bare = (hex: string) => hex.toLowerCase().replace(/^0x/, "");

/**
 * A checker of run answers for the client at `baseUrl` under `policy`; `receiptKey` fetches an
 * instance's attestation (the client's own getReceiptKey).
 */
export function receiptChecker(
  baseUrl: string,
  policy: ReceiptPolicy,
  receiptKey: (instance: string) => Promise<GetReceiptKeyOutput>,
  attestations: AttestationCache,
): (answer: unknown, requestId: string | undefined) => Promise<void> {
  const allowSimulated = policy.allowSimulated ?? LOOPBACK.test(baseUrl);
  const allowed = policy.allowedComposeHashes ? new Set(policy.allowedComposeHashes.map(bare)) : undefined;
  // A batch's signature, recovered once for all its receipts.
  const signers = new Map<string, string>();
  // An instance's attestation checked once (its key, its quote's binding) for all its receipts.
  const attested = new WeakMap<object, ReceiptCheck[]>();
  const attestationOf = (instance: string): Promise<ReceiptKeyAttestation> => {
    const key = `${baseUrl}|${instance}`;
    let known = attestations.get(key);
    if (!known) {
      if (attestations.size >= MAX_KEPT) attestations.clear();
      known = receiptKey(instance).then((a) => a as unknown as ReceiptKeyAttestation);
      // A failed fetch is not kept: the next run asks again.
      known.catch(() => attestations.delete(key));
      attestations.set(key, known);
    }
    return known;
  };

  return async (answer, requestId) => {
    const receipt = (answer as ReceiptCarrier).receipt;
    if (!receipt || typeof receipt.instance_id !== "string")
      throw new SigilReceiptError("missing", "the answer carries no receipt", undefined, requestId);
    let attestation: ReceiptKeyAttestation;
    try {
      attestation = await attestationOf(receipt.instance_id);
    } catch (err) {
      throw new SigilReceiptError(
        "attestation",
        `the receipt key of instance ${receipt.instance_id} could not be fetched: ${(err as Error).message}`,
        undefined,
        requestId,
      );
    }
    if (attestation.simulated === true && !allowSimulated)
      throw new SigilReceiptError(
        "simulated",
        "the instance's attestation is simulated (no TDX hardware); allowSimulated: true accepts it",
        undefined,
        requestId,
      );
    const result = await verifyReceipt(answer as never, attestation, { signers, attested });
    const failed = result.checks.find((c) => !c.ok);
    if (failed) throw new SigilReceiptError(failed.check, failed.detail, result.checks, requestId);
    if (allowed ? !allowed.has(bare(attestation.compose_hash)) : attestation.simulated !== true)
      throw new SigilReceiptError(
        "compose_hash",
        allowed
          ? `compose hash ${attestation.compose_hash} is not among the allowed ones`
          : `compose hash ${attestation.compose_hash} of a real instance: give allowedComposeHashes (what you audited) to accept it`,
        undefined,
        requestId,
      );
  };
}
