// Rate limits in workerd with the RateLimiter Durable Object (limits of the `workers` test project:
// 50 per IP, 20 per key, 5 per IP on the open writes, per minute). Each test uses its own client IP.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const KEY = btoa("r".repeat(32));

function get(path: string, ip: string, headers: Record<string, string> = {}) {
  return SELF.fetch(`http://edge${path}`, { headers: { "cf-connecting-ip": ip, ...headers } });
}

describe("rate limits", () => {
  it("every answer carries RateLimit-Limit/Remaining/Reset, counting down per client IP", async () => {
    const a = await get("/core/v1/version", "198.51.100.1");
    const b = await get("/core/v1/version", "198.51.100.1");
    expect(a.headers.get("ratelimit-limit")).toBe("50");
    expect(Number(b.headers.get("ratelimit-remaining"))).toBe(Number(a.headers.get("ratelimit-remaining")) - 1);
    expect(Number(a.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
  });

  it("over the per-IP limit the answer is 429 rate_limited with Retry-After; another IP is unaffected", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 51; i++) statuses.push((await get("/core/v1/version", "198.51.100.2")).status);
    expect(statuses.slice(0, 50).every((s) => s === 200)).toBe(true);
    const over = await get("/core/v1/version", "198.51.100.2");
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect((await get("/core/v1/version", "198.51.100.3")).status).toBe(200);
  });

  it("a key is limited on its own across IPs (20 per minute here)", async () => {
    let last: Response | undefined;
    for (let i = 0; i < 21; i++) last = await get("/core/v1/version", `203.0.113.${i}`, { "x-api-key": KEY });
    expect(last?.status).toBe(429);
    expect(last?.headers.get("ratelimit-limit")).toBe("20");
  });

  it("a request with a key still counts against its IP: fresh keys from one IP are refused past the IP's limit", async () => {
    let last: Response | undefined;
    for (let i = 0; i < 51; i++) last = await get("/core/v1/version", "198.51.100.7", { "x-api-key": btoa(`ip-limit-${String(i).padStart(2, "0")}`.padEnd(32, "k")) });
    expect(last?.status).toBe(429);
    expect(last?.headers.get("ratelimit-limit")).toBe("50");
    expect(Number(last?.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("new_account and the signature endpoints are limited by IP more tightly (5 per minute here)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await SELF.fetch("http://edge/core/v1/new_account", { method: "POST", headers: { "cf-connecting-ip": "198.51.100.9", "content-type": "application/json" }, body: "{}" });
      statuses.push(res.status);
    }
    expect(statuses[5]).toBe(429);
    expect(statuses.slice(0, 5).every((s) => s !== 429)).toBe(true);
  });
});
