// Accounts (api.md, Accounts and keys): new_account, forwarded to an enclave, which makes the master
// key and registers the account; account_exists, a live eth_call. new_account takes an
// Idempotency-Key too (kept per client address: idempotency/). Usage keys are in usageKeys.ts.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSchemas, responseSchemas } from "../../shared/operations.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
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
import { jsonBody as body, jsonResponse as json, registerKeySecurity, route } from "./openapi.ts";

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
      // The email is kept only in the account's ledger, for its Stripe customer (billing.md), and
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

  return r;
}
