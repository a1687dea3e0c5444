// Top-ups (docs/design/billing.md, Stripe; docs/design/api.md, Billing) through the edge in workerd, with the real `stripe`
// SDK talking to the local Stripe emulator, against the real chain and enclave. Payments are
// confirmed client-side exactly as a browser would against Stripe's REST API; Stripe's webhook
// is the emulator's own event, signed here with the webhook secret and posted to the edge (the
// edge in workerd has no address the emulator could reach). Every test ends with the audit of
// every ledger there is (ledgers.ts).
import { env, listDurableObjectIds, runInDurableObject, SELF } from "cloudflare:test";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodePacked,
  getAddress,
  http,
  keccak256,
  parseEther,
  type Abi,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { buildTypedData, signableTypedData, typedDataDigest, type SigilPrimaryType } from "../../../shared/eip712.ts";
import { accountConfigAbi } from "../../../shared/generated/accountConfigAbi.ts";
import { generateApiKey } from "../../../shared/apiKey.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";
import type { Env } from "../../../workers/env.ts";
import erc1271Wallet from "../fixtures/erc1271Wallet.json";
import { ok as enclaveOk } from "../../enclave/client.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "../stack.ts";
import { billingLedgers, ledgerRows } from "./ledgers.ts";

const { edge, ok200, expectError } = edgeClient(SELF);
const namespace = (env as unknown as Env).LEDGER!;
const CHAIN_ID = 31337;
// Every account is made through `newAccount` (or, made by a wallet on chain, named by
// `ledgerOfMaster`); after each test every ledger is audited (ledgers.ts).
const { newAccount, credit, ledgerOf, ledgerOfMaster, snapshot } = billingLedgers({
  self: SELF,
  namespace,
  listIds: () => listDurableObjectIds(namespace),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});

// --- Stripe, as a client and as Stripe ---------------------------------------------------------

const stripeBase = () => inject("stripeApiBase");

async function stripeApi<T = Record<string, unknown>>(
  method: "GET" | "POST",
  path: string,
  key: string,
  form?: Record<string, string>,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${stripeBase()}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** What a browser does with Stripe.js: confirm the intent with a test card, with the publishable key. */
async function payWith(
  intent: { payment_intent_id: string; client_secret: string },
  card = "pm_card_visa",
): Promise<number> {
  const r = await stripeApi(
    "POST",
    `/v1/payment_intents/${intent.payment_intent_id}/confirm`,
    inject("stripePublishableKey"),
    { payment_method: card, client_secret: intent.client_secret },
  );
  return r.status;
}

type Event = { id: string; type: string; data: { object: { id: string } } };

/** The emulator's `type` event for the intent, as Stripe would deliver it. */
async function eventFor(intentId: string, type = "payment_intent.succeeded"): Promise<Event> {
  const { body } = await stripeApi<{ data: Event[] }>(
    "GET",
    `/v1/events?type=${type}&limit=100`,
    inject("stripeSecretKey"),
  );
  const event = body.data.find((e) => e.data.object.id === intentId);
  if (!event) throw new Error(`the emulator has no ${type} event for ${intentId}`);
  return event;
}

async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Stripe's signature scheme: `t=<seconds>,v1=HMAC-SHA256(secret, "<t>.<body>")`. */
async function stripeSignature(payload: string, options: { secret?: string; at?: number } = {}): Promise<string> {
  const t = options.at ?? Math.floor(Date.now() / 1000);
  return `t=${t},v1=${await hmacHex(options.secret ?? inject("stripeWebhookSecret"), `${t}.${payload}`)}`;
}

async function postWebhook(
  payload: string,
  signature: string | undefined,
): Promise<Reply<{ received?: boolean; credited_cents?: number; error?: { code: string } }>> {
  const res = await SELF.fetch("http://edge/core/v1/billing/webhook", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(signature === undefined ? {} : { "stripe-signature": signature }),
    },
    body: payload,
  });
  return { status: res.status, body: (await res.json()) as never, headers: res.headers };
}

async function deliver(event: Event) {
  const payload = JSON.stringify(event, null, 2);
  return postWebhook(payload, await stripeSignature(payload));
}

// --- accounts ----------------------------------------------------------------------------------

type Intent = { payment_intent_id: string; client_secret: string };
const createIntent = (key: string, amount_cents: number, headers?: Record<string, string>) =>
  edge<Intent>("billing/create_payment_intent", { key, body: { amount_cents }, ...(headers ? { headers } : {}) });
const confirm = (key: string, id: string) =>
  edge<{ credited_cents: number; already_credited: boolean; balance_cents: number }>("billing/confirm_payment", {
    key,
    body: { payment_intent_id: id },
  });
