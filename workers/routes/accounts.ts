// Accounts (docs/design/api.md, Accounts and keys): new_account, forwarded to an enclave, which makes the master
// key and registers the account; account_exists and get_account, live eth_calls. new_account takes
// an Idempotency-Key too (kept per client address: idempotency/). Usage keys are in usageKeys.ts.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSchemas, responseSchemas } from "../../shared/operations.ts";
import { runChargeCents, WRITE_CENTS } from "../../shared/fees.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { newRouter, pipeline, type EdgeEnv } from "../router.ts";
import { ledgerOf } from "../billing/account.ts";
import { readView } from "../chain/client.ts";
import { enclave } from "../enclave/client.ts";
import {
  attemptOf,
  idempotent,
  idempotentAnswerHeaders,
  newAccountHolder,
  openIdempotencyHeaders,
} from "../idempotency/index.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import { openWriteLimit } from "../middleware/rateLimit/index.ts";
import { jsonBody as body, jsonResponse as json, registerKeySecurity, requireKey, route } from "./openapi.ts";

const newAccount = route("POST /new_account", "Accounts", {
  summary:
    "Create a managed account: its master API key (shown once, or again to a retry with the same Idempotency-Key), the Account Master Wallet and the account id",
  // Anyone may call it, and the enclave's payers pay for the account's transaction.
  security: "open",
  middleware: [operationBodyLimit("new_account"), openWriteLimit({ spendsGas: true })],
  request: { headers: openIdempotencyHeaders, body: body(requestSchemas.new_account) },
  ok: { ...json(responseSchemas.new_account), headers: z.object(idempotentAnswerHeaders) },
  errors: [400, 408, 409, 413, 422, 429, 503],
});

const accountExists = route("GET /account_exists", "Accounts", {
  summary:
    "Whether the key in the header is the master or a usage key of an existing account, and whether that account is managed",
  security: "key",
  ok: json(z.object({ exists: z.boolean(), managed: z.boolean() })),
  errors: [400, 401, 429, 503],
});

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

const accountSchema = z
  .object({
    account_id: z
      .string()
      .describe(
        "the account's master hash, 0x + 64 hex: the key AccountConfig keeps the account under (new_account's account_id; a run receipt's `account`)",
      ),
    account_name: z.string(),
    account_description: z.string(),
    managed: z
      .boolean()
      .describe("true: the service's master key administers it; false: a ChainSecured account its admin wallet writes"),
    admin: z
      .string()
      .nullable()
      .describe("a ChainSecured account's admin wallet, lowercase; null for a managed account"),
    key: z.object({
      kind: z.enum(["master", "usage"]).describe("which kind of key the caller used"),
      hash: z.string().describe("that key's hash, 0x + 64 hex (a usage key's id in list_api_keys)"),
    }),
    wallet_count: z.number().int().nonnegative(),
    group_count: z.number().int().nonnegative(),
    usage_key_count: z.number().int().nonnegative(),
    action_count: z.number().int().nonnegative(),
    fees: z
      .object({
        billing: z.boolean().describe("whether this deployment charges runs and writes (false: everything is free)"),
        run_cents_per_second: z
          .number()
          .int()
          .nonnegative()
          .describe("a run costs this per started second (at least one second); 0 while billing is off"),
        write_cents: z.number().int().nonnegative().describe("what a managed write costs; 0 while billing is off"),
      })
      .describe(
        "what the account pays: a run's most is ceil(timeout_ms / 1000) × run_cents_per_second, timeout_ms from get_sigil_action_client_config",
      ),
  })
  .openapi("Account");

const getAccount = route("GET /get_account", "Accounts", {
  summary:
    "The caller's account: its id (the master hash), name, description, mode, counts of wallets, groups, usage keys and actions, the kind of key asking, and the fees it pays",
  security: "key",
  middleware: [requireKey],
  ok: json(accountSchema),
  // 400: two different keys; 401: an unknown, removed or expired key.
  errors: [400, 401, 429, 503],
});

export function accountsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  registerKeySecurity(r);

  // Under an Idempotency-Key the account is made once per client address and key (newAccountHolder).
  // A retry goes back to the enclave process the first attempt reached, whose memory answers the
  // account it made. If that process is gone, so is the key of any account it made (keys live only in
  // the answer): nobody can use that account, so a new one is made, as the client would with a new
  // key, rather than answering write_outcome_unknown for good — a run's retry, not a write's.
  r.openapi(
    newAccount,
    pipeline<typeof newAccount>([idempotent({ retry: "run", holder: newAccountHolder })], async (c) => {
      const input = c.req.valid("json");
      const res = await enclave.call("new_account", input, {
        config: c.get("config"),
        ids: c.get("ids"),
        idempotent: attemptOf(c)?.send,
      });
      // The email is kept only in the account's ledger, for its Stripe customer (docs/design/billing.md), and
      // with billing on the ledger learns that the new account has no webhooks yet, so its runs
      // make no call to a Webhooks object until it has some (ledger.ts, `opened`). The account
      // exists already: a failure here is logged; the customer is then made without the email, and
      // the first run asks the Webhooks object.
      if (c.env.LEDGER && (input.email || c.get("config").billing)) {
        await ledgerOf(c.env.LEDGER, apiKeyHash(res.api_key))
          .opened(input.email)
          .catch((err: unknown) =>
            c.get("log").error("could not open the new account's ledger", { error: String(err) }),
          );
      }
      return c.json(res, 200);
    }),
  );

  r.openapi(accountExists, async (c) => {
    const { keyHash } = callerKey(c);
    const [master, , managed] = await readView(c.get("config"), "resolveKey", [keyHash]);
    // resolveKey reports nothing for unknown and removed keys; for a converted account's old master
    // key (and its usage keys) `managed` is false.
    const exists = master !== 0n;
    return c.json({ exists, managed: exists && managed }, 200);
  });

  r.openapi(getAccount, async (c) => {
    const { keyHash } = callerKey(c);
    const config = c.get("config");
    const a = await readView(config, "getAccount", [keyHash], keyHash);
    const billing = config.billing;
    return c.json(
      {
        account_id: toHash32(a.master),
        account_name: a.name,
        account_description: a.description,
        managed: a.managed,
        admin: a.managed || a.admin === ZERO_ADDRESS ? null : a.admin.toLowerCase(),
        key: { kind: keyHash === a.master ? ("master" as const) : ("usage" as const), hash: toHash32(keyHash) },
        wallet_count: Number(a.walletCount),
        group_count: Number(a.groupCount),
        usage_key_count: Number(a.usageKeyCount),
        action_count: Number(a.actionCount),
        fees: {
          billing,
          // The fee of one second, from the function the ledger and the receipts both use.
          run_cents_per_second: billing ? runChargeCents(1000, 1) : 0,
          write_cents: billing ? WRITE_CENTS : 0,
        },
      },
      200,
    );
  });

  return r;
}
