// `sigil verify-receipt FILE [--attestation FILE | --api URL]`: checks a run's receipt
// (shared/receipt.ts) — FILE is the JSON of a `sigil_action` answer, or its receipt alone — with
// the SDK's offline checks (signature by the attested receipt key, that key's binding in the quote's
// report_data, instance and compose hash, and the answer's response and logs when FILE has them),
// then the quote itself with the verifier's code (shared/attestation/, as `sigil verify` check 1–3):
// dcap-qvl over its signature chain and TCB status (Intel's root, or with --allow-simulated the
// simulated TEE's mock root), report_data = SHA-512("sigil-receipt-v1:" ‖ public key), the event
// log replayed to RTMR0–3, and RTMR3's claims naming the receipt's instance and compose hash.
// The receipt-key attestation comes from a saved file (offline) or from the deployment at --api,
// pinned to the receipt's instance. Exit 0 only when every check passes.
import { getCollateral } from "@phala/dcap-qvl";
import { parseCollateral, verifyAttestation, type Collateral } from "../../shared/attestation/index.ts";
import { receiptKeyReportData, type ReceiptKeyAttestation } from "../../shared/receipt.ts";
import { verifyReceipt, type ReceiptInput } from "../../sdk/src/receipt.ts";
import { verifyAnchored, type AnchorProof } from "../../sdk/src/anchored.ts";
import { receiptHead } from "../../shared/receiptAnchor.ts";
import type { RunReceipt } from "../../shared/receipt.ts";
import { commandLine, jsonOf, readOptionFile, type CheckLine } from "./verify.ts";

const DEFAULT_PCCS = "https://pccs.phala.network/sgx/certification/v4/";

export type VerifyReceiptFileOptions = {
  /** The receipt key's attestation, as `GET /attestation/receipt-key` served it. */
  attestation?: ReceiptKeyAttestation;
  /** The deployment to ask for it (the edge's or an enclave's origin), pinned to the receipt's instance. */
  api?: string;
  /** Quote collateral: dcap-qvl's JSON, or a simulated TEE's `/attestation/simulated-collateral` answer (root and collateral). */
  collateral?: { collateral: Collateral; rootCaDer?: Uint8Array };
  pccsUrl?: string;
  allowSimulated?: boolean;
  /** The js_params the run was sent, to check params_sha256. */
  params?: { value: unknown };
  /** Unix seconds the collateral is judged at (default: now). */
  now?: number;
  /**
   * Also check that the receipt is anchored on chain (shared/receiptAnchor.ts): through `rpcUrl`, an
   * RPC of its anchor's chain, with the head's path from `proof` (a saved
   * /attestation/receipt-anchor answer) or from the deployment at `api`.
   */
  anchored?: { rpcUrl: string; proof?: AnchorProof };
};

const hexBytes = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/^0x/, ""), "hex"));
const bare = (hex: string) => hex.replace(/^0x/i, "").toLowerCase();

/** What `/attestation/simulated-collateral` serves, or plain dcap-qvl collateral. */
export function readCollateral(json: unknown): { collateral: Collateral; rootCaDer?: Uint8Array } {
  const o = json as { root_ca_der?: unknown; collateral?: unknown };
  if (o && typeof o === "object" && typeof o.root_ca_der === "string" && o.collateral) {
    return { collateral: parseCollateral(o.collateral), rootCaDer: hexBytes(o.root_ca_der) };
  }
  return { collateral: parseCollateral(json) };
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return res.json();
}

