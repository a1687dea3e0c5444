// `verifyReceipt`: checks a run's receipt (shared/receipt.ts) offline, with viem and WebCrypto
// alone, against what `GET /attestation/receipt-key` served for the instance that signed it:
//   batch         (version 2) the receipt's leaf, its index, the batch's size and its audit path
//                 lead to a Merkle root (RFC 9162), whose head (root and size) the signature is over;
//   signature     that head (version 2), or the receipt itself (version 1: every field but
//                 `signature`, as canonical JSON), was signed by the attested receipt key (EIP-191):
//                 any changed, added or removed byte fails;
//   key           the attested public key is that address's key;
//   report_data   the quote's report_data is SHA-512("sigil-receipt-v1:" ‖ that public key), read at
//                 its fixed offset in the quote;
//   instance      the receipt's instance_id and compose_hash are the attestation's;
//   params, response, logs   (when given, or taken from a run answer) hash to the receipt's SHA-256s.
// What it does NOT check: the quote's own signature chain to Intel and its TCB status, and that the
// event log replays to RTMR3 claiming that instance and compose hash. Those need Intel's collateral
// and dcap-qvl: `sigil verify-receipt` runs them (the verifier's code), and `sigil verify` checks
// the deployment itself. An attestation you did not verify proves nothing about hardware.
import { bytesToHex, recoverMessageAddress, type Hex } from "viem";
import { signedBy } from "./receiptSignature.ts";
import {
  batchHead,
  jsonSha256,
  MAX_RECEIPT_BATCH,
  quoteReportData,
  receiptKeyAddress,
  receiptKeyReportData,
  receiptLeaf,
  receiptMessage,
  rootFromProof,
  textSha256,
  type ReceiptKeyAttestation,
  type RunReceipt,
  type RunReceiptV1,
} from "../../shared/receipt.ts";

export {
  batchHead,
  receiptMessage,
  receiptLeaf,
  rootFromProof,
  jsonSha256,
  textSha256,
  type ReceiptBatch,
  type ReceiptKeyAttestation,
  type RunReceipt,
  type RunReceiptV1,
  type ReceiptWallet,
  type SignedDigest,
} from "../../shared/receipt.ts";

/** One check of `verifyReceipt`: its name, whether it passed, and what was found. */
export type ReceiptCheck = {
  check: "shape" | "batch" | "signature" | "key" | "report_data" | "instance" | "params" | "response" | "logs";
  ok: boolean;
  detail: string;
};

export type ReceiptVerification = {
  /** Every check passed. */
  ok: boolean;
  checks: ReceiptCheck[];
  /** The receipt that was checked (the answer's, when given a run answer). */
  receipt: AsJson<RunReceipt | RunReceiptV1>;
  /** The attestation says it comes from a simulated TEE (a development stack): it proves nothing about hardware. */
  simulated: boolean;
};

export type VerifyReceiptOptions = {
  /** The js_params the run was sent (absent: not checked; null or undefined for none sent: pass `{ params: null }`). */
  params?: unknown;
  /** The answer's `response` (taken from the run answer when one is given). */
  response?: unknown;
  /** The answer's `logs` (taken from the run answer when one is given). */
  logs?: string;
  /**
   * Signers already recovered, by what was signed and the signature: receipts of one batch share one
   * signature over one head, recovered once (secp256k1 recovery is most of a check's cost).
   */
  signers?: Map<string, string>;
  /**
   * The key and report_data checks of attestations already made, by attestation (they depend on it
   * alone): an instance's attestation is checked once for all its receipts.
   */
  attested?: WeakMap<object, ReceiptCheck[]>;
};

/** Receipt keys' addresses, by public key (a keccak each, asked for every receipt). */
const addresses = new Map<string, string>();
function addressOf(publicKey: Hex): string {
  let address = addresses.get(publicKey);
  if (address === undefined) {
    address = receiptKeyAddress(publicKey);
    if (addresses.size >= 64) addresses.clear();
    addresses.set(publicKey, address);
  }
  return address;
}

/** How many recovered signers a `signers` cache keeps before it starts again. */
const MAX_SIGNERS_KEPT = 1_000;

