// The usage history (GET /usage): the Ledger's entries as a client reads them — every run, managed
// write, top-up and refund of the account, newest first, with what it cost and the balance after
// it — and the opaque cursor that pages through them. A cursor is the id of the last entry a page
// showed: the next page starts below it, so entries added meanwhile (newer, larger ids) neither
// repeat nor shift anything.
import { SigilError } from "../../shared/errors.ts";
import type { UsageEntry, UsageOp, UsagePage } from "./ledgerTypes.ts";

export const USAGE_KINDS = ["run", "write", "top_up", "refund"] as const satisfies readonly UsageOp[];
export type UsageKind = (typeof USAGE_KINDS)[number];

/** One event as /usage answers it. */
export type UsageEvent = {
  id: string;
  time: string;
  kind: UsageKind | "charge";
  key_hash: string | null;
  cid: string | null;
  operation: string | null;
  duration_ms: number | null;
  amount_cents: number;
  charged_cents: number;
  balance_after_cents: number | null;
  request_id: string | null;
  transaction_hash: string | null;
  payment_intent: string | null;
  error_code: string | null;
  hold_expired: boolean;
  /** A run through a delegated key: the id of the key's last block (key_hash is its root usage key's). */
  delegated_key: string | null;
  receipt: unknown;
};

const CURSOR_PREFIX = "u1.";

export function encodeCursor(id: number): string {
  return btoa(`${CURSOR_PREFIX}${id}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The entry id a cursor stands for; a cursor no page gave is 400 invalid_cursor. */
export function decodeCursor(cursor: string): number {
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    // not base64url: refused below
  }
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  if (!/^[1-9]\d{0,15}$/.test(id) || !Number.isSafeInteger(Number(id))) {
    throw new SigilError("invalid_cursor", "cursor is not one a page of /usage gave; start again without it");
  }
  return Number(id);
}

/** A Ledger entry as a usage event. The key hash is shown as the chain's 0x form; a key is never shown. */
export function usageEvent(e: UsageEntry): UsageEvent {
  const kind: UsageEvent["kind"] = e.op ?? (e.kind === "credit" ? "top_up" : "charge");
  const byRequest = e.kind === "charge";
  let receipt: unknown = null;
  if (e.detail.receipt !== undefined) {
    try {
      receipt = JSON.parse(e.detail.receipt);
    } catch {
      receipt = null;
    }
  }
  return {
    id: String(e.id),
    time: new Date(e.createdAt).toISOString(),
    kind,
    key_hash: e.keyHash === null ? null : `0x${e.keyHash}`,
    cid: e.detail.cid ?? null,
    operation: e.detail.operation ?? null,
    duration_ms: e.detail.duration_ms ?? null,
    amount_cents: e.cents,
    charged_cents: byRequest ? -e.cents : 0,
    balance_after_cents: e.balanceAfterCents,
    request_id: byRequest ? e.ref : null,
    transaction_hash: e.detail.transaction_hash ?? null,
    payment_intent: e.kind === "credit" ? e.ref : (e.detail.payment_intent ?? null),
    error_code: e.detail.error_code ?? null,
    hold_expired: e.detail.hold_expired === true,
    delegated_key: (receipt as { delegation?: { blocks?: string[] } } | null)?.delegation?.blocks?.at(-1) ?? null,
    receipt,
  };
}

/** The columns of the CSV form, in order (the receipt is left out: it is JSON, in the JSON form). */
export const CSV_COLUMNS = [
  "id",
  "time",
  "kind",
  "key_hash",
  "cid",
  "operation",
  "duration_ms",
  "amount_cents",
  "charged_cents",
  "balance_after_cents",
  "request_id",
  "transaction_hash",
  "payment_intent",
  "error_code",
  "hold_expired",
  "delegated_key",
] as const satisfies ReadonlyArray<keyof UsageEvent>;

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
function csvField(value: unknown): string {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function usageCsv(events: UsageEvent[]): string {
  const lines = [CSV_COLUMNS.join(","), ...events.map((e) => CSV_COLUMNS.map((c) => csvField(e[c])).join(","))];
  return `${lines.join("\r\n")}\r\n`;
}

/** A page of events and the cursor of the next, null on the last. */
export function usagePage(page: UsagePage): { events: UsageEvent[]; next_cursor: string | null } {
  const last = page.entries.at(-1);
  return { events: page.entries.map(usageEvent), next_cursor: page.more && last ? encodeCursor(last.id) : null };
}
