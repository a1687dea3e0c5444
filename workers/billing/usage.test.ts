// The usage history's shapes (usage.ts): cursors round-trip and refuse what no page gave, entries
// become events (a key hash in the chain's 0x form, a receipt parsed back), and CSV quotes what
// RFC 4180 says to quote.
import { describe, expect, it } from "vitest";
import type { UsageEntry } from "./ledgerTypes.ts";
import { CSV_COLUMNS, decodeCursor, encodeCursor, usageCsv, usageEvent, usagePage } from "./usage.ts";

const entry = (over: Partial<UsageEntry> = {}): UsageEntry => ({
  id: 7,
  createdAt: Date.UTC(2026, 10, 25, 12),
  kind: "charge",
  op: "run",
  cents: -2,
  ref: "req-1",
  keyHash: "ab".repeat(32),
  balanceAfterCents: 98,
  detail: { cid: "QmX", duration_ms: 1500, receipt: '{"version":1}' },
  ...over,
});

describe("usage cursors", () => {
  it("round-trip an entry id as base64url, and refuse anything else with invalid_cursor", () => {
    for (const id of [1, 42, 9_007_199_254_740_991]) {
      const cursor = encodeCursor(id);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor)).toBe(id);
    }
    for (const bad of [
      "",
      "!!!",
      btoa("u1.0"),
      btoa("u1.-3"),
      btoa("u1.1e3"),
      btoa("u2.5"),
      btoa("u1.99999999999999999"),
    ]) {
      expect(() => decodeCursor(bad), bad).toThrow(expect.objectContaining({ code: "invalid_cursor" }));
    }
  });
});

describe("usage events", () => {
  it("a run's charge: what it cost, its key as 0x…, its receipt parsed, its request id", () => {
    expect(usageEvent(entry())).toEqual({
      id: "7",
      time: "2026-11-25T12:00:00.000Z",
      kind: "run",
      key_hash: `0x${"ab".repeat(32)}`,
      cid: "QmX",
      operation: null,
      duration_ms: 1500,
      amount_cents: -2,
      charged_cents: 2,
      balance_after_cents: 98,
      request_id: "req-1",
      transaction_hash: null,
      payment_intent: null,
      error_code: null,
      hold_expired: false,
      delegated_key: null,
      receipt: { version: 1 },
    });
  });

  it("a run through a delegated key names the key's last block, read from its receipt's chain", () => {
    const receipt = {
      version: 2,
      delegation: { root: `0x${"ab".repeat(32)}`, blocks: ["a".repeat(32), "b".repeat(32)] },
    };
    const event = usageEvent(entry({ detail: { cid: "QmX", receipt: JSON.stringify(receipt) } }));
    expect(event).toMatchObject({ delegated_key: "b".repeat(32), receipt });
  });

  it("a top-up names its payment intent and charges nothing; an entry from before kinds were recorded is a top_up or a charge", () => {
    expect(
      usageEvent(entry({ kind: "credit", op: "top_up", cents: 500, ref: "pi_1", keyHash: null, detail: {} })),
    ).toMatchObject({
      kind: "top_up",
      amount_cents: 500,
      charged_cents: 0,
      payment_intent: "pi_1",
      request_id: null,
      receipt: null,
    });
    expect(usageEvent(entry({ kind: "credit", op: null, cents: 5, ref: "pi_old", detail: {} })).kind).toBe("top_up");
    expect(usageEvent(entry({ op: null, detail: {} })).kind).toBe("charge");
  });

  it("a page's next cursor is its last entry's, and none on the last page", () => {
    expect(usagePage({ entries: [entry({ id: 9 }), entry({ id: 4 })], more: true }).next_cursor).toBe(encodeCursor(4));
    expect(usagePage({ entries: [entry()], more: false }).next_cursor).toBeNull();
  });
});

describe("usage CSV", () => {
  it("a header row, then a row per event; a field with a comma, a quote or a line break is quoted, its quotes doubled", () => {
    const csv = usageCsv([usageEvent(entry({ detail: { operation: 'say "hi", then\nleave' } }))]);
    const [header, row, end] = csv.split("\r\n");
    expect(header).toBe(CSV_COLUMNS.join(","));
    expect(end).toBe("");
    expect(csv).toContain('"say ""hi"", then\nleave"');
    expect(row?.startsWith("7,2026-11-25T12:00:00.000Z,run,0x")).toBe(true);
  });
});
