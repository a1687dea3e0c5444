// The attestation cache and limits (docs/design/attestation.md, Endpoints): the report-data-zero quote is made
// off the request path, shared by concurrent callers, served for 60 s and re-made by a timer;
// nonce quotes are fresh, bound to SHA-512("sigil-nonce:" ‖ nonce) and rate-limited; a failing
// source becomes a 503 error and is retried on the next call.
import { sha512 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { describe, expect, it } from "vitest";
import { SigilError } from "../../shared/errors.ts";
import { createLogger } from "../../shared/log.ts";
import { AttestationService } from "./service.ts";
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
    return {
      app_id: "a",
      instance_id: "i",
      compose_hash: "c",
      tcb_info: { mrtd: "", rtmr0: "", rtmr1: "", rtmr2: "", rtmr3: "", app_compose: "{}", event_log: [] },
    };
  }

  async getKey(): Promise<Uint8Array> {
    return new Uint8Array(32);
  }
}

const ZERO = "00".repeat(64);
const log = createLogger("silent");

function setup(options: { burst?: number; perSecond?: number; total?: { capacity: number; perSecond: number } } = {}) {
  const source = new FakeSource();
  let clock = 1_000_000;
  const service = new AttestationService({
    source,
    log,
    now: () => clock,
    nonceQuotes: {
      perClient: { capacity: options.burst ?? 3, perSecond: options.perSecond ?? 1 },
      total: options.total ?? { capacity: 100, perSecond: 100 },
    },
  });
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
  it('bind SHA-512("sigil-nonce:" ‖ nonce bytes) and are never cached', async () => {
    const { source, service } = setup();
    const nonce = Uint8Array.of(0xde, 0xad, 0xbe, 0xef);
    const expected = bytesToHex(sha512(concatBytes(utf8ToBytes("sigil-nonce:"), nonce)));
    await service.forNonce(nonce, "a");
    await service.forNonce(nonce, "a");
    expect(source.asked).toEqual([expected, expected]);
  });

  it.each([0, 33])("refuse a nonce of %i bytes with invalid_request", async (length) => {
    const { service } = setup();
    expect((await codeOf(service.forNonce(new Uint8Array(length), "a"))).code).toBe("invalid_request");
  });

  it("allow a client a burst, then answer it rate_limited with the seconds until its next token", async () => {
    const { source, service, advance } = setup({ burst: 3, perSecond: 0.5 });
    for (let i = 0; i < 3; i += 1) await service.forNonce(Uint8Array.of(i), "a");
    expect(await codeOf(service.forNonce(Uint8Array.of(9), "a"))).toEqual({ code: "rate_limited", retryAfter: 2 });
    expect(source.asked).toHaveLength(3);
    advance(2_000);
    await service.forNonce(Uint8Array.of(9), "a");
    expect(source.asked).toHaveLength(4);
  });

  it("keep a budget per client: one over its budget is refused while another still gets fresh quotes", async () => {
    const { source, service } = setup({ burst: 2, perSecond: 0.1 });
    await service.forNonce(Uint8Array.of(1), "greedy");
    await service.forNonce(Uint8Array.of(2), "greedy");
    for (let i = 0; i < 20; i++)
      expect((await codeOf(service.forNonce(Uint8Array.of(3), "greedy"))).code).toBe("rate_limited");
    await service.forNonce(Uint8Array.of(4), "verifier");
    await service.forNonce(Uint8Array.of(5), "verifier");
    expect(source.asked).toHaveLength(4);
  });

  it("hold all clients together to the device's budget, and a refused client spends none of it", async () => {
    const { source, service } = setup({ burst: 2, perSecond: 0.1, total: { capacity: 3, perSecond: 0.1 } });
    await service.forNonce(Uint8Array.of(1), "a");
    await service.forNonce(Uint8Array.of(2), "a");
    // Over its own budget: refused before it can touch everyone's.
    expect((await codeOf(service.forNonce(Uint8Array.of(3), "a"))).code).toBe("rate_limited");
    await service.forNonce(Uint8Array.of(4), "b");
    expect(await codeOf(service.forNonce(Uint8Array.of(5), "c"))).toEqual({ code: "rate_limited", retryAfter: 10 });
    expect(source.asked).toHaveLength(3);
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
