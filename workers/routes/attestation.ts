// The attestation endpoints (docs/design/api.md, Attestation; docs/design/attestation.md), at the base URL rather than
// under /core/v1: `/attestation`, `/info`, `/attestation/receipt-key` (the key run receipts are
// signed with), `/attestation/receipt-anchor` (where a receipt is anchored on chain), `/evidences/…` and, from a simulated TEE, `/attestation/simulated-collateral` come
// from an enclave and pass through unchanged, so a verifier sees exactly what the enclave served. Each answer names the instance that made it
// (`X-Sigil-Instance`); a client pins one instance for all of them with that header or
// `?instance=`, so the quote, /info and the evidences it checks come from the same VM (issue 11,
// point 15). Documented in the OpenAPI document with the rest.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { proxyToEnclave } from "../enclave/client.ts";
import { jsonResponse as json, route } from "./openapi.ts";

const instanceId = z
  .string()
  .regex(/^[0-9a-fA-F]{8,128}$/, "must be an instance id (hex), as X-Sigil-Instance and GET /core/v1/health name it")
  .transform((v) => v.toLowerCase());

/** The two ways to pin an instance; either alone, or both naming the same one. */
const pin = {
  query: z.object({
    instance: instanceId.optional().describe("Only this enclave instance answers (as X-Sigil-Instance names it)"),
  }),
  headers: z.object({
    "x-sigil-instance": instanceId.optional().describe("Only this enclave instance answers; the same as ?instance="),
  }),
};

/**
 * What every attestation endpoint may answer: a malformed or contradictory pin (400), an instance
 * the edge does not serve, or what that enclave does not have (404: the collateral of real
 * hardware, an evidence file), no enclave to ask (503). They are not under /core/v1, so the edge's
 * rate limit does not count them.
 */
const pinErrors = [400, 404, 503] as const;

/** Who may ask (anyone: what a verifier checks needs no key), and the pin as the request's query and header. */
const pinnedByAnyone = { security: "open", request: pin } as const;

const answeredBy = z.object({ "X-Sigil-Instance": z.string().describe("The enclave instance that answered") });
/** An enclave's answer, as JSON, named by the instance that made it. */
const fromInstance = <T extends z.ZodType>(schema: T, description: string) => ({
  ...json(schema, description),
  headers: answeredBy,
});
const simulatedMark = {
  simulated: z
    .literal(true)
    .optional()
    .describe("Present only on a simulated TEE's answers (also X-Attestation-Simulated: 1)"),
};

const quoteSchema = z.object({
  quote: z.string().describe("The TDX quote, hex"),
  event_log: z.string().describe("The event log, a JSON-encoded array"),
  vm_config: z.string().optional(),
  instance_id: z.string().optional().describe("The instance that made the quote"),
  ...simulatedMark,
});

/** What /info answers: dstack's Info, every field named (a named component, Info, for generated clients). */
const infoSchema = z
  .object({
    app_id: z.string().describe("the dstack app id"),
    instance_id: z.string().describe("this CVM instance (as X-Sigil-Instance names it)"),
    app_name: z.string().optional().describe("the app's name in its app-compose"),
    compose_hash: z
      .string()
      .describe("SHA-256 of tcb_info.app_compose, hex: what the event log's compose-hash event records"),
    device_id: z.string().optional().describe("the machine's device id, hex"),
    os_image_hash: z.string().optional().describe("the guest OS image's hash, hex"),
    key_provider_info: z.string().optional().describe("the key provider the CVM's keys come from, JSON text"),
    vm_config: z.string().optional().describe("the VM's configuration (CPUs, memory, image), JSON text"),
    tcb_info: z
      .looseObject({
        mrtd: z.string().optional().describe("MRTD, hex"),
        rtmr0: z.string().optional().describe("RTMR0, hex"),
        rtmr1: z.string().optional().describe("RTMR1, hex"),
        rtmr2: z.string().optional().describe("RTMR2, hex"),
        rtmr3: z.string().optional().describe("RTMR3, hex: replayed from event_log"),
        os_image_hash: z.string().optional(),
        compose_hash: z.string().optional(),
        device_id: z.string().optional(),
        app_compose: z.string().describe("the app-compose text exactly as measured"),
        event_log: z.array(z.looseObject({})).optional().describe("the event log, as /attestation's event_log"),
      })
      .describe("the CVM's measurements and app description"),
    ...simulatedMark,
  })
  .openapi("Info");

