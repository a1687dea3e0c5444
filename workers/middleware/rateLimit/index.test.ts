// Rate limits in workerd with the RateLimiter Durable Object (limits of the `workers` test project:
// 50 per IP, 20 per key, 5 per IP on the open writes, per minute; 30 open writes that spend gas per
// hour for the whole deployment). Each test uses its own client IPs. The tests run in order: the
// deployment's budget is shared by all of them, and the last one spends it.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../env.ts";
import { GAS_BUDGET_BUCKET } from "./index.ts";

const KEY = btoa("r".repeat(32));

function get(path: string, ip: string, headers: Record<string, string> = {}) {
  return SELF.fetch(`http://edge${path}`, { headers: { "cf-connecting-ip": ip, ...headers } });
}

function postEmpty(path: string, ip: string) {
  return SELF.fetch(`http://edge${path}`, {
    method: "POST",
    headers: { "cf-connecting-ip": ip, "content-type": "application/json" },
    body: "{}",
  });
}

const BUDGET = 30;

/**
 * Sends requests until one is refused with 429 (at most `max`). The buckets are fixed windows of a
 * minute (workers/ratelimit/limiter.ts): a burst that crosses a window's end meets a fresh window, so
 * the count served is checked against the limit for each window the burst touched (`withinLimit`),
 * not against the limit alone, which failed in CI runs whose burst crossed a minute.
 */
async function untilRefused(
  send: (i: number) => Promise<Response>,
  max: number,
): Promise<{ served: Response[]; last: Response | undefined; ms: number }> {
  const started = Date.now();
  const served: Response[] = [];
  let last: Response | undefined;
  for (let i = 0; i < max; i++) {
    last = await send(i);
    if (last.status === 429) break;
    served.push(last);
  }
  return { served, last, ms: Date.now() - started };
}

/** At least `limit` served, and no more than `limit` for each minute window a burst of `ms` can touch. */
function withinLimit(served: number, ms: number, limit: number): void {
  expect(served).toBeGreaterThanOrEqual(limit);
  expect(served).toBeLessThanOrEqual(limit * (1 + Math.ceil(ms / 60_000)));
}

