// `sigil verify <base_url>` against a base URL that fronts two enclave instances (issue 11, point
// 15), as the edge does: two simulated TEEs made in-process (each its own mock PKI, instance id and
// dev evidences, served by the enclave's own attestation routes) behind a router on 127.0.0.1 that
// lists them in /core/v1/health, honours a pin (X-Sigil-Instance or ?instance=) and otherwise
// rotates, as the edge does. Unpinned, /attestation, /info and /evidences/ come from different VMs
// and nothing can be verified; pinned, each instance is verified whole.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bytesToHex } from "@noble/hashes/utils";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDevEvidences } from "../../enclave/attestation/evidences.ts";
import { readAppCompose } from "../../enclave/attestation/open.ts";
import { attestationRoutes } from "../../enclave/attestation/routes.ts";
import { AttestationService } from "../../enclave/attestation/service.ts";
import { SimulatedSource } from "../../enclave/attestation/simulated/simulatedSource.ts";
import { createLogger } from "../../shared/log.ts";
import { runVerifyCli } from "../../test/fixtures/dstackDeployment.ts";
import type { CheckLine } from "./verify.ts";

type Instance = { id: string; app: Hono };

let instances: Instance[];
let server: Server;
let base = "";
/** Requests the router served, with the instance each was pinned to (null: unpinned). */
const served: Array<{ path: string; pin: string | null }> = [];
/** Router faults a test switches on: answer /info from this instance whatever the pin. */
const faults: { infoFrom?: string } = {};

async function simulatedInstance(): Promise<Instance> {
  const log = createLogger("silent");
  const source = await SimulatedSource.create({ appCompose: readAppCompose(undefined, log) });
  const service = new AttestationService({ source, log });
  const evidences = await createDevEvidences(source);
  return { id: source.boot.instanceId, app: attestationRoutes({ service, simulated: source, evidences }) };
}

beforeAll(async () => {
  instances = await Promise.all([simulatedInstance(), simulatedInstance()]);
  let next = 0;
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://router");
    if (url.pathname === "/core/v1/health") {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ status: "ok", enclaves: instances.map((i) => ({ instance_id: i.id, status: "ok" })) }));
      return;
    }
    const header = req.headers["x-sigil-instance"];
    const pin = (typeof header === "string" ? header : url.searchParams.get("instance"))?.toLowerCase() ?? null;
    served.push({ path: url.pathname, pin });
    url.searchParams.delete("instance");
    const target =
      url.pathname === "/info" && faults.infoFrom
        ? instances.find((i) => i.id === faults.infoFrom)
        : pin
          ? instances.find((i) => i.id === pin)
          : instances[next++ % instances.length];
    if (!target) {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: "instance_not_found", message: "no such instance", request_id: "r" } }));
      return;
    }
    const answer = await target.app.request(`${url.pathname}${url.search}`);
    const headers: Record<string, string> = { "x-sigil-instance": target.id };
    for (const name of ["content-type", "x-attestation-simulated", "cache-control"]) {
      const v = answer.headers.get(name);
      if (v) headers[name] = v;
    }
    res.writeHead(answer.status, headers).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The --json lines of a run, all of them (runVerifyCli keeps only the last of each check name). */
async function verify(args: string[]): Promise<{ code: number; lines: CheckLine[]; out: string }> {
  const run = await runVerifyCli([base, "--allow-simulated", "--json", ...args]);
  return {
    code: run.code,
    out: run.out,
    lines: run.out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as CheckLine),
  };
}

describe("sigil verify over several instances", () => {
  it("verifies every serving instance in turn, each pinned, every check passing for each, and exits 0", async () => {
    served.length = 0;
    const { code, lines } = await verify([]);
    const failed = lines.filter((l) => l.status === "fail");
    expect(failed, JSON.stringify(failed, null, 1)).toEqual([]);
    expect(code).toBe(0);
    for (const { id } of instances) {
      const mine = lines.filter((l) => l.instance === id);
      expect(Object.fromEntries(mine.map((l) => [l.check, l.status]))).toMatchObject({
        quote: "pass",
        freshness: "pass",
        event_log: "pass",
        claims: "pass",
        "info.compose_hash": "pass",
        "info.instance_id": "pass",
        "evidence.quote": "pass",
        "evidence.report_data": "pass",
        instance: "pass",
      });
    }
    expect(new Set(lines.map((l) => l.instance))).toEqual(new Set(instances.map((i) => i.id)));
    // Every attestation request named its instance: no answer could have come from another VM.
    expect(served.length).toBeGreaterThan(0);
    expect(served.filter((s) => s.pin === null)).toEqual([]);
  });

  it("prints each instance's checks under its id and exits 1 when one instance fails, naming it", async () => {
    const [a, b] = instances as [Instance, Instance];
    faults.infoFrom = a.id;
    try {
      const text = await runVerifyCli([base, "--allow-simulated"]);
      expect(text.code).toBe(1);
      expect(text.out).toContain(`instance ${a.id} (1 of 2)`);
      expect(text.out).toContain(`instance ${b.id} (2 of 2)`);
      expect(text.out).toContain(`NOT verified`);
      expect(text.out).toContain(b.id);
      const { lines } = await verify([]);
      // Instance b's /info came from a: caught by the instance ids and by the answer's instance.
      const bLines = Object.fromEntries(lines.filter((l) => l.instance === b.id).map((l) => [l.check, l]));
      expect(bLines["info.instance_id"]?.status).toBe("fail");
      expect(bLines.instance?.status).toBe("fail");
      expect(bLines.instance?.detail).toContain(`/info came from instance ${a.id}`);
      expect(lines.filter((l) => l.instance === a.id && l.status === "fail")).toEqual([]);
    } finally {
      delete faults.infoFrom;
    }
  });

  it("--instance checks that one instance only; an instance not served fails", async () => {
    const [a] = instances as [Instance, Instance];
    const one = await verify(["--instance", a.id]);
    expect(one.code).toBe(0);
    expect(new Set(one.lines.map((l) => l.instance))).toEqual(new Set([a.id]));
    const none = await verify(["--instance", bytesToHex(new Uint8Array(20).fill(0xab))]);
    expect(none.code).toBe(1);
    expect(none.lines[0]).toMatchObject({ check: "quote", status: "fail" });
  });
});
