// Admission inside workerd: past `maxInFlight` requests held at once, the next is refused at once
// with 503 edge_busy and Retry-After, and served again once one ends, however it ended. On the
// edge's own app, health, the public facts and Stripe's webhook are served even then.
import { env } from "cloudflare:test";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../app.ts";
import { edgeConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { errorResponse } from "../../errors.ts";
import type { EdgeEnv } from "../../router.ts";
import { admission, admittedNow, EDGE_BUSY_RETRY_AFTER_SECONDS } from "./index.ts";

/** An env of the workers project with this admission limit (a fresh object: its config is read anew). */
const envWith = (limit: number) => ({ ...(env as unknown as Env), SIGIL_EDGE_MAX_IN_FLIGHT: String(limit) }) as Env;

/** A small app behind admission whose /hold requests wait until released, and /fail throws. */
function holdingApp() {
  const waiting: Array<() => void> = [];
  const app = new Hono<EdgeEnv>();
  app.use(async (c, next) => {
    c.set("config", edgeConfig(c.env));
    await next();
  });
  app.use(admission());
  app.get("/hold", async (c) => {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return c.text("held");
  });
  app.get("/fail", () => {
    throw new Error("the route failed");
  });
  app.get("/quick", (c) => c.text("quick"));
  app.onError((err, c) => errorResponse(c, err));
  return {
    app,
    held: () => waiting.length,
    releaseAll: () => waiting.splice(0).forEach((r) => r()),
  };
}

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(done()).toBe(true);
};

let release: (() => void) | undefined;
afterEach(() => {
  release?.();
  release = undefined;
});

describe("admission", () => {
  it("past the limit the next request is 503 edge_busy with Retry-After, before its route runs; served again once one ends", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(2);
    const first = app.request("/hold", {}, e);
    const second = app.request("/hold", {}, e);
    await until(() => held() === 2);
    expect(admittedNow()).toBe(2);

    const refused = await app.request("/hold", {}, e);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe(String(EDGE_BUSY_RETRY_AFTER_SECONDS));
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("edge_busy");
    expect(held()).toBe(2); // the refused one never reached its route

    releaseAll();
    expect(await (await first).text()).toBe("held");
    expect(await (await second).text()).toBe("held");
    expect(admittedNow()).toBe(0);
    expect(await (await app.request("/quick", {}, e)).text()).toBe("quick");
  });

  it("a request whose route throws gives its place back", async () => {
    const { app } = holdingApp();
    const e = envWith(1);
    for (let i = 0; i < 3; i++) expect((await app.request("/fail", {}, e)).status).toBe(500);
    expect(admittedNow()).toBe(0);
    expect((await app.request("/quick", {}, e)).status).toBe(200);
  });

  it("0 is no limit", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(0);
    const all = Array.from({ length: 20 }, () => app.request("/hold", {}, e));
    await until(() => held() === 20);
    releaseAll();
    for (const res of await Promise.all(all)) expect(res.status).toBe(200);
  });

  it("on the edge's app, a full isolate still serves health, the public facts and Stripe's webhook, and refuses the rest", async () => {
    const { app: filler, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(1);
    const holding = filler.request("/hold", {}, e);
    await until(() => held() === 1);

    const edge = createApp();
    const ask = (path: string, init: RequestInit = {}) => edge.request(`http://edge/core/v1${path}`, init, e);
    expect((await ask("/version")).status).toBe(200);
    const webhook = await ask("/billing/webhook", { method: "POST", headers: { "stripe-signature": "t=1,v1=00" }, body: "{}" });
    // Answered by its route (here: no Stripe configured, or a bad signature), not refused for load.
    expect(((await webhook.json()) as { error: { code: string } }).error.code).not.toBe("edge_busy");
    const wallets = await ask("/list_wallets", { headers: { "x-api-key": btoa("w".repeat(32)) } });
    expect(wallets.status).toBe(503);
    expect(((await wallets.json()) as { error: { code: string } }).error.code).toBe("edge_busy");

    releaseAll();
    await holding;
  });
});
