// What an isolate keeps of an account's lists for a chain outage (lastGood.ts): an answer is given
// back while it is younger than STALE_FOR_MS, never after a write of its account through the isolate,
// and a write of one account leaves the others' answers alone.
import { describe, expect, it } from "vitest";
import { keep, recall, STALE_FOR_MS, wrote } from "./lastGood.ts";

describe("the last answers of an account's lists", () => {
  it("gives an answer back with its age while it is young enough, and not after", () => {
    keep("acct-age", "listGroups|1|{}", ["g"], 1_000);
    expect(recall("acct-age", "listGroups|1|{}", 1_000 + STALE_FOR_MS)).toEqual({ value: ["g"], ageMs: STALE_FOR_MS });
    expect(recall("acct-age", "listGroups|1|{}", 1_001 + STALE_FOR_MS)).toBeUndefined();
    expect(recall("acct-age", 'listGroups|1|{"page_number":"1"}', 1_000)).toBeUndefined();
  });

  it("forgets an account's answers at its write, and only that account's; an answer read after the write is given again", () => {
    keep("acct-a", "listWallets|1|{}", ["a"], 0);
    keep("acct-b", "listWallets|2|{}", ["b"], 0);
    wrote("acct-a");
    expect(recall("acct-a", "listWallets|1|{}", 1)).toBeUndefined();
    expect(recall("acct-b", "listWallets|2|{}", 1)).toEqual({ value: ["b"], ageMs: 1 });
    keep("acct-a", "listWallets|1|{}", ["a", "a2"], 2);
    expect(recall("acct-a", "listWallets|1|{}", 3)).toEqual({ value: ["a", "a2"], ageMs: 1 });
  });
});
