// The attestation routes behind the dstack source (the simulated ones run against a real enclave
// process in test/enclave/attestation.test.ts): answers say nothing about simulation, there is no
// mock collateral and no evidences stand-in to serve.
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorBody, isExposed } from "../../shared/errors.ts";
import { startGuestAgent, type GuestAgent } from "../../emulators/dstackGuestAgent.ts";
import { createLogger } from "../../shared/log.ts";
import { DstackSource } from "./dstackSource.ts";
import { attestationRoutes, SIMULATED_HEADER } from "./routes.ts";
import { AttestationService } from "./service.ts";

let agent: GuestAgent;
let app: Hono;

beforeAll(async () => {
  agent = await startGuestAgent();
  const service = new AttestationService({ source: new DstackSource(agent.endpoint), log: createLogger("silent") });
  app = new Hono();
  app.route("/", attestationRoutes({ service }));
  app.onError((err, c) => (isExposed(err) ? c.json(errorBody(err, "test"), err.status) : c.json({ unexpected: err.message }, 500)));
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
