// Checking a webhook the service sent (issue 14; docs/guides/webhooks.md): the receiver passes the raw body
// exactly as it arrived, the Sigil-Signature header and the endpoint's secret (whsec_…, shown once
// when the endpoint was registered), and gets the event back, or a SigilWebhookError when the header
// is missing or malformed, no signature in it signs this body with this secret, or its timestamp is
// further than the tolerance (300 s by default) from now — a replayed old delivery. WebCrypto HMAC
// only: runs in Node ≥ 20, browsers and Workers. De-duplicate by the event's id: delivery is at
// least once.
import {
  constantTimeEqual,
  DEFAULT_TOLERANCE_SECONDS,
  hmacSha256Hex,
  parseSignatureHeader,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
} from "../../shared/webhooks.ts";
import { SigilWebhookError } from "./errors.ts";

export {
  DEFAULT_TOLERANCE_SECONDS,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
  type WebhookEventType,
} from "../../shared/webhooks.ts";

export type VerifyWebhookOptions = {
  /** How far the signature's timestamp may be from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in unix seconds (default: the clock), for tests. */
  now?: number;
};

/**
 * The event in `body` when `header` (Sigil-Signature) signs it with `secret`; throws
 * SigilWebhookError with code `webhook_signature_missing`, `webhook_signature_invalid` or
 * `webhook_timestamp_out_of_tolerance` otherwise (and `webhook_payload_invalid` for a signed body
 * that is not an event).
 */
export async function verifyWebhook(
  body: string,
  header: string | null | undefined,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  if (header === undefined || header === null || header.trim() === "")
    throw new SigilWebhookError("webhook_signature_missing", "the Sigil-Signature header is missing");
  const parsed = parseSignatureHeader(header);
  if (!parsed)
    throw new SigilWebhookError(
      "webhook_signature_missing",
      "the Sigil-Signature header has no t=<unix seconds> and v1=<hex> parts",
    );
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  // Checked after the signature: a forged header learns nothing from which check failed first.
  const expected = await hmacSha256Hex(secret, `${parsed.timestamp}.${body}`);
  if (!parsed.signatures.some((s) => constantTimeEqual(s, expected))) {
    throw new SigilWebhookError(
      "webhook_signature_invalid",
      "no signature in Sigil-Signature signs this body with this secret (check the secret, and pass the raw body as it arrived)",
    );
  }
  if (Math.abs(now - parsed.timestamp) > tolerance) {
    throw new SigilWebhookError(
      "webhook_timestamp_out_of_tolerance",
      `the signature's timestamp is ${Math.abs(now - parsed.timestamp)} s from now, more than the ${tolerance} s tolerance`,
      { timestamp: parsed.timestamp, now, tolerance },
    );
  }
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new SigilWebhookError("webhook_payload_invalid", "the signed body is not JSON");
  }
  const e = event as Partial<WebhookEvent> | null;
  if (
    !e ||
    typeof e !== "object" ||
    typeof e.id !== "string" ||
    !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(String(e.type)) ||
    typeof e.created !== "number"
  ) {
    throw new SigilWebhookError("webhook_payload_invalid", "the signed body is not a Sigil event");
  }
  return e as WebhookEvent;
}
