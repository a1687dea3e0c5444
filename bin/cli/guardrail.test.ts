// `sigil guardrail template`, as a user runs it (node bin/sigil.ts, nothing listening): the list of
// templates with their parameters, one filled in as the document `guardrail set` takes (the same one
// shared/guardrails/templates.ts makes), its words on stderr only, and each wrong command line a
// usage error (exit 2, one line) naming the parameter. No service is needed, or asked.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { guardrailDocumentSchema } from "../../shared/guardrails/evaluate.ts";
import { fillTemplate, guardrailTemplates, paramsOf, treasuryTemplate } from "../../shared/guardrails/templates.ts";

const root = join(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "sigil-cli-guardrail-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** No profile, no stack, an API URL where nothing listens: a command that connected would fail. */
const env = {
  ...process.env,
  SIGIL_PROFILE_FILE: join(dir, "profiles.json"),
  SIGIL_STATE_DIR: join(dir, "state"),
  SIGIL_API_URL: "http://127.0.0.1:9",
  SIGIL_API_KEY: "",
};

function sigil(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, ["bin/sigil.ts", ...args], { cwd: root, env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const ALICE = "0x00000000000000000000000000000000000A11CE";
const BOB = "0x0000000000000000000000000000000000000b0b";
const USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";

describe("sigil guardrail template", { timeout: 60_000 }, () => {
  it("without a name lists every template with its summary and its parameters as options; --json as data", async () => {
    const r = await sigil(["guardrail", "template"]);
    expect(r.code, r.stderr).toBe(0);
    for (const t of guardrailTemplates) {
      expect(r.stdout).toContain(`${t.name}: ${t.summary}`);
      for (const p of paramsOf(t))
        expect(r.stdout).toMatch(new RegExp(`--${p.option} .*${p.description.slice(0, 20)}`));
    }
    const json = JSON.parse((await sigil(["guardrail", "template", "--json"])).stdout) as Array<{ name: string }>;
    expect(json.map((t) => t.name)).toEqual(["treasury", "trading-bot", "typed-data", "login"]);
    const help = await sigil(["guardrail", "template", "--help"]);
    expect(help.stdout).toContain("usage: sigil guardrail template [NAME]");
    expect(help.stdout).toContain("--max-token-amount");
    expect((await sigil(["guardrail", "--help"])).stdout).toMatch(/guardrail template\s+the templates/);
  });

  it("with a name prints the document (lists comma-separated), the one the template makes, and its words on stderr", async () => {
    const r = await sigil([
      "guardrail",
      "template",
      "treasury",
      "--chains",
      "1,8453",
      "--recipients",
      `${ALICE},${BOB}`,
      "--max-value-wei",
      "1000",
      "--tokens",
      USDC,
      "--max-token-amount",
      "5000000",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const document = JSON.parse(r.stdout) as unknown;
    expect(guardrailDocumentSchema.safeParse(document).success).toBe(true);
    expect(document).toEqual(
      fillTemplate(treasuryTemplate, {
        chains: "1,8453",
        recipients: `${ALICE},${BOB}`,
        max_value_wei: "1000",
        tokens: USDC,
        max_token_amount: "5000000",
      }).document,
    );
    expect(r.stderr).toContain(`plain transfers to ${ALICE.toLowerCase()}, ${BOB}`);
    expect(r.stderr).toContain("amount ≤ 5000000");
    // --json: the same document, and nothing on stderr.
    const quiet = await sigil(["guardrail", "template", "login", "--domain", "example.com", "--json"]);
    expect(JSON.parse(quiet.stdout)).toMatchObject({
      messages: { pattern: "example.com wants you to sign in with your Ethereum account:*" },
    });
    expect(quiet.stderr).toBe("");
    // A function signature's commas stay in it.
    const bot = await sigil([
      "guardrail",
      "template",
      "trading-bot",
      "--chain",
      "8453",
      "--router",
      USDC,
      "--functions",
      "swap(address tokenIn, uint256 amountIn), function withdraw(address to)",
    ]);
    expect(bot.code, bot.stderr).toBe(0);
    expect(
      (JSON.parse(bot.stdout) as { transactions: { contracts: Array<{ functions: Array<{ signature: string }> }> } })
        .transactions.contracts[0]?.functions,
    ).toEqual([
      { signature: "function swap(address tokenIn, uint256 amountIn)" },
      { signature: "function withdraw(address to)" },
    ]);
  });

  it("a missing or bad parameter, another template's option, or an unknown template: exit 2, one line naming it", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["treasury", "--chains", "1", "--recipients", ALICE], /--max-value-wei is required: the most ether/],
      [
        ["treasury", "--chains", "one", "--recipients", ALICE, "--max-value-wei", "1"],
        /--chains must be a whole number, not "one"/,
      ],
      [
        ["treasury", "--chains", "1", "--recipients", `${ALICE},0x12`, "--max-value-wei", "1"],
        /--recipients item 2 must be a 0x-prefixed 20-byte address/,
      ],
      [
        ["treasury", "--chains", "1", "--recipients", ALICE, "--max-value-wei", "1", "--router", ALICE],
        /--router is not a parameter of treasury/,
      ],
      [
        ["trading-bot", "--chain", "1", "--router", ALICE, "--functions", "swap("],
        /--functions item 1 "function swap\(" is not a Solidity function signature/,
      ],
      [["login"], /--domain is required \(or pattern\)/],
      [["tresury"], /no template named "tresury" \(did you mean treasury\?\)/],
      [["treasury", "--bogus", "1"], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const r = await sigil(["guardrail", "template", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.stderr, args.join(" ")).toMatch(/^sigil guardrail template: /);
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
  });
});
