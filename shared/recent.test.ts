import { describe, expect, it } from "vitest";
import { Recent } from "./recent.ts";

describe("Recent", () => {
  it("holds at most its bound, forgetting the oldest entry first", () => {
    const recent = new Recent<number, string>(3);
    for (const n of [1, 2, 3, 4]) recent.set(n, `v${n}`);
    expect(recent.get(1)).toBeUndefined();
    expect([2, 3, 4].map((n) => recent.get(n))).toEqual(["v2", "v3", "v4"]);
  });

  it("a key set again keeps its place and forgets nothing", () => {
    const recent = new Recent<number, string>(2);
    recent.set(1, "a");
    recent.set(2, "b");
    recent.set(1, "c");
    expect([recent.get(1), recent.get(2)]).toEqual(["c", "b"]);
  });

  it("getOrMake makes a value once and answers the remembered one after", () => {
    const recent = new Recent<string, object>(2);
    let made = 0;
    const make = () => ({ n: ++made });
    const first = recent.getOrMake("k", make);
    expect(recent.getOrMake("k", make)).toBe(first);
    expect(made).toBe(1);
  });

  it("clear forgets everything", () => {
    const recent = new Recent<number, string>(2);
    recent.set(1, "a");
    recent.clear();
    expect(recent.get(1)).toBeUndefined();
    expect(recent.getOrMake(1, () => "b")).toBe("b");
  });
});