const balanceOf = async (key: string) =>
  (await ok200<{ balance_cents: number; balance_display: string }>("billing/balance", { key })).balance_cents;

async function paidIntent(key: string, cents: number): Promise<Intent> {
  const r = await createIntent(key, cents);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(await payWith(r.body)).toBe(200);
  return r.body;
}

describe("stripe_config", () => {
  it("gives the publishable key, and the emulator's URL as api_base", async () => {
    expect(await ok200("billing/stripe_config")).toEqual({
      publishable_key: inject("stripePublishableKey"),
      api_base: stripeBase(),
    });
  });
});

describe("a top-up by card", () => {
  it("create → pay with pm_card_visa → confirm_payment credits the amount once; the balance reads it back", async () => {
    const key = await newAccount();
    expect(await ok200("billing/balance", { key })).toEqual({ balance_cents: 0, balance_display: "$0.00" });
    const intent = await paidIntent(key, 1234);
    expect(intent.payment_intent_id).toMatch(/^pi_/);
    expect(intent.client_secret.startsWith(`${intent.payment_intent_id}_secret_`)).toBe(true);
    expect((await confirm(key, intent.payment_intent_id)).body).toEqual({
      credited_cents: 1234,
      already_credited: false,
      balance_cents: 1234,
    });
    expect((await confirm(key, intent.payment_intent_id)).body).toEqual({
      credited_cents: 0,
      already_credited: true,
      balance_cents: 1234,
    });
    expect(await ok200("billing/balance", { key })).toEqual({ balance_cents: 1234, balance_display: "$12.34" });
  });

  it("makes one Stripe customer per account, with the account and new_account's email, used by every intent", async () => {
    const key = await newAccount("with email", { email: "owner@example.com" });
    const [a, b] = await Promise.all([createIntent(key, 500), createIntent(key, 600)]);
    const secret = inject("stripeSecretKey");
    const intents = await Promise.all(
      [a, b].map(
        async (r) =>
          (
            await stripeApi<{
              customer: string;
              metadata: Record<string, string>;
              amount: number;
              currency: string;
              automatic_payment_methods: { enabled: boolean };
            }>("GET", `/v1/payment_intents/${r.body.payment_intent_id}`, secret)
          ).body,
      ),
    );
    const account = apiKeyHash(key).toString(16).padStart(64, "0");
    for (const intent of intents) {
      expect(intent).toMatchObject({
        currency: "usd",
        metadata: { account },
        automatic_payment_methods: { enabled: true },
      });
      expect(intent.customer).toBe(intents[0]?.customer);
    }
    const customer = (
      await stripeApi<{ email: string; metadata: Record<string, string> }>(
        "GET",
        `/v1/customers/${intents[0]?.customer}`,
        secret,
      )
    ).body;
    expect(customer).toMatchObject({ email: "owner@example.com", metadata: { account } });
    expect(await ledgerOf(key).customer()).toBe(intents[0]?.customer);
  });

  it("an Idempotency-Key makes a retried create the same intent, replayed (Idempotent-Replayed, the first request's id); another amount is 422; a malformed key 400", async () => {
    const key = await newAccount();
    const first = await createIntent(key, 700, { "idempotency-key": "order-17" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await createIntent(key, 700, { "idempotency-key": "order-17" });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("original-request")).toBe(first.headers.get("x-request-id"));
    expect((await createIntent(key, 700, { "idempotency-key": "order-18" })).body.payment_intent_id).not.toBe(
      first.body.payment_intent_id,
    );
    // The same key for another amount is the client's mistake, not Stripe's failure.
    expectError(await createIntent(key, 900, { "idempotency-key": "order-17" }), 422, "idempotency_key_reused");
    expectError(await createIntent(key, 700, { "idempotency-key": "bad key" }), 400, "invalid_request");
    // A refusal keeps nothing: the key is free for the corrected request.
    expectError(await createIntent(key, 499, { "idempotency-key": "order-19" }), 400, "amount_below_minimum");
    expect((await createIntent(key, 500, { "idempotency-key": "order-19" })).status).toBe(200);
    // The kept answer holds the client secret: it is sealed under the caller's key.
    const store = (env as unknown as Env).IDEMPOTENCY!;
    const records = store.get(store.idFromName(apiKeyHash(key).toString(16).padStart(64, "0")));
    const stored = await runInDurableObject(records, (_o, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM answer_chunks").toArray()),
    );
    expect(stored).not.toContain(first.body.client_secret);
    // With the edge's record gone (evicted) Stripe still knows the key: another amount is 422 all the same.
    await runInDurableObject(
      records,
      (_o, state) => void state.storage.sql.exec("DELETE FROM records WHERE scope LIKE '%:order-17'"),
    );
    expectError(await createIntent(key, 900, { "idempotency-key": "order-17" }), 422, "idempotency_key_reused");
  });

  it("confirm_payment under an Idempotency-Key replays its first answer (what that call credited); without one a second call says already_credited", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 800);
    const once = await edge("billing/confirm_payment", {
      key,
      body: { payment_intent_id: intent.payment_intent_id },
      headers: { "idempotency-key": "confirm-1" },
    });
    expect(once.body).toEqual({ credited_cents: 800, already_credited: false, balance_cents: 800 });
    const again = await edge("billing/confirm_payment", {
      key,
      body: { payment_intent_id: intent.payment_intent_id },
      headers: { "idempotency-key": "confirm-1" },
    });
    expect(again.body).toEqual(once.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expectError(
      await edge("billing/confirm_payment", {
        key,
        body: { payment_intent_id: "pi_another" },
        headers: { "idempotency-key": "confirm-1" },
      }),
      422,
      "idempotency_key_reused",
    );
    expect((await confirm(key, intent.payment_intent_id)).body).toEqual({
      credited_cents: 0,
      already_credited: true,
      balance_cents: 800,
    });
    expect(await balanceOf(key)).toBe(800);
  });

  it("below 500 cents is 400 amount_below_minimum; a fraction, a string or an unknown field is 400 invalid_request", async () => {
    const key = await newAccount();
    const low = expectError(await createIntent(key, 499), 400, "amount_below_minimum");
    expect(low.details).toEqual({ minimum_cents: 500 });
    expectError(
      await edge("billing/create_payment_intent", { key, body: { amount_cents: 500.5 } }),
      400,
      "invalid_request",
    );
    expectError(
      await edge("billing/create_payment_intent", { key, body: { amount_cents: "500" } }),
      400,
      "invalid_request",
    );
    expectError(
      await edge("billing/create_payment_intent", { key, body: { amount_cents: 500, currency: "eur" } }),
      400,
      "invalid_request",
    );
    expectError(await edge("billing/create_payment_intent", { body: { amount_cents: 500 } }), 401, "missing_api_key");
  });

  it("0 and negative amounts are below the minimum too: 400 amount_below_minimum, like 499", async () => {
    const key = await newAccount();
    for (const amount of [0, -1, -500]) {
      const error = expectError(await createIntent(key, amount), 400, "amount_below_minimum");
      expect(error.details).toEqual({ minimum_cents: 500 });
    }
  });

  it("an unpaid intent is 409 payment_not_succeeded; a declined card credits nothing; an unknown intent is 404", async () => {
    const key = await newAccount();
    const { body: intent } = await createIntent(key, 800);
    const unpaid = expectError(await confirm(key, intent.payment_intent_id), 409, "payment_not_succeeded");
    expect(unpaid.details).toEqual({ status: "requires_payment_method" });
    expect(await payWith(intent, "pm_card_chargeDeclined")).toBe(402);
    expectError(await confirm(key, intent.payment_intent_id), 409, "payment_not_succeeded");
    // Stripe's failure event reaches the webhook and credits nothing either.
    const failed = await deliver(await eventFor(intent.payment_intent_id, "payment_intent.payment_failed"));
    expect(failed.body).toEqual({ received: true, credited_cents: 0 });
    expect(await balanceOf(key)).toBe(0);
    expectError(await confirm(key, "pi_doesnotexist000000"), 404, "payment_not_found");
    expectError(await confirm(key, "not-an-intent"), 400, "invalid_request");
  });

  it("another account's intent is 409 payment_belongs_to_another_account and credits neither", async () => {
    const [alice, bob] = await Promise.all([newAccount("alice"), newAccount("bob")]);
    const intent = await paidIntent(alice, 900);
    expectError(await confirm(bob, intent.payment_intent_id), 409, "payment_belongs_to_another_account");
    expect(await balanceOf(bob)).toBe(0);
    expect(await balanceOf(alice)).toBe(0);
  });
});

// --- who may use the keyed billing endpoints ----------------------------------------------------
// docs/design/api.md (Billing; Endpoints: `key` = master or usage): the balance and the top-up endpoints take
// any live key of the account and need no scope; billing/account.ts (billingCaller) asks the chain
// only whether the key is the account's and live.

/**
 * A usage key of `master`'s account made straight through the enclave (setup, not what is tested:
 * through the edge it would cost a cent the new account does not have).
 */
async function usageKeyOf(master: string, extra: { expires_at?: number } = {}): Promise<string> {
  return (
    await enclaveOk<{ usage_api_key: string }>("add_usage_api_key", {
      api_key: master,
      name: "billing",
      description: "",
      ...NO_PERMISSIONS,
      ...extra,
    })
  ).usage_api_key;
}

/** The three keyed billing calls, each with a body it accepts. */
const keyedBillingCalls = (headers: Record<string, string>) => [
  { path: "billing/balance", call: () => edge("billing/balance", { headers }) },
  {
    path: "billing/create_payment_intent",
    call: () => edge("billing/create_payment_intent", { headers, body: { amount_cents: 500 } }),
  },
  {
    path: "billing/confirm_payment",
    call: () => edge("billing/confirm_payment", { headers, body: { payment_intent_id: "pi_doesnotexist000000" } }),
  },
];

describe("the keyed billing endpoints take any key of the account", () => {
  it("a usage key with no scopes reads its account's balance (200), the same as the master key", async () => {
    const master = await newAccount("reads by usage key");
    const usage = await usageKeyOf(master);
    await credit(master, 250);
    expect(await ok200("billing/balance", { key: usage })).toEqual({ balance_cents: 250, balance_display: "$2.50" });
    expect(await ok200("billing/balance", { key: master })).toEqual({ balance_cents: 250, balance_display: "$2.50" });
  });

  it("a usage key with no scopes tops its account up: create_payment_intent 200 for the account, confirm_payment 200 credits it", async () => {
    const master = await newAccount("tops up by usage key");
    const usage = await usageKeyOf(master);
    const created = await createIntent(usage, 600);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // The intent is the account's (the master hash), not the usage key's.
    const intent = (
      await stripeApi<{ metadata: Record<string, string> }>(
        "GET",
        `/v1/payment_intents/${created.body.payment_intent_id}`,
        inject("stripeSecretKey"),
      )
    ).body;
    expect(intent.metadata.account).toBe(apiKeyHash(master).toString(16).padStart(64, "0"));
    expect(await payWith(created.body)).toBe(200);
    const confirmed = await confirm(usage, created.body.payment_intent_id);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body).toEqual({ credited_cents: 600, already_credited: false, balance_cents: 600 });
    expect(await balanceOf(master)).toBe(600);
    // The master key confirms the same intent as already credited: one account, one ledger.
    expect((await confirm(master, created.body.payment_intent_id)).body).toEqual({
      credited_cents: 0,
      already_credited: true,
      balance_cents: 600,
    });
  });

  it("no key → 401 missing_api_key; a garbage or unknown key → 401 invalid_api_key, on balance, create_payment_intent and confirm_payment", async () => {
    const refusals: Array<[headers: Record<string, string>, code: string]> = [
      [{}, "missing_api_key"],
      [{ "x-api-key": "garbage" }, "invalid_api_key"],
      [{ authorization: "Bearer garbage" }, "invalid_api_key"],
      [{ "x-api-key": generateApiKey() }, "invalid_api_key"],
    ];
    for (const [headers, code] of refusals) {
      for (const { path, call } of keyedBillingCalls(headers)) {
        const r = await call();
        expect(r.status, `${path} with ${JSON.stringify(headers)}: ${JSON.stringify(r.body)}`).toBe(401);
        expectError(r, 401, code);
      }
    }
  });

  it("an expired and a removed usage key → 401 invalid_api_key on balance, create_payment_intent and confirm_payment", async () => {
    const master = await newAccount("dead usage keys");
    const expiresAt = now() + 4;
    const expired = await usageKeyOf(master, { expires_at: expiresAt });
    const removed = await usageKeyOf(master);
    await enclaveOk("remove_usage_api_key", { api_key: master, usage_api_key: removed });
    // Still live before it expires: the refusal below is the expiry's.
    expect((await edge("billing/balance", { key: expired })).status).toBe(200);
    while (now() <= expiresAt + 1) await new Promise((resolve) => setTimeout(resolve, 250));
    // The chain's clock moves with its blocks (anvil mines only on transactions, and a read sees the
    // latest block's timestamp): mine one past the expiry.
    await createTestClient({ chain: foundry, mode: "anvil", transport: transport() }).mine({ blocks: 1 });
    for (const key of [expired, removed]) {
      for (const { path, call } of keyedBillingCalls({ "x-api-key": key })) {
        const r = await call();
        expect(
          r.status,
          `${path} with the ${key === expired ? "expired" : "removed"} key: ${JSON.stringify(r.body)}`,
        ).toBe(401);
        expectError(r, 401, "invalid_api_key");
      }
    }
  });
});