/** Every check of a receipt, in order; never throws for what it checks. */
export async function verifyReceiptFile(input: ReceiptInput, options: VerifyReceiptFileOptions): Promise<CheckLine[]> {
  const lines: CheckLine[] = [];
  const receipt = (
    typeof input === "object" && input !== null && "receipt" in input ? input.receipt : input
  ) as ReceiptInput & { instance_id?: unknown; compose_hash?: unknown };
  const base = options.api?.replace(/\/+$/, "").replace(/\/core\/v1$/, "");
  const instance = typeof receipt?.instance_id === "string" ? receipt.instance_id : "";

  let attestation = options.attestation;
  if (!attestation && base) {
    try {
      attestation = (await getJson(
        `${base}/attestation/receipt-key${/^[0-9a-fA-F]{8,128}$/.test(instance) ? `?instance=${instance}` : ""}`,
      )) as ReceiptKeyAttestation;
    } catch (err) {
      lines.push({
        check: "attestation",
        status: "fail",
        detail: `could not get the receipt key's attestation: ${(err as Error).message}`,
        simulated: false,
      });
      return lines;
    }
  }
  if (!attestation) {
    lines.push({
      check: "attestation",
      status: "fail",
      detail: "no attestation to check against: give --attestation FILE or --api URL",
      simulated: false,
    });
    return lines;
  }
  const simulated = attestation.simulated === true;
  const add = (check: string, ok: boolean, detail: string) =>
    lines.push({ check, status: ok ? "pass" : "fail", detail, simulated });

  // The SDK's offline checks.
  const sdk = await verifyReceipt(input, attestation, options.params ? { params: options.params.value } : {});
  for (const c of sdk.checks) add(`receipt.${c.check}`, c.ok, c.detail);
  if (!sdk.checks.find((c) => c.check === "shape")?.ok) return lines;

  if (options.anchored)
    lines.push({
      ...(await anchoredLine(receipt as RunReceipt, base, options.anchored, String(attestation.address))),
      simulated,
    });

  // The quote, with the verifier's code.
  if (simulated && !options.allowSimulated) {
    add(
      "quote",
      false,
      "the receipt key is attested by a SIMULATED TEE (a mock root, not Intel): pass --allow-simulated to check it as a development stack",
    );
    return lines;
  }
  let collateral = options.collateral;
  try {
    if (!collateral && simulated) {
      if (!base)
        throw new Error(
          "a simulated TEE's quote needs its mock root: give --collateral (its saved /attestation/simulated-collateral) or --api",
        );
      collateral = readCollateral(
        await getJson(
          `${base}/attestation/simulated-collateral${/^[0-9a-fA-F]{8,128}$/.test(instance) ? `?instance=${instance}` : ""}`,
        ),
      );
    }
    if (!collateral)
      collateral = {
        collateral: parseCollateral(await getCollateral(options.pccsUrl ?? DEFAULT_PCCS, hexBytes(attestation.quote))),
      };
    if (simulated && !collateral.rootCaDer)
      throw new Error(
        "the collateral given has no root_ca_der: a simulated TEE's quote is checked against its mock root",
      );
  } catch (err) {
    add("quote", false, `no collateral for the quote: ${(err as Error).message}`);
    return lines;
  }
  let expectedReportData: Uint8Array;
  try {
    expectedReportData = await receiptKeyReportData(hexBytes(attestation.public_key));
  } catch (err) {
    add("report_data", false, `the attested public key is not hex: ${(err as Error).message}`);
    return lines;
  }
  const verified = verifyAttestation(
    { quote: attestation.quote, event_log: attestation.event_log },
    {
      collateral: collateral.collateral,
      now: options.now ?? Math.floor(Date.now() / 1000),
      expectedReportData,
      ...(collateral.rootCaDer ? { rootCaDer: collateral.rootCaDer } : {}),
    },
  );
  for (const c of verified.checks) add(c.check, c.ok, c.detail);
  if (verified.claims) {
    const { instanceId, composeHash } = verified.claims;
    const ok =
      bare(instanceId) === bare(String(receipt.instance_id)) &&
      bare(composeHash) === bare(String(receipt.compose_hash));
    add(
      "claims.receipt",
      ok,
      ok
        ? "RTMR3 claims the receipt's instance and compose hash"
        : `RTMR3 claims instance ${instanceId}, compose hash ${composeHash}; the receipt names ${String(receipt.instance_id)}, ${String(receipt.compose_hash)}`,
    );
  }
  return lines;
}

