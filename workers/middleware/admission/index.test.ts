// Admission inside workerd: past `maxInFlight` requests held at once, the next is refused at once
// with 503 edge_busy and Retry-After, and served again once one ends, however it ended. On the
// edge's own app, health, the public facts and Stripe's webhook are served even then. A request
// takes its place only once its body has arrived (issue 26: 130 bodies that never end from one
// client held every place), and one client — its address, or its key — holds at most its share.
import { env } from "cloudflare:test";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { generateApiKey } from "../../../shared/apiKey.ts";
import { createApp } from "../../app.ts";
import { clientShare, DEFAULT_MAX_IN_FLIGHT, edgeConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { errorResponse } from "../../errors.ts";
import type { EdgeEnv } from "../../router.ts";
import { defaultBodyLimit, scriptBodyLimit } from "../bodyLimit/index.ts";
import { admission, admitWithin, admittedNow, EDGE_BUSY_RETRY_AFTER_SECONDS, Places } from "./index.ts";

/**
 * An env of the workers project with this admission limit (a fresh object: its config is read
 * anew). One client may hold every place unless `vars` says otherwise: the tests of the isolate's
 * limit are one client's.
 */
const envWith = (limit: number, vars: Record<string, string> = {}) =>
  ({
    ...(env as unknown as Env),
    SIGIL_EDGE_MAX_IN_FLIGHT: String(limit),
    SIGIL_EDGE_CLIENT_SHARE_PERCENT: "100",
    ...vars,
  }) as Env;

/** A small app behind admission whose /hold requests wait until released, and /fail throws; POST routes read their body through their limit. */
function holdingApp() {
  const waiting: Array<() => void> = [];
  const app = new Hono<EdgeEnv>();
  app.use(async (c, next) => {
    c.set("config", edgeConfig(c.env));
    await next();
  });
  app.use(admission());
  const hold = async () => {
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  app.get("/hold", async (c) => {
    await hold();
    return c.text("held");
  });
  app.post("/hold", defaultBodyLimit, async (c) => {
    const body = await c.req.json();
    await hold();
    return c.json(body);
  });
  app.post("/echo", defaultBodyLimit, async (c) => c.json(await c.req.json()));
  app.post("/script", scriptBodyLimit, async (c) => c.json({ length: ((await c.req.json()) as string).length }));
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
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const encoder = new TextEncoder();

/** A JSON body that sends its first bytes and then nothing, never ending (a slow client's). */
const neverEnding = () =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"code":"'));
    },
  });

/** A body that sends `parts` `gapMs` apart, then ends. */
const trickle = (parts: string[], gapMs: number) =>
  new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const part of parts) {
        controller.enqueue(encoder.encode(part));
        await sleep(gapMs);
      }
      controller.close();
    },
  });

const from = (ip: string, key?: string): Record<string, string> => ({
  "cf-connecting-ip": ip,
  ...(key === undefined ? {} : { "x-api-key": key }),
});
const post = (app: Hono<EdgeEnv>, path: string, body: BodyInit, e: Env, headers: Record<string, string> = {}) =>
  app.request(
    path,
    {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      duplex: "half",
    } as RequestInit,
    e,
  );
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

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

  it("a request the edge makes for one it admitted (admitWithin) runs in its place: a full isolate serves it; the same request made anew is refused", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(1);
    const holding = app.request("/hold", {}, e);
    await until(() => held() === 1);
    const inner = await app.fetch(admitWithin(new Request("http://edge/quick")), e);
    expect(await inner.text()).toBe("quick");
    expect((await app.fetch(new Request("http://edge/quick"), e)).status).toBe(503);
    releaseAll();
    await holding;
    expect(admittedNow()).toBe(0);
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
    const webhook = await ask("/billing/webhook", {
      method: "POST",
      headers: { "stripe-signature": "t=1,v1=00" },
      body: "{}",
    });
    // Answered by its route (here: no Stripe configured, or a bad signature), not refused for load.
    expect(((await webhook.json()) as { error: { code: string } }).error.code).not.toBe("edge_busy");
    const wallets = await ask("/list_wallets", { headers: { "x-api-key": btoa("w".repeat(32)) } });
    expect(wallets.status).toBe(503);
    expect(((await wallets.json()) as { error: { code: string } }).error.code).toBe("edge_busy");

    releaseAll();
    await holding;
  });
});

