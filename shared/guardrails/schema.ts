// A guardrail: the declarative document that says what a wallet may sign (docs/design/guardrails.md).
// Deny by default: a wallet with a guardrail signs only what a section of it allows — a transaction
// its `transactions` section allows, typed data one of its `typed_data` rules matches, a message its
// `messages` section allows — and a raw digest or its key's export only when the document names them
// (`raw_digests`, `key_export`), since either would sign past every other rule. This schema is the
// document's definition and its documentation: the API validates with it, the OpenAPI document and
// the SDK's types come from it, and the evaluator (evaluate.ts) reads what it parsed.
//
// Amounts are decimal strings of integers (wei, token base units), so no JSON number loses digits;
// addresses are compared case-insensitively; nothing is a regular expression (a message pattern is a
// glob of literal text and `*`, matched in linear time: a guardrail is checked on the enclave's
// service thread, where a pattern that backtracks would stall every account's runs).
import { isAddress as isSolanaAddress } from "@solana/addresses";
import { z } from "zod";

const MAX_LIST = 64;

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
  .transform((a) => a.toLowerCase())
  .describe("an address, 0x + 40 hex; compared case-insensitively");

const amount = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal integer string, e.g. "1000000000000000000"')
  .describe("an integer as a decimal string (wei, or a token's base units)");

const chainId = z
  .number()
  .int()
  .positive()
  .max(2 ** 53 - 1);

/** A condition on one value: every operator given must hold. */
export const conditionSchema = z
  .strictObject({
    eq: z.union([z.string(), z.number(), z.boolean()]).optional().describe("equal to (addresses case-insensitively)"),
    in: z
      .array(z.union([z.string(), z.number()]))
      .min(1)
      .max(MAX_LIST)
      .optional()
      .describe("one of these"),
    not_in: z
      .array(z.union([z.string(), z.number()]))
      .min(1)
      .max(MAX_LIST)
      .optional()
      .describe("none of these"),
    lte: amount.optional().describe("an integer at most this"),
    gte: amount.optional().describe("an integer at least this"),
  })
  .refine((c) => Object.keys(c).length > 0, { message: "a condition needs at least one operator" })
  .describe("a condition on a value: every operator given must hold");
export type Condition = z.infer<typeof conditionSchema>;

/** Conditions on named values: function arguments, or typed-data fields by dotted path ("details.amount"). */
const conditions = z
  .record(z.string().min(1).max(128), conditionSchema)
  .refine((r) => Object.keys(r).length <= MAX_LIST, { message: `at most ${MAX_LIST} conditions` });

const functionRule = z
  .strictObject({
    signature: z
      .string()
      .min(10)
      .max(512)
      .regex(
        /^function /,
        'must be a Solidity function signature, e.g. "function transfer(address to, uint256 amount)"',
      )
      .describe(
        'the function as Solidity declares it, with argument names: "function transfer(address to, uint256 amount)"',
      ),
    args: conditions.optional().describe("conditions on its decoded arguments, by name"),
  })
  .describe("a function of the contract the wallet may call, and what its arguments may be");

const contractRule = z
  .strictObject({
    address,
    chains: z.array(chainId).min(1).max(MAX_LIST).optional().describe("only on these chains (default: the section's)"),
    functions: z.array(functionRule).min(1).max(MAX_LIST).describe("the functions it may call; any other is refused"),
    max_value_wei: amount.optional().describe("native value sent with a call (default 0: none)"),
  })
  .describe("a contract the wallet may call");

export const transactionsSchema = z
  .strictObject({
    chains: z
      .array(chainId)
      .min(1)
      .max(MAX_LIST)
      .describe("the chain ids a transaction may name; one without a chain id is refused"),
    max_value_wei: amount.optional().describe("the most native value one transaction may send"),
    transfers: z
      .strictObject({
        allow: z.array(address).min(1).max(MAX_LIST).optional().describe("only to these recipients"),
        deny: z.array(address).min(1).max(MAX_LIST).optional().describe("never to these recipients"),
      })
      .optional()
      .describe("plain native transfers (no calldata); absent: none"),
    contracts: z.array(contractRule).max(MAX_LIST).optional().describe("contract calls; absent: none"),
    authorizations: z
      .strictObject({
        allow: z.array(address).min(1).max(MAX_LIST).describe("contracts an EIP-7702 authorization may delegate to"),
      })
      .optional()
      .describe("EIP-7702 authorizations; absent: a transaction carrying one is refused"),
    deploy: z.boolean().optional().describe("contract creation (no recipient); default false"),
  })
  .describe("what transactions the wallet may sign");

