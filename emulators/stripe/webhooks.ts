// The Stripe emulator's webhooks: events made by the API's writes, POSTed to every webhook URL after
// the answer, signed as Stripe signs them (the stripe package's own test-header helper), retried with
// doubling delays; and what a test may do to a receiver besides: resend an event, hold new ones back
// and release them in another order.
import { randomBytes } from "node:crypto";
import Stripe from "stripe";
import { DEFAULT_API_VERSION, newId, now } from "./api.ts";

export type Delivery = {
  eventId: string;
  type: string;
  url: string;
  attempt: number;
  /** The receiver's HTTP status; null when the connection failed. */
  status: number | null;
  ok: boolean;
  error?: string;
  at: number;
  /** Set on the attempts of a delivery made by `resend`. */
  resent?: true;
};

export type StripeEvent = {
  id: string;
  object: "event";
  api_version: string;
  created: number;
  data: { object: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
};

const WEBHOOK_TIMEOUT_MS = 10_000;

/** The bytes an event is sent as (Stripe's pretty-printed JSON, which the signature covers). */
const bodyOf = (event: StripeEvent) => JSON.stringify(event, null, 2);

export type WebhookOptions = {
  webhookSecret: string;
  webhookUrls: string[];
  /** Delay before the first redelivery; doubles with each further one. */
  retryBaseMs: number;
  /** Delivery attempts per event and URL, the first included. */
  maxAttempts: number;
  log: (line: string) => void;
  /** The API version each payment intent was made at, which its events are rendered at. */
  intentVersions: ReadonlyMap<string, string>;
};

export class WebhookSender {
  /** Every event made so far, oldest first. */
  readonly events: StripeEvent[] = [];
  readonly #webhookSecret: string;
  readonly #retryBaseMs: number;
  readonly #maxAttempts: number;
  readonly #log: (line: string) => void;
  readonly #intentVersions: ReadonlyMap<string, string>;
  #urls: string[];
  readonly #deliveryLog: Delivery[] = [];
  readonly #watchers = new Set<() => void>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #inFlight = new Set<AbortController>();
  /** First attempts kept back while holding (hold). */
  #held: Array<{ event: StripeEvent; url: string; body: string }> | undefined;
  #stopped = false;

  constructor(options: WebhookOptions) {
    this.#webhookSecret = options.webhookSecret;
    this.#retryBaseMs = options.retryBaseMs;
    this.#maxAttempts = options.maxAttempts;
    this.#log = options.log;
    this.#intentVersions = options.intentVersions;
    this.#urls = [...options.webhookUrls];
  }

  setUrls(urls: string[]): void {
    this.#urls = [...urls];
  }

  /** From now on, new events wait for releaseHeld. */
  hold(): void {
    this.#held ??= [];
  }

  /** Every delivery attempt so far, oldest first. */
  deliveries(): Delivery[] {
    return this.#deliveryLog.map((d) => ({ ...d }));
  }

  /** Deliveries not finished: held, waiting for a retry, or in flight. */
  pending(): number {
    return (this.#held?.length ?? 0) + this.#timers.size + this.#inFlight.size;
  }

  /** Resolves with deliveries() once `predicate` holds for it; rejects after `timeoutMs`. */
  waitForDeliveries(predicate: (deliveries: Delivery[]) => boolean, timeoutMs = 5000): Promise<Delivery[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const snapshot = this.deliveries();
        if (!predicate(snapshot)) return false;
        this.#watchers.delete(check);
        clearTimeout(timer);
        resolve(snapshot);
        return true;
      };
      const timer = setTimeout(() => {
        this.#watchers.delete(check);
        reject(
          new Error(
            `stripe emulator: deliveries did not match within ${timeoutMs} ms: ${JSON.stringify(this.#deliveryLog)}`,
          ),
        );
      }, timeoutMs);
      this.#watchers.add(check);
      check();
    });
  }

  /** Sends nothing more: retries cancelled, deliveries in flight aborted. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const controller of this.#inFlight) controller.abort(new Error("emulator stopped"));
  }

  emit(type: string, object: Record<string, unknown>, request: { id: string; idempotencyKey: string | null }): void {
    const event: StripeEvent = {
      id: newId("evt"),
      object: "event",
      api_version: this.#intentVersions.get(String(object.id)) ?? DEFAULT_API_VERSION,
      created: now(),
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: this.#urls.length,
      request: { id: request.id, idempotency_key: request.idempotencyKey },
      type,
    };
    this.events.push(event);
    const body = bodyOf(event);
    // After the current answer has been written: deliveries never hold up the API response.
    for (const url of this.#urls) {
      if (this.#held) this.#held.push({ event, url, body });
      else this.#schedule(() => this.#deliver(event, url, body, 1), 0);
    }
  }

  #schedule(fn: () => void, ms: number): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }

  async #deliver(event: StripeEvent, url: string, body: string, attempt: number, resent = false): Promise<void> {
    if (this.#stopped) return;
    const t = now();
    const signature = Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret: this.#webhookSecret,
      timestamp: t,
    });
    const controller = new AbortController();
    this.#inFlight.add(controller);
    const timeout = setTimeout(() => controller.abort(new Error("timed out")), WEBHOOK_TIMEOUT_MS);
    let status: number | null = null;
    let error: string | undefined;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          "stripe-signature": signature,
        },
        body,
        signal: controller.signal,
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch (e) {
      error =
        e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
    } finally {
      clearTimeout(timeout);
      this.#inFlight.delete(controller);
    }
    if (this.#stopped) return;
    const ok = status !== null && status >= 200 && status < 300;
    this.#deliveryLog.push({
      eventId: event.id,
      type: event.type,
      url,
      attempt,
      status,
      ok,
      ...(error ? { error } : {}),
      at: Date.now(),
      ...(resent ? { resent: true as const } : {}),
    });
    this.#log(
      `stripe-emulator: webhook ${event.type} ${event.id} → ${url} attempt ${attempt}${resent ? " (resent)" : ""}: ${status ?? error}`,
    );
    for (const watcher of this.#watchers) watcher();
    if (!ok && attempt < this.#maxAttempts)
      this.#schedule(
        () => void this.#deliver(event, url, body, attempt + 1, resent),
        this.#retryBaseMs * 2 ** (attempt - 1),
      );
  }

  async resend(eventId: string): Promise<void> {
    const event = this.events.find((e) => e.id === eventId);
    if (!event) throw new Error(`stripe emulator: no event ${eventId}`);
    await Promise.all(this.#urls.map((url) => this.#deliver(event, url, bodyOf(event), 1, true)));
  }

  async releaseHeld(order: "created" | "reverse" | "shuffle" = "created"): Promise<string[]> {
    const queue = this.#held ?? [];
    this.#held = undefined;
    if (order === "reverse") queue.reverse();
    if (order === "shuffle") {
      for (let i = queue.length - 1; i > 0; i--) {
        const j = randomBytes(4).readUInt32BE() % (i + 1);
        [queue[i], queue[j]] = [queue[j]!, queue[i]!];
      }
    }
    const sent: string[] = [];
    for (const { event, url, body } of queue) {
      if (this.#stopped) break;
      sent.push(event.id);
      await this.#deliver(event, url, body, 1);
    }
    return sent;
  }
}