/** `T` as JSON carries it: every string a plain string (hex fields are not `0x${string}` once parsed or generated). */
export type AsJson<T> = T extends string
  ? string
  : T extends readonly (infer U)[]
    ? AsJson<U>[]
    : T extends object
      ? { [K in keyof T]: AsJson<T[K]> }
      : T;

/** A run answer (what `sigil_action` answered, with its receipt: `client.sigilAction`'s result) or a receipt alone. */
export type ReceiptInput =
  | AsJson<RunReceipt | RunReceiptV1>
  | { receipt: AsJson<RunReceipt | RunReceiptV1>; response?: unknown; logs?: string };

const HEX65 = /^0x[0-9a-fA-F]{130}$/;

function hexBytes(hex: string): Uint8Array {
  const h = hex.replace(/^0x/i, "");
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(h.slice(i * 2, i * 2 + 2), 16);
  return out;
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

const HEX32 = /^0x[0-9a-fA-F]{64}$/;

/** A version 2 receipt's `batch`: integers in range, and an audit path of 32-byte hashes no longer than a batch's. */
function wellFormedBatch(batch: unknown): batch is RunReceipt["batch"] {
  if (typeof batch !== "object" || batch === null) return false;
  const { index, size, proof } = batch as Record<string, unknown>;
  return (
    Number.isSafeInteger(index) &&
    Number.isSafeInteger(size) &&
    (size as number) >= 1 &&
    (size as number) <= MAX_RECEIPT_BATCH &&
    (index as number) >= 0 &&
    (index as number) < (size as number) &&
    Array.isArray(proof) &&
    proof.length <= 64 &&
    proof.every((p) => typeof p === "string" && HEX32.test(p))
  );
}

/**
 * Checks `input` (a run answer or its receipt) against `attestation` (`GET /attestation/receipt-key`
 * of the instance named by the receipt's `instance_id`). Never throws for a bad receipt: every
 * check answers, and `ok` is true only if all passed.
 */
export async function verifyReceipt(
  input: ReceiptInput,
  attestation: AsJson<ReceiptKeyAttestation>,
  options: VerifyReceiptOptions = {},
): Promise<ReceiptVerification> {
  const answer = typeof input === "object" && input !== null && "receipt" in input ? input : undefined;
  const receipt = (answer ? answer.receipt : input) as RunReceipt | RunReceiptV1;
  const simulated = attestation.simulated === true;
  const checks: ReceiptCheck[] = [];
  const add = (check: ReceiptCheck["check"], ok: boolean, detail: string) => checks.push({ check, ok, detail });

  const version = typeof receipt === "object" && receipt !== null ? receipt.version : undefined;
  const batch = version === 2 ? (receipt as RunReceipt).batch : undefined;
  const shaped =
    (version === 1 || (version === 2 && wellFormedBatch(batch))) &&
    typeof receipt.signature === "string" &&
    HEX65.test(receipt.signature);
  add(
    "shape",
    shaped,
    shaped
      ? `a version ${version} receipt with a 65-byte signature`
      : "not a receipt of version 1, or of version 2 with its batch, with a 65-byte signature",
  );
  if (!shaped) return { ok: false, checks, receipt, simulated };

  // What the key signed: version 2, the Merkle root the receipt's leaf and audit path lead to;
  // version 1, the receipt's own message.
  let message: string | { raw: Hex } | undefined = receiptMessage(receipt);
  if (batch) {
    const root = rootFromProof(receiptLeaf(receipt as RunReceipt), batch.index, batch.size, batch.proof.map(hexBytes));
    add(
      "batch",
      root !== undefined,
      root !== undefined
        ? `receipt ${batch.index + 1} of a batch of ${batch.size}: its audit path leads to the root ${bytesToHex(root)}`
        : `an audit path of ${batch.proof.length} hashes cannot place leaf ${batch.index} in a batch of ${batch.size}`,
    );
    message = root === undefined ? undefined : { raw: bytesToHex(batchHead(root, batch.size)) };
  }

  const attested = String(attestation.address ?? "").toLowerCase();
  let signer: string | undefined;
  try {
    if (message !== undefined) {
      const key = `${typeof message === "string" ? message : message.raw}|${receipt.signature}`;
      signer = options.signers?.get(key);
      if (signer === undefined) {
        // A batch head is checked against the attested key itself (receiptSignature.ts, a fraction of
        // a recovery); anything else — or a signature that is not that key's — is recovered, to say whose it is.
        const publicKey = attestation.public_key;
        signer =
          typeof message !== "string" &&
          typeof publicKey === "string" &&
          /^0x04[0-9a-fA-F]{128}$/.test(publicKey) &&
          signedBy(publicKey as Hex, message.raw, receipt.signature as Hex)
            ? addressOf(publicKey as Hex)
            : (await recoverMessageAddress({ message, signature: receipt.signature as Hex })).toLowerCase();
        if (options.signers) {
          if (options.signers.size >= MAX_SIGNERS_KEPT) options.signers.clear();
          options.signers.set(key, signer);
        }
      }
    } else add("signature", false, "no root to check the signature against");
  } catch (err) {
    add("signature", false, `the signature does not recover: ${(err as Error).message.split("\n")[0]}`);
  }
  if (signer !== undefined) {
    add(
      "signature",
      signer === attested,
      signer === attested
        ? `signed by the attested receipt key ${attested}`
        : `signed by ${signer}, not by the attested receipt key ${attested}`,
    );
  }

  const known = options.attested?.get(attestation);
  if (known) checks.push(...known);
  else {
    const before = checks.length;
    await checkAttestation(attestation, attested, add);
    options.attested?.set(attestation, checks.slice(before));
  }

  const instanceOk =
    receipt.instance_id === attestation.instance_id && receipt.compose_hash === attestation.compose_hash;
  add(
    "instance",
    instanceOk,
    instanceOk
      ? `instance ${receipt.instance_id}, compose hash ${receipt.compose_hash}`
      : `the receipt names instance ${receipt.instance_id} (compose hash ${receipt.compose_hash}); the attestation is of ${attestation.instance_id} (${attestation.compose_hash})`,
  );

  const hashCheck = (
    check: "params" | "response" | "logs",
    field: "params_sha256" | "response_sha256" | "logs_sha256",
    actual: Hex,
  ) => {
    const ok = receipt[field] === actual;
    add(check, ok, ok ? `${field} matches` : `${field} is ${receipt[field]}, the ${check} given hash to ${actual}`);
  };
  if ("params" in options) hashCheck("params", "params_sha256", jsonSha256(options.params));
  const response =
    "response" in options
      ? { value: options.response }
      : answer && "response" in answer
        ? { value: answer.response }
        : undefined;
  if (response) hashCheck("response", "response_sha256", jsonSha256(response.value));
  const logs = options.logs ?? (answer && typeof answer.logs === "string" ? answer.logs : undefined);
  if (logs !== undefined) hashCheck("logs", "logs_sha256", textSha256(logs));

  return { ok: checks.every((c) => c.ok), checks, receipt, simulated };
}

/** The checks that depend on the attestation alone: its key is the attested address's, and its quote binds that key. */
async function checkAttestation(
  attestation: AsJson<ReceiptKeyAttestation>,
  attested: string,
  add: (check: ReceiptCheck["check"], ok: boolean, detail: string) => void,
): Promise<void> {
  let publicKey: Uint8Array | undefined;
  try {
    const address = receiptKeyAddress(attestation.public_key as Hex);
    publicKey = hexBytes(attestation.public_key);
    add(
      "key",
      address === attested,
      address === attested
        ? "the attested public key is the receipt key's"
        : `the attested public key is ${address}'s, not ${attested}'s`,
    );
  } catch (err) {
    add(
      "key",
      false,
      `the attested public key is not a secp256k1 public key: ${(err as Error).message.split("\n")[0]}`,
    );
  }

  try {
    const have = quoteReportData(attestation.quote);
    const want = publicKey ? await receiptKeyReportData(publicKey) : undefined;
    const bound = want !== undefined && same(have, want);
    add(
      "report_data",
      bound,
      bound
        ? 'the quote\'s report_data is SHA-512("sigil-receipt-v1:" ‖ public key)'
        : "the quote's report_data does not bind this public key",
    );
  } catch (err) {
    add("report_data", false, `no report_data: ${(err as Error).message}`);
  }
}
