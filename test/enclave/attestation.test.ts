// The enclave's public attestation endpoints (docs/design/attestation.md, Endpoints), against the test stack's
// enclave process, which runs the simulated TEE (SIGIL_ENV=test): the cached report-data-zero
// quote, nonce quotes and their limits, /info, the mock root and collateral that make the quotes
// verifiable with dcap-qvl, and the dev /evidences/ stand-in. No shared secret anywhere: these
// endpoints are public, like /health.
import { X509Certificate } from "node:crypto";
import { get as httpGet } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256, sha512 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { QuoteVerifier } from "@phala/dcap-qvl";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { replayRtmrs, type EventLogEntry } from "../../shared/attestation/eventLog.ts";
import type { DcapCollateral } from "../../enclave/attestation/simulated/pki.ts";
import { callOperation } from "../harness/channel.ts";

type QuoteBody = { quote: string; event_log: string; vm_config?: string; simulated?: true };
type Answer<T> = { status: number; headers: Headers; body: T; ms: number };

const url = (path: string) => `${inject("enclaveUrl")}${path}`;
const nowSecs = () => Math.floor(Date.now() / 1000);

async function get<T = Record<string, unknown>>(path: string): Promise<Answer<T>> {
  const started = performance.now();
  const res = await fetch(url(path));
  const text = await res.text();
  const ms = performance.now() - started;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // a text file (sha256sum.txt, a PEM, the index): kept as text
  }
  return { status: res.status, headers: res.headers, body: body as T, ms };
}

const reportData = (quoteHex: string) => bytesToHex(hexToBytes(quoteHex).subarray(568, 632));
const rtmrs = (quoteHex: string) =>
  [376, 424, 472, 520].map((at) => bytesToHex(hexToBytes(quoteHex).subarray(at, at + 48)));

let root: Buffer;
let collateral: DcapCollateral;

beforeAll(async () => {
  const c = await get<{ root_ca_der: string; root_ca_pem: string; collateral: DcapCollateral; simulated: true }>(
    "/attestation/simulated-collateral",
  );
  expect(c.status).toBe(200);
  root = Buffer.from(c.body.root_ca_der, "hex");
  collateral = c.body.collateral;
});

