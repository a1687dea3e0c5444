// The operation table: everything the edge asks of an enclave, by name, with its input and output
// schemas, its body limit, whether it acts (a write or a run: never sent to a second enclave once
// delivered) or only reads, and the error codes it may answer. The edge validates a client's body
// with the operation's input schema, adds the caller's raw API key as `api_key`, and calls
// `enclave.call(op, input, …)` (workers/enclave/client.ts); the channel seals `{op, ids, input}`
// (shared/channel/); the enclave parses the input with the same schema and dispatches to the
// operation of the same name (enclave/operations/index.ts). Field names are the public API's
// (docs/design/api.md). The enclave hashes the key itself: it never trusts the edge for authorization.
import { budgetAccessSchema, budgetStateSchema } from "./guardrails/budgets.ts";
import { z } from "zod";
import { isApiKeyFormat } from "./apiKey.ts";
import { DELEGATED_KEY_PREFIX, delegationBlockSchema, MAX_DELEGATED_KEY_CHARS } from "./delegation.ts";
import { canonicalCid } from "./cid.ts";
import { isExposed, type ErrorCode } from "./errors.ts";
import { guardrailDocumentSchema } from "./guardrails/evaluate.ts";
import { permissionFields } from "./permissions.ts";
import { SIGNED_KINDS } from "./receipt.ts";

/** Every operation a client's request becomes, by its name (the public endpoint's). */
export const enclaveOperations = [
  "new_account",
  "create_wallet",
  "add_usage_api_key",
  "update_usage_api_key",
  "update_usage_api_key_metadata",
  "remove_usage_api_key",
  "add_group",
  "remove_group",
  "update_group",
  "add_action_to_group",
  "remove_action_from_group",
  "add_pkp_to_group",
  "remove_pkp_from_group",
  "add_action",
  "delete_action",
  "update_action_metadata",
  "set_wallet_guardrail",
  "set_usage_key_guardrail",
  "convert_to_chain_secured_account",
  "create_wallet_with_signature",
  "add_usage_api_key_with_signature",
  "sigil_action",
  "delegate_key",
] as const;
export type EnclaveOperation = (typeof enclaveOperations)[number];

const MAX_TEXT = 1024;
const MAX_LIST = 100;
const U64_MAX = (1n << 64n) - 1n;

export const apiKeyField = z
  .string()
  .refine(isApiKeyFormat, "must be a 44-character base64 API key")
  .transform((k) => k.trim());

/** A delegated key (shared/delegation.ts): its form only — the enclave checks its tag. */
export const delegatedKeyField = z
  .string()
  .max(MAX_DELEGATED_KEY_CHARS)
  .refine((k) => k.startsWith(DELEGATED_KEY_PREFIX), "must be a delegated key (sgd_…)");

/** The key a run or a read comes with: an API key, or a delegated key (docs/design/delegation.md). */
export const callerKeyField = z.union([apiKeyField, delegatedKeyField]);

/** The most delegated keys one `delegate_key` call mints. */
export const MAX_DELEGATE_COUNT = 10_000;

/**
 * What a first child of a usage key may be narrowed to (a delegation block's caveats; its id is made
 * by the enclave): any of expires_at, max_uses, groups, actions, wallets, budget, delegate: false.
 */
export const delegationCaveatsSchema = delegationBlockSchema.omit({ id: true });

/** A group id: a number or a decimal string (docs/design/api.md, Ids), a u64. */
export const groupIdField = z
  .union([
    z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    z.string().regex(/^\d{1,20}$/, "must be a decimal number"),
  ])
  .transform((v) => BigInt(v))
  .refine((v) => v <= U64_MAX, "must fit in 64 bits");

const groupIdList = z.array(groupIdField).max(MAX_LIST);

export const addressField = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address");
export const hash32Field = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be 0x followed by 64 hex digits");

/** `pkp_id`: a wallet address (any case) or the decimal id of one of the caller's wallets. */
export const pkpIdField = z.union([
  addressField,
  z.string().regex(/^\d{1,20}$/, "must be a wallet address or a decimal wallet id"),
  z.number().int().nonnegative(),
]);

