import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonicalJson.ts";

describe("canonicalJson", () => {
  it("is the same text for the same value whatever the key order, at every depth; arrays keep their order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(canonicalJson({ a: { c: null, d: [2, 1] }, b: 1 })).toBe(canonicalJson({ b: 1, a: { d: [2, 1], c: null } }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it("writes bigints as decimal strings, leaves undefined fields out, and tells strings from numbers", () => {
    expect(canonicalJson({ group_id: 7n, skipped: undefined })).toBe('{"group_id":"7"}');
    expect(canonicalJson({ n: 1 })).not.toBe(canonicalJson({ n: "1" }));
    expect(canonicalJson(undefined)).toBe("null");
  });
});
