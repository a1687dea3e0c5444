// The attestation endpoints through the edge, over two enclave instances (issue 11, points 9 and
// 15): every answer names the instance that made it; a client pins one instance for /attestation,
// /info and /evidences/… (X-Sigil-Instance or ?instance=) and gets every answer from that VM; an
// instance the edge does not serve is 404 instance_not_found. Nonce quotes through the edge count
// against the client the edge saw (CF-Connecting-IP), not against the edge.
import { env, SELF } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createApp } from "../../workers/app.ts";

/** The edge under test with both enclaves of the stack behind it (its other bindings as configured). */
function edge(path: string, headers: Record<string, string> = {}): Promise<Response> {
  const urls = [inject("enclaveUrl"), inject("stalledEnclaveUrl")].join(",");
  return Promise.resolve(createApp().request(`http://edge${path}`, { headers }, { ...env, SIGIL_ENCLAVE_URLS: urls }));
}

const instanceOf = async (base: string) =>
  ((await (await fetch(`${base}/health`)).json()) as { instance_id: string }).instance_id;

describe("answers name their instance", () => {
  it("/attestation, /info and /evidences/… through the edge carry X-Sigil-Instance; /attestation's body names it too", async () => {
    const instance = await instanceOf(inject("enclaveUrl"));
    for (const path of [
      "/attestation",
      "/info",
      "/attestation/simulated-collateral",
      "/evidences/",
      "/evidences/sha256sum.txt",
      "/evidences/quote.json",
    ]) {
      const res = await SELF.fetch(`http://edge${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("x-sigil-instance"), path).toBe(instance);
      await res.arrayBuffer();
    }
    const quote = (await (await SELF.fetch("http://edge/attestation")).json()) as { instance_id: string };
    expect(quote.instance_id).toBe(instance);
  });
});

describe("pinning one instance (issue 11, point 15)", () => {
  it("with X-Sigil-Instance or ?instance=, every answer of /attestation, /info and /evidences/… comes from that VM, whichever the edge would have tried first", async () => {
    for (const base of [inject("enclaveUrl"), inject("stalledEnclaveUrl")]) {
      const instance = await instanceOf(base);
      const direct = async (path: string) => (await fetch(`${base}${path}`)).text();
      for (const pin of [{ header: instance }, { query: instance.toUpperCase() }]) {
        const ask = (path: string) =>
          pin.header
            ? edge(path, { "X-Sigil-Instance": pin.header })
            : edge(`${path}${path.includes("?") ? "&" : "?"}instance=${pin.query}`);
        // Several times each: the edge rotates over its enclaves from call to call.
        for (let i = 0; i < 4; i++) {
          for (const path of ["/attestation", "/info", "/evidences/sha256sum.txt", "/evidences/quote.json"]) {
            const res = await ask(path);
            expect(res.status, path).toBe(200);
            expect(res.headers.get("x-sigil-instance"), path).toBe(instance);
            // Byte for byte what that enclave serves (the quote is its cached one).
            expect(await res.text(), path).toBe(await direct(path));
          }
          const info = (await (await ask("/info")).json()) as { instance_id: string };
          expect(info.instance_id).toBe(instance);
        }
      }
    }
  });

  it("/attestation/receipt-key pinned to an instance is that instance's receipt key, byte for byte; each instance has its own", async () => {
    const keys = new Set<string>();
    for (const base of [inject("enclaveUrl"), inject("stalledEnclaveUrl")]) {
      const instance = await instanceOf(base);
      for (let i = 0; i < 2; i++) {
        const res = await edge(`/attestation/receipt-key?instance=${instance}`);
        expect(res.status).toBe(200);
        expect(res.headers.get("x-sigil-instance")).toBe(instance);
        expect(res.headers.get("x-attestation-simulated")).toBe("1");
        const text = await res.text();
        expect(text).toBe(await (await fetch(`${base}/attestation/receipt-key`)).text());
        const body = JSON.parse(text) as { instance_id: string; address: string; simulated: boolean };
        expect(body).toMatchObject({ instance_id: instance, simulated: true });
        keys.add(body.address);
      }
    }
    expect(keys.size).toBe(2);
    const unknown = await edge(`/attestation/receipt-key?instance=${"ab".repeat(20)}`);
    expect(unknown.status).toBe(404);
  });

  it("a nonce quote pinned to an instance is made by that instance", async () => {
    const instance = await instanceOf(inject("stalledEnclaveUrl"));
    const res = await edge("/attestation?nonce=c0ffee", {
      "X-Sigil-Instance": instance,
      "CF-Connecting-IP": "203.0.113.77",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-sigil-instance")).toBe(instance);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(((await res.json()) as { instance_id: string }).instance_id).toBe(instance);
  });

  it("an instance no enclave here is answers 404 instance_not_found; a malformed pin, or a header and a query naming two, 400 invalid_request", async () => {
    const instance = await instanceOf(inject("enclaveUrl"));
    const unknown = await edge("/info", { "X-Sigil-Instance": "ab".repeat(20) });
    expect(unknown.status).toBe(404);
    const body = (await unknown.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe("instance_not_found");
    expect(body.error.request_id).toBe(unknown.headers.get("x-request-id"));
    expect((await edge("/attestation?instance=not-an-instance")).status).toBe(400);
    // Also on /evidences, the listing's other spelling, which no schema validates.
    const bare = await edge("/evidences", { "X-Sigil-Instance": "not an instance" });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as { error: { code: string } }).error.code).toBe("invalid_request");
    const both = await edge(`/info?instance=${"cd".repeat(20)}`, { "X-Sigil-Instance": instance });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: { code: string } }).error.code).toBe("invalid_request");
  });
});

describe("nonce quotes through the edge (issue 11, point 9)", () => {
  it("count against the client the edge saw: one over its budget gets 429 with Retry-After while another still gets fresh quotes", async () => {
    const ask = (ip: string, nonce: string) =>
      SELF.fetch(`http://edge/attestation?nonce=${nonce}`, { headers: { "CF-Connecting-IP": ip } });
    const greedy = await Promise.all(
      Array.from({ length: 24 }, (_, i) => ask("198.51.100.21", i.toString(16).padStart(2, "0"))),
    );
    const refused = greedy.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(24 - 12);
    expect(Number(refused[0]?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused[0]?.json()).toMatchObject({ error: { code: "rate_limited" } });
    for (const r of greedy) if (r !== refused[0]) await r.arrayBuffer();
    for (const nonce of ["b1", "b2", "b3"]) {
      const fresh = await ask("198.51.100.22", nonce);
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get("cache-control")).toBe("no-store");
      expect(((await fresh.json()) as { quote: string }).quote).toMatch(/^[0-9a-f]+$/);
    }
  });
});