describe("Stripe's webhook", () => {
  it("payment_intent.succeeded credits the intent's account; a replay credits nothing", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 1500);
    const event = await eventFor(intent.payment_intent_id);
    expect((await deliver(event)).body).toEqual({ received: true, credited_cents: 1500 });
    expect((await deliver(event)).body).toEqual({ received: true, credited_cents: 0 });
    expect(await balanceOf(key)).toBe(1500);
    expect((await confirm(key, intent.payment_intent_id)).body).toEqual({
      credited_cents: 0,
      already_credited: true,
      balance_cents: 1500,
    });
  });

  it("a forged, stale, tampered or unsigned webhook is 400 invalid_signature and credits nothing", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 1000);
    const payload = JSON.stringify(await eventFor(intent.payment_intent_id));
    expectError(
      await postWebhook(payload, await stripeSignature(payload, { secret: "whsec_not_the_secret" })),
      400,
      "invalid_signature",
    );
    expectError(
      await postWebhook(payload, await stripeSignature(payload, { at: Math.floor(Date.now() / 1000) - 600 })),
      400,
      "invalid_signature",
    );
    const tampered = payload.replace('"amount_received":1000', '"amount_received":100000');
    expect(tampered).not.toBe(payload);
    expectError(await postWebhook(tampered, await stripeSignature(payload)), 400, "invalid_signature");
    expectError(await postWebhook(payload, undefined), 400, "invalid_signature");
    expectError(await postWebhook(payload, "garbage"), 400, "invalid_signature");
    expect(await balanceOf(key)).toBe(0);
  });

  it("an event for a payment that is not a top-up is acknowledged and credits nothing", async () => {
    const event = {
      id: "evt_foreign",
      object: "event",
      type: "payment_intent.succeeded",
      data: {
        object: { id: "pi_foreign", object: "payment_intent", amount_received: 5000, currency: "usd", metadata: {} },
      },
    };
    const payload = JSON.stringify(event);
    const before = await snapshot();
    expect((await postWebhook(payload, await stripeSignature(payload))).body).toEqual({
      received: true,
      credited_cents: 0,
    });
    // No ledger gained an entry, and none was made.
    expect(await snapshot()).toEqual(before);
  });
});

