// The public attestation endpoints (docs/design/attestation.md, Endpoints; no shared secret, like /health):
// `GET /attestation[?nonce=<hex>]`, `GET /info`, and in simulated mode
// `GET /attestation/simulated-collateral` and the dev `/evidences/` stand-in. Every answer of the
// simulated source says so twice: `"simulated": true` in its JSON and `X-Attestation-Simulated: 1`.
// /attestation names the instance that made the quote (`instance_id`, as /info does), so answers
// that came through a load balancer can be told apart. Nonce quotes are limited per client:
// `clientOf` names the caller (the server passes the peer address, or the address the edge saw).
import { bytesToHex } from "@noble/hashes/utils";
import { Hono, type Context } from "hono";
import { SigilError } from "../../shared/errors.ts";
import type { DevEvidences } from "./evidences.ts";
import { NONCE_MAX_BYTES, type AttestationService } from "./service.ts";
import type { SimulatedSource } from "./simulated/simulatedSource.ts";
import type { ReceiptSigner } from "../receipts/receipts.ts";

export const SIMULATED_HEADER = "X-Attestation-Simulated";

export type AttestationRoutesOptions = {
  service: AttestationService;
  /** The simulated source, when it is the active one: its mock root and collateral are served. */
  simulated?: SimulatedSource;
  /** The dev evidences, when this enclave stands in for dstack-ingress. */
  evidences?: DevEvidences;
  /** This instance's receipt signer: `GET /attestation/receipt-key` serves its key and the quote that binds it. */
  receipts?: ReceiptSigner;
  /** Who is asking, for the per-client nonce budget; every caller is one client without it. */
  clientOf?: (c: Context) => string;
};

export function attestationRoutes({
  service,
  simulated,
  evidences,
  receipts,
  clientOf = () => "anyone",
}: AttestationRoutesOptions): Hono {
  const r = new Hono();
  const marked = simulated !== undefined;
  if (marked) {
    // Errors too: whatever this enclave answers here comes from a simulated TEE.
    for (const path of ["/attestation", "/attestation/*", "/info", "/evidences", "/evidences/*"]) {
      r.use(path, async (c, next) => {
        c.header(SIMULATED_HEADER, "1");
        await next();
      });
    }
  }
  const json = (c: Context, body: Record<string, unknown>, cacheControl?: string) => {
    if (cacheControl) c.header("Cache-Control", cacheControl);
    return c.json(marked ? { ...body, simulated: true } : body);
  };

  r.get("/attestation", async (c) => {
    const nonces = c.req.queries("nonce");
    if (nonces !== undefined) {
      const nonce = parseNonce(nonces);
      const { quote, event_log, vm_config } = await service.forNonce(nonce, clientOf(c));
      return json(c, { quote, event_log, vm_config, instance_id: (await service.info()).instance_id }, "no-store");
    }
    const { answer, madeAtMs } = await service.current();
    const maxAge = Math.max(0, Math.floor((madeAtMs + service.ttlMs - Date.now()) / 1000));
    const { quote, event_log, vm_config } = answer;
    return json(
      c,
      { quote, event_log, vm_config, instance_id: (await service.info()).instance_id },
      `public, max-age=${maxAge}`,
    );
  });

  r.get("/info", async (c) => json(c, await service.info()));

  // The key this instance signs run receipts with, and the quote over
  // SHA-512("sigil-receipt-v1:" ‖ its public key) that binds it (shared/receipt.ts). It does not
  // change while the instance runs.
  r.get("/attestation/receipt-key", async (c) => {
    if (!receipts) throw new SigilError("not_found", "this enclave signs no run receipts");
    let doc;
    try {
      doc = await receipts.attestation();
    } catch (err) {
      throw new SigilError("enclave_unavailable", "attestation is unavailable right now", {
        retryAfterSeconds: 1,
        cause: err,
      });
    }
    const { simulated: _simulated, ...body } = doc;
    return json(c, body, "public, max-age=300");
  });

  // Where a receipt's batch head sits in its epoch's anchored tree (receipts/anchors.ts): the path,
  // the root and the transaction that anchored it, for `?epoch=<the receipt's anchor.epoch>&head=<its
  // batch head>`. The heads are hashes that name nothing, like a receipt's batch path.
  r.get("/attestation/receipt-anchor", (c) => {
    const anchors = receipts?.anchors;
    if (!anchors) throw new SigilError("not_found", "this enclave instance anchors no receipts");
    const epoch = Number(c.req.query("epoch"));
    const head = c.req.query("head") ?? "";
    const details = [
      ...(Number.isSafeInteger(epoch) && epoch > 0
        ? []
        : [{ path: "epoch", message: "must be a receipt's anchor.epoch" }]),
      ...(/^0x[0-9a-fA-F]{64}$/.test(head)
        ? []
        : [{ path: "head", message: "must be a batch head: 0x and 64 hex digits" }]),
    ];
    if (details.length > 0)
      throw new SigilError("invalid_request", "give ?epoch= and ?head= of a receipt", { details });
    const proof = anchors.proof(epoch, head as `0x${string}`);
    if (!proof)
      throw new SigilError(
        "not_found",
        `this instance has no batch head ${head.toLowerCase()} in epoch ${epoch} (not signed here, or older than the heads it keeps)`,
      );
    return json(c, proof, proof.status === "anchored" ? "public, max-age=86400" : "no-store");
  });

  r.get("/attestation/simulated-collateral", async (c) => {
    if (!simulated)
      throw new SigilError(
        "not_found",
        "this enclave's attestation is not simulated: verify its quotes against Intel's root",
      );
    return json(c, {
      root_ca_der: bytesToHex(simulated.rootCaDer),
      root_ca_pem: simulated.rootCaPem,
      collateral: await simulated.collateral(),
    });
  });

  if (evidences) {
    const index = (c: Context) => {
      const links = [...evidences.files.keys()].map((name) => `<li><a href="${name}">${name}</a></li>`).join("\n");
      return c.html(
        `<!DOCTYPE html>\n<html><head><title>Index of /evidences/ (SIMULATED)</title></head><body>\n<h1>Index of /evidences/ (SIMULATED)</h1>\n<ul>\n${links}\n</ul>\n</body></html>\n`,
      );
    };
    r.get("/evidences", index);
    r.get("/evidences/", index);
    r.get("/evidences/:name", (c) => {
      const name = c.req.param("name");
      const file = evidences.files.get(name);
      if (!file) throw new SigilError("not_found", `no evidence file named ${name}`);
      return c.body(file.body.slice().buffer, 200, { "Content-Type": file.contentType });
    });
  }
  return r;
}

function parseNonce(values: string[]): Uint8Array {
  const refuse = (message: string) =>
    new SigilError("invalid_request", `nonce: ${message}`, { details: [{ path: "nonce", message }] });
  if (values.length !== 1) throw refuse("give one nonce");
  const hex = (values[0] as string).replace(/^0x/i, "");
  if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length % 2 !== 0) throw refuse("must be an even number of hex digits");
  if (hex.length > NONCE_MAX_BYTES * 2) throw refuse(`must be at most ${NONCE_MAX_BYTES} bytes`);
  return Uint8Array.from(Buffer.from(hex, "hex"));
}
