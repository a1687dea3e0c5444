// The enclave's structured logs (log.ts): what a line carries, how keys are referred to (`keyRef`:
// the first 6 hex digits of a key hash, never more), and how values that JSON cannot carry as-is
// are written — bigints as decimal strings, errors as their name and message only.
import { describe, expect, it } from "vitest";
import { apiKeyHash } from "../shared/hashing.ts";
import { createLogger, keyRef } from "./log.ts";

function capture(level: Parameters<typeof createLogger>[0] = "debug", base: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const log = createLogger(level, base, (line) => lines.push(line));
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("keyRef", () => {
  it("is the first 6 hex digits of the 64-digit key hash", () => {
    const hash = 0x7374b0e021a519c04e2fe19dbbe190b46507f73d8b7fd073d235ae1763c3daa2n;
    expect(keyRef(hash)).toBe("7374b0");
  });

  it("counts leading zeros of the hash: a small hash gives zeros, not its own first digits", () => {
    expect(keyRef(0x1234n)).toBe("000000");
    expect(keyRef(0xabcdef12n << 208n)).toBe("0000ab"); // 60 hex digits, padded to 64
  });

  it("is always 6 lowercase hex digits, and a prefix of the hash's 64-digit form, for real key hashes", () => {
    for (const key of [`${"A".repeat(43)}=`, `${"b".repeat(43)}=`, "k".repeat(44)]) {
      const hash = apiKeyHash(key);
      const ref = keyRef(hash);
      expect(ref).toMatch(/^[0-9a-f]{6}$/);
      expect(hash.toString(16).padStart(64, "0").startsWith(ref)).toBe(true);
    }
  });
});

describe("createLogger", () => {
  it("writes one JSON object per line with time, level, message, the base fields and the call's fields", () => {
    const { log, lines, parsed } = capture("debug", { service: "enclave" });
    log.info("run finished", { durationMs: 12 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("\n");
    const [line] = parsed();
    expect(line).toMatchObject({ level: "info", msg: "run finished", service: "enclave", durationMs: 12 });
    expect(new Date(String(line?.time)).toISOString()).toBe(line?.time);
  });

  it("writes bigints as decimal strings (JSON.stringify alone would throw)", () => {
    const { log, parsed } = capture();
    log.info("big", { value: 2n ** 200n, nested: { list: [1n, -5n] } });
    expect(parsed()[0]).toMatchObject({ value: (2n ** 200n).toString(), nested: { list: ["1", "-5"] } });
  });

  it("writes an Error as its name and message only: no stack, no cause, none of its other properties", () => {
    const { log, lines, parsed } = capture();
    const err = Object.assign(new TypeError("the operation failed", { cause: new Error("secret cause 0xc0ffee") }), { privateKey: "0xdeadbeef" });
    log.error("failed", { error: err, nested: { inner: new RangeError("inner") } });
    expect(parsed()[0]).toMatchObject({ error: { name: "TypeError", message: "the operation failed" }, nested: { inner: { name: "RangeError", message: "inner" } } });
    expect(Object.keys((parsed()[0] as { error: object }).error).sort()).toEqual(["message", "name"]);
    expect(lines[0]).not.toContain("0xdeadbeef");
    expect(lines[0]).not.toContain("0xc0ffee");
    expect(lines[0]).not.toContain("log.test.ts"); // no stack frames
  });

  it("drops lines below its level, and writes nothing at all when silent", () => {
    const info = capture("info");
    info.log.debug("hidden");
    info.log.info("shown");
    info.log.error("also shown");
    expect(info.parsed().map((l) => l.msg)).toEqual(["shown", "also shown"]);
    const silent = capture("silent");
    silent.log.error("never");
    expect(silent.lines).toEqual([]);
  });

  it("a child carries its parent's fields and its own on every line, at the parent's level", () => {
    const { log, parsed } = capture("info", { service: "enclave" });
    const child = log.child({ requestId: "r-1" }).child({ cid: "Qm1" });
    child.debug("hidden");
    child.warn("slow", { ms: 900 });
    log.info("parent only");
    expect(parsed()).toMatchObject([
      { level: "warn", msg: "slow", service: "enclave", requestId: "r-1", cid: "Qm1", ms: 900 },
      { level: "info", msg: "parent only", service: "enclave" },
    ]);
    expect(parsed()[1]).not.toHaveProperty("requestId");
  });
});