describe("GET /attestation", () => {
  it("serves one cached quote over 64 zero bytes: two calls within 60 s give the same quote, quickly", async () => {
    const a = await get<QuoteBody>("/attestation");
    const b = await get<QuoteBody>("/attestation");
    expect(a.status).toBe(200);
    expect(b.body.quote).toBe(a.body.quote);
    expect(b.ms).toBeLessThan(500);
    expect(reportData(a.body.quote)).toBe("00".repeat(64));
    expect(a.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
  });

  it("says it is simulated in its JSON and in X-Attestation-Simulated", async () => {
    const a = await get<QuoteBody>("/attestation");
    expect(a.body.simulated).toBe(true);
    expect(a.headers.get("x-attestation-simulated")).toBe("1");
    expect(Object.keys(a.body).sort()).toEqual(["event_log", "instance_id", "quote", "simulated", "vm_config"]);
    expect(JSON.parse(a.body.vm_config ?? "{}")).toMatchObject({ simulated: true });
  });

  it("verifies UpToDate with dcap-qvl under the served mock root and collateral, and not under Intel's root", async () => {
    const quote = hexToBytes((await get<QuoteBody>("/attestation")).body.quote);
    expect(QuoteVerifier.newWithRootCa(root).verify(quote, collateral, nowSecs()).status).toBe("UpToDate");
    expect(() => QuoteVerifier.newProd().verify(quote, collateral, nowSecs())).toThrow();
  });

  it("comes with an event log (a JSON string) that replays to the quote's RTMR0–3", async () => {
    const a = await get<QuoteBody>("/attestation");
    expect(typeof a.body.event_log).toBe("string");
    expect(replayRtmrs(JSON.parse(a.body.event_log) as EventLogEntry[])).toEqual(rtmrs(a.body.quote));
  });
});

describe("GET /attestation?nonce=", () => {
  it('gives a fresh quote over SHA-512("sigil-nonce:" ‖ the nonce\'s bytes)', async () => {
    const nonce = "0123456789abcdef".repeat(4);
    const a = await get<QuoteBody>(`/attestation?nonce=${nonce}`);
    expect(a.status).toBe(200);
    expect(reportData(a.body.quote)).toBe(
      bytesToHex(sha512(concatBytes(utf8ToBytes("sigil-nonce:"), hexToBytes(nonce)))),
    );
    expect(a.body.simulated).toBe(true);
    expect(a.headers.get("x-attestation-simulated")).toBe("1");
    expect(a.headers.get("cache-control")).toBe("no-store");
    expect(QuoteVerifier.newWithRootCa(root).verify(hexToBytes(a.body.quote), collateral, nowSecs()).status).toBe(
      "UpToDate",
    );

    const again = await get<QuoteBody>(`/attestation?nonce=0x${nonce.toUpperCase()}`);
    expect(reportData(again.body.quote)).toBe(reportData(a.body.quote));
    expect(again.body.quote).not.toBe(a.body.quote);
  });

  it.each([
    ["not hex", "zz"],
    ["an odd number of digits", "abc"],
    ["33 bytes", "ab".repeat(33)],
    ["empty", ""],
  ])("refuses a nonce that is %s with 400 invalid_request and the error body", async (_label, nonce) => {
    const a = await get<{ error: { code: string; message: string; request_id: string; details: unknown } }>(
      `/attestation?nonce=${nonce}`,
    );
    expect(a.status).toBe(400);
    expect(a.headers.get("x-attestation-simulated")).toBe("1");
    expect(a.body.error.code).toBe("invalid_request");
    expect(a.body.error.message).toMatch(/^nonce: /);
    expect(a.body.error.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.body.error.details).toEqual([{ path: "nonce", message: expect.any(String) }]);
  });

  it("refuses two nonces in one query", async () => {
    expect((await get("/attestation?nonce=01&nonce=02")).status).toBe(400);
  });
});

describe("GET /info", () => {
  it("reports compose_hash = SHA-256(tcb_info.app_compose), the app id the local key provider derives, and the quote's registers", async () => {
    const info = await get<{
      app_id: string;
      instance_id: string;
      compose_hash: string;
      tcb_info: {
        app_compose: string;
        rtmr0: string;
        rtmr1: string;
        rtmr2: string;
        rtmr3: string;
        event_log: EventLogEntry[];
      };
      simulated: true;
    }>("/info");
    expect(info.status).toBe(200);
    expect(info.body.simulated).toBe(true);
    expect(info.headers.get("x-attestation-simulated")).toBe("1");
    const { tcb_info: tcb } = info.body;
    expect(typeof tcb.app_compose).toBe("string");
    expect(info.body.compose_hash).toBe(bytesToHex(sha256(utf8ToBytes(tcb.app_compose))));
    expect(info.body.app_id).toBe(info.body.compose_hash.slice(0, 40));
    expect(info.body.instance_id).toMatch(/^[0-9a-f]{40}$/);

    const quote = (await get<QuoteBody>("/attestation")).body;
    expect([tcb.rtmr0, tcb.rtmr1, tcb.rtmr2, tcb.rtmr3]).toEqual(rtmrs(quote.quote));
    const measured = (JSON.parse(quote.event_log) as EventLogEntry[]).find((e) => e.event === "compose-hash");
    expect(measured?.event_payload).toBe(info.body.compose_hash);
  });

  it("measures deploy/app-compose.dev.json byte for byte when it exists", async (ctx) => {
    const file = join(import.meta.dirname, "../../deploy/app-compose.dev.json");
    if (!existsSync(file)) ctx.skip();
    const info = await get<{ tcb_info: { app_compose: string } }>("/info");
    expect(info.body.tcb_info.app_compose).toBe(readFileSync(file, "utf8"));
  });
});

describe("GET /attestation/simulated-collateral", () => {
  it("serves the mock root (DER and PEM) and collateral in the shape dcap-qvl's verify takes, marked simulated", async () => {
    const c = await get<{ root_ca_der: string; root_ca_pem: string; collateral: DcapCollateral; simulated: true }>(
      "/attestation/simulated-collateral",
    );
    expect(c.body.simulated).toBe(true);
    expect(c.headers.get("x-attestation-simulated")).toBe("1");
    const cert = new X509Certificate(c.body.root_ca_pem);
    expect(cert.raw.toString("hex")).toBe(c.body.root_ca_der);
    expect(cert.subject).toContain("SIMULATED DCAP Root CA (NOT INTEL)");
    expect(Object.keys(c.body.collateral).sort()).toEqual(
      [
        "pck_crl",
        "pck_crl_issuer_chain",
        "qe_identity",
        "qe_identity_issuer_chain",
        "qe_identity_signature",
        "root_ca_crl",
        "tcb_info",
        "tcb_info_issuer_chain",
        "tcb_info_signature",
      ].sort(),
    );
    expect(JSON.parse(c.body.collateral.tcb_info)).toMatchObject({ id: "TDX", version: 3, fmspc: "53494D554C41" });
  });
});

describe("/evidences/ (the dev stand-in for dstack-ingress)", () => {
  const FILES = ["acme-account.json", "cert-localhost.pem", "sha256sum.txt", "quote.json"];

  it("lists its files at /evidences/", async () => {
    const index = await get<string>("/evidences/");
    expect(index.status).toBe(200);
    expect(index.headers.get("x-attestation-simulated")).toBe("1");
    for (const name of FILES) expect(index.body).toContain(`href="${name}"`);
  });

  it("has a sha256sum.txt that lists every other file's SHA-256 as sha256sum does: '<hex>  <name>'", async () => {
    const sums = await fetch(url("/evidences/sha256sum.txt"));
    expect(sums.headers.get("x-attestation-simulated")).toBe("1");
    const text = await sums.text();
    const lines = text.split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((l) => l.split("  ")[1])).toEqual(["acme-account.json", "cert-localhost.pem"]);
    for (const line of lines) {
      const [hex, name] = line.split("  ") as [string, string];
      const body = new Uint8Array(await (await fetch(url(`/evidences/${name}`))).arrayBuffer());
      expect(hex, name).toBe(bytesToHex(sha256(body)));
    }
  });

  it("has a quote.json whose quote binds SHA-256(sha256sum.txt) ‖ 32 zero bytes and verifies under the mock root", async () => {
    const sums = new Uint8Array(await (await fetch(url("/evidences/sha256sum.txt"))).arrayBuffer());
    const q = await get<{ quote: string; event_log: string; report_data: string; vm_config: string; simulated: true }>(
      "/evidences/quote.json",
    );
    expect(q.body.simulated).toBe(true);
    const expected = `${bytesToHex(sha256(sums))}${"00".repeat(32)}`;
    expect(q.body.report_data).toBe(expected);
    expect(reportData(q.body.quote)).toBe(expected);
    expect(QuoteVerifier.newWithRootCa(root).verify(hexToBytes(q.body.quote), collateral, nowSecs()).status).toBe(
      "UpToDate",
    );
    expect(replayRtmrs(JSON.parse(q.body.event_log) as EventLogEntry[])).toEqual(rtmrs(q.body.quote));
  });

  it("has a self-signed certificate for localhost and an ACME account document marked simulated", async () => {
    const pem = (await get<string>("/evidences/cert-localhost.pem")).body;
    const cert = new X509Certificate(pem);
    expect(cert.checkHost("localhost")).toBe("localhost");
    expect(cert.checkIssued(cert)).toBe(true);
    const account = await get<{ simulated: true; uri: string }>("/evidences/acme-account.json");
    expect(account.body.simulated).toBe(true);
    expect(account.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("answers 404 with the error body for a file it does not have", async () => {
    const a = await get<{ error: { code: string } }>("/evidences/cert-example.com.pem");
    expect(a.status).toBe(404);
    expect(a.body.error.code).toBe("not_found");
  });
});

describe("nonce rate limit", () => {
  // Last: it spends the enclave's nonce tokens (a burst of 10, then 2 per second).
  it("answers 429 rate_limited with Retry-After once a burst of nonce quotes has spent the bucket", async () => {
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => fetch(url(`/attestation?nonce=${i.toString(16).padStart(2, "0")}`))),
    );
    const limited = answers.filter((r) => r.status === 429);
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(limited.length).toBeGreaterThanOrEqual(24 - 12);
    const first = limited[0] as Response;
    expect(Number(first.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(first.headers.get("x-attestation-simulated")).toBe("1");
    expect(await first.json()).toMatchObject({ error: { code: "rate_limited" } });
    // The cached quote is not rate-limited.
    expect((await fetch(url("/attestation"))).status).toBe(200);
  });
});

/** GET `path` of the enclave from the local address `from` (all of 127.0.0.0/8 is loopback): another client, as the enclave sees it. */
function getFrom(
  from: string,
  path: string,
): Promise<{ status: number; retryAfter: string | undefined; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    httpGet(url(path), { localAddress: from }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const retry = res.headers["retry-after"];
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retry) ? retry[0] : retry,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>,
        });
      });
    }).once("error", reject);
  });
}