const typedDataRule = z
  .strictObject({
    domain: z
      .strictObject({
        name: z.string().max(256).optional(),
        version: z.string().max(64).optional(),
        chain_id: chainId.optional(),
        verifying_contract: address.optional(),
      })
      .describe("what the domain must say; a field left out may be anything"),
    primary_type: z.string().min(1).max(128),
    fields: conditions.optional().describe('conditions on the message, by dotted path ("spender", "details.amount")'),
  })
  .describe("EIP-712 typed data the wallet may sign");

export const messagesSchema = z
  .strictObject({
    pattern: z
      .string()
      .max(1024)
      .optional()
      .describe(
        'the text must match this glob: literal text, with "*" for any run of characters ("Sign in to example.com*")',
      ),
    raw: z.boolean().optional().describe('messages given as raw bytes ({raw: "0x…"}); default false'),
  })
  .describe("EIP-191 personal messages; absent: none");

const solanaAddress = z
  .string()
  .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, "must be a base58 Solana address")
  .refine((a): boolean => isSolanaAddress(a), "must be a base58 Solana address (32 bytes)")
  .describe("a Solana address, base58; compared exactly");

const solanaRecipients = z
  .strictObject({
    allow: z.array(solanaAddress).min(1).max(MAX_LIST).optional().describe("only to these"),
    deny: z.array(solanaAddress).min(1).max(MAX_LIST).optional().describe("never to these"),
  })
  .describe("who may receive; absent: anyone");

/**
 * What Solana transactions the wallet may sign, read from the compiled message instruction by
 * instruction: System transfers and SPL Token transfers decoded and checked, the Compute Budget
 * program's settings read for the fee, any other program only when `programs` lists it. An account
 * that comes from an address lookup table cannot be read without the chain, so a rule that needs
 * one (a transfer's recipient) refuses it.
 */
export const solanaTransactionsSchema = z
  .strictObject({
    transfers: z
      .strictObject({
        allow: solanaRecipients.shape.allow,
        deny: solanaRecipients.shape.deny,
        max_lamports: amount.optional().describe("the most lamports one transfer may send"),
      })
      .optional()
      .describe("the System program's transfers of SOL (and advancing a durable nonce); absent: none"),
    max_lamports: amount
      .optional()
      .describe("the most lamports one transaction may send by System transfers, all of them together"),
    tokens: z
      .array(
        z.strictObject({
          mint: solanaAddress.describe("the token's mint"),
          recipients: z
            .strictObject({
              allow: solanaRecipients.shape.allow,
              deny: solanaRecipients.shape.deny,
            })
            .optional()
            .describe(
              "owners, whose associated token account for the mint receives, or token accounts themselves; absent: anyone",
            ),
          max_amount: amount.optional().describe("the most one transfer may send, in the token's base units"),
        }),
      )
      .min(1)
      .max(MAX_LIST)
      .optional()
      .describe(
        "SPL Token and Token-2022 transferChecked of these mints, and creating a recipient's associated token account for them; absent: none",
      ),
    programs: z
      .array(solanaAddress)
      .min(1)
      .max(MAX_LIST)
      .optional()
      .describe(
        "other programs any of whose instructions a transaction may carry, unchecked: the wallet's signature lets such a program move the wallet's SOL and tokens as it chooses",
      ),
    fee_payers: z
      .array(solanaAddress)
      .min(1)
      .max(MAX_LIST)
      .optional()
      .describe("only these may pay the fee (the wallet's own address lets it pay); absent: anyone"),
    max_fee_lamports: amount
      .optional()
      .describe(
        "the most the transaction's fee may be: 5000 lamports a signature and the priority fee at its compute-unit limit",
      ),
  })
  .describe("what Solana transactions the wallet may sign; absent: none");