/** A raw CID as its canonical CIDv0 (shared/cid.ts), or an issue saying why it cannot name a script. */
function toCanonicalCid(value: string, ctx: z.RefinementCtx): string {
  try {
    return canonicalCid(value);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: isExposed(err) ? err.message : "not an IPFS CID" });
    return z.NEVER;
  }
}

/**
 * A raw CID from a client (`action_ipfs_cid`, `ipfs_id`), turned into its canonical CIDv0 here at
 * the boundary: every grant, run and action identity downstream hashes that one form.
 */
export const cidField = z
  .string()
  .min(1)
  .max(128)
  .describe("an IPFS CID of a script: its CIDv0 (Qm…) or the same CIDv1 (bafy…), kept and hashed as the CIDv0")
  .transform(toCanonicalCid);

/** An entry of `cid_hashes_permitted`: a raw CID (made canonical), a `0x` hash, or `"0"` (any action). */
export const cidOrHashField = z
  .union([z.string().min(1).max(128), z.literal(0)])
  .describe(
    'a script\'s CID (CIDv0 Qm…, or its CIDv1 bafy…, hashed as the CIDv0), a 0x keccak256 hash, or "0" (any action)',
  )
  .transform((v, ctx) => (v === 0 || v === "0" || /^0x[0-9a-fA-F]{64}$/.test(v) ? v : toCanonicalCid(v, ctx)));

const name = z.string().max(MAX_TEXT);
const text = z.string().max(MAX_TEXT);

const usageKeyPermissions = {
  name,
  description: text,
  ...permissionFields(
    () => z.boolean(),
    () => groupIdList,
  ),
  /** Unix seconds; absent or 0: never expires. */
  expires_at: z.number().int().nonnegative().optional(),
  /** Per-key spend cap in cents (docs/design/billing.md); absent or 0: no cap. */
  spend_limit_cents: z.number().int().nonnegative().optional(),
};

/** The key to act on: the usage key itself, or its `0x` hash. */
const usageKeyRef = z.union([apiKeyField, hash32Field]);

const withKey = { api_key: apiKeyField };

const typedDataEnvelope = {
  typed_data: z.unknown(),
  // 4 KiB of signature as 0x-hex is 8 194 characters; validateTypedData measures the bytes.
  signature: z.string().min(1).max(8194),
};

/** The code itself or its IPFS CID, and the parameters for main. */
const sigilActionFields = {
  code: z.string().optional(),
  ipfs_id: cidField.optional(),
  js_params: z.unknown().optional(),
};
const oneSource = (r: { code?: string | undefined; ipfs_id?: string | undefined }) =>
  (r.code === undefined) !== (r.ipfs_id === undefined);
const oneSourceIssue = { message: "exactly one of code and ipfs_id is required", path: ["code"] };

/**
 * `POST /core/v1/sigil_action`'s body. The specification pins js_params down for clients: an
 * object or null (absent: main receives null). It is checked, not rebuilt, so the script receives
 * exactly the object sent (zod's object types drop a `__proto__` key). The enclave's own operation
 * runs main with whatever JSON value the edge hands it.
 */
export const sigilActionRequestSchema = z
  .strictObject({
    ...sigilActionFields,
    js_params: z
      .unknown()
      .refine((v) => v === null || (typeof v === "object" && !Array.isArray(v)), {
        error: "must be a JSON object or null",
      })
      .meta({ type: ["object", "null"], additionalProperties: true })
      .optional()
      .describe("the parameters main receives: a JSON object, or null"),
    dry_run: z
      .boolean()
      .optional()
      .describe(
        "run the script with signing stubbed: every signature it asks for is authorized and checked against the wallet's guardrail as in a run, answered with zeros, and listed in dry_run with its decision; nothing is signed. Charged as a run",
      ),
    timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(900_000)
      .optional()
      .describe(
        "the most the run may take, in ms: also the most it can cost, one cent per started second. Default: get_sigil_action_client_config's timeout_ms; at most its max_timeout_ms",
      ),
  })
  .refine(oneSource, oneSourceIssue)
  // The refinement, for the OpenAPI document and the clients generated from it: the code or its
  // CID, never both (the absent one is `false`, no value allowed).
  .meta({
    oneOf: [
      { type: "object", required: ["code"], properties: { code: { type: "string" }, ipfs_id: false } },
      { type: "object", required: ["ipfs_id"], properties: { ipfs_id: { type: "string" }, code: false } },
    ],
  });

