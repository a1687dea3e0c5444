// The webhook retry schedule and the deployment's webhook policy, as plain functions.
import { describe, expect, it } from "vitest";
import { checkWebhookUrl } from "./url.ts";
import { DEFAULT_RETRY_BASE_MS, webhookPolicy } from "../config.ts";
import { nextAttemptAt } from "./policy.ts";

describe("nextAttemptAt", () => {
  it("grows ×3 from the base (10 s, 30 s, 90 s, …), at most an hour apart, for 24 h", () => {
    const base = DEFAULT_RETRY_BASE_MS;
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => nextAttemptAt(0, 0, n, base)!);
    expect(delays).toEqual([10_000, 30_000, 90_000, 270_000, 810_000, 2_430_000, 3_600_000, 3_600_000]);
    // The window: nothing is scheduled past 24 h after the first attempt.
    expect(nextAttemptAt(23 * 3600_000, 0, 30, base)).toBe(24 * 3600_000);
    expect(nextAttemptAt(23 * 3600_000 + 1, 0, 30, base)).toBeUndefined();
    // A re-send starts a new window.
    expect(nextAttemptAt(30 * 3600_000, 30 * 3600_000 - 1, 1, base)).toBe(30 * 3600_000 + base);
  });

  it("scales with the base (SIGIL_WEBHOOK_RETRY_BASE_MS)", () => {
    expect([1, 2, 3].map((n) => nextAttemptAt(0, 0, n, 200))).toEqual([200, 600, 1800]);
  });
});

describe("webhookPolicy", () => {
  it("is local unless SIGIL_ENV is production, and takes the base when it is a sane integer", () => {
    expect(webhookPolicy({})).toEqual({ local: true, retryBaseMs: 10_000 });
    expect(webhookPolicy({ SIGIL_ENV: "test", SIGIL_WEBHOOK_RETRY_BASE_MS: "200" })).toEqual({
      local: true,
      retryBaseMs: 200,
    });
    expect(webhookPolicy({ SIGIL_ENV: "production", SIGIL_WEBHOOK_RETRY_BASE_MS: "1" })).toEqual({
      local: false,
      retryBaseMs: 10_000,
    });
  });

  it("a local deployment's URL check still refuses what is not a URL, another scheme or credentials", () => {
    expect(checkWebhookUrl("http://127.0.0.1:3000/hook", { local: true }).href).toBe("http://127.0.0.1:3000/hook");
    for (const [url, reason] of [
      ["nope", "malformed"],
      ["file:///etc/passwd", "scheme"],
      ["https://a:b@example.com/", "credentials"],
    ] as const) {
      expect(() => checkWebhookUrl(url, { local: true })).toThrow(
        expect.objectContaining({ code: "invalid_webhook_url", details: { reason } }),
      );
    }
  });
});