/** What /attestation/receipt-key answers (a named component, ReceiptKey). */
const receiptKeySchema = z
  .object({
    address: z.string().describe("the receipt key's address, lowercase"),
    public_key: z.string().describe("its uncompressed secp256k1 public key (0x04 ‖ x ‖ y)"),
    quote: z.string().describe('the TDX quote, hex; report_data = SHA-512("sigil-receipt-v1:" ‖ public key bytes)'),
    event_log: z.string().describe("the event log, a JSON-encoded array"),
    vm_config: z.string().optional(),
    instance_id: z.string(),
    compose_hash: z.string(),
    ...simulatedMark,
  })
  .openapi("ReceiptKey");

const attestation = route("GET /attestation", "Attestation", {
  operationId: "getAttestation",
  summary:
    'A TDX quote of an enclave, with its event log: cached over 64 zero bytes, or fresh over SHA-512("sigil-nonce:" ‖ nonce) (rate-limited per client)',
  security: "open",
  request: {
    query: pin.query.extend({
      nonce: z
        .string()
        .regex(/^(0x)?([0-9a-fA-F]{2}){1,32}$/, "must be 1 to 32 bytes of hex")
        .optional()
        .describe('Hex, at most 32 bytes: the quote\'s report_data is SHA-512("sigil-nonce:" ‖ these bytes)'),
    }),
    headers: pin.headers,
  },
  ok: fromInstance(quoteSchema, "the quote"),
  // 429: the enclave's own budget of fresh (nonce) quotes, per client and in all.
  errors: [...pinErrors, 429],
});

const info = route("GET /info", "Attestation", {
  operationId: "getInfo",
  summary:
    "The enclave's app id, compose hash, instance id and TCB info (tcb_info.app_compose: the raw app-compose text)",
  ...pinnedByAnyone,
  ok: fromInstance(infoSchema, "the CVM's info"),
  errors: pinErrors,
});

const collateral = route("GET /attestation/simulated-collateral", "Attestation", {
  operationId: "getSimulatedCollateral",
  summary: "A simulated TEE's mock DCAP root and collateral, to verify its quotes offline (404 on real hardware)",
  ...pinnedByAnyone,
  ok: fromInstance(
    z.object({
      root_ca_der: z.string(),
      root_ca_pem: z.string(),
      collateral: z.record(z.string(), z.string()),
      ...simulatedMark,
    }),
    "the mock root (DER hex and PEM) and collateral",
  ),
  errors: pinErrors,
});

const receiptKey = route("GET /attestation/receipt-key", "Attestation", {
  operationId: "getReceiptKey",
  summary:
    'The key an enclave instance signs run receipts with, and its TDX quote over SHA-512("sigil-receipt-v1:" ‖ public key): verify a receipt against it (pin the receipt\'s instance_id)',
  ...pinnedByAnyone,
  ok: fromInstance(
    receiptKeySchema,
    "the receipt key, the quote that binds it and its event log, and the instance and compose hash it belongs to",
  ),
  errors: pinErrors,
});

/** What /attestation/receipt-anchor answers (a named component, ReceiptAnchorProof; shared/receiptAnchor.ts AnchorProof). */
const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/);
const receiptAnchorSchema = z
  .object({
    instance_id: z.string(),
    signer: z.string().describe("the receipt key's address: the contract keeps anchors under it"),
    chain_id: z.number().int(),
    contract: z.string().describe("the ReceiptAnchor contract"),
    epoch: z.number().int().describe("the epoch: the unix second it opened"),
    head: hex32.describe("the batch head asked for"),
    status: z
      .enum(["open", "pending", "anchored", "failed"])
      .describe("open: still taking heads; pending: closed, its transaction not mined yet; anchored; failed"),
    closes_at: z.number().int().describe("the unix second the epoch closes (open) or closed"),
    index: z.number().int().optional().describe("once closed: the head's leaf in the epoch's tree"),
    size: z.number().int().optional().describe("once closed: the heads in the epoch (the contract's `heads`)"),
    proof: z.array(hex32).optional().describe("once closed: the leaf's audit path, deepest first (RFC 9162, SHA-256)"),
    root: hex32.optional().describe("once closed: the tree's root, as the contract holds it once anchored"),
    transaction_hash: hex32.nullable().optional(),
    block_number: z.string().nullable().optional(),
    error: z.string().optional().describe("failed: why"),
    ...simulatedMark,
  })
  .openapi("ReceiptAnchorProof");