export const requestSchemas = {
  new_account: z.strictObject({
    account_name: z.string().min(1).max(128),
    account_description: text.optional(),
    email: z.email().max(254).optional(),
  }),
  create_wallet: z.strictObject({ ...withKey, name: name.optional(), description: text.optional() }),
  add_usage_api_key: z.strictObject({ ...withKey, ...usageKeyPermissions }),
  update_usage_api_key: z.strictObject({ ...withKey, usage_api_key: usageKeyRef, ...usageKeyPermissions }),
  update_usage_api_key_metadata: z.strictObject({ ...withKey, usage_api_key: usageKeyRef, name, description: text }),
  remove_usage_api_key: z.strictObject({ ...withKey, usage_api_key: usageKeyRef }),
  add_group: z.strictObject({
    ...withKey,
    group_name: name,
    group_description: text,
    pkp_ids_permitted: z.array(pkpIdField).max(MAX_LIST),
    cid_hashes_permitted: z.array(cidOrHashField).max(MAX_LIST),
  }),
  remove_group: z.strictObject({ ...withKey, group_id: groupIdField }),
  update_group: z.strictObject({
    ...withKey,
    group_id: groupIdField,
    name,
    description: text,
    pkp_ids_permitted: z.array(pkpIdField).max(MAX_LIST),
    cid_hashes_permitted: z.array(cidOrHashField).max(MAX_LIST),
  }),
  add_action_to_group: z.strictObject({ ...withKey, group_id: groupIdField, action_ipfs_cid: cidField }),
  remove_action_from_group: z.strictObject({
    ...withKey,
    group_id: groupIdField,
    hashed_cid: z.union([hash32Field, z.literal("0"), z.literal(0)]),
  }),
  add_pkp_to_group: z.strictObject({ ...withKey, group_id: groupIdField, pkp_id: pkpIdField }),
  remove_pkp_from_group: z.strictObject({ ...withKey, group_id: groupIdField, pkp_id: pkpIdField }),
  add_action: z.strictObject({ ...withKey, action_ipfs_cid: cidField, name, description: text }),
  delete_action: z.strictObject({ ...withKey, hashed_cid: hash32Field }),
  update_action_metadata: z.strictObject({ ...withKey, hashed_cid: hash32Field, name, description: text }),
  set_wallet_guardrail: z.strictObject({
    ...withKey,
    wallet_address: pkpIdField.describe("the wallet: its address or its id"),
    guardrail: guardrailDocumentSchema
      .nullable()
      .describe("what the wallet may sign (docs/design/guardrails.md); null removes the wallet's guardrail"),
  }),
  set_usage_key_guardrail: z.strictObject({
    ...withKey,
    usage_api_key: usageKeyRef.describe("the usage key: its value, or its hash (0x + 64 hex)"),
    guardrail: guardrailDocumentSchema
      .nullable()
      .describe(
        "what every run of the key may sign, with any wallet, on top of each wallet's own guardrail (docs/design/guardrails.md); null removes it",
      ),
  }),
  convert_to_chain_secured_account: z.strictObject({
    ...withKey,
    new_admin_wallet_address: addressField,
    ...typedDataEnvelope,
  }),
  create_wallet_with_signature: z.strictObject(typedDataEnvelope),
  add_usage_api_key_with_signature: z.strictObject(typedDataEnvelope),
  delegate_key: z.strictObject({
    ...withKey,
    caveats: delegationCaveatsSchema.describe("what every key minted may do, at most: a subset of the usage key"),
    count: z
      .number()
      .int()
      .min(1)
      .max(MAX_DELEGATE_COUNT)
      .optional()
      .describe(
        `how many keys to mint, each with its own id (its own uses and revocation); default 1, at most ${MAX_DELEGATE_COUNT}`,
      ),
  }),
  sigil_action: z
    .strictObject({
      api_key: callerKeyField,
      ...sigilActionFields,
      /** The run's wall-clock budget (the edge caps it by the caller's credit); default: the configured timeout. */
      timeout_ms: z.number().int().positive().optional(),
      /** A dry run: nothing is signed (docs/design/guardrails.md, The dry run). */
      dry_run: z.boolean().optional(),
      /**
       * Billing on: the whole seconds the caller's hold covers, which the run's charge never passes
       * (shared/fees.ts). Absent: billing is off, and the receipt says 0 cents. Only the edge sets it:
       * a client's body is checked with sigilActionRequestSchema, which has no such field.
       */
      billing: z.strictObject({ granted_seconds: z.number().int().nonnegative() }).optional(),
      /**
       * Where the run reserves room in its wallets' budgets, and the edge's token for it
       * (docs/design/guardrails.md, Budgets), under the run's billing ref. Only the edge sets it;
       * absent, a budgeted signature is refused.
       */
      budget: budgetAccessSchema.extend({ ref: z.string().min(1).max(128) }).optional(),
    })
    .refine(oneSource, oneSourceIssue),
} as const satisfies Record<EnclaveOperation, z.ZodType>;

