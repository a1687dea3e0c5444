// The rate limiter's leases against the real RateLimiter Durable Object in workerd: several
// isolates (several Leases) on one bucket never let more than the limit through, spend far fewer
// round trips than requests, and small limits stay exact. (Hour-long windows: a test never
// straddles a window's end.)
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../env.ts";
import { Leases, type LeaseRequest } from "./leases.ts";
import type { Lease } from "./limiter.ts";

const namespace = (env as unknown as Env).RATE_LIMITER!;

/** An isolate's leases on the real object, counting its round trips. */
function isolate(): { leases: Leases; trips: () => number } {
  let trips = 0;
  const ask: LeaseRequest = (bucket, limit, windowSeconds, want) => {
    trips++;
    return namespace.get(namespace.idFromName(bucket)).lease(limit, windowSeconds, want);
  };
  return { leases: new Leases(ask), trips: () => trips };
}

describe("rate-limit leases", () => {
  it("two isolates sharing a bucket let exactly the limit through, with far fewer round trips than requests", async () => {
    const a = isolate();
    const b = isolate();
    let allowed = 0;
    for (let i = 0; i < 150; i++) {
      const r = await (i % 3 === 0 ? b : a).leases.take("lease-shared", 100, 3600);
      if (r.allowed) allowed++;
    }
    // Unspent leases are lost, never overspent: at most the limit, and here all but a lease's worth.
    expect(allowed).toBeLessThanOrEqual(100);
    expect(allowed).toBeGreaterThanOrEqual(100 - 2 * 5);
    expect(a.trips() + b.trips()).toBeLessThan(150 / 2);
  });

  it("a small limit is exact: every request asks the object, Remaining counts down by one, the next is refused", async () => {
    const a = isolate();
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push(await a.leases.take("lease-small", 5, 3600));
    expect(seen.map((r) => r.allowed)).toEqual([true, true, true, true, true, false]);
    expect(seen.map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(a.trips()).toBe(6);
    expect(seen[5]?.resetSeconds).toBeGreaterThan(0);
  });

  it("Remaining, seen from one isolate, counts down by one per request while it spends a lease", async () => {
    const a = isolate();
    const remaining = [];
    for (let i = 0; i < 30; i++) remaining.push((await a.leases.take("lease-countdown", 200, 3600)).remaining);
    expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => 199 - i));
  });

  it("requests of one isolate at once never exceed the limit", async () => {
    const a = isolate();
    const results = await Promise.all(Array.from({ length: 60 }, () => a.leases.take("lease-burst", 40, 3600)));
    expect(results.filter((r) => r.allowed).length).toBeLessThanOrEqual(40);
    expect(results.filter((r) => r.allowed).length).toBeGreaterThanOrEqual(38);
  });

  it("a lease of a window that has ended is not spent: the next request asks for the new window", async () => {
    const grants: Lease[] = [
      { granted: 4, limit: 100, remaining: 96, windowEndMs: Date.now() - 1 },
      { granted: 1, limit: 100, remaining: 99, windowEndMs: Date.now() + 60_000 },
    ];
    let trips = 0;
    const leases = new Leases(async () => grants[trips++]!);
    await leases.take("lease-ended", 100, 3600);
    const next = await leases.take("lease-ended", 100, 3600);
    expect(trips).toBe(2);
    expect(next).toMatchObject({ allowed: true, remaining: 99 });
  });
});
