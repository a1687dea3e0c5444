// Budgets in a guardrail document (schema.ts, evaluate.ts checkBudgets): what the schema refuses in a
// budget, and the documents whose other sections would let a script sign past their budgets — two
// budgets of one name, a key export, raw digests beside a value budget — each refused at its path as
// the API reports it (guardrailDocumentSchema), and by compileGuardrail as a GuardrailError.
import { describe, expect, it } from "vitest";
import { compileGuardrail, GuardrailError, guardrailDocumentSchema } from "./evaluate.ts";
import { MAX_BUDGET_WINDOW_SECONDS } from "./schema.ts";

const daily = { name: "daily", window_seconds: 86_400, max_value_wei: "500000000000000000" };
const hourly = { name: "hourly", per: "key", window_seconds: 3600, max_signatures: 10 };
const doc = (extra: Record<string, unknown>) => ({
  version: 1,
  transactions: { chains: [1], transfers: {} },
  ...extra,
});

/** The issues of a document the API refuses, as [path, message]. */
function issuesOf(input: unknown): Array<[string, string]> {
  const parsed = guardrailDocumentSchema.safeParse(input);
  expect(parsed.success, JSON.stringify(input)).toBe(false);
  return (parsed.error?.issues ?? []).map((i) => [i.path.join("."), i.message]);
}

describe("budgets in a guardrail document", () => {
  it("accepts budgets per wallet, key and action with either maximum or both", () => {
    const parsed = guardrailDocumentSchema.safeParse(
      doc({
        budgets: [
          daily,
          hourly,
          { name: "per-action_2", per: "action", window_seconds: 60, max_value_wei: "1", max_signatures: 1 },
          { name: "month", window_seconds: MAX_BUDGET_WINDOW_SECONDS, max_signatures: 1_000_000 },
        ],
      }),
    );
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(compileGuardrail(parsed.data).document.budgets).toHaveLength(4);
  });

  it("refuses two budgets of one name at the second's name", () => {
    const input = doc({ budgets: [daily, hourly, { ...hourly, name: "daily" }] });
    expect(issuesOf(input)).toEqual([["budgets.2.name", '"daily" names two budgets']]);
    expect(() => compileGuardrail(input)).toThrow(GuardrailError);
    try {
      compileGuardrail(input);
    } catch (err) {
      expect((err as GuardrailError).path).toBe("budgets[2].name");
    }
  });

  it("refuses key_export: true beside budgets, at key_export (a count-only budget too)", () => {
    for (const budgets of [[daily], [hourly]]) {
      const input = doc({ key_export: true, budgets });
      expect(issuesOf(input)).toEqual([
        ["key_export", "cannot be true beside budgets: an exported key signs past every budget"],
      ]);
      expect(() => compileGuardrail(input)).toThrow(GuardrailError);
    }
    // key_export: false, or no budgets, is a document.
    expect(guardrailDocumentSchema.safeParse(doc({ key_export: false, budgets: [daily] })).success).toBe(true);
    expect(guardrailDocumentSchema.safeParse(doc({ key_export: true })).success).toBe(true);
  });

  it("refuses raw_digests: true beside a value budget, at raw_digests, naming the budget", () => {
    const input = doc({ raw_digests: true, budgets: [hourly, daily] });
    expect(issuesOf(input)).toEqual([
      ["raw_digests", "cannot be true beside budgets[1].max_value_wei: a raw digest may be a transaction of any value"],
    ]);
    expect(() => compileGuardrail(input)).toThrow(GuardrailError);
  });

  it("accepts raw_digests: true beside count-only budgets (a raw digest is counted as a signature)", () => {
    const parsed = guardrailDocumentSchema.safeParse(doc({ raw_digests: true, budgets: [hourly] }));
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(compileGuardrail(doc({ raw_digests: true, budgets: [hourly] })).document.raw_digests).toBe(true);
  });

  it("refuses a budget the schema does not allow, at its path", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...daily, window_seconds: 59 }, "budgets.0.window_seconds"],
      [{ ...daily, window_seconds: MAX_BUDGET_WINDOW_SECONDS + 1 }, "budgets.0.window_seconds"],
      [{ ...daily, window_seconds: 60.5 }, "budgets.0.window_seconds"],
      [{ name: "nomax", window_seconds: 3600 }, "budgets.0"],
      [{ ...daily, name: "Daily" }, "budgets.0.name"],
      [{ ...daily, name: "" }, "budgets.0.name"],
      [{ ...daily, name: "-daily" }, "budgets.0.name"],
      [{ ...daily, name: "a".repeat(65) }, "budgets.0.name"],
      [{ ...daily, name: "da ily" }, "budgets.0.name"],
      [{ ...daily, per: "account" }, "budgets.0.per"],
      [{ ...daily, max_value_wei: "-1" }, "budgets.0.max_value_wei"],
      [{ ...daily, max_value_wei: "01" }, "budgets.0.max_value_wei"],
      [{ ...hourly, max_signatures: 0 }, "budgets.0.max_signatures"],
      [{ ...hourly, max_signatures: 1_000_001 }, "budgets.0.max_signatures"],
      [{ ...daily, extra: 1 }, "budgets.0"],
    ];
    for (const [budget, path] of cases) {
      const issues = issuesOf(doc({ budgets: [budget] }));
      expect(
        issues.map(([p]) => p),
        JSON.stringify(budget),
      ).toContain(path);
    }
    expect(issuesOf(doc({ budgets: [{ name: "nomax", window_seconds: 3600 }] }))).toEqual([
      ["budgets.0", "a budget needs max_value_wei, max_lamports or max_signatures"],
    ]);
    // At least one budget when the section is given, at most 8.
    expect(issuesOf(doc({ budgets: [] })).map(([p]) => p)).toEqual(["budgets"]);
    const nine = Array.from({ length: 9 }, (_, i) => ({ ...hourly, name: `b${i}` }));
    expect(issuesOf(doc({ budgets: nine })).map(([p]) => p)).toEqual(["budgets"]);
    expect(guardrailDocumentSchema.safeParse(doc({ budgets: nine.slice(0, 8) })).success).toBe(true);
  });

  it("the window's bounds are included: 60 s and 30 days", () => {
    for (const window_seconds of [60, MAX_BUDGET_WINDOW_SECONDS])
      expect(guardrailDocumentSchema.safeParse(doc({ budgets: [{ ...daily, window_seconds }] })).success).toBe(true);
    expect(MAX_BUDGET_WINDOW_SECONDS).toBe(2_592_000);
  });
});
