// The runs' charges this enclave instance settles itself (docs/design/billing.md, Leases). The edge
// answers a run before its charge reaches the account's Ledger (workers/billing/lease.ts commits it a
// moment later); should the edge die in between, the charge would be lost. So the enclave,
// which signed the charge into the run's receipt, keeps each billed run here and, SETTLE_AFTER_MS
// after it ended, sends it to the edge under the run's own token (shared/settlement.ts): first the
// charges alone, which the Ledger finds made already for almost every run, then the usage detail
// (the receipt) of those it does not. The Ledger charges each billing ref once, whoever comes first.
//
// A run whose settlement fails (the edge unreachable) is tried again every tick until GIVE_UP_MS after
// it ended (its token is good for longer: workers/budgets/token.ts); then, or when the journal is full,
// it is dropped with an error in the log naming it. On shutdown everything still kept is sent at once.
import type { Logger } from "../../shared/log.ts";
import type { BudgetAccess } from "../../shared/guardrails/budgets.ts";
import {
  SETTLEMENT_BATCH,
  SETTLEMENT_PATH,
  type SettledRunDetail,
  type SettlementAnswer,
} from "../../shared/settlement.ts";

/** How long after a run ends its charge is sent: long past its edge's own commit, well within the lease's life. */
export const SETTLE_AFTER_MS = 5_000;
/** How often the journal looks for runs to send. */
const TICK_MS = 1_000;
/** After this long unsent, a run's charge is dropped (and logged): its edge was unreachable all along. */
const GIVE_UP_MS = 10 * 60_000;
/** The longest pause before an edge that keeps failing is tried again. */
const MAX_PAUSE_MS = 60_000;
/** At most this many runs kept; past it, the oldest are dropped (and logged). */
const MAX_KEPT = 200_000;
/** How long one request to the edge may take. */
const REQUEST_TIMEOUT_MS = 10_000;

/** The edge refused the request itself (4xx): the same request would be refused again. */
class RefusedError extends Error {}

/** A run to settle: where and under which token, what it costs, and what the usage history keeps of it. */
type Kept = { access: BudgetAccess & { ref: string }; cents: number; detail: SettledRunDetail; endedAt: number };

export type SettlementStats = { kept: number; sent: number; charged: number; dropped: number };

export class Settlements {
  readonly #kept: Kept[] = [];
  readonly #fetch: typeof fetch;
  readonly #allowHttp: boolean;
  readonly #log: Logger;
  readonly #afterMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Edges whose last request failed: when to try again, and the pause that was. */
  readonly #paused = new Map<string, { until: number; waitMs: number }>();
  #sending: Promise<void> | undefined;
  readonly stats: SettlementStats = { kept: 0, sent: 0, charged: 0, dropped: 0 };

  constructor(options: { log: Logger; allowHttp: boolean; fetchImpl?: typeof fetch; afterMs?: number }) {
    this.#fetch = options.fetchImpl ?? fetch;
    this.#allowHttp = options.allowHttp;
    this.#log = options.log;
    this.#afterMs = options.afterMs ?? SETTLE_AFTER_MS;
  }

  /** Keeps run `access.ref`'s charge of `cents`, to be sent SETTLE_AFTER_MS from `endedAt`. */
  add(access: BudgetAccess & { ref: string }, cents: number, detail: SettledRunDetail, endedAt = Date.now()): void {
    this.#kept.push({ access, cents, detail, endedAt });
    if (this.#kept.length > MAX_KEPT) {
      const dropped = this.#kept.splice(0, this.#kept.length - MAX_KEPT);
      this.#dropped(dropped, "the journal of runs to settle is full");
    }
    this.stats.kept = this.#kept.length;
  }

