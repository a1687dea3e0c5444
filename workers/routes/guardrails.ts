// Wallets' guardrails (docs/design/guardrails.md): what each wallet may sign. Setting one is a managed
// write of the account's master key, forwarded to an enclave (the document checked here and there by
// the same schema, sent as canonical JSON); reading one is live: the hash and block AccountConfig
// keeps, and the document from that block's WalletGuardrailSet event, checked against the hash.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { keccak256, toBytes, type Address, type Hex } from "viem";
import { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { compileGuardrail, guardrailDocumentSchema } from "../../shared/guardrails/evaluate.ts";
import { signRequestSchema, toSignRequest } from "../../shared/guardrails/request.ts";
import { solanaAddressesOf } from "../enclave/solanaAddresses.ts";
import { guardrailDocumentAt, type GuardrailSubject } from "../../shared/guardrails/onChain.ts";
import { guardrailSchema, type Budget } from "../../shared/guardrails/schema.ts";
import { budgetCharge, budgetLimits, budgetStateSchema, countedDigest } from "../../shared/guardrails/budgets.ts";
import { toHash32 } from "../../shared/hashing.ts";
import { budgetsOf } from "../budgets/index.ts";
import type { EdgeConfig } from "../config.ts";
import { chainClient, contractAddress, read, readView } from "../chain/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import {
  jsonBody as body,
  jsonResponse as json,
  registerKeySecurity,
  requireKey,
  requireRunKey,
  route,
} from "./openapi.ts";
import { serveWrites, writeRoute } from "./write.ts";

const ZERO_HASH = `0x${"0".repeat(64)}`;

const setGuardrail = writeRoute(
  "set_wallet_guardrail",
  "Wallets",
  "Set what a wallet may sign (its guardrail), or remove it with null: deny by default, checked by the enclave before every signature. Needs the account's master key",
);

const walletGuardrailAnswer = z
  .object({
    wallet_address: z.string().describe("lowercase"),
    guardrail_hash: z.string().nullable().describe("keccak256 of the document's canonical JSON; null: no guardrail"),
    guardrail: guardrailSchema.nullable().describe("the document; null: the wallet signs whatever its scripts ask"),
    set_at_block: z.string().nullable().describe("the block whose WalletGuardrailSet event set it, decimal"),
  })
  .openapi("WalletGuardrail");

const getGuardrail = route("GET /get_wallet_guardrail", "Wallets", {
  summary: "A wallet's guardrail: what it may sign, as AccountConfig holds it",
  security: "key",
  middleware: [requireKey],
  request: {
    query: z.object({
      wallet_address: z
        .string()
        .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
        .openapi({ param: { name: "wallet_address", in: "query" }, description: "one of the account's wallets" }),
    }),
  },
  ok: json(walletGuardrailAnswer),
  // 404: not a wallet of the account.
  errors: [400, 401, 404, 429, 503],
});

const checkGuardrail = route("POST /check_guardrail", "Wallets", {
  summary:
    "Whether a wallet's guardrail (or a proposed one) allows a signature request, and by which rule: nothing is signed, nothing is charged",
  security: "key",
  // A read that takes a body: a delegated key asks it as its root would.
  middleware: [requireRunKey],
  request: {
    body: body(
      z.strictObject({
        wallet_address: z
          .string()
          .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
          .optional()
          .describe("one of the account's wallets: its guardrail decides (give this or guardrail)"),
        guardrail: guardrailDocumentSchema.optional().describe("a proposed document to decide with instead"),
        request: signRequestSchema,
      }),
    ),
  },
  ok: json(
    z
      .object({
        allowed: z.boolean(),
        rule: z.string().describe('the rule that decided, a path into the document ("transactions.chains")'),
        reason: z.string().optional().describe("for a refusal: the condition that did not hold"),
        observed: z.string().optional().describe("for a refusal: the value seen"),
        guardrail_hash: z.string().nullable().describe("the document decided with; null: the wallet has none"),
        budgets: z
          .object({ before: z.array(budgetStateSchema), after: z.array(budgetStateSchema) })
          .optional()
          .describe(
            "with wallet_address, when its guardrail has budgets counted per wallet or per usage key (this key): their counters before and after the request as if it were signed now; read, never consumed. Per-action budgets depend on the script and are not decided here",
          ),
      })
      .openapi("GuardrailDecision"),
  ),
  // 400: the body (neither or both of wallet_address and guardrail); 404: not a wallet of the account.
  errors: [400, 401, 404, 408, 413, 429, 503],
});