describe("confirm_payment and the webhook racing for one intent credit it once", () => {
  it("confirm first, then the webhook", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 600);
    expect((await confirm(key, intent.payment_intent_id)).body.credited_cents).toBe(600);
    expect((await deliver(await eventFor(intent.payment_intent_id))).body.credited_cents).toBe(0);
    expect(await balanceOf(key)).toBe(600);
  });

  it("the webhook first, then confirm", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 700);
    expect((await deliver(await eventFor(intent.payment_intent_id))).body.credited_cents).toBe(700);
    expect((await confirm(key, intent.payment_intent_id)).body).toMatchObject({
      credited_cents: 0,
      already_credited: true,
    });
    expect(await balanceOf(key)).toBe(700);
  });

  it("both at once, several times over", async () => {
    const key = await newAccount();
    const intent = await paidIntent(key, 800);
    const event = await eventFor(intent.payment_intent_id);
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => confirm(key, intent.payment_intent_id).then((r) => r.body.credited_cents)),
      ...Array.from({ length: 5 }, () => deliver(event).then((r) => r.body.credited_cents ?? -1)),
    ]);
    expect(answers.reduce((a, b) => a + b, 0)).toBe(800);
    expect(answers.filter((c) => c > 0)).toEqual([800]);
    expect(await balanceOf(key)).toBe(800);
  });
});