/** The `anchored` check: the receipt's batch head is in the tree anchored on chain for its epoch. */
async function anchoredLine(
  receipt: RunReceipt,
  base: string | undefined,
  anchored: { rpcUrl: string; proof?: AnchorProof },
  signer: string,
): Promise<Omit<CheckLine, "simulated">> {
  const fail = (detail: string) => ({ check: "anchored", status: "fail" as const, detail });
  let proof = anchored.proof;
  if (!proof && receipt.anchor) {
    const head = receiptHead(receipt);
    if (!base) return fail("no path to check: give --api <url> or --anchor-proof <file>");
    if (!head) return fail("the receipt's batch path leads to no root");
    try {
      proof = (await getJson(
        `${base}/attestation/receipt-anchor?instance=${encodeURIComponent(receipt.instance_id)}&epoch=${receipt.anchor.epoch}&head=${head}`,
      )) as AnchorProof;
    } catch (err) {
      return fail(`could not get the head's path in epoch ${receipt.anchor.epoch}: ${(err as Error).message}`);
    }
  }
  try {
    // Under the attested receipt key: the anchor of another key proves nothing of this receipt.
    const found = await verifyAnchored(undefined, receipt, {
      rpcUrl: anchored.rpcUrl,
      signer: signer as `0x${string}`,
      ...(proof ? { proof } : {}),
    });
    return {
      check: "anchored",
      status: "pass",
      detail: `in the root ${found.root} of ${found.heads} batch heads anchored for epoch ${found.epoch} by ${found.signer} at ${new Date(found.anchoredAt * 1000).toISOString()}${found.proof.transaction_hash ? ` (transaction ${found.proof.transaction_hash})` : ""}`,
    };
  } catch (err) {
    return fail((err as Error).message);
  }
}

export const verifyReceiptUsage = `usage: sigil verify-receipt <file> [--attestation <file> | --api <url>] [--allow-simulated]
                            [--collateral <file>] [--pccs-url <url>] [--params <file>]
                            [--anchored --rpc-url <url> [--anchor-proof <file>]]
                            [--now <unix seconds>] [--json]

  Checks the receipt of a run: <file> is the JSON a sigil_action answered (its response and logs
  are then checked too) or the receipt alone. Against the receipt key's attestation — a saved
  GET /attestation/receipt-key answer (--attestation), or the deployment's (--api, pinned to the
  receipt's instance) — it checks the signature, the key's binding in the quote's report_data, the
  instance and compose hash, and then the quote itself as sigil verify does: its signature chain
  and TCB status (dcap-qvl), the event log replayed, and RTMR3 naming the receipt's instance and
  compose hash. One line per check (--json: one JSON object per line). Exit 0 when every check
  passes, 1 when one fails, 2 for a usage error.

  --collateral <file>  dcap-qvl collateral, or a simulated TEE's saved
                       /attestation/simulated-collateral answer (fetched from --api otherwise;
                       real quotes from --pccs-url)
  --params <file>      the js_params the run was sent (JSON), to check params_sha256
  --allow-simulated    accept a simulated TEE's mock root (the local stack)
  --anchored           also check that the receipt's batch is in the root its instance anchored on
                       chain for the receipt's epoch (ReceiptAnchor), read through --rpc-url (an RPC
                       of the receipt's anchor.chain_id); the head's path from --api, or a saved
                       /attestation/receipt-anchor answer (--anchor-proof <file>)

  The local stack: npm run -s sigil -- verify-receipt run.json --api http://127.0.0.1:8787 --allow-simulated`;