const getBudgets = route("GET /get_wallet_budgets", "Wallets", {
  summary:
    "A wallet's budgets (its guardrail's rolling-window limits): what each has counted in its window now and what is left, per scope",
  security: "key",
  middleware: [requireKey],
  request: { query: getGuardrail.request.query },
  ok: json(
    z
      .object({
        wallet_address: z.string().describe("lowercase"),
        guardrail_hash: z.string().nullable().describe("the guardrail whose budgets these are; null: no guardrail"),
        budgets: z
          .array(budgetStateSchema)
          .describe(
            "each budget's counters now: one entry for a wallet-wide budget, one per usage key (scope key:0x…) or per action (scope action:<cid>) that has used a per-key or per-action budget in its window",
          ),
      })
      .openapi("WalletBudgets"),
  ),
  errors: [400, 401, 404, 429, 503],
});

const usageKeyHashQuery = z.object({
  usage_api_key: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be the usage key's hash, 0x + 64 hex (list_api_keys names it)")
    .openapi({ param: { name: "usage_api_key", in: "query" }, description: "the usage key's hash" }),
});

const getKeyGuardrail = route("GET /get_usage_key_guardrail", "Usage keys", {
  summary:
    "A usage key's own guardrail: what every run of the key may sign, with any wallet, on top of each wallet's guardrail; with its budgets' counters",
  security: "key",
  middleware: [requireKey],
  request: { query: usageKeyHashQuery },
  ok: json(
    z
      .object({
        usage_key_hash: z.string().describe("lowercase"),
        guardrail_hash: z.string().nullable().describe("keccak256 of the document's canonical JSON; null: none"),
        guardrail: guardrailSchema.nullable().describe("the document; null: the key is narrowed by nothing of its own"),
        set_at_block: z.string().nullable().describe("the block whose UsageKeyGuardrailSet event set it, decimal"),
        budgets: z.array(budgetStateSchema).describe("the document's budgets' counters now (every scope with entries)"),
      })
      .openapi("UsageKeyGuardrail"),
  ),
  // 404: not a usage key of the account.
  errors: [400, 401, 404, 429, 503],
});

/** The document the subject's event carried in `block` whose bytes hash to `hash`. */
async function documentAt(config: EdgeConfig, master: bigint, subject: GuardrailSubject, block: bigint, hash: Hex) {
  const text = await read(() =>
    guardrailDocumentAt(chainClient(config), contractAddress(config), { master, ...subject, block, hash }),
  );
  if (text === undefined)
    throw new SigilError("chain_unavailable", "the guardrail's document was not found in its block; try again", {
      retryAfterSeconds: 5,
    });
  return text;
}

