// The Idempotency Durable Object in workerd, called directly: the first attempt, replays, another
// body, an attempt in flight, a retry after an attempt that gave no answer or whose edge stopped
// renewing its lease, answers larger than a row, expiry after 24 h (on a request and by the
// object's alarm) and the per-account bound.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../env.ts";
import { MAX_RECORDS, RECORD_TTL_MS, type Idempotency, type StoredAnswer } from "./store.ts";

const namespace = (env as unknown as Env).IDEMPOTENCY!;
let n = 0;

/** A fresh account's store. */
const store = (): DurableObjectStub<Idempotency> =>
  namespace.get(namespace.idFromName(`idempotency-test-${Date.now()}-${n++}`));

const answer = (body: string, status = 200): StoredAnswer => ({
  status,
  headers: { "content-type": "application/json", "x-sigil-charged-cents": "1" },
  body,
});

describe("the Idempotency store", () => {
  it("makes the first attempt the key's ref, replays its kept answer, and refuses another body with the same key", async () => {
    const s = store();
    expect(await s.begin("k:a", "fp1", "req-1", 15_000)).toEqual({ kind: "first", ref: "req-1" });
    await s.finish("k:a", answer('{"group_id":"7"}'));
    expect(await s.begin("k:a", "fp1", "req-2", 15_000)).toEqual({
      kind: "replay",
      ref: "req-1",
      answer: answer('{"group_id":"7"}'),
    });
    expect(await s.begin("k:a", "fp2", "req-3", 15_000)).toEqual({ kind: "reused" });
    // Another caller key's record of the same idempotency key is its own.
    expect(await s.begin("other:a", "fp2", "req-4", 15_000)).toEqual({ kind: "first", ref: "req-4" });
  });

  it("answers in_progress with the lease's remaining seconds while an attempt holds it; a renewal keeps it", async () => {
    const s = store();
    await s.begin("k:b", "fp", "req-1", 15_000);
    const busy = await s.begin("k:b", "fp", "req-2", 15_000);
    expect(busy).toMatchObject({ kind: "in_progress" });
    expect((busy as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((busy as { retryAfterSeconds: number }).retryAfterSeconds).toBeLessThanOrEqual(15);
    expect(await s.renew("k:b", "req-1", 15_000)).toBe(true);
    expect(await s.renew("k:b", "req-2", 15_000)).toBe(false);
  });

  it("lets a retry take over, under the first ref and to the enclave it was sent to, once the attempt's lease lapsed (its edge died): abandoned", async () => {
    const s = store();
    await s.begin("k:c", "fp", "req-1", -1);
    expect(await s.target("k:c", "req-1", "http://enclave-a", "key-a")).toBe(true);
    expect(await s.begin("k:c", "fp", "req-2", 15_000)).toEqual({
      kind: "retry",
      ref: "req-1",
      enclave: "http://enclave-a",
      instance: "key-a",
      firstOutcome: "abandoned",
    });
    // The new attempt holds the lease now; the old one can no longer renew or retarget it.
    expect(await s.renew("k:c", "req-1", 15_000)).toBe(false);
    expect(await s.target("k:c", "req-1", "http://enclave-b", "key-b")).toBe(false);
    expect(await s.begin("k:c", "fp", "req-3", 15_000)).toMatchObject({ kind: "in_progress" });
  });

  it("keeps an interrupted attempt's record open: the next attempt is a retry that learns the first was interrupted, and an answer then is kept", async () => {
    const s = store();
    await s.begin("k:d", "fp", "req-1", 15_000);
    await s.target("k:d", "req-1", "http://enclave-a", "key-a");
    await s.interrupted("k:d", "req-1");
    expect(await s.begin("k:d", "fp", "req-2", 15_000)).toEqual({
      kind: "retry",
      ref: "req-1",
      enclave: "http://enclave-a",
      instance: "key-a",
      firstOutcome: "interrupted",
    });
    // That retry did nothing (no enclave reachable): the record stays, for the next, with what it knows.
    await s.unused("k:d", "req-2");
    expect(await s.begin("k:d", "fp", "req-3", 15_000)).toMatchObject({
      kind: "retry",
      ref: "req-1",
      firstOutcome: "interrupted",
    });
    await s.finish("k:d", answer('{"response":1}'));
    expect(await s.begin("k:d", "fp", "req-4", 15_000)).toMatchObject({ kind: "replay", ref: "req-1" });
  });

  it("forgets a first attempt that did nothing, so the key is free again (a 402, a 429, no enclave reachable)", async () => {
    const s = store();
    await s.begin("k:e", "fp", "req-1", 15_000);
    await s.unused("k:e", "req-1");
    expect(await s.begin("k:e", "other body", "req-2", 15_000)).toEqual({ kind: "first", ref: "req-2" });
  });

  it("keeps the first answer given: a late answer of an attempt that lost its lease does not replace it", async () => {
    const s = store();
    await s.begin("k:f", "fp", "req-1", -1);
    await s.begin("k:f", "fp", "req-2", 15_000);
    await s.finish("k:f", answer("first"));
    await s.finish("k:f", answer("second"));
    expect(await s.begin("k:f", "fp", "req-3", 15_000)).toMatchObject({ kind: "replay", answer: { body: "first" } });
  });

  it("replays an answer larger than a row may hold, byte for byte", async () => {
    const s = store();
    const big = JSON.stringify({ response: "é".repeat(700_000) + "x".repeat(1_500_000), logs: "" });
    await s.begin("k:g", "fp", "req-1", 15_000);
    await s.finish("k:g", answer(big));
    const replay = await s.begin("k:g", "fp", "req-2", 15_000);
    expect(replay.kind).toBe("replay");
    expect((replay as { answer: StoredAnswer }).answer.body === big).toBe(true);
  });

  it("forgets a record 24 h after its first attempt", async () => {
    const s = store();
    await s.begin("k:h", "fp", "req-1", 15_000);
    await s.finish("k:h", answer("old"));
    await runInDurableObject(
      s,
      (_o, state) =>
        void state.storage.sql.exec(
          "UPDATE records SET created_at = created_at - ? WHERE scope = 'k:h'",
          RECORD_TTL_MS,
        ),
    );
    expect(await s.begin("k:h", "fp", "req-2", 15_000)).toEqual({ kind: "first", ref: "req-2" });
  });

  it("expires records by an alarm, without waiting for a request: set at a first record, it drops what expired, rearms for the next, and deletes an emptied object's storage, which is made again when used", async () => {
    const s = store();
    await s.begin("k:i", "fp", "req-1", 15_000);
    await s.finish("k:i", answer("old"));
    await s.begin("k:j", "fp", "req-2", 15_000);
    const alarm = () => runInDurableObject(s, (_o, state) => state.storage.getAlarm());
    const armed = await alarm();
    expect(armed).toBeGreaterThan(Date.now() + RECORD_TTL_MS - 60_000);
    expect(armed).toBeLessThanOrEqual(Date.now() + RECORD_TTL_MS);
    // k:i is a day old now; k:j an hour younger than a day.
    const young = Date.now() - RECORD_TTL_MS + 3_600_000;
    await runInDurableObject(s, (_o, state) => {
      state.storage.sql.exec("UPDATE records SET created_at = ? WHERE scope = 'k:i'", Date.now() - RECORD_TTL_MS);
      state.storage.sql.exec("UPDATE records SET created_at = ? WHERE scope = 'k:j'", young);
    });
    expect(await runDurableObjectAlarm(s)).toBe(true);
    const scopes = () =>
      runInDurableObject(s, (_o, state) =>
        state.storage.sql
          .exec<{ scope: string }>("SELECT scope FROM records")
          .toArray()
          .map((r) => r.scope),
      );
    expect(await scopes()).toEqual(["k:j"]);
    expect(
      await runInDurableObject(
        s,
        (_o, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM answer_chunks WHERE scope = 'k:i'").one().n,
      ),
    ).toBe(0);
    expect(await alarm()).toBe(young + RECORD_TTL_MS);
    // Once k:j has expired too, nothing is left: the object's storage goes, alarm and all.
    await runInDurableObject(
      s,
      (_o, state) =>
        void state.storage.sql.exec(
          "UPDATE records SET created_at = ? WHERE scope = 'k:j'",
          Date.now() - RECORD_TTL_MS,
        ),
    );
    expect(await runDurableObjectAlarm(s)).toBe(true);
    expect(await alarm()).toBeNull();
    expect(
      await runInDurableObject(
        s,
        (_o, state) =>
          state.storage.sql
            .exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name IN ('records', 'answer_chunks')")
            .one().n,
      ),
    ).toBe(0);
    // The object still serves: its tables are made again, and a new record arms a new alarm.
    expect(await s.begin("k:j", "fp", "req-3", 15_000)).toEqual({ kind: "first", ref: "req-3" });
    expect(await alarm()).not.toBeNull();
  });

  it("keeps at most MAX_RECORDS per account, evicting answered ones oldest first, never one whose lease is live", async () => {
    const s = store();
    await s.begin("k:live", "fp", "live", 600_000);
    // Fill the rest of the bound with answered records, aged so the live one is the oldest.
    const anHourAgo = Date.now() - 3_600_000;
    await runInDurableObject(s, (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("UPDATE records SET created_at = ? WHERE scope = 'k:live'", anHourAgo);
      for (let i = 0; i < MAX_RECORDS - 1; i++)
        sql.exec(
          "INSERT INTO records (scope, fingerprint, ref, state, created_at) VALUES (?, 'fp', ?, 'done', ?)",
          `k:${i}`,
          `r${i}`,
          anHourAgo + 1 + i,
        );
    });
    expect(await s.begin("k:new", "fp", "new", 15_000)).toEqual({ kind: "first", ref: "new" });
    const scopes = await runInDurableObject(s, (_o, state) =>
      state.storage.sql
        .exec<{ scope: string }>("SELECT scope FROM records")
        .toArray()
        .map((r) => r.scope),
    );
    expect(scopes).toHaveLength(MAX_RECORDS);
    expect(scopes).toContain("k:live");
    expect(scopes).toContain("k:new");
    expect(scopes).not.toContain("k:0");
    expect(scopes).toContain("k:1");
  });
});