/** What is left of the deployment's hourly budget, asked of its Durable Object without taking any. */
async function budgetLeft(): Promise<number> {
  const namespace = (env as unknown as Env).RATE_LIMITER!;
  return (await namespace.get(namespace.idFromName(GAS_BUDGET_BUCKET)).lease(BUDGET, 3600, 0)).remaining;
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
    const run = await untilRefused(() => get("/core/v1/version", "198.51.100.2"), 99);
    expect(run.served.every((r) => r.status === 200)).toBe(true);
    withinLimit(run.served.length, run.ms, 50);
    const over = run.last as Response;
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect((await get("/core/v1/version", "198.51.100.3")).status).toBe(200);
  });

  it("a key is limited on its own across IPs (20 per minute here)", async () => {
    const run = await untilRefused((i) => get("/core/v1/version", `203.0.113.${i}`, { "x-api-key": KEY }), 60);
    expect(run.last?.status).toBe(429);
    expect(run.last?.headers.get("ratelimit-limit")).toBe("20");
    expect(run.served.every((r) => r.status === 200)).toBe(true);
    withinLimit(run.served.length, run.ms, 20);
  });

  it("MCP's endpoint is inside the same limits: past a key's, a tool call is 429 rate_limited with the API's body", async () => {
    const mcpKey = btoa("m".repeat(32));
    const call = (i: number) =>
      SELF.fetch("http://edge/core/v1/mcp", {
        method: "POST",
        headers: {
          "cf-connecting-ip": `203.0.113.${100 + i}`,
          "x-api-key": mcpKey,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/list", params: {} }),
      });
    const run = await untilRefused(call, 60);
    const over = run.last as Response;
    expect(over.status).toBe(429);
    expect(over.headers.get("ratelimit-limit")).toBe("20");
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await over.json()) as { error: { code: string; message: string; request_id: string } };
    expect(body.error).toMatchObject({ code: "rate_limited", request_id: expect.any(String) });
    // Each tools/list is two requests of the key: the MCP request, and the account read it makes in-process.
    withinLimit(run.served.length * 2, run.ms, 20);
  });

  it("a request with a key still counts against its IP: fresh keys from one IP are refused past the IP's limit", async () => {
    const run = await untilRefused(
      (i) =>
        get("/core/v1/version", "198.51.100.7", {
          "x-api-key": btoa(`ip-limit-${String(i).padStart(2, "0")}`.padEnd(32, "k")),
        }),
      99,
    );
    expect(run.last?.status).toBe(429);
    expect(run.last?.headers.get("ratelimit-limit")).toBe("50");
    expect(Number(run.last?.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(run.served.every((r) => r.status === 200)).toBe(true);
    withinLimit(run.served.length, run.ms, 50);
  });

  it("new_account and the signature endpoints are limited by IP more tightly (5 per minute here)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await SELF.fetch("http://edge/core/v1/new_account", {
        method: "POST",
        headers: { "cf-connecting-ip": "198.51.100.9", "content-type": "application/json" },
        body: "{}",
      });
      statuses.push(res.status);
    }
    expect(statuses[5]).toBe(429);
    expect(statuses.slice(0, 5).every((s) => s !== 429)).toBe(true);
  });

  // Every spelling the router resolves to new_account (percent-encoding anywhere in the path, dot
  // segments) counts against the same open-write bucket: the route that matched decides, not the text.
  it("the percent-encoded path: new%5Faccount and the other spellings of new_account share its 5-per-minute bucket", async () => {
    const spellings = [
      "/core/v1/new%5Faccount",
      "/core/v1/new%5faccount",
      "/core/v1/%6Eew_account",
      "/%63ore/v1/new_account",
      "/core/v1/x/../new_account",
      "/core/v1/new_account",
    ];
    // The spellings in turn until one is refused (a burst that crosses the minute's end meets a new window).
    const run = await untilRefused(
      (i) =>
        SELF.fetch(`http://edge${spellings[i % spellings.length]}`, {
          method: "POST",
          headers: { "cf-connecting-ip": "198.51.100.10", "content-type": "application/json" },
          body: "{}",
        }),
      30,
    );
    // Each spelling reached the route (its validation answered), and each was counted as an open write.
    expect(run.served.map((r) => r.status)).toEqual(run.served.map(() => 400));
    expect(run.served.map((r) => r.headers.get("ratelimit-limit"))).toEqual(run.served.map(() => "5"));
    withinLimit(run.served.length, run.ms, 5);
    expect(run.last?.status).toBe(429);
    expect(((await run.last!.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    // The spellings the router does not take never reach new_account: nothing there to bypass.
    for (const path of [
      "/core/v1//new_account",
      "/core/v1/new_account/",
      "/core/v1/NEW_ACCOUNT",
      "/core/v1/new_account%2F",
    ]) {
      expect((await postEmpty(path, "198.51.100.13")).status, path).toBe(404);
    }
  });

  it("the signature endpoints are open writes under any spelling too", async () => {
    const paths = [
      "/core/v1/create%5Fwallet%5Fwith%5Fsignature",
      "/core/v1/add_usage_api_key_with%5Fsignature",
      "/core/v1/create_wallet_with_signature",
      "/core/v1/add%5Fusage_api_key_with_signature",
      "/core/v1/create_wallet_with_%73ignature",
      "/core/v1/add_usage_api_key_with_signature",
    ];
    const run = await untilRefused(
      (i) =>
        SELF.fetch(`http://edge${paths[i % paths.length]}`, {
          method: "POST",
          headers: { "cf-connecting-ip": "198.51.100.11", "content-type": "application/json" },
          body: "{}",
        }),
      30,
    );
    expect(run.served.every((r) => r.status !== 404)).toBe(true);
    withinLimit(run.served.length, run.ms, 5);
    expect(run.last?.status).toBe(429);
  });

  it("an address refused by its own open-write limit spends nothing of the deployment's budget", async () => {
    const before = await budgetLeft();
    expect(before).toBeGreaterThanOrEqual(5);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) statuses.push((await postEmpty("/core/v1/new_account", "198.51.100.12")).status);
    // 5 let through (more only if the burst crossed into the next minute's window), the rest refused;
    // only those let through spent the budget.
    const through = statuses.filter((s) => s !== 429).length;
    withinLimit(through, Date.now() - started, 5);
    expect(statuses.filter((s) => s !== 400 && s !== 429)).toEqual([]);
    expect(await budgetLeft()).toBe(before - through);
  });

  it("the deployment's hourly budget for new_account: once spent, every address gets 429 rate_limited with Retry-After; the signature endpoints, which spend no gas, still answer", async () => {
    let refused: Response | undefined;
    // One request per address: no address's own limit is ever reached.
    for (let i = 0; i <= BUDGET && !refused; i++) {
      const res = await postEmpty("/core/v1/new_account", `192.0.2.${i + 1}`);
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(400);
    }
    expect(refused, "no request was refused").toBeDefined();
    expect(((await refused!.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect(refused!.headers.get("ratelimit-limit")).toBe(String(BUDGET));
    expect(refused!.headers.get("ratelimit-remaining")).toBe("0");
    const retryAfter = Number(refused!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // Another fresh address, under another spelling of the path: refused all the same.
    const next = await postEmpty("/core/v1/new%5Faccount", "192.0.2.200");
    expect(next.status).toBe(429);
    expect(next.headers.get("ratelimit-limit")).toBe(String(BUDGET));
    expect((await postEmpty("/core/v1/create_wallet_with_signature", "192.0.2.201")).status).toBe(400);
    expect((await get("/core/v1/version", "192.0.2.202")).status).toBe(200);
  });
});