export type EnclaveRequest<Op extends EnclaveOperation> = z.input<(typeof requestSchemas)[Op]>;
export type ParsedEnclaveRequest<Op extends EnclaveOperation> = z.output<(typeof requestSchemas)[Op]>;

const txHash = z.string().regex(/^0x[0-9a-f]{64}$/);
const write = { success: z.literal(true), transaction_hash: txHash };
const writeOnly = z.object(write);

export const runErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  stack: z.string().optional(),
});

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/);

/** What every version of a run's receipt holds (shared/receipt.ts) besides its version and signature. */
const receiptFields = {
  request_id: z.string().describe("the request id the client got (X-Request-Id)"),
  account: hex32.describe("the master hash of the caller's account"),
  cid: z.string().describe("the code's CIDv0"),
  params_sha256: hex32.describe("SHA-256 of canonical JSON of js_params as sent (null when absent)"),
  response_sha256: hex32.describe("SHA-256 of canonical JSON of the answer's response"),
  logs_sha256: hex32.describe("SHA-256 of the UTF-8 bytes of the answer's logs"),
  has_error: z.boolean(),
  wallets: z
    .array(
      z.strictObject({
        address: z.string().regex(/^0x[0-9a-f]{40}$/),
        action: z
          .boolean()
          .describe("true for the action identity of the run's code, false for a wallet of the account"),
        signed: z.array(
          z.strictObject({
            kind: z.enum(SIGNED_KINDS),
            digest: hex32,
            rule: z.string().optional().describe("with a guardrail: the rule that allowed it"),
          }),
        ),
        key_exported: z.boolean().describe("the script read this key's private key"),
        guardrail: hex32
          .optional()
          .describe("the wallet's guardrail hash, when it has one (docs/design/guardrails.md)"),
        refused: z
          .array(
            z.strictObject({
              kind: z.enum([...SIGNED_KINDS, "export"]),
              digest: hex32.optional(),
              rule: z.string(),
            }),
          )
          .optional()
          .describe("what the wallet's guardrail refused, in order, with the rule that refused it"),
      }),
    )
    .describe("every key the run used, with the digest of each signature it made, in order"),
  started_at: z.string().describe("ISO 8601, UTC"),
  ended_at: z.string().describe("ISO 8601, UTC"),
  duration_ms: z.number().int().nonnegative(),
  charged_cents: z
    .number()
    .int()
    .nonnegative()
    .describe("what the ledger charges for this run (0 while billing is off)"),
  instance_id: z.string().describe("the enclave instance that ran it"),
  compose_hash: z.string().describe("the compose hash that instance runs"),
  dry_run: z.literal(true).optional().describe("a dry run: nothing was signed"),
  delegation: z
    .strictObject({
      root: hex32.describe("the usage key the delegated key descends from"),
      blocks: z.array(z.string().regex(/^[0-9a-f]{32}$/)).describe("the ids of its chain's blocks, first to last"),
    })
    .optional()
    .describe("a run through a delegated key: the chain of keys it came through (docs/design/delegation.md)"),
  anchor: z
    .strictObject({
      chain_id: z.number().int().positive(),
      contract: z
        .string()
        .regex(/^0x[0-9a-f]{40}$/)
        .describe("the ReceiptAnchor contract, lowercase"),
      epoch: z.number().int().positive().describe("the receipt key's epoch: the unix second it opened"),
    })
    .optional()
    .describe(
      "where the receipt's batch is anchored on chain: the root of the epoch's batch heads, under the receipt key (GET /attestation/receipt-anchor)",
    ),
};
const receiptSignature = z.string().regex(/^0x[0-9a-f]{130}$/);

