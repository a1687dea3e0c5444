// The attestation cache and limits (attestation.md, Endpoints): the report-data-zero quote is made
// off the request path, shared by concurrent callers, served for 60 s and re-made by a timer;
// nonce quotes are fresh, bound to SHA-512("sigil-nonce:" ‖ nonce) and rate-limited; a failing
// source becomes a 503 error and is retried on the next call.
import { sha512 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { describe, expect, it } from "vitest";
import { SigilError } from "../../shared/errors.ts";
import { createLogger } from "../log.ts";
import { AttestationService, TokenBucket } from "./service.ts";
import type { AttestationSource, Info, QuoteAnswer } from "./source.ts";

/** A source that records every report data it signs; each quote is "n:<report data hex>". */
class FakeSource implements AttestationSource {
  readonly kind = "simulated" as const;
  asked: string[] = [];
  infos = 0;
  delayMs = 0;
  failing = false;

  async getQuote(reportData: Uint8Array): Promise<QuoteAnswer> {
    this.asked.push(bytesToHex(reportData));
    const n = this.asked.length;
    if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.failing) throw new Error("device busy");
    return { quote: `${n}:${bytesToHex(reportData)}`, event_log: "[]" };
  }

  async info(): Promise<Info> {
    this.infos += 1;
    if (this.failing) throw new Error("agent down");
    return { app_id: "a", instance_id: "i", compose_hash: "c", tcb_info: { mrtd: "", rtmr0: "", rtmr1: "", rtmr2: "", rtmr3: "", app_compose: "{}", event_log: [] } };
  }

  async getKey(): Promise<Uint8Array> {
    return new Uint8Array(32);
  }
}

const ZERO = "00".repeat(64);
const log = createLogger("silent");

function setup(options: { burst?: number; perSecond?: number } = {}) {
  const source = new FakeSource();
  let clock = 1_000_000;
  const service = new AttestationService({ source, log, now: () => clock, nonceBurst: options.burst ?? 3, noncePerSecond: options.perSecond ?? 1 });
  return { source, service, advance: (ms: number) => (clock += ms) };
}

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof SigilError) return { code: err.code, retryAfter: err.retryAfterSeconds };
    throw err;
  }
  throw new Error("expected a SigilError");
};

describe("the report-data-zero quote", () => {
  it("is made once for callers that arrive together, over 64 zero bytes", async () => {
    const { source, service } = setup();
    source.delayMs = 20;
    const answers = await Promise.all(Array.from({ length: 10 }, () => service.current()));
    expect(source.asked).toEqual([ZERO]);
    expect(new Set(answers.map((a) => a.answer.quote))).toEqual(new Set([`1:${ZERO}`]));
  });

  it("is served from the cache for 60 s, then made again", async () => {
    const { source, service, advance } = setup();
    const first = await service.current();
    advance(59_999);
    expect((await service.current()).answer.quote).toBe(first.answer.quote);
    expect(source.asked).toHaveLength(1);
    advance(1);
    expect((await service.current()).answer.quote).toBe(`2:${ZERO}`);
  });

  it("is made at start and re-made by the timer without any request", async () => {
    const source = new FakeSource();
    const service = new AttestationService({ source, log, refreshMs: 15 });
    service.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(source.asked.length).toBeGreaterThanOrEqual(3);
      const made = source.asked.length;
      await service.current();
      expect(source.asked.length).toBeLessThanOrEqual(made + 1);
    } finally {
      service.stop();
    }
  });

  it("turns a failing source into enclave_unavailable (503, Retry-After) and retries on the next call", async () => {
    const { source, service } = setup();
    source.failing = true;
    expect(await codeOf(service.current())).toEqual({ code: "enclave_unavailable", retryAfter: 1 });
    source.failing = false;
    expect((await service.current()).answer.quote).toBe(`2:${ZERO}`);
  });
});

describe("nonce quotes", () => {
  it("bind SHA-512(\"sigil-nonce:\" ‖ nonce bytes) and are never cached", async () => {
    const { source, service } = setup();
    const nonce = Uint8Array.of(0xde, 0xad, 0xbe, 0xef);
    const expected = bytesToHex(sha512(concatBytes(utf8ToBytes("sigil-nonce:"), nonce)));
    await service.forNonce(nonce);
    await service.forNonce(nonce);
    expect(source.asked).toEqual([expected, expected]);
  });

  it.each([0, 33])("refuse a nonce of %i bytes with invalid_request", async (length) => {
    const { service } = setup();
    expect((await codeOf(service.forNonce(new Uint8Array(length)))).code).toBe("invalid_request");
  });

  it("allow a burst, then answer rate_limited with the seconds until the next token", async () => {
    const { source, service, advance } = setup({ burst: 3, perSecond: 0.5 });
    for (let i = 0; i < 3; i += 1) await service.forNonce(Uint8Array.of(i));
    expect(await codeOf(service.forNonce(Uint8Array.of(9)))).toEqual({ code: "rate_limited", retryAfter: 2 });
    expect(source.asked).toHaveLength(3);
    advance(2_000);
    await service.forNonce(Uint8Array.of(9));
    expect(source.asked).toHaveLength(4);
  });
});

describe("info", () => {
  it("is asked of the source once, again only after a failure", async () => {
    const { source, service } = setup();
    source.failing = true;
    expect((await codeOf(service.info())).code).toBe("enclave_unavailable");
    source.failing = false;
    await service.info();
    await service.info();
    expect(source.infos).toBe(2);
  });
});

describe("TokenBucket", () => {
  it("gives `capacity` tokens at once and refills at the given rate, never above capacity", () => {
    let t = 0;
    const bucket = new TokenBucket(2, 4, () => t);
    expect([bucket.take(), bucket.take()]).toEqual([0, 0]);
    expect(bucket.take()).toBe(250);
    t = 250;
    expect(bucket.take()).toBe(0);
    t = 100_000;
    expect([bucket.take(), bucket.take(), bucket.take()]).toEqual([0, 0, 250]);
  });
});