// --- X-Wallet-Auth and wallet-owned accounts -----------------------------------------------------

const transport = () => http((env as unknown as Env).SIGIL_RPC_URL);
const publicClient = () => createPublicClient({ chain: foundry, transport: transport(), pollingInterval: 50 });
const now = () => Math.floor(Date.now() / 1000);

/** X-Wallet-Auth for `address`, signed by `signer`: its own typed data, or raw over the digest for a contract wallet. */
async function walletAuth(
  signer: PrivateKeyAccount,
  options: { address?: Address; primaryType?: SigilPrimaryType; issuedAt?: number } = {},
): Promise<string> {
  const address = options.address ?? signer.address;
  const primaryType = options.primaryType ?? "BillingAuth";
  const issuedAt = options.issuedAt ?? now();
  const typed_data = buildTypedData({ primaryType, address, chainId: CHAIN_ID, issuedAt });
  const signature =
    options.address === undefined
      ? await signer.signTypedData(signableTypedData(typed_data))
      : await signer.sign({
          hash: typedDataDigest({ primaryType, chainId: CHAIN_ID, address, issuedAt: BigInt(issuedAt) }),
        });
  return base64url(JSON.stringify({ typed_data, signature }));
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

const asWallet = (header: string) => ({ headers: { "x-wallet-auth": header } });

/** Sends a transaction from `wallet` (given gas first) to AccountConfig. */
async function sendAs(wallet: PrivateKeyAccount, functionName: string, args: readonly unknown[]): Promise<void> {
  await createTestClient({ chain: foundry, mode: "anvil", transport: transport() }).setBalance({
    address: wallet.address,
    value: parseEther("1"),
  });
  const client = createWalletClient({ chain: foundry, transport: transport(), account: wallet });
  const hash = await client.writeContract({
    address: inject("contract"),
    abi: accountConfigAbi,
    functionName,
    args,
  } as never);
  const receipt = await publicClient().waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
}

/** The master hash of the account a wallet made on chain: its lookup hash. */
const masterOfWallet = (wallet: Address) => BigInt(keccak256(encodePacked(["address"], [wallet])));

/**
 * Creates `wallet`'s ChainSecured account. Wallet 0 stands in for the master wallet the enclave
 * derives (create_wallet_with_signature answers it); billing never uses it.
 */
const newChainSecuredAccount = (wallet: PrivateKeyAccount, name: string) =>
  sendAs(wallet, "newChainSecuredAccount", [name, "", privateKeyToAccount(generatePrivateKey()).address]);

describe("X-Wallet-Auth", () => {
  const alice = privateKeyToAccount(generatePrivateKey());

  beforeAll(async () => {
    await newChainSecuredAccount(alice, "alice's");
    ledgerOfMaster(masterOfWallet(alice.address));
  });

  it("lets an EOA admin read its balance, create an intent and confirm it", async () => {
    expect(await ok200("billing/balance", asWallet(await walletAuth(alice)))).toEqual({
      balance_cents: 0,
      balance_display: "$0.00",
    });
    const created = await edge<Intent>("billing/create_payment_intent", {
      body: { amount_cents: 500 },
      ...asWallet(await walletAuth(alice)),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(await payWith(created.body)).toBe(200);
    const confirmed = await edge("billing/confirm_payment", {
      body: { payment_intent_id: created.body.payment_intent_id },
      ...asWallet(await walletAuth(alice)),
    });
    expect(confirmed.body).toEqual({ credited_cents: 500, already_credited: false, balance_cents: 500 });
  });

  it("keeps an Idempotency-Key under the signing wallet: a retry with a fresh X-Wallet-Auth replays the same intent; the answer is not kept readable", async () => {
    const k = crypto.randomUUID();
    const headers = async () => ({ "x-wallet-auth": await walletAuth(alice), "idempotency-key": k });
    const first = await edge<Intent>("billing/create_payment_intent", {
      body: { amount_cents: 600 },
      headers: await headers(),
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await edge<Intent>("billing/create_payment_intent", {
      body: { amount_cents: 600 },
      headers: await headers(),
    });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expectError(
      await edge("billing/create_payment_intent", { body: { amount_cents: 700 }, headers: await headers() }),
      422,
      "idempotency_key_reused",
    );
    // A replay authenticates like any request: a stale X-Wallet-Auth is refused before it.
    expectError(
      await edge("billing/create_payment_intent", {
        body: { amount_cents: 600 },
        headers: { ...(await headers()), "x-wallet-auth": await walletAuth(alice, { issuedAt: now() - 3600 }) },
      }),
      401,
      "signature_expired",
    );
    const store = (env as unknown as Env).IDEMPOTENCY!;
    const stored = await runInDurableObject(
      store.get(store.idFromName(masterOfWallet(alice.address).toString(16).padStart(64, "0"))),
      (_o, state) =>
        JSON.stringify([
          state.storage.sql.exec("SELECT * FROM records").toArray(),
          state.storage.sql.exec("SELECT * FROM answer_chunks").toArray(),
        ]),
    );
    expect(stored).toContain(`wallet:${alice.address.toLowerCase()}:`);
    expect(stored).not.toContain(k);
    expect(stored).not.toContain(first.body.client_secret);
  });

  it("refuses a wallet that administers no account (404 account_not_found), a wrong primary type, an old signature and an API key sent with it", async () => {
    const nobody = privateKeyToAccount(generatePrivateKey());
    expectError(await edge("billing/balance", asWallet(await walletAuth(nobody))), 404, "account_not_found");
    expectError(
      await edge("billing/balance", asWallet(await walletAuth(alice, { primaryType: "CreateWallet" }))),
      400,
      "wrong_primary_type",
    );
    expectError(
      await edge("billing/balance", asWallet(await walletAuth(alice, { issuedAt: now() - 3600 }))),
      401,
      "signature_expired",
    );
    const key = await newAccount();
    expectError(
      await edge("billing/balance", { key, ...asWallet(await walletAuth(alice)) }),
      400,
      "conflicting_credentials",
    );
  });

  // Issue 11, point 3: an account may register any hash as a usage key, a wallet's lookup hash too.
  it("a usage key registered under a wallet's lookup hash never takes that wallet's place: 404 before its account exists, its own ledger after", async () => {
    const attacker = privateKeyToAccount(generatePrivateKey());
    const victim = privateKeyToAccount(generatePrivateKey());
    await newChainSecuredAccount(attacker, "attacker");
    await ledgerOfMaster(masterOfWallet(attacker.address)).credit(`pi_direct_attacker_${Date.now()}`, 70);
    await sendAs(attacker, "setUsageApiKey", [
      masterOfWallet(attacker.address),
      masterOfWallet(victim.address),
      0n,
      0n,
      "squat",
      "",
      false,
      false,
      false,
      [],
      [],
      [],
      [0n],
    ]);
    expectError(await edge("billing/balance", asWallet(await walletAuth(victim))), 404, "account_not_found");
    await newChainSecuredAccount(victim, "victim");
    await ledgerOfMaster(masterOfWallet(victim.address)).credit(`pi_direct_victim_${Date.now()}`, 30);
    expect(await ok200("billing/balance", asWallet(await walletAuth(victim)))).toEqual({
      balance_cents: 30,
      balance_display: "$0.30",
    });
    expect(await ok200("billing/balance", asWallet(await walletAuth(attacker)))).toEqual({
      balance_cents: 70,
      balance_display: "$0.70",
    });
  });

  it("a malformed header (not base64url, not JSON, a field missing) is 401 invalid_signature on every billing endpoint", async () => {
    const typed_data = buildTypedData({
      primaryType: "BillingAuth",
      address: alice.address,
      chainId: CHAIN_ID,
      issuedAt: now(),
    });
    const signature = await alice.signTypedData(signableTypedData(typed_data));
    const malformed: Array<[string, string]> = [
      ["not base64url", "%%%"],
      ["empty", ""],
      ["base64url of text that is not JSON", base64url("typed_data and a signature")],
      ["base64url of truncated JSON", base64url(JSON.stringify({ typed_data, signature }).slice(0, -1))],
      ["a JSON array", base64url(JSON.stringify([typed_data, signature]))],
      ["JSON null", base64url("null")],
      ["JSON {}", base64url("{}")],
      ["JSON without typed_data", base64url(JSON.stringify({ signature }))],
      ["JSON without signature", base64url(JSON.stringify({ typed_data }))],
      ["JSON with an empty signature", base64url(JSON.stringify({ typed_data, signature: "" }))],
      ["JSON with a signature that is not a string", base64url(JSON.stringify({ typed_data, signature: 7 }))],
    ];
    // The well-formed header, for contrast, is accepted.
    expect(
      await ok200("billing/balance", asWallet(base64url(JSON.stringify({ typed_data, signature })))),
    ).toMatchObject({ balance_cents: expect.any(Number) });
    const before = await snapshot();
    for (const [what, header] of malformed) {
      const r = await edge("billing/balance", asWallet(header));
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(401);
      expectError(r, 401, "invalid_signature");
    }
    expectError(
      await edge("billing/create_payment_intent", { body: { amount_cents: 500 }, ...asWallet("%%%") }),
      401,
      "invalid_signature",
    );
    expectError(
      await edge("billing/create_payment_intent", {
        body: { amount_cents: 500 },
        ...asWallet(base64url(JSON.stringify({ typed_data }))),
      }),
      401,
      "invalid_signature",
    );
    expectError(
      await edge("billing/confirm_payment", {
        body: { payment_intent_id: "pi_doesnotexist000000" },
        ...asWallet(base64url("not json")),
      }),
      401,
      "invalid_signature",
    );
    expect(await snapshot()).toEqual(before);
  });

  it("a well-formed header whose signature is not the wallet's is 401 invalid_signature", async () => {
    const mallory = privateKeyToAccount(generatePrivateKey());
    expectError(
      await edge("billing/balance", asWallet(await walletAuth(mallory, { address: alice.address }))),
      401,
      "invalid_signature",
    );
    const typed_data = buildTypedData({
      primaryType: "BillingAuth",
      address: alice.address,
      chainId: CHAIN_ID,
      issuedAt: now(),
    });
    const good = await alice.signTypedData(signableTypedData(typed_data));
    const flipped = `${good.slice(0, 10)}${good[10] === "0" ? "1" : "0"}${good.slice(11)}`;
    for (const signature of [flipped, `0x${"11".repeat(65)}`, "0x1234", "not hex"]) {
      const r = await edge("billing/create_payment_intent", {
        body: { amount_cents: 500 },
        ...asWallet(base64url(JSON.stringify({ typed_data, signature }))),
      });
      expect(r.status, `${signature}: ${JSON.stringify(r.body)}`).toBe(401);
      expectError(r, 401, "invalid_signature");
    }
  });

  it("follows the account through conversion and transfer: the balance stays; a former admin is 403", async () => {
    // A managed account with credit converts to an EOA (1 cent), which hands it to another wallet.
    const key = await newAccount("converts");
    await credit(key, 1000);
    const first = privateKeyToAccount(generatePrivateKey());
    const typed_data = buildTypedData({
      primaryType: "ConvertAccount",
      address: first.address,
      chainId: CHAIN_ID,
      issuedAt: now(),
    });
    const converted = await edge("convert_to_chain_secured_account", {
      key,
      body: {
        new_admin_wallet_address: first.address,
        typed_data,
        signature: await first.signTypedData(signableTypedData(typed_data)),
      },
    });
    expect(converted.status, JSON.stringify(converted.body)).toBe(200);
    expect(converted.headers.get("x-sigil-charged-cents")).toBe("1");
    expect(await ok200("billing/balance", asWallet(await walletAuth(first)))).toMatchObject({ balance_cents: 999 });
    // The old master key may still read the balance, but no longer pay with it.
    expect(await balanceOf(key)).toBe(999);
    expectError(await createIntent(key, 500), 403, "chain_secured_account");

    const second = privateKeyToAccount(generatePrivateKey());
    await sendAs(first, "transferChainSecuredAccountOwnership", [apiKeyHash(key), second.address]);
    expect(await ok200("billing/balance", asWallet(await walletAuth(second)))).toMatchObject({ balance_cents: 999 });
    expectError(await edge("billing/balance", asWallet(await walletAuth(first))), 403, "permission_denied");
  });

  it("works for a contract wallet (ERC-1271) that administers its account", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const [deployer] = await createWalletClient({ chain: foundry, transport: transport() }).getAddresses();
    const hash = await createWalletClient({ chain: foundry, transport: transport() }).deployContract({
      abi: erc1271Wallet.abi as Abi,
      bytecode: erc1271Wallet.bytecode as Hex,
      args: [owner.address, false],
      account: deployer!,
    });
    const contractWallet = getAddress((await publicClient().waitForTransactionReceipt({ hash })).contractAddress!);
    // The contract cannot send transactions itself: a managed account converts to it, by its signature.
    const key = await newAccount("to a contract wallet");
    await credit(key, 300);
    const issuedAt = now();
    const typed_data = buildTypedData({
      primaryType: "ConvertAccount",
      address: contractWallet,
      chainId: CHAIN_ID,
      issuedAt,
    });
    const signature = await owner.sign({
      hash: typedDataDigest({
        primaryType: "ConvertAccount",
        chainId: CHAIN_ID,
        address: contractWallet,
        issuedAt: BigInt(issuedAt),
      }),
    });
    expect(
      (
        await edge("convert_to_chain_secured_account", {
          key,
          body: { new_admin_wallet_address: contractWallet, typed_data, signature },
        })
      ).status,
    ).toBe(200);
    expect(await ok200("billing/balance", asWallet(await walletAuth(owner, { address: contractWallet })))).toEqual({
      balance_cents: 299,
      balance_display: "$2.99",
    });
  });
});

describe("fees of the signature flows", () => {
  it("create_wallet_with_signature and add_usage_api_key_with_signature cost nothing", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    await newChainSecuredAccount(wallet, "free flows");
    await ledgerOfMaster(masterOfWallet(wallet.address)).credit(`pi_direct_${Date.now()}`, 50);
    for (const [path, primaryType] of [
      ["create_wallet_with_signature", "CreateWallet"],
      ["add_usage_api_key_with_signature", "AddUsageApiKey"],
    ] as const) {
      const typed_data = buildTypedData({ primaryType, address: wallet.address, chainId: CHAIN_ID, issuedAt: now() });
      const r = await edge(path, {
        body: { typed_data, signature: await wallet.signTypedData(signableTypedData(typed_data)) },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    expect(await ok200("billing/balance", asWallet(await walletAuth(wallet)))).toMatchObject({ balance_cents: 50 });
  });
});