describe("admission after the body (issue 26)", () => {
  it("130 requests from one client whose bodies never end hold no place: another client is served meanwhile, and each is refused 408 body_timeout at the deadline", async () => {
    const { app } = holdingApp();
    // The default limit and share (128, a quarter); 130 is past both.
    const e = envWith(128, { SIGIL_EDGE_CLIENT_SHARE_PERCENT: "25", SIGIL_EDGE_BODY_TIMEOUT_MS: "500" });
    const slow = Array.from({ length: 130 }, () =>
      post(app, "/hold", neverEnding(), e, from("203.0.113.66", generateApiKey())),
    );
    await sleep(50);

    const quick = await app.request("/quick", { headers: from("198.51.100.7") }, e);
    expect(quick.status).toBe(200);
    const posted = await post(app, "/echo", '{"tenant":"other"}', e, from("198.51.100.7", generateApiKey()));
    expect(posted.status).toBe(200);
    expect(await posted.json()).toEqual({ tenant: "other" });
    expect(admittedNow()).toBe(0); // not even the 32 of the client's share

    for (const res of await Promise.all(slow)) {
      expect(res.status).toBe(408);
      expect((await codeOf(res)).code).toBe("body_timeout");
    }
    expect(admittedNow()).toBe(0);
  });

  it("so do 130 such requests from 130 addresses, which no client's share bounds", async () => {
    const { app } = holdingApp();
    const e = envWith(128, { SIGIL_EDGE_CLIENT_SHARE_PERCENT: "25", SIGIL_EDGE_BODY_TIMEOUT_MS: "500" });
    const slow = Array.from({ length: 130 }, (_, i) =>
      post(app, "/hold", neverEnding(), e, from(`10.0.${i >> 8}.${i & 255}`, generateApiKey())),
    );
    await sleep(50);
    expect((await app.request("/quick", { headers: from("198.51.100.8") }, e)).status).toBe(200);
    expect(admittedNow()).toBe(0);
    for (const res of await Promise.all(slow)) expect(res.status).toBe(408);
  });

  it("a request takes its place once its body has arrived, and its route reads that body", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(4, { SIGIL_EDGE_BODY_TIMEOUT_MS: "5000" });
    const answer = post(app, "/hold", trickle(['{"a":', " 1", "}"], 60), e);
    await sleep(30);
    expect(admittedNow()).toBe(0); // its body is still arriving
    await until(() => held() === 1);
    expect(admittedNow()).toBe(1);
    releaseAll();
    expect(await (await answer).json()).toEqual({ a: 1 });
    expect(admittedNow()).toBe(0);
  });

  it("a request that would be refused now is refused before its body is read, not after the deadline", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    const e = envWith(1, { SIGIL_EDGE_BODY_TIMEOUT_MS: "5000" });
    const holding = app.request("/hold", {}, e);
    await until(() => held() === 1);
    const started = Date.now();
    const refused = await post(app, "/echo", neverEnding(), e);
    expect(refused.status).toBe(503);
    expect((await codeOf(refused)).code).toBe("edge_busy");
    expect(Date.now() - started).toBeLessThan(1_000);
    releaseAll();
    await holding;
  });

  it("reads the body within the limit of the route that matched: a script route's larger one, the default elsewhere", async () => {
    const { app } = holdingApp();
    const e = envWith(4, { SIGIL_EDGE_BODY_TIMEOUT_MS: "5000" });
    const script = JSON.stringify("x".repeat(300 << 10));
    expect(await (await post(app, "/script", script, e)).json()).toEqual({ length: 300 << 10 });
    expect(
      await (await post(app, "/script", trickle([script.slice(0, 1000), script.slice(1000)], 10), e)).json(),
    ).toEqual({ length: 300 << 10 });
    const refused = await post(app, "/echo", script, e);
    expect(refused.status).toBe(413);
    expect((await codeOf(refused)).code).toBe("payload_too_large");
  });
});

describe("one client's share", () => {
  it("a client — its address, or its key — holds at most its share: its next is 503 edge_busy while others are served, and served again once one of its own ends", async () => {
    const { app, held, releaseAll } = holdingApp();
    release = releaseAll;
    // 8 places, 2 per client.
    const e = envWith(8, { SIGIL_EDGE_CLIENT_SHARE_PERCENT: "25" });
    const hold = (headers: Record<string, string>) => app.request("/hold", { headers }, e);
    const quick = (headers: Record<string, string>) => app.request("/quick", { headers }, e);
    const holding = [hold(from("203.0.113.1")), hold(from("203.0.113.1"))];
    await until(() => held() === 2);

    const refused = await quick(from("203.0.113.1"));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe(String(EDGE_BUSY_RETRY_AFTER_SECONDS));
    const error = await codeOf(refused);
    expect(error.code).toBe("edge_busy");
    expect(error.message).toContain("this client's requests");
    // Random well-formed keys from that address are still that address's.
    for (let i = 0; i < 3; i++) expect((await quick(from("203.0.113.1", generateApiKey()))).status).toBe(503);

    // Another client is served, and may hold a share of its own.
    expect((await quick(from("198.51.100.2"))).status).toBe(200);
    holding.push(hold(from("198.51.100.2")), hold(from("198.51.100.2")));
    await until(() => held() === 4);

    // One key from many addresses is bounded by the key's share.
    const key = generateApiKey();
    holding.push(hold(from("192.0.2.1", key)), hold(from("192.0.2.2", key)));
    await until(() => held() === 6);
    expect((await quick(from("192.0.2.3", key))).status).toBe(503);
    expect((await quick(from("192.0.2.3"))).status).toBe(200);
    expect(admittedNow()).toBe(6);

    releaseAll();
    for (const res of await Promise.all(holding)) expect(res.status).toBe(200);
    expect(admittedNow()).toBe(0);
    expect((await quick(from("203.0.113.1"))).status).toBe(200);
    expect((await quick(from("192.0.2.3", key))).status).toBe(200);
  });
});

