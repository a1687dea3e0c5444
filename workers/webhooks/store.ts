// The Webhooks Durable Object (issue 14): one per account, named by its master hash like its Ledger,
// SQLite storage. It keeps the account's endpoints, its webhook settings, the events that happened and
// their deliveries, and delivers them itself from alarms, so a delivery survives the edge's invocation
// ending and a restart of the local stack (the alarm and the rows are both in the object's storage):
//
//   endpoints(id we_…, url, events JSON, secret, created_at, disabled)   at most MAX_ENDPOINTS
//   settings(id = 1, account_id, balance_low_cents, balance_low_armed,   balance.low's threshold and
//            ledger_synced)                                               whether the next crossing fires;
//                                                                         whether the Ledger knows (below)
//   events(id evt_…, type, created_at, body, dedupe UNIQUE)               body: the exact JSON every
//                                                                         attempt sends; dedupe: what
//                                                                         makes the same fact one event
//   deliveries(id dlv_…, endpoint_id, event_id, status, attempts, next_at, window_start, created_at)
//   attempts(delivery_id, n, at, status_code, error, duration_ms)         the delivery log
//
// Delivery is at least once: a due delivery is leased (its next_at moved LEASE_MS ahead) before it is
// sent, so one whose attempt never finished (the object was evicted, the stack stopped) is tried again
// once the lease is over. A 2xx answer delivers; anything else (another status, a redirect — never
// followed —, a timeout after 10 s, a refused connection) is a failed attempt, retried on the schedule
// of policy.ts until its 24 h window is over, then `failed`. A re-send starts a new window. Secrets are
// kept (they sign every attempt) and never logged; only the endpoint's creation answers one.
//
// The account's Ledger keeps whether this object has anything to hear of — an endpoint or a
// balance.low threshold — so that the edge, which reads it in every run's hold and settle anyway,
// calls here only when it has (billing/ledger.ts, `webhooks`; webhooks/emit.ts). With neither, a
// call changes nothing: `emit` records no event without a subscribed endpoint, and `observeBalance`
// does nothing at threshold 0 (the arming state is set afresh when a threshold is set). This object
// writes that flag, and it must never say "nothing" while there is something. Why it cannot:
//   - every change of the endpoints or the threshold, and the first call of an object the Ledger has
//     not heard from (`ledger_synced` = 0: made before the flag existed), runs under
//     blockConcurrencyWhile from before it reads the state until the Ledger has stored what it
//     tells it: no other change, on any isolate (an object is one instance), comes in between, so
//     the Ledger hears of the states in the order they were made, each exactly as it is then;
//   - a change that may add something (an endpoint, a threshold above 0) tells the Ledger "hear"
//     before it makes it, and is refused if the Ledger could not be told: from the moment the
//     endpoint or threshold exists, and so before its creation is answered, every settle reads "hear";
//   - a change that may leave nothing (a removal, threshold 0) makes it, then tells the Ledger the
//     state it left; if that fails the Ledger keeps saying "hear" (calls that do nothing) and
//     ledger_synced goes back to 0, so the next call here tells it again.
// So a settle that reads "nothing" comes after the last state told, which had nothing, and before
// any change that added something; the event it skips is one that, sent, would have found no
// endpoint — the same as an event today for an endpoint added after it happened. new_account marks
// a brand-new account's unknown flag "nothing" (Ledger.opened): nobody could have configured its
// webhooks before its key was answered, and a flag this object has set is left alone.
import { DurableObject } from "cloudflare:workers";
import type { Ledger } from "../billing/ledger.ts";
import {
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  signatureHeaderValue,
  type WebhookEvent,
  type WebhookEventType,
} from "../../shared/webhooks.ts";
import { checkWebhookUrl } from "./url.ts";
import { type WebhookPolicy, webhookPolicy } from "../config.ts";
import { migrate } from "../migrations.ts";
import { ATTEMPT_TIMEOUT_MS, MAX_ENDPOINTS, nextAttemptAt } from "./policy.ts";
import { WEBHOOKS_MIGRATIONS } from "./schema.ts";

