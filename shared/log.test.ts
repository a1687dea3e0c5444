// The structured logs of both sides (log.ts): what a line carries, how keys are referred to
// (`keyRef`: the first 6 hex digits of a key hash, never more), how values that JSON cannot carry
// as-is are written — bigints as decimal strings, errors as their name and message only — and that
// a field named for a secret is redacted at any depth.
import { afterEach, describe, expect, it, vi } from "vitest";
import { apiKeyHash } from "./hashing.ts";
import { consoleSink, createLogger, isSecretName, keyRef } from "./log.ts";

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
    const err = Object.assign(new TypeError("the operation failed", { cause: new Error("secret cause 0xc0ffee") }), {
      privateKey: "0xdeadbeef",
    });
    log.error("failed", { error: err, nested: { inner: new RangeError("inner") } });
    expect(parsed()[0]).toMatchObject({
      error: { name: "TypeError", message: "the operation failed" },
      nested: { inner: { name: "RangeError", message: "inner" } },
    });
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

describe("secret fields", () => {
  it("are written as [redacted] at any depth, in a child's fields, in arrays, whatever their spelling", () => {
    const { log, lines, parsed } = capture("debug", { stripe_secret_key: "sk_test_base" });
    log.child({ Authorization: "Bearer hunter2-token" }).info("call", {
      api_key: "AAAAkey1",
      request: {
        headers: { "x-api-key": "AAAAkey2", "content-type": "application/json" },
        body: { apiKey: "AAAAkey3", name: "w" },
      },
      wallets: [{ privateKey: "0xdeadbeef01", address: "0xabc" }, { private_key: "0xdeadbeef02" }],
      deep: {
        a: {
          b: {
            c: {
              password: "pw-1",
              seed: "0xseed01",
              mnemonic: "abandon abandon",
              root_key: "0xroot01",
              encryptionKey: "0xenc01",
            },
          },
        },
      },
      key: "7374b0",
      keyHash: "0x7374b0e0",
      request_id: "r-1",
    });
    const line = lines[0] as string;
    for (const secret of [
      "sk_test_base",
      "hunter2",
      "AAAAkey1",
      "AAAAkey2",
      "AAAAkey3",
      "0xdeadbeef01",
      "0xdeadbeef02",
      "pw-1",
      "0xseed01",
      "abandon",
      "0xroot01",
      "0xenc01",
    ]) {
      expect(line).not.toContain(secret);
    }
    expect(parsed()[0]).toMatchObject({
      stripe_secret_key: "[redacted]",
      Authorization: "[redacted]",
      api_key: "[redacted]",
      request: {
        headers: { "x-api-key": "[redacted]", "content-type": "application/json" },
        body: { apiKey: "[redacted]", name: "w" },
      },
      wallets: [{ privateKey: "[redacted]", address: "0xabc" }, { private_key: "[redacted]" }],
      deep: {
        a: {
          b: {
            c: {
              password: "[redacted]",
              seed: "[redacted]",
              mnemonic: "[redacted]",
              root_key: "[redacted]",
              encryptionKey: "[redacted]",
            },
          },
        },
      },
      // What a line may say about a key: its keyRef and hash, and the request's id.
      key: "7374b0",
      keyHash: "0x7374b0e0",
      request_id: "r-1",
    });
  });

  it("are told by name: secret-like names match, the fields lines carry do not", () => {
    for (const name of [
      "api_key",
      "apiKey",
      "X-Api-Key",
      "authorization",
      "STRIPE_SECRET_KEY",
      "webhookSecret",
      "private_key",
      "password",
      "seed",
      "identityKey",
      "access_token",
    ]) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of [
      "key",
      "keyHash",
      "msg",
      "level",
      "time",
      "requestId",
      "correlationId",
      "request_id",
      "cid",
      "enclave",
      "error",
      "code",
      "payment_intent",
    ]) {
      expect(isSecretName(name), name).toBe(false);
    }
  });
});

describe("consoleSink (the default)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("writes warnings and errors with console.error and the rest with console.log, one line each", () => {
    const out = vi.spyOn(console, "log").mockImplementation(() => undefined);
    const err = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const log = createLogger("debug", { service: "edge" }, consoleSink);
    log.info("a");
    log.debug("b");
    log.warn("c");
    log.error("d");
    expect(out.mock.calls.map(([line]) => (JSON.parse(String(line)) as { msg: string }).msg)).toEqual(["a", "b"]);
    expect(err.mock.calls.map(([line]) => (JSON.parse(String(line)) as { msg: string }).msg)).toEqual(["c", "d"]);
  });
});