/** A run's receipt (shared/receipt.ts): signed in the enclave by its attested receipt key, in a batch. */
export const runReceiptSchema = z
  .strictObject({
    version: z.literal(2),
    ...receiptFields,
    batch: z
      .strictObject({
        index: z.number().int().nonnegative().describe("the receipt's leaf in the batch"),
        size: z.number().int().positive().describe("how many receipts the batch holds"),
        proof: z
          .array(hex32)
          .describe("the leaf's Merkle audit path to the signed root (RFC 9162, SHA-256), deepest first"),
      })
      .describe("where the receipt sits in the batch of receipts whose Merkle root the receipt key signed"),
    signature: receiptSignature.describe(
      "EIP-191 signature by the receipt key (GET /attestation/receipt-key) over the 32 bytes of the batch's Merkle root",
    ),
  })
  .describe("a signed receipt of the run, to verify offline: SDK verifyReceipt, sigil verify-receipt")
  // Its name in the OpenAPI document (zod's registry id, which the document's generator reads).
  .meta({ id: "RunReceipt" });

/** A receipt made before batches (version 1): its signature is over the receipt itself. */
export const runReceiptV1Schema = z
  .strictObject({
    version: z.literal(1),
    ...receiptFields,
    signature: receiptSignature.describe(
      "EIP-191 signature by the receipt key over the receipt without signature as canonical JSON",
    ),
  })
  .describe("a signed receipt of version 1 (before batches)")
  .meta({ id: "RunReceiptV1" });

export const sigilActionResponseSchema = z.object({
  response: z.unknown(),
  logs: z.string(),
  has_error: z.boolean(),
  error: runErrorSchema.optional(),
  cid: z.string(),
  duration_ms: z.number().nonnegative(),
  receipt: runReceiptSchema,
  dry_run: z
    .object({
      requests: z
        .array(
          z.object({
            wallet: z.string().describe("the wallet (or the code's action identity) asked to sign"),
            action: z.boolean(),
            kind: z.enum([...SIGNED_KINDS, "export"]),
            digest: z.string().nullable().describe("what would have been signed; null for an export"),
            allowed: z.boolean(),
            rule: z.string().nullable().describe("the guardrail's deciding rule; null without a guardrail"),
            reason: z.string().optional().describe("for a refusal: why"),
            observed: z.string().optional().describe("for a guardrail's refusal: the value seen"),
            guardrail: z.string().nullable().describe("the wallet's guardrail hash; null for none"),
            code: z
              .string()
              .optional()
              .describe("a refusal that is not a guardrail's: its code (permission_denied, …)"),
            decoded: z
              .record(z.string(), z.unknown())
              .optional()
              .describe(
                "what was asked, as a person reads it: a transaction's to, value, chain_id, selector and, decoded by the guardrail's ABI, its call; typed data's primary_type, domain and message; a message's text",
              ),
            budgets: z
              .object({ before: z.array(budgetStateSchema), after: z.array(budgetStateSchema) })
              .optional()
              .describe(
                "a budgeted wallet's budgets before and after this signature, as if the run were real (counters are read, never consumed); after equals before for a refusal",
              ),
          }),
        )
        .describe("every signing use the script asked for, in order, with what a real run would have met"),
      would_cost_cents: z
        .number()
        .int()
        .nonnegative()
        .describe(
          "what a real run as long as this one would be charged, in cents (the dry run itself is charged as a run)",
        ),
    })
    .optional()
    .describe("a dry run's account: present only when the request asked for dry_run"),
});
export type SigilActionResponse = z.infer<typeof sigilActionResponseSchema>;

