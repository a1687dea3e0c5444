// A guardrail in words: a line per kind of thing the wallet may sign, and the two refusals that
// matter most said outright.
import { describe, expect, it } from "vitest";
import { describeBudget, describeGuardrail } from "./describe.ts";
import { guardrailSchema } from "./schema.ts";

describe("describeGuardrail", () => {
  it("says what each section allows, and that raw digests and the key's export are never signed", () => {
    const lines = describeGuardrail(
      guardrailSchema.parse({
        version: 1,
        transactions: {
          chains: [1, 8453],
          max_value_wei: "1000",
          transfers: { allow: ["0x00000000000000000000000000000000000A11CE"] },
          contracts: [
            {
              address: "0x1111111111111111111111111111111111111111",
              functions: [
                { signature: "function transfer(address to, uint256 amount)", args: { amount: { lte: "50" } } },
              ],
            },
          ],
        },
        typed_data: [
          { domain: { name: "Token", chain_id: 1 }, primary_type: "Permit", fields: { spender: { in: ["0xab"] } } },
        ],
        messages: { pattern: "hello*" },
      }),
    );
    expect(lines).toEqual([
      "transactions on chain 1, 8453, each sending at most 1000 wei:",
      "  plain transfers to 0x00000000000000000000000000000000000a11ce",
      "  calls to 0x1111111111111111111111111111111111111111: transfer(address to, uint256 amount) with amount ≤ 50",
      'typed data: Permit (name "Token", chain 1) with spender one of 0xab',
      'messages matching "hello*"',
      "Solana: none",
      "raw digests: never",
      "key export: never",
    ]);
  });

  it("an empty document allows nothing, and says so; what opens everything is said in capitals", () => {
    expect(describeGuardrail(guardrailSchema.parse({ version: 1 }))).toEqual([
      "transactions: none",
      "typed data: none",
      "messages: none",
      "Solana: none",
      "raw digests: never",
      "key export: never",
    ]);
    expect(
      describeGuardrail(guardrailSchema.parse({ version: 1, raw_digests: true, key_export: true })).slice(-2),
    ).toEqual([
      "raw digests: ANY (signDigest can sign any transaction's hash)",
      "key export: ALLOWED (the key signs past every rule)",
    ]);
  });
});

describe("Solana rules in words", () => {
  it("says what SOL and tokens may go where, what is paid, and which programs are unchecked", () => {
    const alice = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
    const usdc = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
    const memo = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
    const lines = describeGuardrail(
      guardrailSchema.parse({
        version: 1,
        solana: {
          transactions: {
            transfers: { allow: [alice], max_lamports: "1500000000" },
            max_fee_lamports: "100000",
            tokens: [{ mint: usdc, recipients: { allow: [alice] }, max_amount: "1000000" }],
            programs: [memo],
          },
          messages: { pattern: "gm*" },
        },
      }),
    );
    expect(lines.slice(3, 8)).toEqual([
      "Solana transactions, each a fee of at most 100000 lamports:",
      `  SOL transfers to ${alice}, each at most 1.5 SOL (1500000000 lamports)`,
      `  token ${usdc} transfers to ${alice}, each at most 1000000 base units`,
      `  any instruction of ${memo} (UNCHECKED: these programs may move the wallet's funds)`,
      'Solana messages matching "gm*"',
    ]);
    expect(describeBudget({ name: "sol", window_seconds: 86_400, max_lamports: "5000000000" })).toBe(
      "budget sol: at most 5 SOL (5000000000 lamports) spent on Solana in any day",
    );
  });
});

describe("budgets in words", () => {
  it("names each budget's limits, window and scope", () => {
    expect(describeBudget({ name: "daily", window_seconds: 86_400, max_value_wei: "500000000000000000" })).toBe(
      "budget daily: at most 0.5 ETH in any day",
    );
    expect(describeBudget({ name: "h", per: "key", window_seconds: 7200, max_signatures: 20 })).toBe(
      "budget h: at most 20 signatures in any 2 hours, per usage key",
    );
    expect(
      describeBudget({ name: "a", per: "action", window_seconds: 90, max_value_wei: "1", max_signatures: 1 }),
    ).toBe("budget a: at most 0.000000000000000001 ETH and 1 signature in any 90 seconds, per action");
  });
});