/** The `sigil verify-receipt` command; its exit code. */
export async function verifyReceiptCommand(args: string[]): Promise<number> {
  const usageError = (message: string) => {
    console.error(`sigil verify-receipt: ${message} (sigil verify-receipt --help)`);
    return 2;
  };
  const parsed = commandLine(
    args,
    {
      attestation: { type: "string" },
      api: { type: "string" },
      collateral: { type: "string" },
      "pccs-url": { type: "string" },
      params: { type: "string" },
      now: { type: "string" },
      "allow-simulated": { type: "boolean" },
      anchored: { type: "boolean" },
      "rpc-url": { type: "string" },
      "anchor-proof": { type: "string" },
      json: { type: "boolean" },
    },
    verifyReceiptUsage,
    usageError,
  );
  if (typeof parsed === "number") return parsed;
  const { values, positionals } = parsed;
  const file = positionals[0];
  if (positionals.length !== 1 || !file) return usageError("give one receipt file");
  if ((values.attestation === undefined) === (values.api === undefined))
    return usageError("give exactly one of --attestation <file> and --api <url>");
  if (values.api !== undefined && !/^https?:\/\//.test(values.api)) return usageError("--api takes an http(s) URL");
  if (values.anchored && values["rpc-url"] === undefined)
    return usageError("--anchored needs --rpc-url <url>: an RPC of the chain the receipt is anchored on");
  if (!values.anchored && (values["rpc-url"] !== undefined || values["anchor-proof"] !== undefined))
    return usageError("--rpc-url and --anchor-proof go with --anchored");
  if (values["rpc-url"] !== undefined && !/^https?:\/\//.test(values["rpc-url"]))
    return usageError("--rpc-url takes an http(s) URL");
  const options: VerifyReceiptFileOptions = {};
  let input: ReceiptInput;
  try {
    input = readOptionFile("", file, jsonOf) as ReceiptInput;
    if (input === null || typeof input !== "object") throw new Error(`${file}: is not a run answer or a receipt`);
    if (values.attestation !== undefined)
      options.attestation = readOptionFile("--attestation", values.attestation, jsonOf) as ReceiptKeyAttestation;
    if (values.collateral !== undefined) {
      const json = readOptionFile("--collateral", values.collateral, jsonOf);
      try {
        options.collateral = readCollateral(json);
      } catch (err) {
        throw new Error(`--collateral ${values.collateral}: ${(err as Error).message}`);
      }
    }
    if (values.params !== undefined) options.params = { value: readOptionFile("--params", values.params, jsonOf) };
    if (values.anchored)
      options.anchored = {
        rpcUrl: values["rpc-url"] as string,
        ...(values["anchor-proof"] !== undefined
          ? { proof: readOptionFile("--anchor-proof", values["anchor-proof"], jsonOf) as AnchorProof }
          : {}),
      };
    if (values.now !== undefined) {
      if (!/^\d+$/.test(values.now)) throw new Error("--now takes Unix seconds");
      options.now = Number(values.now);
    }
  } catch (err) {
    return usageError((err as Error).message);
  }
  if (values.api !== undefined) options.api = values.api;
  if (values["pccs-url"]) options.pccsUrl = values["pccs-url"];
  if (values["allow-simulated"]) options.allowSimulated = true;

  const lines = await verifyReceiptFile(input, options);
  for (const l of lines) {
    if (values.json) console.log(JSON.stringify(l));
    else
      console.log(
        `${l.status.toUpperCase().padEnd(7)} ${l.check.padEnd(22)} ${l.simulated ? "SIMULATED  " : ""}${l.detail}`,
      );
  }
  const failed = lines.filter((l) => l.status === "fail").length;
  if (!values.json) {
    console.log(
      failed === 0
        ? `verified: the receipt is signed by the attested receipt key of instance ${String((("receipt" in input ? input.receipt : input) as { instance_id?: unknown }).instance_id)}${lines.some((l) => l.check === "anchored") ? ", its batch anchored on chain" : ""}${lines.some((l) => l.simulated) ? " (SIMULATED TEE: nothing here is about real hardware)" : ""}`
        : `NOT verified: ${failed} check(s) failed`,
    );
  }
  return failed === 0 ? 0 : 1;
}