/** The writes that answer only their transaction. */
const WRITE_ONLY = [
  "update_usage_api_key",
  "update_usage_api_key_metadata",
  "remove_usage_api_key",
  "remove_group",
  "update_group",
  "remove_action_from_group",
  "add_pkp_to_group",
  "remove_pkp_from_group",
  "delete_action",
  "update_action_metadata",
  "convert_to_chain_secured_account",
] as const;

/** A wallet's Solana address, beside its EVM address in every answer that names a new wallet. */
const solanaAddress = z
  .string()
  .describe("the wallet's Solana address: base58 of the Ed25519 key the enclave derives beside its EVM key");

export const responseSchemas = {
  new_account: z.object({
    ...write,
    api_key: z.string(),
    wallet_address: z.string(),
    solana_address: solanaAddress,
    account_id: z.string(),
  }),
  create_wallet: z.object({
    ...write,
    wallet_address: z.string(),
    solana_address: solanaAddress,
    wallet_id: z.string(),
  }),
  add_usage_api_key: z.object({ ...write, usage_api_key: z.string() }),
  add_group: z.object({ ...write, group_id: z.string() }),
  add_action_to_group: z.object({ ...write, hashed_cid: z.string() }),
  add_action: z.object({ ...write, hashed_cid: z.string() }),
  set_wallet_guardrail: z.object({
    ...write,
    guardrail_hash: z
      .string()
      .nullable()
      .describe("keccak256 of the document's canonical JSON, as AccountConfig keeps it; null when removed"),
  }),
  set_usage_key_guardrail: z.object({
    ...write,
    guardrail_hash: z
      .string()
      .nullable()
      .describe("keccak256 of the document's canonical JSON, as AccountConfig keeps it; null when removed"),
  }),
  ...(Object.fromEntries(WRITE_ONLY.map((op) => [op, writeOnly])) as Record<
    (typeof WRITE_ONLY)[number],
    typeof writeOnly
  >),
  create_wallet_with_signature: z.object({
    wallet_address: z.string(),
    solana_address: solanaAddress,
    derivation_path: z.string(),
    master_wallet_address: z
      .string()
      .describe(
        "the signer's account's master wallet (the PKP whose derivation is the master hash): wallet 0, which newChainSecuredAccount(name, description, amw) registers",
      ),
    account_id: z
      .string()
      .describe("the master hash of the signer's account, or of the account newChainSecuredAccount will create for it"),
  }),
  add_usage_api_key_with_signature: z.object({
    usage_api_key: z.string(),
    wallet_address: z.string(),
    solana_address: solanaAddress,
    derivation_path: z.string(),
    usage_api_key_hash: z.string(),
  }),
  delegate_key: z
    .object({
      keys: z
        .array(z.string())
        .describe("the delegated keys (sgd_…), shown once: each a bearer secret, kept as an API key is"),
      ids: z.array(z.string()).describe("each key's block id, in order: what revoke_delegation names"),
      root: z.string().describe("the hash of the usage key they descend from (0x + 64 hex)"),
      expires_at: z
        .number()
        .int()
        .nullable()
        .describe("unix seconds the keys stop working; null: when the usage key does"),
    })
    .meta({ id: "DelegatedKeys" }),
  sigil_action: sigilActionResponseSchema,
} as const satisfies Record<EnclaveOperation, z.ZodType>;

export type EnclaveResponse<Op extends EnclaveOperation> = z.infer<(typeof responseSchemas)[Op]>;

/** The body limit of every route and operation that does not take a script. */
export const DEFAULT_BODY_LIMIT = 256 << 10;
/**
 * The body limit of what takes a script (docs/design/sandbox.md, Limits: code 4 MiB, request body 6 MiB):
 * sigil_action, and get_sigil_action_ipfs_id, which takes the same scripts.
 */
export const SCRIPT_BODY_LIMIT = 6 << 20;

/**
 * The body limit of what is signed typed data (the three ChainSecured flows): far above the 4 KiB
 * of typed data plus 4 KiB of signature, so oversized parts still get docs/design/api.md's 413 from the
 * typed-data check, with its message, and bounded before anything is checked (they need no key).
 */
