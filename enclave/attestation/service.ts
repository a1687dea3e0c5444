// What the attestation endpoints serve, kept off the request path (attestation.md, Endpoints): a
// quote costs tens of milliseconds on a real TDX device and the device serializes them, so the
// report-data-zero quote is cached for 60 s and re-made by a timer before it ages out; callers that
// arrive while one is being made share it. Nonce quotes are fresh by definition, so they are
// rate-limited instead. Knows nothing of HTTP: errors are SigilErrors the server maps.
import { SigilError } from "../../shared/errors.ts";
import type { Logger } from "../log.ts";
import { nonceReportData, REPORT_DATA_BYTES, type AttestationSource, type Info, type QuoteAnswer } from "./source.ts";

export type CachedQuote = { answer: QuoteAnswer; madeAtMs: number };

export type AttestationServiceOptions = {
  source: AttestationSource;
  log: Logger;
  /** How long a cached quote is served: 60 s. */
  ttlMs?: number;
  /** How often the timer re-makes it: 45 s, so a fresh one is ready before the old one ages out. */
  refreshMs?: number;
  /** Nonce quotes: a burst of 10, then 2 per second. */
  nonceBurst?: number;
  noncePerSecond?: number;
  now?: () => number;
};

export const NONCE_MAX_BYTES = 32;

export class AttestationService {
  readonly source: AttestationSource;
  readonly ttlMs: number;
  private readonly refreshMs: number;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly nonceBucket: TokenBucket;
  private cached: CachedQuote | undefined;
  private making: Promise<CachedQuote> | undefined;
  private infoAnswer: Promise<Info> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: AttestationServiceOptions) {
    this.source = options.source;
    this.log = options.log;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.refreshMs = options.refreshMs ?? 45_000;
    this.now = options.now ?? Date.now;
    this.nonceBucket = new TokenBucket(options.nonceBurst ?? 10, options.noncePerSecond ?? 2, this.now);
  }

  get simulated(): boolean {
    return this.source.kind === "simulated";
  }

  /** Makes the first quote now and keeps one fresh from then on. */
  start(): void {
    void this.refresh().catch(() => undefined);
    this.timer ??= setInterval(() => void this.refresh().catch(() => undefined), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The report-data-zero quote: the cached one while younger than the TTL, else the one being made. */
  async current(): Promise<CachedQuote> {
    const cached = this.cached;
    if (cached && this.now() - cached.madeAtMs < this.ttlMs) return cached;
    try {
      return await this.refresh();
    } catch (err) {
      throw unavailable(err);
    }
  }

  /** A fresh quote over SHA-512("sigil-nonce:" ‖ nonce), within the nonce rate limit. */
  async forNonce(nonce: Uint8Array): Promise<QuoteAnswer> {
    if (nonce.length === 0 || nonce.length > NONCE_MAX_BYTES) {
      throw new SigilError("invalid_request", `the nonce must be 1 to ${NONCE_MAX_BYTES} bytes`, { details: [{ path: "nonce", message: "wrong length" }] });
    }
    const wait = this.nonceBucket.take();
    if (wait > 0) throw new SigilError("rate_limited", "too many nonce quotes; retry later", { retryAfterSeconds: Math.ceil(wait / 1000) });
    try {
      return await this.source.getQuote(nonceReportData(nonce));
    } catch (err) {
      throw unavailable(err);
    }
  }

  /**
   * A quote over any 64 bytes of report data, uncached and unlimited: for the enclave's own bindings
   * (the attested channel's key). `simulated: true` when the simulated source made it.
   */
  async getQuote(reportData: Uint8Array): Promise<QuoteAnswer & { simulated?: true }> {
    const answer = await this.source.getQuote(reportData);
    return this.simulated ? { ...answer, simulated: true } : answer;
  }

  /** The CVM's info; it does not change while the CVM runs, so it is asked once (again after a failure). */
  async info(): Promise<Info> {
    this.infoAnswer ??= this.source.info();
    try {
      return await this.infoAnswer;
    } catch (err) {
      this.infoAnswer = undefined;
      throw unavailable(err);
    }
  }

  private refresh(): Promise<CachedQuote> {
    this.making ??= this.source
      .getQuote(new Uint8Array(REPORT_DATA_BYTES))
      .then((answer) => (this.cached = { answer, madeAtMs: this.now() }))
      .catch((err: unknown) => {
        this.log.warn("attestation quote failed", { source: this.source.kind, error: err instanceof Error ? err.message : String(err) });
        throw err;
      })
      .finally(() => (this.making = undefined));
    return this.making;
  }
}

function unavailable(cause: unknown): SigilError {
  return new SigilError("enclave_unavailable", "attestation is unavailable right now", { retryAfterSeconds: 1, cause });
}

/** A token bucket: `capacity` at once, refilled at `perSecond`; take() answers the wait in ms (0: taken). */
export class TokenBucket {
  private readonly capacity: number;
  private readonly perSecond: number;
  private readonly now: () => number;
  private tokens: number;
  private at: number;

  constructor(capacity: number, perSecond: number, now: () => number = Date.now) {
    this.capacity = capacity;
    this.perSecond = perSecond;
    this.now = now;
    this.tokens = capacity;
    this.at = now();
  }

  take(): number {
    const t = this.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((t - this.at) / 1000) * this.perSecond);
    this.at = t;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) / this.perSecond) * 1000;
  }
}