const nonceOf = (i: number) => i.toString(16).padStart(2, "0");
const boundTo = (nonce: string) => bytesToHex(sha512(concatBytes(utf8ToBytes("sigil-nonce:"), hexToBytes(nonce))));

describe("the nonce budget is per client (issue 11, point 9)", () => {
  it("a client over its budget gets 429 with Retry-After while another client still gets fresh quotes", async () => {
    const greedy = await Promise.all(
      Array.from({ length: 24 }, (_, i) => getFrom("127.0.0.4", `/attestation?nonce=${nonceOf(i)}`)),
    );
    const refused = greedy.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(24 - 12);
    expect(Number(refused[0]?.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused[0]?.body).toMatchObject({ error: { code: "rate_limited" } });
    // Another client, right after: its own budget is whole.
    for (const nonce of ["a1", "a2", "a3"]) {
      const fresh = await getFrom("127.0.0.5", `/attestation?nonce=${nonce}`);
      expect(fresh.status).toBe(200);
      expect(reportData(String(fresh.body.quote))).toBe(boundTo(nonce));
    }
  });

  it("through the channel, counts against the client the edge names (the attestation operation's `client`), not against the edge", async () => {
    const ask = async (client: string, nonce: string) => {
      const reply = await callOperation<{ status: number; headers: Record<string, string>; body: string }>(
        inject("enclaveUrl"),
        "attestation",
        { query: `?nonce=${nonce}`, client },
      );
      if (reply.status !== 200) throw new Error(`the attestation operation answered ${reply.status}`);
      return reply.body;
    };
    const greedy = await Promise.all(Array.from({ length: 24 }, (_, i) => ask("198.51.100.7", nonceOf(i))));
    const refused = greedy.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(24 - 12);
    expect(Number(refused[0]?.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    const fresh = await ask("198.51.100.8", "b1");
    expect(fresh.status).toBe(200);
    // The same answer the public route gives: its headers and body.
    expect(fresh.headers).toMatchObject({
      "cache-control": "no-store",
      "x-attestation-simulated": "1",
      "content-type": expect.stringMatching(/^application\/json/),
    });
    const body = JSON.parse(fresh.body) as { quote: string; instance_id: string };
    expect(reportData(body.quote)).toBe(boundTo("b1"));
    expect(fresh.headers["x-sigil-instance"]).toBe(body.instance_id);
  });
});
