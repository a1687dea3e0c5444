// The attestation endpoints (api.md, Attestation; attestation.md), at the base URL rather than
// under /core/v1: `/attestation`, `/info`, `/evidences/…` and, from a simulated TEE,
// `/attestation/simulated-collateral` come from an enclave and pass through unchanged, so a
// verifier sees exactly what the enclave served.
import { Hono, type Context } from "hono";
import type { EdgeEnv } from "../app.ts";
import { proxyToEnclave } from "../enclave/client.ts";

export function attestationRoutes(): Hono<EdgeEnv> {
  const r = new Hono<EdgeEnv>();
  const pass = (c: Context<EdgeEnv>) => {
    const url = new URL(c.req.url);
    return proxyToEnclave(c.get("config"), c.get("ids"), `${url.pathname}${url.search}`);
  };
  r.get("/attestation", pass);
  r.get("/attestation/simulated-collateral", pass);
  r.get("/info", pass);
  r.get("/evidences", pass);
  r.get("/evidences/", pass);
  r.get("/evidences/*", pass);
  return r;
}