export const TYPED_DATA_BODY_LIMIT = 64 << 10;

/** A write sends a transaction; a run executes a script; a read changes nothing. */
export type OperationKind = "write" | "run" | "read";

export type OperationSpec = {
  input: z.ZodType;
  output: z.ZodType;
  kind: OperationKind;
  /** The largest body a client may send for it, in bytes (the edge's route and the enclave both hold to it). */
  bodyLimit: number;
  /** The error codes it may answer. */
  errors: readonly ErrorCode[];
};

/** What any operation may answer: its input refused, a reused Idempotency-Key, an enclave that cannot serve it. */
const ANY: readonly ErrorCode[] = [
  "invalid_request",
  "payload_too_large",
  "idempotency_key_reused",
  "internal_error",
  "enclave_unavailable",
];
/** An operation by an API key: the key unknown, removed or expired, or without the scope. */
const KEYED: readonly ErrorCode[] = [...ANY, "invalid_api_key", "permission_denied", "chain_unavailable"];
/** A managed write: what the contract refuses (contractErrors.ts), and a chain that does not take it. */
const WRITE: readonly ErrorCode[] = [
  ...KEYED,
  "account_key_required",
  "chain_secured_account",
  "group_not_found",
  "wallet_not_found",
  "action_not_found",
  "already_exists",
  "not_found",
];
/** A write on a wallet's typed-data signature. */
const SIGNED: readonly ErrorCode[] = [
  ...WRITE,
  "invalid_typed_data",
  "wrong_primary_type",
  "wrong_chain_id",
  "invalid_signature",
  "signature_expired",
];

/** An entry for a client operation: its schemas from requestSchemas/responseSchemas, a write with WRITE's codes and the default limit unless told. */
const writeOp = <Op extends EnclaveOperation>(
  op: Op,
  spec: { errors?: readonly ErrorCode[]; kind?: OperationKind; bodyLimit?: number } = {},
) => ({
  input: requestSchemas[op],
  output: responseSchemas[op],
  kind: spec.kind ?? ("write" as OperationKind),
  bodyLimit: spec.bodyLimit ?? DEFAULT_BODY_LIMIT,
  errors: spec.errors ?? WRITE,
});

/** An operation on signed typed data: its codes and its body limit. */
const SIGNED_SPEC = { errors: SIGNED, bodyLimit: TYPED_DATA_BODY_LIMIT };

/**
 * The Solana addresses of some of the caller's wallets (at most a page of a list), which only the
 * enclave can derive: the edge asks for those of a list page it has not seen before and keeps them
 * (an address never changes). Any live key of the account may ask; a wallet not of its account is
 * left out of the answer.
 */
export const solanaAddressesInputSchema = z.strictObject({
  api_key: callerKeyField,
  wallets: z
    .array(z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a wallet address"))
    .min(1)
    .max(MAX_LIST),
});
export const solanaAddressesOutputSchema = z.object({
  solana_addresses: z.record(z.string(), z.string()).describe("wallet address (lowercase) → Solana address"),
});

/**
 * Whether a delegated key is one an enclave of this deployment made (its tag checks under the secret
 * of the usage key it names): the edge asks once per key it has not seen, before the key's root
 * account is billed, limited or read for it, so that a forged key never touches that account. Says
 * nothing of the root key's standing, which every run checks itself.
 */
export const checkDelegatedKeyInputSchema = z.strictObject({ key: delegatedKeyField });
export const checkDelegatedKeyOutputSchema = z.object({
  valid: z.boolean(),
  root: z.string().describe("the root usage key's hash (0x + 64 hex), when valid"),
  counters: z
    .array(z.string())
    .describe(
      "each block's counter name in the Delegations store, when valid (shared/delegationToken.ts checkedCounters)",
    ),
});

/** The enclave's whole health report (health.ts), which the edge's /health reads. */
export const healthOutputSchema = z.record(z.string(), z.unknown());

/**
 * The public `/attestation` as the edge's client would get it (a fresh quote over its nonce): the
 * edge names that client, so its nonce quotes count against that client's budget, not the edge's.
 * The answer is passed through as it is (status, headers, body), so a verifier can check its bytes.
 */
export const attestationInputSchema = z.strictObject({
  /** The query string of the client's request, `?nonce=…` and the rest. */
  query: z.string().max(4096),
  /** Who the edge says asked (the address it saw). */
  client: z.string().min(1).max(256),
});
export const attestationOutputSchema = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
});

