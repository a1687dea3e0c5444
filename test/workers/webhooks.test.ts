// The webhook endpoints' URL guard and auth through the edge in workerd, against the real chain: under
// a production configuration (the app built here with SIGIL_ENV=production over the test bindings)
// a URL that is not https, or whose host is a private, loopback, link-local or metadata address in
// any spelling, or a name that only resolves inside a network, is 400 invalid_webhook_url; a public
// https URL is registered. Under the tests' local configuration loopback http is allowed. A usage
// key may not manage webhooks. No event is emitted here, so nothing is ever sent to a registered URL.
import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../workers/app.ts";
import { edgeClient, NO_PERMISSIONS, type ErrorReply } from "./stack.ts";

const { edge, ok200, expectError } = edgeClient(SELF);

type NewAccount = { api_key: string; wallet_address: string; account_id: string };
type Endpoint = { id: string; url: string; events: string[]; created: number; disabled: boolean; secret?: string };

/** The same worker under a production configuration: what `wrangler deploy --env production` runs. */
const production = createApp();
const productionEnv = {
  ...(env as unknown as Record<string, unknown>),
  SIGIL_ENV: "production",
  SIGIL_ATTESTATION_ALLOW_SIMULATED: "false",
  SIGIL_ALLOWED_COMPOSE_HASHES: "ab".repeat(32),
};

async function createInProduction(key: string, url: string): Promise<{ status: number; body: Endpoint & ErrorReply }> {
  const res = await production.request(
    "http://edge/core/v1/webhooks",
    {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ url }),
    },
    productionEnv,
  );
  return { status: res.status, body: (await res.json()) as Endpoint & ErrorReply };
}

let account: NewAccount;
beforeAll(async () => {
  account = await ok200<NewAccount>("new_account", { body: { account_name: "webhooks" } });
});

describe("POST /webhooks under a production configuration", () => {
  const refused: Array<[string, string]> = [
    ["http://hooks.example.com/x", "not_https"],
    ["https://127.0.0.1/x", "private_address"],
    ["https://127.1/x", "private_address"],
    ["https://0x7f000001/x", "private_address"],
    ["https://2130706433/x", "private_address"],
    ["https://10.1.2.3/x", "private_address"],
    ["https://172.16.0.1/x", "private_address"],
    ["https://192.168.1.1/x", "private_address"],
    ["https://169.254.169.254/latest/meta-data", "private_address"],
    ["https://169.254.1.1/x", "private_address"],
    ["https://100.64.0.1/x", "private_address"],
    ["https://0.0.0.0/x", "private_address"],
    ["https://[::1]/x", "private_address"],
    ["https://[fe80::1]/x", "private_address"],
    ["https://[fd00::1]/x", "private_address"],
    ["https://[::ffff:192.168.0.1]/x", "private_address"],
    ["https://localhost/x", "local_name"],
    ["https://api.localhost/x", "local_name"],
    ["https://printer.local/x", "local_name"],
    ["https://metadata.google.internal/x", "local_name"],
    ["https://router.home.arpa/x", "local_name"],
    ["https://intranet/x", "local_name"],
    ["https://", "malformed"],
    ["not a url", "malformed"],
    ["ftp://hooks.example.com/x", "scheme"],
  ];

  it.each(refused)("%s → 400 invalid_webhook_url (%s)", async (url, reason) => {
    const r = await createInProduction(account.api_key, url);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.code).toBe("invalid_webhook_url");
    expect(r.body.error.details).toMatchObject({ reason });
  });

  it("registers a public https URL (and the address class is named for a refused literal)", async () => {
    const ok = await createInProduction(account.api_key, "https://hooks.example.com/sigil");
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({
      url: "https://hooks.example.com/sigil",
      events: [
        "payment.credited",
        "payment.failed",
        "balance.low",
        "usage_key.cap_reached",
        "guardrail.denied",
        "budget.exhausted",
        "transaction.confirmed",
        "transaction.reverted",
        "transaction.replaced",
        "transaction.dropped",
      ],
    });
    expect(ok.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    await ok200(`webhooks/${ok.body.id}`, { key: account.api_key, method: "DELETE" });
    const metadata = await createInProduction(account.api_key, "https://169.254.169.254/");
    expect(metadata.body.error.details).toMatchObject({ reason: "private_address", address_class: "metadata" });
  });
});