const receiptAnchor = route("GET /attestation/receipt-anchor", "Attestation", {
  operationId: "getReceiptAnchor",
  summary:
    "Where a receipt's batch head sits in its epoch's tree, anchored on chain by the instance's receipt key (pin the receipt's instance_id; ?epoch= its anchor.epoch)",
  security: "open",
  request: {
    query: pin.query.extend({
      epoch: z.coerce.number().int().positive().describe("the receipt's anchor.epoch"),
      head: z
        .string()
        .regex(/^0x[0-9a-fA-F]{64}$/, "must be a batch head: 0x and 64 hex digits")
        .describe("the receipt's batch head (shared/receiptAnchor.ts receiptHead)"),
    }),
    headers: pin.headers,
  },
  ok: fromInstance(receiptAnchorSchema, "the head's path to its epoch's root, and where that root is anchored"),
  errors: pinErrors,
});

// With the slash: dstack-ingress serves the listing there, and its links are relative to it.
const evidenceIndex = route("GET /evidences/", "Attestation", {
  operationId: "listEvidences",
  summary: "The evidence files (dstack-ingress's in production): a directory listing",
  ...pinnedByAnyone,
  ok: { description: "the listing, HTML", headers: answeredBy, content: { "text/html": { schema: z.string() } } },
  errors: pinErrors,
});

const evidenceFile = route("GET /evidences/{name}", "Attestation", {
  operationId: "getEvidence",
  summary: "One evidence file: sha256sum.txt, quote.json, acme-account.json or cert-<domain>.pem",
  security: "open",
  request: { params: z.object({ name: z.string().min(1) }), ...pin },
  ok: {
    description: "the file, as it was made",
    headers: answeredBy,
    content: {
      "application/json": {
        schema: z.looseObject({}).describe("quote.json (quote, event_log, report_data) or acme-account.json"),
      },
      "text/plain": { schema: z.string().describe("sha256sum.txt") },
      "application/x-pem-file": { schema: z.string().describe("cert-<domain>.pem") },
    },
  },
  errors: pinErrors,
});

/** The instance the request pins, by header or query (400 when they disagree). */
function pinned(c: Context<EdgeEnv>): string | undefined {
  const read = (value: string | undefined) => {
    if (value === undefined) return undefined;
    const parsed = instanceId.safeParse(value);
    if (!parsed.success)
      throw new SigilError("invalid_request", "the instance pin is not an instance id", {
        details: [{ path: "instance", message: parsed.error.issues[0]?.message ?? "invalid" }],
      });
    return parsed.data;
  };
  const fromHeader = read(c.req.header("x-sigil-instance"));
  const fromQuery = read(c.req.query("instance"));
  if (fromHeader && fromQuery && fromHeader !== fromQuery) {
    throw new SigilError("invalid_request", "X-Sigil-Instance and ?instance= name different instances", {
      details: [{ path: "instance", message: "two different instances" }],
    });
  }
  return fromHeader ?? fromQuery;
}

export function attestationRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  // The enclave's answer passes through as its bytes (a verifier checks them), not as a value the
  // route's schema types: the one place the edge answers what it did not build, hence the cast.
  const pass = (c: Context<EdgeEnv>) =>
    proxyToEnclave(c.get("config"), c.get("ids"), new URL(c.req.url), {
      instance: pinned(c),
      clientIp: c.req.header("cf-connecting-ip"),
    }) as never;
  r.openapi(attestation, pass);
  r.openapi(collateral, pass);
  r.openapi(info, pass);
  r.openapi(receiptKey, pass);
  r.openapi(receiptAnchor, pass);
  r.openapi(evidenceIndex, pass);
  r.openapi(evidenceFile, pass);
  r.get("/evidences", pass);
  return r;
}