/** How long a delivery in flight is leased before another alarm may send it again. */
const LEASE_MS = 60_000;
/** Deliveries sent at once by one alarm; more due ones wait for the next, which comes at once. */
const BATCH = 10;
/** Finished events (and their deliveries and log) are kept this long. */
const RETENTION_MS = 30 * 24 * 3600_000;
/** The longest error text one attempt keeps. */
const MAX_ERROR_CHARS = 300;

export type EndpointView = { id: string; url: string; events: WebhookEventType[]; created: number; disabled: boolean };
export type AttemptView = {
  n: number;
  at: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
};
export type DeliveryStatus = "pending" | "succeeded" | "failed";
export type DeliveryView = {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: WebhookEventType;
  status: DeliveryStatus;
  created: number;
  next_attempt_at: number | null;
  attempts: AttemptView[];
};
/** A fact to tell the account's endpoints of. `dedupe` names the fact: the same one is never two events. */
export type Emission = { type: WebhookEventType; dedupe: string; data: Record<string, unknown> };
export type Emitted = { eventId: string | null; deliveries: number; duplicate: boolean };

type EndpointRow = { id: string; url: string; events: string; secret: string; created_at: number; disabled: number };
type DeliveryRow = {
  id: string;
  endpoint_id: string;
  event_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_at: number | null;
  window_start: number;
  created_at: number;
};

const randomHex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

