// The attestation routes behind the dstack source (the simulated ones run against a real enclave
// process in test/enclave/attestation.test.ts): answers say nothing about simulation, there is no
// mock collateral and no evidences stand-in to serve.
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorBody, isExposed } from "../../shared/errors.ts";
import { startGuestAgent, type GuestAgent } from "../../emulators/dstackGuestAgent.ts";
import { createLogger } from "../../shared/log.ts";
import { DstackSource } from "./dstackSource.ts";
import { hexToBytes } from "@noble/hashes/utils";
import {
  quoteReportData,
  receiptKeyAddress,
  receiptKeyReportData,
  type ReceiptKeyAttestation,
} from "../../shared/receipt.ts";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { Keyring } from "../keys/derive.ts";
import { ReceiptSigner } from "../receipts/receipts.ts";
import { attestationRoutes, SIMULATED_HEADER } from "./routes.ts";
import { AttestationService } from "./service.ts";

let agent: GuestAgent;
let app: Hono;
let bare: Hono;
let service: AttestationService;

beforeAll(async () => {
  agent = await startGuestAgent();
  service = new AttestationService({ source: new DstackSource(agent.endpoint), log: createLogger("silent") });
  const info = await service.info();
  const receipts = new ReceiptSigner({
    keyring: new Keyring(hexToBytes(TEST_ROOT_KEY.slice(2))),
    instanceId: info.instance_id,
    composeHash: info.compose_hash,
    quote: (reportData) => service.getQuote(reportData),
  });
  app = new Hono();
  app.route("/", attestationRoutes({ service, receipts }));
  app.onError((err, c) =>
    isExposed(err) ? c.json(errorBody(err, "test"), err.status) : c.json({ unexpected: err.message }, 500),
  );
  bare = new Hono();
  bare.route("/", attestationRoutes({ service }));
  bare.onError((err, c) =>
    isExposed(err) ? c.json(errorBody(err, "test"), err.status) : c.json({ unexpected: err.message }, 500),
  );
});
afterAll(() => agent.close());

describe("attestation routes over dstack", () => {
  it("answer /attestation and /info without any simulated marker", async () => {
    for (const path of ["/attestation", "/attestation?nonce=00ff", "/info"]) {
      const res = await app.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get(SIMULATED_HEADER), path).toBeNull();
      expect(await res.json(), path).not.toHaveProperty("simulated");
    }
  });

  it("mark the cached quote publicly cacheable for its remaining life, a nonce quote no-store", async () => {
    expect((await app.request("/attestation")).headers.get("cache-control")).toMatch(/^public, max-age=(60|59)$/);
    expect((await app.request("/attestation?nonce=01")).headers.get("cache-control")).toBe("no-store");
  });

  it("refuse /attestation/simulated-collateral with not_found, and serve no /evidences/", async () => {
    const res = await app.request("/attestation/simulated-collateral");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
    expect((await app.request("/evidences/sha256sum.txt")).status).toBe(404);
  });
});

describe("GET /attestation/receipt-key", () => {
  it("serves the receipt key, its instance and compose hash, and a quote whose report_data binds its public key", async () => {
    const res = await app.request("/attestation/receipt-key");
    expect(res.status).toBe(200);
    expect(res.headers.get(SIMULATED_HEADER)).toBeNull();
    const body = (await res.json()) as ReceiptKeyAttestation;
    expect(body).not.toHaveProperty("simulated");
    const info = await service.info();
    expect(body).toMatchObject({ instance_id: info.instance_id, compose_hash: info.compose_hash });
    expect(receiptKeyAddress(body.public_key)).toBe(body.address);
    expect(quoteReportData(body.quote)).toEqual(await receiptKeyReportData(hexToBytes(body.public_key.slice(2))));
  });

  it("is not_found on an enclave that signs no receipts", async () => {
    const res = await bare.request("/attestation/receipt-key");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
  });
});
