// Webhooks to users (issue 14): the event types, the event body and the signature scheme, shared by
// the edge that signs deliveries (workers/webhooks/) and the SDK that checks them (sdk/src/webhooks.ts),
// so both sides compute one thing. Stripe's scheme: `Sigil-Signature: t=<unix seconds>,v1=<hex>`
// where the hex is HMAC-SHA256 keyed by the endpoint's secret (its UTF-8 bytes, `whsec_` included)
// over `<t>.<body>` (the exact bytes sent). WebCrypto only, so it runs in Workers, Node ≥ 20 and browsers.

/** Every event an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  "payment.credited",
  "payment.failed",
  "balance.low",
  "usage_key.cap_reached",
  "run.failed",
  "guardrail.denied",
  "budget.exhausted",
  "transaction.confirmed",
  "transaction.reverted",
  "transaction.replaced",
  "transaction.dropped",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** What an endpoint registered without `events` gets: everything but run.failed, which is opt-in (it can be one per run). */
export const DEFAULT_WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = WEBHOOK_EVENT_TYPES.filter(
  (t) => t !== "run.failed",
);

export const SIGNATURE_HEADER = "Sigil-Signature";
export const EVENT_ID_HEADER = "Sigil-Event-Id";
/** How old (or how far in the future) a signature's timestamp may be when checked, by default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The JSON body of every delivery. `id` (evt_…) is the same on every attempt and re-send: de-duplicate by it. */
export type WebhookEvent<T extends WebhookEventType = WebhookEventType> = {
  id: string;
  type: T;
  /** Unix seconds when the event happened. */
  created: number;
  /** The account's id (its master hash, 0x + 64 hex), as new_account answered it. */
  account_id: string;
  data: Record<string, unknown>;
};

const encoder = new TextEncoder();

/** Lowercase hex of HMAC-SHA256(secret, message). */
export async function hmacSha256Hex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The Sigil-Signature value for `body` sent at `timestamp` (unix seconds). */
export async function signatureHeaderValue(secret: string, body: string, timestamp: number): Promise<string> {
  return `t=${timestamp},v1=${await hmacSha256Hex(secret, `${timestamp}.${body}`)}`;
}

/** A Sigil-Signature value's parts: its timestamp and every v1 signature (a header may carry several, during a secret's rotation). */
export function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === "t" && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === "v1" && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures };
}

/** Equal strings, compared in time that does not depend on where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