/** The operation table. */
export const operations = {
  new_account: writeOp("new_account", { errors: [...ANY, "chain_unavailable", "already_exists", "rate_limited"] }),
  create_wallet: writeOp("create_wallet"),
  add_usage_api_key: writeOp("add_usage_api_key"),
  update_usage_api_key: writeOp("update_usage_api_key"),
  update_usage_api_key_metadata: writeOp("update_usage_api_key_metadata"),
  remove_usage_api_key: writeOp("remove_usage_api_key"),
  add_group: writeOp("add_group"),
  remove_group: writeOp("remove_group"),
  update_group: writeOp("update_group"),
  add_action_to_group: writeOp("add_action_to_group"),
  remove_action_from_group: writeOp("remove_action_from_group"),
  add_pkp_to_group: writeOp("add_pkp_to_group"),
  remove_pkp_from_group: writeOp("remove_pkp_from_group"),
  add_action: writeOp("add_action"),
  delete_action: writeOp("delete_action"),
  update_action_metadata: writeOp("update_action_metadata"),
  set_wallet_guardrail: writeOp("set_wallet_guardrail"),
  set_usage_key_guardrail: writeOp("set_usage_key_guardrail"),
  convert_to_chain_secured_account: writeOp("convert_to_chain_secured_account", SIGNED_SPEC),
  // The two derivations answer what the signature derives and send no transaction: they only read.
  create_wallet_with_signature: writeOp("create_wallet_with_signature", { ...SIGNED_SPEC, kind: "read" }),
  add_usage_api_key_with_signature: writeOp("add_usage_api_key_with_signature", { ...SIGNED_SPEC, kind: "read" }),
  sigil_action: {
    input: requestSchemas.sigil_action,
    output: responseSchemas.sigil_action,
    kind: "run" as OperationKind,
    bodyLimit: SCRIPT_BODY_LIMIT,
    errors: [...KEYED, "compile_error", "not_found", "executor_busy", "ipfs_unavailable", "wallet_not_found"],
  },
  delegate_key: writeOp("delegate_key", {
    kind: "read",
    errors: [...KEYED, "account_key_required"],
  }),
  check_delegated_key: {
    input: checkDelegatedKeyInputSchema,
    output: checkDelegatedKeyOutputSchema,
    kind: "read" as OperationKind,
    bodyLimit: DEFAULT_BODY_LIMIT,
    errors: ANY,
  },
  solana_addresses: {
    input: solanaAddressesInputSchema,
    output: solanaAddressesOutputSchema,
    kind: "read" as OperationKind,
    bodyLimit: DEFAULT_BODY_LIMIT,
    errors: KEYED,
  },
  health: {
    input: z.strictObject({}),
    output: healthOutputSchema,
    kind: "read" as OperationKind,
    bodyLimit: DEFAULT_BODY_LIMIT,
    errors: ANY,
  },
  attestation: {
    input: attestationInputSchema,
    output: attestationOutputSchema,
    kind: "read" as OperationKind,
    bodyLimit: DEFAULT_BODY_LIMIT,
    errors: [...ANY, "rate_limited"],
  },
} as const satisfies Record<string, OperationSpec>;

export type OperationName = keyof typeof operations;
export type OperationInput<Op extends OperationName> = z.input<(typeof operations)[Op]["input"]>;
export type ParsedInput<Op extends OperationName> = z.output<(typeof operations)[Op]["input"]>;
export type OperationOutput<Op extends OperationName> = z.infer<(typeof operations)[Op]["output"]>;

/** Whether `name` is an operation of the table. */
export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(operations, name);
}

/** Whether an operation acts (a write or a run): once delivered, it is never sent to a second enclave. */
export function acts(op: OperationName): boolean {
  return operations[op].kind !== "read";
}
