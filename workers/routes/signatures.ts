// The signature endpoints of ChainSecured accounts (docs/design/api.md, Signature endpoints). The edge runs
// every check of docs/design/api.md in its order, each with its own code, before anything reaches an enclave
// (chain/walletSignature.ts). The enclave checks it all again: it never takes the edge's
// word for who signed. Each takes an Idempotency-Key, kept under the signer's wallet (signerHolder).
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { isAddress, type Address } from "viem";
import { z } from "zod";
import { addressField, responseSchemas, type EnclaveResponse, type OperationInput } from "../../shared/operations.ts";
import { walletLookupHash } from "../../shared/hashing.ts";
import { newRouter, pipeline, type EdgeEnv, type Stage } from "../router.ts";
import { enclave } from "../enclave/client.ts";
import { verifyWalletSignature } from "../chain/walletSignature.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import {
  idempotencyHeaders,
  idempotent,
  idempotentAnswerHeaders,
  openIdempotencyHeaders,
  walletHolder,
  type KeyHolder,
} from "../idempotency/index.ts";
import { openWriteLimit } from "../middleware/rateLimit/index.ts";
import { chargedHeader, forwardWrite, writeStages } from "./write.ts";
import { jsonBody as body, jsonResponse as json, requireKey, route } from "./openapi.ts";

// The envelope's own rules (sizes included) are checked by validateTypedData, in docs/design/api.md's order,
// so the schema only asks for the fields to be there; the body limit bounds them.
const envelope = {
  typed_data: z
    .unknown()
    .refine((v) => v !== undefined, "required")
    .describe("the full EIP-712 object: types, primaryType, domain, message {address, issuedAt}"),
  signature: z
    .string()
    .min(1)
    .describe("hex: a 65-byte ECDSA signature, or a contract wallet's ERC-1271 signature (at most 4 KiB)"),
};
const envelopeSchema = z.strictObject(envelope);
const convertSchema = z.strictObject({ new_admin_wallet_address: addressField, ...envelope });

/** What every signature endpoint may answer: the envelope's checks (docs/design/api.md's order), its body limit and deadline, the rate limit. */
const signatureErrors = [400, 401, 408, 413, 429, 503] as const;

// Open to anyone, but they only derive keys: the signer's wallet sends (and pays for) the transaction.
const openWrite = openWriteLimit({ spendsGas: false });

const replayHeaders = z.object(idempotentAnswerHeaders);

/** The route of a derivation a wallet signed for (open to anyone, its body the typed-data envelope). */
function derivationRoute<Op extends "create_wallet_with_signature" | "add_usage_api_key_with_signature">(
  op: Op,
  summary: string,
) {
  return route(`POST /${op}`, "Signatures", {
    summary,
    // No key: the signature in the body is the authorization.
    security: "open",
    middleware: [operationBodyLimit(op), openWrite],
    request: { headers: openIdempotencyHeaders, body: body(envelopeSchema) },
    ok: { ...json(responseSchemas[op] as (typeof responseSchemas)[Op]), headers: replayHeaders },
    errors: [...signatureErrors, 409, 422],
  });
}

const createWallet = derivationRoute(
  "create_wallet_with_signature",
  "Mint a wallet for the account of the wallet that signed CreateWallet; register it on chain with registerWalletDerivation",
);
const addUsageKey = derivationRoute(
  "add_usage_api_key_with_signature",
  "Mint a usage key and its wallet for the account of the wallet that signed AddUsageApiKey; attach them on chain with registerWalletDerivation and setUsageApiKey",
);

/**
 * The holder of a signature endpoint's Idempotency-Key: the wallet its typed data names, in the
 * object of the account that wallet's lookup hash names (the Idempotency object is per account).
 * The name is taken before the signature is checked, so that a replay needs no fresh signature (its
 * issuedAt window may have passed): that is safe because an answer is kept only once the signature
 * of that exact body was verified, the body (signature included) is in the fingerprint, and the
 * answer is sealed under the key and the body; a forged claim only opens a record that its failed
 * check frees at once. Typed data naming no address is served without a record (its check fails).
 */
async function signerHolder(_c: Context<EdgeEnv>, key: string, input: unknown): Promise<KeyHolder | undefined> {
  const address = (input as { typed_data?: { message?: { address?: unknown } } }).typed_data?.message?.address;
  if (typeof address !== "string" || !isAddress(address, { strict: false })) return undefined;
  return walletHolder(walletLookupHash(address), address, key, input);
}

/**
 * The stages of a derivation: made once per Idempotency-Key, under the signer's wallet. It is
 * derived afresh (random) each time the enclave is asked and sends nothing on chain, so a retry of
 * an attempt that gave no answer may simply ask again (no enclave memory, no routing back): only the
 * answer the client was given must stay the same.
 */
const derivationStages = [idempotent({ holder: signerHolder })];

/** A derivation the signer asked for: its signature checked (inside the stages, so a replay needs no fresh one), then derived. */
async function derive<Op extends "create_wallet_with_signature" | "add_usage_api_key_with_signature">(
  c: Context<EdgeEnv>,
  op: Op,
  primaryType: "CreateWallet" | "AddUsageApiKey",
  input: z.infer<typeof envelopeSchema>,
): Promise<EnclaveResponse<Op>> {
  await verifyWalletSignature(c.get("config"), primaryType, input);
  return enclave.call(op, { typed_data: input.typed_data, signature: input.signature } as OperationInput<Op>, {
    config: c.get("config"),
    ids: c.get("ids"),
  });
}

/**
 * The stage that refuses a ConvertAccount not signed by the wallet it names, before the write is
 * held or sent (and not for a replay, whose signature's time window may have passed).
 */
const signedByNewAdmin: Stage = async (c, next) => {
  const input = (c.req as { valid(target: "json"): z.infer<typeof convertSchema> }).valid("json");
  await verifyWalletSignature(c.get("config"), "ConvertAccount", input, input.new_admin_wallet_address as Address);
  await next();
};

const convert = route("POST /convert_to_chain_secured_account", "Signatures", {
  summary:
    "Hand a managed account to the wallet that signed ConvertAccount (message.address = new_admin_wallet_address); the master key loses its write rights",
  security: "key",
  middleware: [operationBodyLimit("convert_to_chain_secured_account"), requireKey],
  request: { headers: idempotencyHeaders, body: body(convertSchema) },
  ok: { ...json(responseSchemas.convert_to_chain_secured_account), headers: chargedHeader },
  errors: [...signatureErrors, 402, 403, 404, 409, 422],
});

export function signaturesRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(
    createWallet,
    pipeline<typeof createWallet>(derivationStages, async (c) =>
      c.json(await derive(c, "create_wallet_with_signature", "CreateWallet", c.req.valid("json")), 200),
    ),
  );

  r.openapi(
    addUsageKey,
    pipeline<typeof addUsageKey>(derivationStages, async (c) =>
      c.json(await derive(c, "add_usage_api_key_with_signature", "AddUsageApiKey", c.req.valid("json")), 200),
    ),
  );

  // A managed write like every other, once its signature is checked: the cost is reported by its stages.
  r.openapi(
    convert,
    pipeline<typeof convert>(writeStages("convert_to_chain_secured_account", signedByNewAdmin), async (c) => {
      const { new_admin_wallet_address, typed_data, signature } = c.req.valid("json");
      const converted = await forwardWrite(c, "convert_to_chain_secured_account", {
        new_admin_wallet_address,
        typed_data,
        signature,
      });
      return c.json(converted, 200);
    }),
  );

  return r;
}