export function guardrailsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  registerKeySecurity(r);
  serveWrites(r, [setGuardrail]);

  r.openapi(getGuardrail, async (c) => {
    const wallet = c.req.valid("query").wallet_address.toLowerCase() as Address;
    const found = await walletGuardrail(c.get("config"), callerKey(c).keyHash, wallet);
    return c.json(
      found
        ? { wallet_address: wallet, guardrail_hash: found.hash, guardrail: found.document, set_at_block: found.block }
        : { wallet_address: wallet, guardrail_hash: null, guardrail: null, set_at_block: null },
      200,
    );
  });

  r.openapi(getBudgets, async (c) => {
    const wallet = c.req.valid("query").wallet_address.toLowerCase() as Address;
    const found = await walletGuardrail(c.get("config"), callerKey(c).keyHash, wallet);
    const budgets = found?.document.budgets ?? [];
    const states =
      found && budgets.length > 0
        ? await budgetsOf(c.env.BUDGETS, found.master, wallet).states(budgets.map(limitOf))
        : [];
    return c.json({ wallet_address: wallet, guardrail_hash: found?.hash ?? null, budgets: states }, 200);
  });

  r.openapi(getKeyGuardrail, async (c) => {
    const config = c.get("config");
    const caller = callerKey(c).keyHash;
    const usageKey = BigInt(c.req.valid("query").usage_api_key);
    const [[callerMaster], [keyMaster, isMaster]] = await Promise.all([
      readView(config, "resolveKey", [caller], caller),
      readView(config, "resolveKey", [usageKey], caller),
    ]);
    if (keyMaster !== callerMaster || isMaster || keyMaster === 0n)
      throw new SigilError("not_found", "no usage key with that hash exists on this account");
    const [hash, block] = await readView(config, "usageKeyGuardrail", [usageKey], caller);
    const id = toHash32(usageKey);
    if (BigInt(hash) === 0n)
      return c.json(
        { usage_key_hash: id, guardrail_hash: null, guardrail: null, set_at_block: null, budgets: [] },
        200,
      );
    const parsed = guardrailSchema.safeParse(safeJson(await documentAt(config, keyMaster, { usageKey }, block, hash)));
    if (!parsed.success)
      throw new SigilError(
        "internal_error",
        `the usage key's guardrail on chain (${hash}) is not a valid document; the enclave refuses every signature of the key until it is replaced`,
      );
    const budgets = parsed.data.budgets ?? [];
    const states = budgets.length
      ? await budgetsOf(c.env.BUDGETS, keyMaster, `key:${id}`).states(budgets.map(limitOf))
      : [];
    return c.json(
      {
        usage_key_hash: id,
        guardrail_hash: hash,
        guardrail: parsed.data,
        set_at_block: block.toString(),
        budgets: states,
      },
      200,
    );
  });

  // The enclave's check, made here on the same evaluator: what a script's request would meet.
  r.openapi(checkGuardrail, async (c) => {
    const input = c.req.valid("json");
    if ((input.wallet_address === undefined) === (input.guardrail === undefined))
      throw new SigilError("invalid_request", "give wallet_address or guardrail (one of them)", {
        details: [{ path: "wallet_address", message: "exactly one of wallet_address and guardrail" }],
      });
    let document = input.guardrail;
    let hash: string | null = document ? keccak256(toBytes(canonicalJson(document))) : null;
    if (input.wallet_address !== undefined) {
      const wallet = input.wallet_address.toLowerCase() as Address;
      const found = await walletGuardrail(c.get("config"), callerKey(c).keyHash, wallet);
      if (!found)
        return c.json(
          { allowed: true, rule: "no guardrail: the wallet signs whatever its scripts ask", guardrail_hash: null },
          200,
        );
      document = found.document;
      hash = found.hash;
      const budgets = (document.budgets ?? []).filter((b) => b.per !== "action");
      // A Solana transaction's spend counted in budgets of lamports is the wallet's own: its transfers and the fee it pays.
      const signer =
        input.request.kind === "solana_transaction" && budgets.some((b) => b.max_lamports !== undefined)
          ? (await solanaAddressesOf(c, [wallet])).get(wallet)
          : undefined;
      const request = signRequestOf(input.request, signer);
      const decision = decideWith(document, request);
      if (!decision.allowed || budgets.length === 0) return c.json({ ...decision, guardrail_hash: hash }, 200);
      let charge: ReturnType<typeof budgetCharge>;
      try {
        charge = budgetCharge(request);
      } catch (err) {
        // The rules allowed it, but it cannot be hashed (typed data that does not hold together):
        // the client's payload, which the enclave would never sign either.
        throw new SigilError(
          "invalid_request",
          `the request cannot be hashed: ${(err as Error).message.split("\n")[0]}`,
        );
      }
      const peek = await budgetsOf(c.env.BUDGETS, found.master, wallet).decide({
        op: "peek",
        account: toHash32(found.master),
        wallet,
        ref: c.get("ids").requestId,
        digest: countedDigest(wallet, charge.digest).toLowerCase(),
        value_wei: charge.valueWei.toString(),
        ...(charge.valueLamports > 0n ? { value_lamports: charge.valueLamports.toString() } : {}),
        budgets: budgetLimits(budgets, { keyHash: toHash32(callerKey(c).keyHash), cid: "" }),
      });
      if (!peek.granted)
        return c.json(
          {
            allowed: false,
            rule: `budgets.${peek.budget}`,
            reason: peek.reason,
            observed: peek.observed,
            guardrail_hash: hash,
            budgets: { before: peek.before, after: peek.before },
          },
          200,
        );
      return c.json({ ...decision, guardrail_hash: hash, budgets: { before: peek.before, after: peek.after } }, 200);
    }
    const decision = decideWith(document, signRequestOf(input.request));
    return c.json({ ...decision, guardrail_hash: hash }, 200);
  });

  return r;
}

