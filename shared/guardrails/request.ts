// A signature request as JSON (what `check_guardrail` takes, docs/design/guardrails.md), parsed into
// the evaluator's SignRequest: the same shapes a script passes to Sigil.Actions — a transaction with
// its amounts as decimal strings or numbers, typed data, a message, a digest, or the key's export.
import { getTransactionDecoder } from "@solana/transactions";
import type { Hex, TransactionSerializable, TypedDataDefinition } from "viem";
import { z } from "zod";
import type { DecodedCall, SignRequest } from "./evaluate.ts";

const hex = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, "must be 0x-prefixed hex bytes");
const integer = z
  .union([z.string().regex(/^(0|[1-9][0-9]*|0x[0-9a-fA-F]+)$/, "must be an integer"), z.number().int().nonnegative()])
  .transform((v) => BigInt(v));

const transaction = z
  .looseObject({
    to: z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/)
      .nullable()
      .optional(),
    value: integer.optional(),
    data: hex.optional(),
    chainId: z.number().int().positive().optional(),
    authorizationList: z
      .array(z.looseObject({ address: z.string(), chainId: z.number().int().nonnegative() }))
      .optional(),
  })
  .describe("the transaction as viem (and Sigil.Actions.signTransaction) takes it; amounts as decimal strings");

export const signRequestSchema = z
  .discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("transaction"), transaction }),
    z.strictObject({
      kind: z.literal("typed_data"),
      typed_data: z
        .looseObject({
          domain: z.record(z.string(), z.unknown()).optional(),
          types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
          primaryType: z.string(),
          message: z.record(z.string(), z.unknown()),
        })
        .describe("EIP-712 typed data as viem takes it"),
    }),
    z.strictObject({
      kind: z.literal("message"),
      message: z.union([z.string(), z.strictObject({ raw: hex })]).describe('text, or {raw: "0x…"} bytes'),
    }),
    z.strictObject({ kind: z.literal("hash"), digest: z.string().regex(/^0x[0-9a-fA-F]{64}$/) }),
    z.strictObject({ kind: z.literal("export") }),
    z.strictObject({
      kind: z.literal("solana_transaction"),
      transaction: z
        .string()
        .min(1)
        .max(4096)
        .regex(/^[A-Za-z0-9+/]+={0,2}$/, "must be base64")
        .describe("a Solana wire transaction, base64, as Sigil.Actions.signSolanaTransaction takes it (signed or not)"),
    }),
    z.strictObject({
      kind: z.literal("solana_message"),
      message: z
        .union([z.string(), z.strictObject({ raw: hex })])
        .describe('a Solana off-chain message: text, or {raw: "0x…"} bytes'),
    }),
  ])
  .describe("what a script would ask the wallet to sign");
export type SignRequestInput = z.input<typeof signRequestSchema>;

/** The message bytes of a base64 Solana wire transaction, or why it is not one. */
export function solanaMessageOf(base64: string): Uint8Array | { invalid: string } {
  try {
    const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
    return new Uint8Array(getTransactionDecoder().decode(bytes).messageBytes);
  } catch (err) {
    return { invalid: `not a Solana wire transaction: ${(err as Error).message.split("\n")[0]}` };
  }
}

/**
 * The evaluator's request from the parsed JSON (a Solana transaction that does not decode throws a
 * TypeError naming why; the API answers it as the client's mistake). `solanaSigner`: the wallet's
 * Solana address, when the caller knows it.
 */
export function toSignRequest(parsed: z.output<typeof signRequestSchema>, solanaSigner?: string): SignRequest {
  switch (parsed.kind) {
    case "transaction":
      return { kind: "transaction", transaction: parsed.transaction as unknown as TransactionSerializable };
    case "typed_data":
      return { kind: "typed_data", typedData: parsed.typed_data as unknown as TypedDataDefinition };
    case "message":
      return { kind: "message", message: parsed.message as string | { raw: Hex } };
    case "hash":
      return { kind: "hash", digest: parsed.digest as Hex };
    case "export":
      return { kind: "export" };
    case "solana_transaction": {
      const message = solanaMessageOf(parsed.transaction);
      if ("invalid" in message) throw new TypeError(message.invalid);
      return { kind: "solana_transaction", message, ...(solanaSigner ? { signer: solanaSigner } : {}) };
    }
    case "solana_message": {
      const message =
        typeof parsed.message === "string"
          ? new TextEncoder().encode(parsed.message)
          : Uint8Array.from(parsed.message.raw.slice(2).match(/../g) ?? [], (h) => Number.parseInt(h, 16));
      return { kind: "solana_message", message };
    }
  }
}

/**
 * A request as a person reads it (the dry run's `decoded`): a transaction's recipient, value, chain
 * and — when a guardrail's ABI decoded it — its call; typed data's domain, primary type and message;
 * a message's text. Integers as decimal strings, so it is JSON.
 */
export function decodedRequest(request: SignRequest, call?: DecodedCall): Record<string, unknown> | undefined {
  switch (request.kind) {
    case "transaction": {
      const tx = request.transaction as Record<string, unknown>;
      const data = typeof tx.data === "string" ? tx.data : "0x";
      return {
        to: typeof tx.to === "string" ? tx.to.toLowerCase() : null,
        value: String(tx.value ?? 0),
        chain_id: tx.chainId ?? null,
        ...(data === "0x" ? {} : { selector: data.slice(0, 10) }),
        ...(call ? { call } : {}),
      };
    }
    case "typed_data":
      return plain({
        primary_type: request.typedData.primaryType,
        domain: request.typedData.domain ?? {},
        message: request.typedData.message,
      }) as Record<string, unknown>;
    case "message":
      return typeof request.message === "string" ? { text: request.message } : { raw: request.message.raw };
    default:
      return undefined;
  }
}

/** JSON-safe: bigints as decimal strings. */
function plain(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}