  /** Sends what is due every TICK_MS from now on. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.flush(), TICK_MS);
    this.#timer.unref();
  }

  /** Stops the ticks and sends everything still kept, due or not. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sending;
    await this.flush(true);
  }

  /** Sends the runs that are due (`all`: every one), one flush at a time. */
  flush(all = false, now = Date.now()): Promise<void> {
    if (this.#sending) return this.#sending;
    this.#sending = this.#send(all, now).finally(() => {
      this.#sending = undefined;
    });
    return this.#sending;
  }

  async #send(all: boolean, now: number): Promise<void> {
    const due: Kept[] = [];
    const later: Kept[] = [];
    for (const k of this.#kept) (all || now - k.endedAt >= this.#afterMs ? due : later).push(k);
    if (due.length === 0) return;
    this.#kept.length = 0;
    this.#kept.push(...later);
    const byUrl = new Map<string, Kept[]>();
    for (const k of due) {
      const list = byUrl.get(k.access.url) ?? [];
      list.push(k);
      byUrl.set(k.access.url, list);
    }
    const retry: Kept[] = [];
    for (const [url, runs] of byUrl) {
      // An edge that failed lately is tried again only after its pause (doubling, up to a minute).
      const pause = this.#paused.get(url);
      if (pause && !all && now < pause.until) {
        retry.push(...runs);
        continue;
      }
      for (let i = 0; i < runs.length; i += SETTLEMENT_BATCH) {
        const batch = runs.slice(i, i + SETTLEMENT_BATCH);
        try {
          await this.#settle(url, batch);
        } catch (err) {
          if (err instanceof RefusedError) {
            this.#dropped(batch, err.message);
            continue;
          }
          const rest = runs.slice(i);
          const keep = rest.filter((k) => now - k.endedAt < GIVE_UP_MS);
          retry.push(...keep);
          this.#dropped(
            rest.filter((k) => !keep.includes(k)),
            `the edge did not take them for ${GIVE_UP_MS / 60_000} minutes`,
          );
          const waitMs = Math.min(MAX_PAUSE_MS, (pause?.waitMs ?? TICK_MS / 2) * 2);
          this.#paused.set(url, { until: now + waitMs, waitMs });
          if (!pause)
            this.#log.warn("run settlements not taken by their edge; tried again later", {
              url,
              runs: rest.length,
              error: err instanceof Error ? err.message : String(err),
            });
          break;
        }
      }
      if (!retry.some((k) => k.access.url === url)) this.#paused.delete(url);
    }
    this.#kept.unshift(...retry);
    this.stats.kept = this.#kept.length;
  }

  /** One batch of one edge: the charges; then the detail of those the Ledger has not charged yet. */
  async #settle(url: string, batch: Kept[]): Promise<void> {
    const first = await this.#post(
      url,
      batch.map((k) => ({ token: k.access.token, cents: k.cents })),
    );
    this.stats.sent += batch.length;
    const refused = first.refused.map((i) => batch[i]!).filter(Boolean);
    if (refused.length > 0) this.#dropped(refused, "the edge refused their tokens");
    const missing = first.missing.map((i) => batch[i]!).filter(Boolean);
    if (missing.length === 0) return;
    const second = await this.#post(
      url,
      missing.map((k) => ({ token: k.access.token, cents: k.cents, detail: k.detail })),
    );
    this.stats.charged += missing.length - second.refused.length;
    this.#log.warn("charged runs their edge had not", { url, runs: missing.map((k) => k.access.ref) });
  }

  async #post(
    base: string,
    runs: Array<{ token: string; cents: number; detail?: SettledRunDetail }>,
  ): Promise<SettlementAnswer> {
    const url = new URL(SETTLEMENT_PATH, base);
    if (url.protocol !== "https:" && !(this.#allowHttp && url.protocol === "http:"))
      throw new Error(`the edge's URL is not ${this.#allowHttp ? "http(s)" : "https"}`);
    const res = await this.#fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runs }),
      // The tokens go to the edge's URL and nowhere else.
      redirect: "error",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    if (res.status >= 400 && res.status < 500) throw new RefusedError(`the edge refused them (${res.status})`);
    if (!res.ok) throw new Error(`the edge answered ${res.status}`);
    const answer = JSON.parse(text) as Partial<SettlementAnswer>;
    if (!Array.isArray(answer.refused) || !Array.isArray(answer.missing))
      throw new Error("the edge's answer is not a settlement answer");
    return answer as SettlementAnswer;
  }

  #dropped(runs: Kept[], why: string): void {
    if (runs.length === 0) return;
    this.stats.dropped += runs.length;
    this.#log.error("run charges not settled by the enclave", {
      why,
      runs: runs.map((k) => ({ ref: k.access.ref, cents: k.cents })),
    });
  }
}
