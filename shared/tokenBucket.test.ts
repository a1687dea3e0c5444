import { describe, expect, it } from "vitest";
import { TokenBucket, TokenBuckets } from "./tokenBucket.ts";

describe("TokenBucket", () => {
  it("gives `capacity` tokens at once and refills at the given rate, never above capacity", () => {
    let t = 0;
    const bucket = new TokenBucket(2, 4, () => t);
    expect([bucket.take(), bucket.take()]).toEqual([0, 0]);
    expect(bucket.take()).toBe(250);
    t = 250;
    expect(bucket.take()).toBe(0);
    t = 100_000;
    expect([bucket.take(), bucket.take(), bucket.take()]).toEqual([0, 0, 250]);
  });
});

describe("TokenBuckets", () => {
  it("keeps one budget per key: one key spending its tokens leaves another's whole", () => {
    let t = 0;
    const buckets = new TokenBuckets({ capacity: 2, perSecond: 1 }, { now: () => t });
    expect([buckets.take("a"), buckets.take("a"), buckets.take("a")]).toEqual([0, 0, 1000]);
    expect([buckets.take("b"), buckets.take("b")]).toEqual([0, 0]);
    t = 1000;
    expect(buckets.take("a")).toBe(0);
  });

  it("holds at most maxKeys buckets, forgetting refilled ones first, then the least recently used", () => {
    let t = 0;
    const buckets = new TokenBuckets({ capacity: 1, perSecond: 1 }, { maxKeys: 2, now: () => t });
    buckets.take("a");
    buckets.take("b");
    buckets.take("a"); // a used last: b is the least recently used
    buckets.take("c");
    expect(buckets.size).toBe(2);
    // a is still empty (remembered); b was forgotten, so it starts full.
    expect(buckets.take("a")).toBeGreaterThan(0);
    t = 10_000; // everything refilled: all of it can go
    buckets.take("d");
    expect(buckets.size).toBeLessThanOrEqual(2);
  });
});
