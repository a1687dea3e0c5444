// The enclave's memory of operations sent under an Idempotency-Key: a repeat joins the operation in
// flight or gets its answer, never runs it twice; another body is refused; answers that say nothing
// was done are forgotten; scopes are per caller key; entries expire and are bounded.
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../shared/apiKey.ts";
import { OperationMemory, type RememberedAnswer } from "./operationMemory.ts";

const ok = (output: unknown): RememberedAnswer => ({ ok: true, output });
const error = (status: number, details?: unknown): RememberedAnswer => ({
  ok: false,
  status,
  error: { code: "x", message: "m", request_id: "r", ...(details === undefined ? {} : { details }) },
});
/** What an answer carries: the output, or the error. */
const bodyOf = (answer: RememberedAnswer): unknown => (answer.ok ? answer.output : { error: answer.error });

/** A pending operation the test ends when it likes, counting how often it was started. */
function operation() {
  let started = 0;
  let finish!: (answer: RememberedAnswer) => void;
  const done = new Promise<RememberedAnswer>((resolve) => (finish = resolve));
  return {
    perform: () => {
      started++;
      return done;
    },
    finish: (answer: RememberedAnswer) => finish(answer),
    get started() {
      return started;
    },
  };
}

describe("OperationMemory", () => {
  it("runs an operation once: a repeat in flight joins it, a repeat after gets its answer, both marked replayed", async () => {
    const memory = new OperationMemory();
    const op = operation();
    const first = memory.once("k:a", "fp", "r1", op.perform);
    const joined = memory.once("k:a", "fp", "r2", op.perform);
    op.finish(ok('{"group_id":"1"}'));
    expect(await first).toEqual({ answer: ok('{"group_id":"1"}'), replayed: false });
    expect(await joined).toEqual({ answer: ok('{"group_id":"1"}'), replayed: true });
    expect(await memory.once("k:a", "fp", "r3", op.perform)).toEqual({
      answer: ok('{"group_id":"1"}'),
      replayed: true,
    });
    expect(op.started).toBe(1);
  });

  it("refuses the same key with another fingerprint (422 idempotency_key_reused) without running it", async () => {
    const memory = new OperationMemory();
    await memory.once("k:a", "fp", "r1", async () => ok("{}"));
    const other = operation();
    const { answer } = await memory.once("k:a", "another", "r2", other.perform);
    expect(answer).toMatchObject({
      ok: false,
      status: 422,
      error: { code: "idempotency_key_reused", request_id: "r2" },
    });
    expect(other.started).toBe(0);
  });

  it("keeps answers that did something (4xx, 500, a 503 naming a sent transaction) and forgets those that say nothing was done (429, a plain 503)", async () => {
    const memory = new OperationMemory();
    const sent = { transaction_hash: `0x${"ab".repeat(32)}` };
    for (const [scope, answer, kept] of [
      ["k:404", error(404), true],
      ["k:500", error(500), true],
      ["k:503-sent", error(503, sent), true],
      ["k:429", error(429), false],
      ["k:503", error(503), false],
    ] as const) {
      await memory.once(scope, "fp", "r1", async () => answer);
      const again = operation();
      const repeat = memory.once(scope, "fp", "r2", again.perform);
      again.finish(ok("fresh"));
      expect((await repeat).replayed, scope).toBe(kept);
      expect(again.started, scope).toBe(kept ? 0 : 1);
    }
  });

  it("scopes by the caller's key hash, taken from the body's api_key: two keys with one idempotency key are two operations; the key and the run's budget are not fingerprinted", () => {
    const [a, b] = [generateApiKey(), generateApiKey()];
    const body = (key: string, extra: object = {}) => ({ api_key: key, group_name: "g", ...extra });
    const first = OperationMemory.identify("add_group", "idem", body(a))!;
    expect(first.scope).not.toBe(OperationMemory.identify("add_group", "idem", body(b))!.scope);
    expect(OperationMemory.identify("add_group", "idem", { group_name: "g", api_key: a })).toEqual(first);
    expect(OperationMemory.identify("add_group", "idem", body(a, { group_name: "h" }))!.fingerprint).not.toBe(
      first.fingerprint,
    );
    expect(OperationMemory.identify("remove_group", "idem", body(a))!.fingerprint).not.toBe(first.fingerprint);
    const run = OperationMemory.identify("sigil_action", "idem", body(a, { code: "x", timeout_ms: 3000 }))!;
    expect(OperationMemory.identify("sigil_action", "idem", body(a, { code: "x", timeout_ms: 9000 }))).toEqual(run);
    // A retry whose first attempt was charged already holds (and is granted) other seconds: the same run.
    expect(
      OperationMemory.identify(
        "sigil_action",
        "idem",
        body(a, { code: "x", timeout_ms: 1000, billing: { granted_seconds: 1 } }),
      ),
    ).toEqual(run);
    expect(
      OperationMemory.identify("create_wallet_with_signature", "idem", { typed_data: {}, signature: "0x" }),
    ).toBeUndefined();
    expect(OperationMemory.identify("add_group", "idem", "not an object")).toBeUndefined();
  });

  it("remembers new_account, which has no caller key, under the idempotency key alone (the edge makes it per client), apart from every caller key's scope", () => {
    const body = (name: string) => ({ account_name: name });
    const first = OperationMemory.identify("new_account", "client-a", body("n"));
    expect(first).toEqual({ scope: "open:client-a", fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(OperationMemory.identify("new_account", "client-b", body("n"))!.scope).not.toBe(first!.scope);
    expect(OperationMemory.identify("new_account", "client-a", body("m"))!.fingerprint).not.toBe(first!.fingerprint);
    expect(
      OperationMemory.identify("add_group", "client-a", { api_key: generateApiKey(), group_name: "g" })!.scope,
    ).not.toBe(first!.scope);
  });

  it("forgets an answered operation a day after it began", async () => {
    let now = 1_000_000;
    const memory = new OperationMemory({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: 24 * 3600_000 }, () => now);
    await memory.once("k:a", "fp", "r1", async () => ok("first"));
    now += 24 * 3600_000 - 1;
    expect((await memory.once("k:a", "fp", "r2", async () => ok("second"))).answer).toEqual(ok("first"));
    now += 2;
    expect((await memory.once("k:a", "fp", "r3", async () => ok("second"))).answer).toEqual(ok("second"));
  });

  it("is bounded by count and by answer bytes, evicting answered entries oldest first, never one in flight", async () => {
    const memory = new OperationMemory({ maxEntries: 3, maxBytes: 1000, ttlMs: 24 * 3600_000 });
    const inFlight = operation();
    const pending = memory.once("k:flight", "fp", "r", inFlight.perform);
    for (const scope of ["k:1", "k:2", "k:3"]) await memory.once(scope, "fp", "r", async () => ok(scope));
    expect(memory.size).toBe(3);
    // k:1, the oldest answered one, went; the one in flight stayed.
    expect((await memory.once("k:1", "fp", "r", async () => ok("again"))).replayed).toBe(false);
    expect(memory.size).toBe(3);
    await memory.once("k:big", "fp", "r", async () => ok("x".repeat(999)));
    expect(memory.size).toBeLessThanOrEqual(2);
    // The one in flight is still there to join.
    const joined = memory.once("k:flight", "fp", "r", async () => ok("a second run"));
    inFlight.finish(ok("done"));
    expect(bodyOf((await pending).answer)).toBe("done");
    expect(await joined).toEqual({ answer: ok("done"), replayed: true });
    expect(inFlight.started).toBe(1);
  });
});
