// What the attestation endpoints serve, kept off the request path (docs/design/attestation.md, Endpoints): a
// quote costs tens of milliseconds on a real TDX device and the device serializes them, so the
// report-data-zero quote is cached for 60 s and re-made by a timer before it ages out; callers that
// arrive while one is being made share it. Nonce quotes are fresh by definition, so they are
// rate-limited instead: per client, so one caller spending its budget cannot starve the verifiers
// behind it, and all clients together, so the device is never asked more than it can make. Knows
// nothing of HTTP: errors are SigilErrors the server maps.
import { SigilError } from "../../shared/errors.ts";
import { TokenBucket, TokenBuckets, type BucketRate } from "../../shared/tokenBucket.ts";
import type { Logger } from "../../shared/log.ts";
import { nonceReportData, REPORT_DATA_BYTES, type AttestationSource, type Info, type QuoteAnswer } from "./source.ts";

export type CachedQuote = { answer: QuoteAnswer; madeAtMs: number };

export type AttestationServiceOptions = {
  source: AttestationSource;
  log: Logger;
  /** How long a cached quote is served: 60 s. */
  ttlMs?: number;
  /** How often the timer re-makes it: 45 s, so a fresh one is ready before the old one ages out. */
  refreshMs?: number;
  /** Nonce quotes per client (a burst of 10, then 2 per second) and for all clients together (40, then 20 per second). */
  nonceQuotes?: NonceQuoteLimits;
  now?: () => number;
};

export type NonceQuoteLimits = { perClient: BucketRate; total: BucketRate };

export const DEFAULT_NONCE_QUOTES: NonceQuoteLimits = {
  perClient: { capacity: 10, perSecond: 2 },
  total: { capacity: 40, perSecond: 20 },
};

export const NONCE_MAX_BYTES = 32;

export class AttestationService {
  readonly source: AttestationSource;
  readonly ttlMs: number;
  private readonly refreshMs: number;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly nonceClients: TokenBuckets;
  private readonly nonceTotal: TokenBucket;
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
    const limits = options.nonceQuotes ?? DEFAULT_NONCE_QUOTES;
    this.nonceClients = new TokenBuckets(limits.perClient, { now: this.now });
    this.nonceTotal = new TokenBucket(limits.total.capacity, limits.total.perSecond, this.now);
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

  /**
   * A fresh quote over SHA-512("sigil-nonce:" ‖ nonce), within `client`'s nonce budget (a peer
   * address, or the address the edge saw) and everyone's.
   */
  async forNonce(nonce: Uint8Array, client: string): Promise<QuoteAnswer> {
    if (nonce.length === 0 || nonce.length > NONCE_MAX_BYTES) {
      throw new SigilError("invalid_request", `the nonce must be 1 to ${NONCE_MAX_BYTES} bytes`, {
        details: [{ path: "nonce", message: "wrong length" }],
      });
    }
    // The client's own budget first: a client over it spends nothing of everyone's.
    const wait = this.nonceClients.take(client) || this.nonceTotal.take();
    if (wait > 0)
      throw new SigilError("rate_limited", "too many nonce quotes; retry later", {
        retryAfterSeconds: Math.ceil(wait / 1000),
      });
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
        this.log.warn("attestation quote failed", {
          source: this.source.kind,
          error: err instanceof Error ? err.message : String(err),
        });
        throw err;
      })
      .finally(() => (this.making = undefined));
    return this.making;
  }
}

function unavailable(cause: unknown): SigilError {
  return new SigilError("enclave_unavailable", "attestation is unavailable right now", { retryAfterSeconds: 1, cause });
}