export const solanaMessagesSchema = z
  .strictObject({
    pattern: messagesSchema.shape.pattern,
    raw: z.boolean().optional().describe("bytes that are not UTF-8 text (never with a pattern); default false"),
  })
  .describe("Solana off-chain messages (signSolanaMessage); absent: none");

export const solanaSchema = z
  .strictObject({
    transactions: solanaTransactionsSchema.optional(),
    messages: solanaMessagesSchema.optional(),
  })
  .describe("what the wallet's Solana key may sign; absent: nothing");

/** The longest window a budget may have: 30 days (its counters are kept that long). */
export const MAX_BUDGET_WINDOW_SECONDS = 30 * 86_400;
/** The longest lifetime a usage key's guardrail may give the keys it delegates: a year. */
export const MAX_DELEGATION_LIFETIME_SECONDS = 31_536_000;

/**
 * A rolling-window limit on what the wallet signs (docs/design/guardrails.md, Budgets): at most
 * `max_value_wei` of native value sent by its transactions (or `max_lamports` spent by its Solana
 * transactions), at most `max_signatures` signatures of
 * any kind, in any `window_seconds`, counted for the whole wallet or separately per usage key or per
 * action. A signature is counted before it is released, once however often its payload is signed
 * again (the same payload under the same key is the same signature).
 */
export const budgetSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "must be 1 to 64 lowercase letters, digits, '-' or '_'")
      .describe("the budget's name: its counters are kept under it, so a new document that keeps the name keeps them"),
    per: z
      .enum(["wallet", "key", "action"])
      .optional()
      .describe("what is counted together: the whole wallet (default), each usage key apart, or each action CID apart"),
    window_seconds: z
      .number()
      .int()
      .min(60)
      .max(MAX_BUDGET_WINDOW_SECONDS)
      .describe("the rolling window, in seconds (60 to 2,592,000: a minute to 30 days; 86400 is a day)"),
    max_value_wei: amount.optional().describe("the most native value the wallet's transactions may send in any window"),
    max_lamports: amount
      .optional()
      .describe(
        "the most lamports the wallet's Solana transactions may spend in any window: what their System transfers send from it and the fees it pays",
      ),
    max_signatures: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe("the most signatures (of any kind) in any window"),
  })
  .refine((b) => b.max_value_wei !== undefined || b.max_lamports !== undefined || b.max_signatures !== undefined, {
    message: "a budget needs max_value_wei, max_lamports or max_signatures",
  })
  .refine((b) => b.max_value_wei === undefined || b.max_lamports === undefined, {
    message: "a budget counts wei or lamports, not both: make two budgets",
    path: ["max_lamports"],
  })
  .describe("a rolling-window limit on what the wallet signs");
export type Budget = z.infer<typeof budgetSchema>;

export const guardrailSchema = z
  .strictObject({
    version: z.literal(1),
    name: z.string().max(128).optional(),
    description: z.string().max(1024).optional(),
    transactions: transactionsSchema.optional(),
    typed_data: z.array(typedDataRule).max(MAX_LIST).optional(),
    messages: messagesSchema.optional(),
    solana: solanaSchema.optional(),
    raw_digests: z
      .boolean()
      .optional()
      .describe("signDigest: a signature over any 32 bytes, which could be any transaction's hash; default false"),
    key_export: z
      .boolean()
      .optional()
      .describe("getPrivateKey: whoever holds the key signs past every rule; default false"),
    budgets: z
      .array(budgetSchema)
      .min(1)
      .max(8)
      .optional()
      .describe("rolling-window limits over what the rules allow; a signature over any of them is refused"),
    delegation: z
      .strictObject({
        max_lifetime_seconds: z
          .number()
          .int()
          .min(1)
          .max(MAX_DELEGATION_LIFETIME_SECONDS)
          .optional()
          .describe(
            "the longest a delegated key minted from this key lives (its expires_at is required, and at most this far ahead)",
          ),
      })
      .optional()
      .describe(
        "a usage key's own guardrail only: the key may mint delegated keys, each a subset of itself (docs/design/delegation.md); absent, it may not",
      ),
  })
  .describe("what a wallet may sign; anything the document does not allow is refused");
export type Guardrail = z.infer<typeof guardrailSchema>;
export type GuardrailInput = z.input<typeof guardrailSchema>;
