// Issue 26 (points 4 and 6) on the edge's own app, against the real chain and enclave: 130 POSTs from
// one client, each with a random well-formed X-Api-Key and a body that never ends, held every one of
// an isolate's 128 places, and every other tenant got 503 edge_busy until those sockets closed. Now
// a request takes a place only once its body has arrived (middleware/bodyLimit, middleware/admission):
// meanwhile another tenant's list_wallets and create_wallet are served, and the 130 are refused 408
// body_timeout at the deadline. The edge here has the default admission (128, a quarter per client);
// the project's other suites run without one (vitest.config.ts).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { createApp } from "../../workers/app.ts";
import { DEFAULT_CLIENT_SHARE_PERCENT, DEFAULT_MAX_IN_FLIGHT } from "../../workers/config.ts";
import type { Env } from "../../workers/env.ts";
import { admittedNow } from "../../workers/middleware/admission/index.ts";

const BODY_TIMEOUT_MS = 5_000;
const e = {
  ...(env as unknown as Env),
  SIGIL_EDGE_MAX_IN_FLIGHT: String(DEFAULT_MAX_IN_FLIGHT),
  SIGIL_EDGE_CLIENT_SHARE_PERCENT: String(DEFAULT_CLIENT_SHARE_PERCENT),
  SIGIL_EDGE_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
} as Env;

const ATTACKER = "203.0.113.66";
const TENANT = "198.51.100.26";

const encoder = new TextEncoder();

/** The start of a sigil_action body, and then nothing, ever. */
const neverEnding = () =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"code":"async function main() { return 1 }", "js_params": '));
    },
  });

describe("admission against bodies that never end (issue 26)", () => {
  it("130 slow-body requests from one client leave another tenant's list_wallets and create_wallet served, not 503; each of the 130 is refused 408 body_timeout", async () => {
    const app = createApp();
    const call = (path: string, init: RequestInit & { duplex?: "half" }, ip: string) =>
      app.request(
        `http://edge/core/v1/${path}`,
        { ...init, headers: { "cf-connecting-ip": ip, ...(init.headers as Record<string, string>) } } as RequestInit,
        e,
      );
    const json = { "content-type": "application/json" };

    const account = await call(
      "new_account",
      { method: "POST", headers: json, body: JSON.stringify({ account_name: "tenant" }) },
      TENANT,
    );
    expect(account.status).toBe(200);
    const { api_key: key } = (await account.json()) as { api_key: string };

    let attackOver = false;
    const attack = Promise.all(
      Array.from({ length: 130 }, () =>
        call(
          "sigil_action",
          { method: "POST", headers: { ...json, "x-api-key": generateApiKey() }, body: neverEnding(), duplex: "half" },
          ATTACKER,
        ),
      ),
    ).finally(() => {
      attackOver = true;
    });
    await new Promise((r) => setTimeout(r, 100));

    const wallets = await call("list_wallets", { headers: { "x-api-key": key } }, TENANT);
    expect(wallets.status, await wallets.clone().text()).toBe(200);
    expect(Array.isArray(await wallets.json())).toBe(true);
    expect(admittedNow()).toBe(0);
    const created = await call(
      "create_wallet",
      { method: "POST", headers: { ...json, "x-api-key": key }, body: JSON.stringify({ name: "meanwhile" }) },
      TENANT,
    );
    expect(created.status, await created.clone().text()).toBe(200);
    expect(((await created.json()) as { wallet_address: string }).wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    // Both were answered while every one of the 130 was still sending its body.
    expect(attackOver).toBe(false);

    for (const res of await attack) {
      expect(res.status).toBe(408);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("body_timeout");
    }
    expect(admittedNow()).toBe(0);
  });
});