export class Webhooks extends DurableObject {
  readonly #sql: SqlStorage;
  readonly #policy: WebhookPolicy;
  /** The LEDGER binding (absent: billing cannot be on, and nobody reads the flag). */
  readonly #ledgers: DurableObjectNamespace<Ledger> | undefined;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#policy = webhookPolicy(env as Record<string, string | undefined>);
    this.#ledgers = (env as { LEDGER?: DurableObjectNamespace<Ledger> }).LEDGER;
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, WEBHOOKS_MIGRATIONS);
    // Whatever is pending has its alarm, also after a restart that lost the one set before.
    void ctx.blockConcurrencyWhile(() => this.#schedule());
  }

  // ---- endpoints ------------------------------------------------------------------------------

  /**
   * Registers `url` for `events` on the account `accountId` (0x + 64 hex); its secret is answered
   * here and never again. `limit`: the account has MAX_ENDPOINTS already. The Ledger hears first
   * that this object has something to hear of (thrown, and nothing made, if it cannot be told).
   */
  async addEndpoint(
    accountId: string,
    url: string,
    events: WebhookEventType[],
  ): Promise<{ endpoint: EndpointView; secret: string } | { limit: true }> {
    return this.#serialized(async () => {
      const count = this.#sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM endpoints").one().n;
      if (count >= MAX_ENDPOINTS) return { limit: true as const };
      await this.#tellLedger(accountId, true);
      const id = `we_${randomHex(12)}`;
      const secret = `whsec_${randomHex(32)}`;
      const created = Date.now();
      this.#sql.exec(
        "INSERT INTO endpoints (id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)",
        id,
        url,
        JSON.stringify(events),
        secret,
        created,
      );
      return { endpoint: { id, url, events, created: Math.floor(created / 1000), disabled: false }, secret };
    });
  }

  listEndpoints(): EndpointView[] {
    return this.#sql.exec<EndpointRow>("SELECT * FROM endpoints ORDER BY created_at, id").toArray().map(endpointView);
  }

  /** Removes an endpoint with its deliveries and their log; false when there is no such endpoint. Then the Ledger hears what is left. */
  async removeEndpoint(accountId: string, id: string): Promise<boolean> {
    return this.#serialized(async () => {
      const removed = this.ctx.storage.transactionSync(() => {
        if (!this.#endpoint(id)) return false;
        this.#sql.exec(
          "DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE endpoint_id = ?)",
          id,
        );
        this.#sql.exec("DELETE FROM deliveries WHERE endpoint_id = ?", id);
        this.#sql.exec("DELETE FROM endpoints WHERE id = ?", id);
        return true;
      });
      if (removed) await this.#tellLedgerWhatIsLeft(accountId);
      return removed;
    });
  }

  // ---- settings -------------------------------------------------------------------------------

  settings(): { balanceLowCents: number } {
    return {
      balanceLowCents: this.#sql
        .exec<{ balance_low_cents: number }>("SELECT balance_low_cents FROM settings WHERE id = 1")
        .one().balance_low_cents,
    };
  }

  /**
   * Sets balance.low's threshold (0 turns it off). It fires when the free balance goes from at least
   * the threshold to under it, so it is armed only if the balance is at least the threshold now.
   */
  async setBalanceLow(accountId: string, cents: number, freeCents: number): Promise<{ balanceLowCents: number }> {
    return this.#serialized(async () => {
      // A threshold is something to hear of: the Ledger hears it first. Off, it hears what is left.
      if (cents > 0) await this.#tellLedger(accountId, true);
      this.#sql.exec(
        "UPDATE settings SET balance_low_cents = ?, balance_low_armed = ? WHERE id = 1",
        cents,
        freeCents >= cents ? 1 : 0,
      );
      if (cents === 0) await this.#tellLedgerWhatIsLeft(accountId);
      return this.settings();
    });
  }

  // ---- events ---------------------------------------------------------------------------------

  /**
   * Records `emission` as an event of the account `accountId` (0x + 64 hex) and schedules its delivery
   * to every enabled endpoint subscribed to its type, at once. The same `dedupe` again is the same
   * event: nothing new. With no subscribed endpoint nothing is recorded.
   */
  async emit(accountId: string, emission: Emission): Promise<Emitted> {
    await this.#syncLedger(accountId);
    const emitted = this.ctx.storage.transactionSync(() => this.#record(accountId, emission));
    if (emitted.deliveries > 0) await this.#schedule();
    return emitted;
  }

  /**
   * Told the account's free balance after a settle or a credit (`ref`: the request id or payment intent
   * that moved it): at or above the threshold re-arms balance.low; under it, when armed, emits it once.
   */
  async observeBalance(accountId: string, freeCents: number, ref: string): Promise<Emitted | undefined> {
    await this.#syncLedger(accountId);
    const emitted = this.ctx.storage.transactionSync(() => {
      const s = this.#sql
        .exec<{ balance_low_cents: number; balance_low_armed: number }>(
          "SELECT balance_low_cents, balance_low_armed FROM settings WHERE id = 1",
        )
        .one();
      if (s.balance_low_cents <= 0) return undefined;
      if (freeCents >= s.balance_low_cents) {
        if (!s.balance_low_armed) this.#sql.exec("UPDATE settings SET balance_low_armed = 1 WHERE id = 1");
        return undefined;
      }
      if (!s.balance_low_armed) return undefined;
      this.#sql.exec("UPDATE settings SET balance_low_armed = 0 WHERE id = 1");
      return this.#record(accountId, {
        type: "balance.low",
        dedupe: `balance.low:${ref}`,
        data: { balance_cents: Math.max(0, freeCents), threshold_cents: s.balance_low_cents },
      });
    });
    if (emitted && emitted.deliveries > 0) await this.#schedule();
    return emitted;
  }

  // ---- deliveries -----------------------------------------------------------------------------

  /** An endpoint's deliveries, newest first, each with its attempts; undefined for an unknown endpoint. */
  deliveries(endpointId: string, offset: number, limit: number): { total: number; items: DeliveryView[] } | undefined {
    if (!this.#endpoint(endpointId)) return undefined;
    const total = this.#sql
      .exec<{ n: number }>("SELECT COUNT(*) AS n FROM deliveries WHERE endpoint_id = ?", endpointId)
      .one().n;
    const rows = this.#sql
      .exec<DeliveryRow & { type: WebhookEventType }>(
        "SELECT d.*, e.type FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.endpoint_id = ? ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?",
        endpointId,
        limit,
        offset,
      )
      .toArray();
    return { total, items: rows.map((r) => this.#deliveryView(r, r.type)) };
  }

  /**
   * Sends a delivery again, now, with a new 24 h window: named by its id (dlv_…) or its event's
   * (evt_…, which makes a delivery to this endpoint if it had none, e.g. it subscribed later).
   */
  async resend(
    endpointId: string,
    deliveryOrEventId: string,
  ): Promise<DeliveryView | "endpoint_not_found" | "delivery_not_found"> {
    const result = this.ctx.storage.transactionSync(() => {
      if (!this.#endpoint(endpointId)) return "endpoint_not_found" as const;
      const now = Date.now();
      let row = this.#sql
        .exec<DeliveryRow>(
          "SELECT * FROM deliveries WHERE endpoint_id = ? AND (id = ? OR event_id = ?)",
          endpointId,
          deliveryOrEventId,
          deliveryOrEventId,
        )
        .toArray()[0];
      if (!row) {
        if (!deliveryOrEventId.startsWith("evt_") || !this.#event(deliveryOrEventId))
          return "delivery_not_found" as const;
        const id = `dlv_${randomHex(12)}`;
        this.#sql.exec(
          "INSERT INTO deliveries (id, endpoint_id, event_id, status, next_at, window_start, created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)",
          id,
          endpointId,
          deliveryOrEventId,
          now,
          now,
          now,
        );
        row = this.#sql.exec<DeliveryRow>("SELECT * FROM deliveries WHERE id = ?", id).one();
      } else {
        this.#sql.exec(
          "UPDATE deliveries SET status = 'pending', next_at = ?, window_start = ? WHERE id = ?",
          now,
          now,
          row.id,
        );
        row = { ...row, status: "pending", next_at: now, window_start: now };
      }
      return this.#deliveryView(row, this.#event(row.event_id)!.type);
    });
    if (typeof result !== "string") await this.#schedule();
    return result;
  }

  /** Sends what is due (BATCH at a time), then sets the alarm for what is due next. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const due = this.ctx.storage.transactionSync(() => {
      const rows = this.#sql
        .exec<DeliveryRow>(
          "SELECT * FROM deliveries WHERE status = 'pending' AND next_at <= ? ORDER BY next_at LIMIT ?",
          now,
          BATCH,
        )
        .toArray();
      for (const r of rows) this.#sql.exec("UPDATE deliveries SET next_at = ? WHERE id = ?", now + LEASE_MS, r.id);
      return rows;
    });
    await Promise.all(due.map((d) => this.#attempt(d)));
    this.#prune();
    await this.#schedule();
  }

  // ---- inside ---------------------------------------------------------------------------------

  /**
   * Runs `change` with no other call to this object in between (blockConcurrencyWhile), until what
   * it awaits — the Ledger's answer — is in. What it throws is thrown to the caller after the object
   * is free again (thrown inside, it would reset the object).
   */
  async #serialized<T>(change: () => Promise<T>): Promise<T> {
    const outcome = await this.ctx.blockConcurrencyWhile(async () => {
      try {
        return { ok: true as const, value: await change() };
      } catch (error) {
        return { ok: false as const, error };
      }
    });
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /** Whether there is anything for a run to tell this object of: an endpoint, or balance.low's threshold. */
  #hasSomething(): boolean {
    const endpoints = this.#sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM endpoints").one().n;
    return endpoints > 0 || this.settings().balanceLowCents > 0;
  }

  /** Stores in the account's Ledger whether this object has something to hear of, and notes that it knows. Throws if it could not. */
  async #tellLedger(accountId: string, active: boolean): Promise<void> {
    if (!this.#ledgers) return;
    await this.#ledgers.get(this.#ledgers.idFromName(accountId.replace(/^0x/, ""))).setWebhooks(active);
    this.#sql.exec("UPDATE settings SET ledger_synced = 1 WHERE id = 1");
  }

  /** After a change that may have left nothing: the Ledger hears the state now; if it cannot, the next call here tells it again. */
  async #tellLedgerWhatIsLeft(accountId: string): Promise<void> {
    try {
      await this.#tellLedger(accountId, this.#hasSomething());
    } catch {
      this.#sql.exec("UPDATE settings SET ledger_synced = 0 WHERE id = 1");
    }
  }

  /** A Ledger that has not heard from this object since the flag existed hears its state now (no other change comes in between). */
  async #syncLedger(accountId: string): Promise<void> {
    if (
      !this.#ledgers ||
      this.#sql.exec<{ ledger_synced: number }>("SELECT ledger_synced FROM settings WHERE id = 1").one().ledger_synced
    )
      return;
    await this.#serialized(async () => {
      if (
        this.#sql.exec<{ ledger_synced: number }>("SELECT ledger_synced FROM settings WHERE id = 1").one().ledger_synced
      )
        return;
      await this.#tellLedger(accountId, this.#hasSomething()).catch(() => undefined);
    });
  }

  #record(accountId: string, emission: Emission): Emitted {
    this.#sql.exec("UPDATE settings SET account_id = ? WHERE id = 1 AND account_id IS NOT ?", accountId, accountId);
    const known = this.#sql
      .exec<{ id: string }>("SELECT id FROM events WHERE dedupe = ?", emission.dedupe)
      .toArray()[0];
    if (known) return { eventId: known.id, deliveries: 0, duplicate: true };
    const endpoints = this.#sql
      .exec<EndpointRow>("SELECT * FROM endpoints WHERE disabled = 0")
      .toArray()
      .filter((e) => (JSON.parse(e.events) as string[]).includes(emission.type));
    if (endpoints.length === 0) return { eventId: null, deliveries: 0, duplicate: false };
    const now = Date.now();
    const event: WebhookEvent = {
      id: `evt_${randomHex(12)}`,
      type: emission.type,
      created: Math.floor(now / 1000),
      account_id: accountId,
      data: emission.data,
    };
    this.#sql.exec(
      "INSERT INTO events (id, type, created_at, body, dedupe) VALUES (?, ?, ?, ?, ?)",
      event.id,
      event.type,
      now,
      JSON.stringify(event),
      emission.dedupe,
    );
    for (const e of endpoints) {
      this.#sql.exec(
        "INSERT INTO deliveries (id, endpoint_id, event_id, status, next_at, window_start, created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)",
        `dlv_${randomHex(12)}`,
        e.id,
        event.id,
        now,
        now,
        now,
      );
    }
    return { eventId: event.id, deliveries: endpoints.length, duplicate: false };
  }

  /** One attempt of `d`, recorded in the log; schedules the next or ends the delivery. */
  async #attempt(d: DeliveryRow): Promise<void> {
    const endpoint = this.#endpoint(d.endpoint_id);
    const event = this.#event(d.event_id);
    if (!endpoint || !event) return; // removed while leased: its rows went with it
    const n = d.attempts + 1;
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let final = false;
    try {
      // Checked again at every attempt: a deployment's policy may be stricter than when it was registered.
      checkWebhookUrl(endpoint.url, this.#policy);
    } catch (err) {
      error = `refused: ${err instanceof Error ? err.message : String(err)}`;
      final = true;
    }
    if (!error) {
      try {
        const t = Math.floor(Date.now() / 1000);
        const res = await fetch(endpoint.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": "Sigil-Webhooks/1",
            [SIGNATURE_HEADER]: await signatureHeaderValue(endpoint.secret, event.body, t),
            [EVENT_ID_HEADER]: event.id,
          },
          body: event.body,
          redirect: "manual",
          signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        });
        statusCode = res.status;
        await res.body?.cancel().catch(() => undefined);
        if (res.status < 200 || res.status > 299) {
          error =
            res.status >= 300 && res.status < 400 ? `redirect ${res.status} (not followed)` : `answered ${res.status}`;
        }
      } catch (err) {
        const name = err instanceof Error ? err.name : "";
        error =
          name === "TimeoutError" || name === "AbortError"
            ? `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`
            : `could not connect: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    const finished = Date.now();
    this.ctx.storage.transactionSync(() => {
      const current = this.#sql.exec<DeliveryRow>("SELECT * FROM deliveries WHERE id = ?", d.id).toArray()[0];
      if (!current) return; // the endpoint was removed meanwhile
      this.#sql.exec(
        "INSERT OR REPLACE INTO attempts (delivery_id, n, at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)",
        d.id,
        n,
        started,
        statusCode,
        error === null ? null : error.slice(0, MAX_ERROR_CHARS),
        finished - started,
      );
      if (error === null) {
        this.#sql.exec(
          "UPDATE deliveries SET status = 'succeeded', attempts = ?, next_at = NULL WHERE id = ?",
          n,
          d.id,
        );
        return;
      }
      const next = final ? undefined : nextAttemptAt(finished, current.window_start, n, this.#policy.retryBaseMs);
      if (next === undefined)
        this.#sql.exec("UPDATE deliveries SET status = 'failed', attempts = ?, next_at = NULL WHERE id = ?", n, d.id);
      else this.#sql.exec("UPDATE deliveries SET attempts = ?, next_at = ? WHERE id = ?", n, next, d.id);
    });
  }

  /** The alarm at the earliest pending delivery (none pending: no alarm). */
  async #schedule(): Promise<void> {
    const next = this.#sql
      .exec<{ at: number | null }>("SELECT MIN(next_at) AS at FROM deliveries WHERE status = 'pending'")
      .one().at;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  /** Drops events older than RETENTION_MS with nothing pending, with their deliveries and log. */
  #prune(): void {
    const before = Date.now() - RETENTION_MS;
    this.ctx.storage.transactionSync(() => {
      const old =
        "SELECT id FROM events WHERE created_at < ? AND id NOT IN (SELECT event_id FROM deliveries WHERE status = 'pending')";
      this.#sql.exec(
        `DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id IN (${old}))`,
        before,
      );
      this.#sql.exec(`DELETE FROM deliveries WHERE event_id IN (${old})`, before);
      this.#sql.exec(`DELETE FROM events WHERE id IN (${old})`, before);
    });
  }

  #endpoint(id: string): EndpointRow | undefined {
    return this.#sql.exec<EndpointRow>("SELECT * FROM endpoints WHERE id = ?", id).toArray()[0];
  }

  #event(id: string): { id: string; type: WebhookEventType; body: string } | undefined {
    return this.#sql
      .exec<{ id: string; type: WebhookEventType; body: string }>("SELECT id, type, body FROM events WHERE id = ?", id)
      .toArray()[0];
  }

  #deliveryView(r: DeliveryRow, type: WebhookEventType): DeliveryView {
    const attempts = this.#sql
      .exec<AttemptView>(
        "SELECT n, at, status_code, error, duration_ms FROM attempts WHERE delivery_id = ? ORDER BY n",
        r.id,
      )
      .toArray()
      .map((a) => ({
        n: a.n,
        at: Math.floor(a.at / 1000),
        status_code: a.status_code,
        error: a.error,
        duration_ms: a.duration_ms,
      }));
    return {
      id: r.id,
      endpoint_id: r.endpoint_id,
      event_id: r.event_id,
      event_type: type,
      status: r.status,
      created: Math.floor(r.created_at / 1000),
      next_attempt_at: r.status === "pending" && r.next_at !== null ? Math.ceil(r.next_at / 1000) : null,
      attempts,
    };
  }
}

function endpointView(r: EndpointRow): EndpointView {
  return {
    id: r.id,
    url: r.url,
    events: JSON.parse(r.events) as WebhookEventType[],
    created: Math.floor(r.created_at / 1000),
    disabled: r.disabled === 1,
  };
}