describe("the webhook endpoints under the tests' local configuration", () => {
  it("accept plain http on loopback and private addresses (a receiver on the developer's machine)", async () => {
    const created = await ok200<Endpoint>("webhooks", {
      key: account.api_key,
      body: { url: "http://127.0.0.1:9/hook", events: ["run.failed"] },
    });
    expect(created).toMatchObject({ url: "http://127.0.0.1:9/hook", events: ["run.failed"] });
    expect((await ok200<Endpoint[]>("webhooks", { key: account.api_key })).map((e) => e.id)).toContain(created.id);
    await ok200(`webhooks/${created.id}`, { key: account.api_key, method: "DELETE" });
    expectError(
      await edge(`webhooks/${created.id}`, { key: account.api_key, method: "DELETE" }),
      404,
      "webhook_not_found",
    );
  });

  it("an eleventh endpoint is 409 webhook_limit; an unknown event type and an unknown field are 400", async () => {
    const mine = await ok200<NewAccount>("new_account", { body: { account_name: "webhooks limit" } });
    for (let i = 0; i < 10; i++)
      await ok200("webhooks", { key: mine.api_key, body: { url: `http://127.0.0.1:9/h${i}` } });
    const eleventh = expectError(
      await edge("webhooks", { key: mine.api_key, body: { url: "http://127.0.0.1:9/h10" } }),
      409,
      "webhook_limit",
    );
    expect(eleventh.details).toEqual({ limit: 10 });
    expectError(
      await edge("webhooks", { key: mine.api_key, body: { url: "http://127.0.0.1:9/x", events: ["charge.refunded"] } }),
      400,
      "invalid_request",
    );
    expectError(
      await edge("webhooks", { key: mine.api_key, body: { url: "http://127.0.0.1:9/x", events: [] } }),
      400,
      "invalid_request",
    );
    expectError(
      await edge("webhooks", { key: mine.api_key, body: { url: "http://127.0.0.1:9/x", secret: "mine" } }),
      400,
      "invalid_request",
    );
  });

  it("a registration retried under one Idempotency-Key makes one endpoint and answers the same secret; another body under it is 422", async () => {
    const mine = await ok200<NewAccount>("new_account", { body: { account_name: "webhooks idempotent" } });
    const key = crypto.randomUUID();
    const call = (url: string) =>
      edge<Endpoint>("webhooks", { key: mine.api_key, body: { url }, headers: { "idempotency-key": key } });
    const first = await call("http://127.0.0.1:9/once");
    const again = await call("http://127.0.0.1:9/once");
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await ok200<Endpoint[]>("webhooks", { key: mine.api_key })).toHaveLength(1);
    expectError(await call("http://127.0.0.1:9/other"), 422, "idempotency_key_reused");
  });

  it("a usage key may not manage webhooks (403 account_key_required); no key is 401", async () => {
    const usage = (
      await ok200<{ usage_api_key: string }>("add_usage_api_key", {
        key: account.api_key,
        body: { name: "u", description: "", ...NO_PERMISSIONS },
      })
    ).usage_api_key;
    expectError(await edge("webhooks", { key: usage }), 403, "account_key_required");
    expectError(
      await edge("webhooks", { key: usage, body: { url: "http://127.0.0.1:9/x" } }),
      403,
      "account_key_required",
    );
    expectError(
      await edge("webhooks/settings", { key: usage, method: "PUT", body: { balance_low_cents: 5 } }),
      403,
      "account_key_required",
    );
    expectError(await edge("webhooks"), 401, "missing_api_key");
  });

  it("settings: balance_low_cents is a non-negative integer", async () => {
    expect(
      await ok200("webhooks/settings", { key: account.api_key, method: "PUT", body: { balance_low_cents: 250 } }),
    ).toEqual({ balance_low_cents: 250 });
    expect(await ok200("webhooks/settings", { key: account.api_key })).toEqual({ balance_low_cents: 250 });
    expectError(
      await edge("webhooks/settings", { key: account.api_key, method: "PUT", body: { balance_low_cents: -1 } }),
      400,
      "invalid_request",
    );
    expectError(
      await edge("webhooks/settings", { key: account.api_key, method: "PUT", body: { balance_low_cents: 1.5 } }),
      400,
      "invalid_request",
    );
  });
});