describe("Places", () => {
  const isPlace = (r: ReturnType<Places["take"]>): r is { release: () => void } => "release" in r;

  it("counts a request under each of its names: a client past its share is refused while others take places, until one of its own ends", () => {
    const p = new Places();
    const a1 = p.take(["ip:a", "key:1"], 10, 2);
    const a2 = p.take(["ip:a", "key:2"], 10, 2);
    expect(isPlace(a1) && isPlace(a2)).toBe(true);
    // The address holds its share, whatever key comes next.
    expect(p.take(["ip:a", "key:3"], 10, 2)).toEqual({ refused: "client_share" });
    expect(p.take(["ip:a"], 10, 2)).toEqual({ refused: "client_share" });
    // key:1 from another address: its second place, then its share is held too.
    expect(isPlace(p.take(["ip:b", "key:1"], 10, 2))).toBe(true);
    expect(p.take(["ip:c", "key:1"], 10, 2)).toEqual({ refused: "client_share" });
    expect(isPlace(p.take(["ip:c"], 10, 2))).toBe(true);
    expect(p.held).toBe(4);
    expect([p.heldBy("ip:a"), p.heldBy("key:1"), p.heldBy("ip:b"), p.heldBy("key:3")]).toEqual([2, 2, 1, 0]);
    // A refused request took nothing; one of a's ending gives a its place back.
    if (isPlace(a1)) a1.release();
    expect(p.heldBy("ip:a")).toBe(1);
    expect(isPlace(p.take(["ip:a", "key:3"], 10, 2))).toBe(true);
  });

  it("refuses every client once the isolate is full; a limit of 0 is no limit, for the isolate and for a client", () => {
    const p = new Places();
    for (let i = 0; i < 3; i++) expect(isPlace(p.take([`ip:${i}`], 3, 2))).toBe(true);
    expect(p.take(["ip:new"], 3, 2)).toEqual({ refused: "full" });
    expect(p.refusal(["ip:new"], 3, 2)).toBe("full");
    const free = new Places();
    for (let i = 0; i < 500; i++) expect(isPlace(free.take(["ip:one"], 0, 0))).toBe(true);
    expect(free.heldBy("ip:one")).toBe(500);
  });

  it("forgets a client once it holds nothing, and a place given back twice is given back once", () => {
    const p = new Places();
    const places = Array.from({ length: 50 }, (_, i) => p.take([`ip:${i % 5}`, `key:${i}`], 100, 10));
    expect(p.clients).toBe(55);
    const other = p.take(["ip:0", "key:x"], 100, 20);
    for (const place of places) if (isPlace(place)) place.release();
    for (const place of places) if (isPlace(place)) place.release();
    expect(p.held).toBe(1);
    expect(p.heldBy("ip:0")).toBe(1);
    expect(p.clients).toBe(2);
    if (isPlace(other)) other.release();
    expect([p.held, p.clients]).toEqual([0, 0]);
  });

  it("a client's share is a percentage of the isolate's places, rounded down, at least one", () => {
    expect(clientShare(128, 25)).toBe(32);
    expect(clientShare(128, 100)).toBe(128);
    expect(clientShare(10, 33)).toBe(3);
    expect(clientShare(2, 25)).toBe(1);
    expect(clientShare(0, 25)).toBe(0);
    expect(edgeConfig(envWith(128, { SIGIL_EDGE_CLIENT_SHARE_PERCENT: "25" })).maxInFlightPerClient).toBe(32);
    expect(edgeConfig({ ...(env as unknown as Env) } as Env).maxInFlightPerClient).toBe(DEFAULT_MAX_IN_FLIGHT / 4);
  });
});