/** The wallet's guardrail as the chain holds it, or undefined for none; a wallet not the account's is 404. */
async function walletGuardrail(config: EdgeConfig, keyHash: bigint, wallet: Address) {
  const derivation = await readView(config, "getWalletDerivation", [keyHash, wallet], keyHash);
  if (derivation === 0n) throw new SigilError("wallet_not_found", `${wallet} is not a wallet of this account`);
  const [hash, block] = await readView(config, "getWalletGuardrail", [keyHash, wallet], keyHash);
  if (hash === ZERO_HASH) return undefined;
  const [master] = await readView(config, "resolveKey", [keyHash], keyHash);
  const text = await documentAt(config, master, { wallet }, block, hash);
  // A ChainSecured admin writes the contract directly: a document that is not a guardrail is said
  // so (the enclave refuses every signature of the wallet for it), not passed off as one.
  const parsed = guardrailSchema.safeParse(safeJson(text));
  if (!parsed.success)
    throw new SigilError(
      "internal_error",
      `the wallet's guardrail on chain (${hash}) is not a valid document; the enclave refuses every signature of the wallet until it is replaced`,
    );
  return { hash, block: block.toString(), document: parsed.data, master };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The evaluator's request; a Solana transaction that does not decode is the client's mistake (400). */
function signRequestOf(input: Parameters<typeof toSignRequest>[0], solanaSigner?: string) {
  try {
    return toSignRequest(input, solanaSigner);
  } catch (err) {
    throw new SigilError("invalid_request", (err as Error).message, {
      details: [{ path: "request.transaction", message: (err as Error).message }],
    });
  }
}

/** A budget as the store's `states` takes it: every scope of it. */
function limitOf(b: Budget) {
  return {
    name: b.name,
    per: b.per ?? "wallet",
    window_seconds: b.window_seconds,
    ...(b.max_value_wei === undefined ? {} : { max_value_wei: b.max_value_wei }),
    ...(b.max_lamports === undefined ? {} : { max_lamports: b.max_lamports }),
    ...(b.max_signatures === undefined ? {} : { max_signatures: b.max_signatures }),
  };
}

/**
 * A document's decision on `request`; one that does not compile (a ChainSecured admin may write a
 * document past the API's checks) refuses everything, as the enclave does.
 */
function decideWith(document: unknown, request: ReturnType<typeof toSignRequest>) {
  let compiled: ReturnType<typeof compileGuardrail>;
  try {
    compiled = compileGuardrail(document);
  } catch (err) {
    return {
      allowed: false as const,
      rule: "guardrail",
      reason: `the guardrail does not hold together, so the enclave refuses every signature: ${(err as Error).message.split("\n")[0]}`,
    };
  }
  return compiled.check(request);
}
