// Request bodies inside workerd: read whole, once, within the route's limit and the body deadline,
// before the route runs. A body that does not arrive in time is 408 body_timeout, one over the limit
// 413 payload_too_large (at once when Content-Length says so), one whose stream breaks 400; the route
// reads the buffered bytes (`c.req.json()`, `text()`), never the stream again.
import { env } from "cloudflare:test";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { edgeConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { errorResponse } from "../../errors.ts";
import type { EdgeEnv } from "../../router.ts";
import { defaultBodyLimit, readBody, scriptBodyLimit } from "./index.ts";

const DEADLINE_MS = 300;

/** An env of the workers project with this body deadline (a fresh object: its config is read anew). */
const envWith = (deadlineMs: number) =>
  ({ ...(env as unknown as Env), SIGIL_EDGE_BODY_TIMEOUT_MS: String(deadlineMs) }) as Env;

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A body that sends `parts` one after another, `gapMs` apart, then ends (or never ends). */
function bodyOf(
  parts: string[],
  gapMs: number,
  options: { ends?: boolean; breaks?: boolean } = {},
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const [i, part] of parts.entries()) {
        if (i > 0) await sleep(gapMs);
        controller.enqueue(encoder.encode(part));
      }
      if (options.breaks) controller.error(new Error("the client went away"));
      else if (options.ends !== false) controller.close();
    },
  });
}

/** A small app whose /echo routes read the body through their limit, and say what they got. */
function echoApp() {
  let ran = 0;
  const app = new Hono<EdgeEnv>();
  app.use(async (c, next) => {
    c.set("config", edgeConfig(c.env));
    await next();
  });
  const echo = async (c: import("hono").Context<EdgeEnv>) => {
    ran++;
    // The stream was read once, by the limit; both ways of reading give its bytes from the cache.
    const used = c.req.raw.bodyUsed;
    const json = await c.req.json();
    const text = await c.req.text();
    return c.json({ json, text, used });
  };
  app.post("/echo", defaultBodyLimit, echo);
  app.post("/script", scriptBodyLimit, echo);
  // A route whose first middleware read the body with a large limit, and whose second holds it to a small one.
  app.post(
    "/twice",
    async (c, next) => {
      await readBody(c, 1000);
      await next();
    },
    async (c, next) => {
      await readBody(c, 10);
      await next();
    },
    echo,
  );
  app.onError((err, c) => errorResponse(c, err));
  return { app, ran: () => ran };
}

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

type ErrorBody = { error: { code: string; message: string; request_id: string } };

describe("request bodies", () => {
  it("a body that arrives in pieces within the deadline is read once; the route reads the buffered bytes", async () => {
    const { app } = echoApp();
    const res = await post(app, "/echo", bodyOf(['{"a":', " [1, 2", ', "é"]}'], 40), envWith(2_000));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ json: { a: [1, 2, "é"] }, text: '{"a": [1, 2, "é"]}', used: true });
  });

  it("a body that never ends is refused 408 body_timeout at the deadline, before its route runs", async () => {
    const { app, ran } = echoApp();
    const started = Date.now();
    const res = await post(app, "/echo", bodyOf(['{"a":'], 0, { ends: false }), envWith(DEADLINE_MS));
    const took = Date.now() - started;
    expect(res.status).toBe(408);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe("body_timeout");
    expect(body.error.message).toContain("0.3 s");
    expect(body.error.request_id).toBeTypeOf("string");
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
    expect(took).toBeLessThan(DEADLINE_MS + 1_500);
    expect(ran()).toBe(0);
  });

  it("a body that ends only after the deadline is refused 408 too", async () => {
    const { app, ran } = echoApp();
    const res = await post(app, "/echo", bodyOf(['{"a":', "1}"], DEADLINE_MS + 200), envWith(DEADLINE_MS));
    expect(res.status).toBe(408);
    expect(((await res.json()) as ErrorBody).error.code).toBe("body_timeout");
    expect(ran()).toBe(0);
  });

  it("a body over the limit is 413 as soon as that much has arrived, or at once when Content-Length says so", async () => {
    const { app, ran } = echoApp();
    const e = envWith(5_000);
    const chunk = "x".repeat(100 << 10);
    // Three chunks of 100 KiB, then a body that never ends: refused at the third, long before the deadline.
    const started = Date.now();
    const streamed = await post(app, "/echo", bodyOf([chunk, chunk, chunk], 10, { ends: false }), e);
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as ErrorBody).error.code).toBe("payload_too_large");
    expect(Date.now() - started).toBeLessThan(2_000);
    const declared = await post(app, "/echo", "x".repeat((256 << 10) + 1), e);
    expect(declared.status).toBe(413);
    // 300 KiB is within the script routes' limit.
    expect((await post(app, "/script", JSON.stringify("x".repeat(300 << 10)), e)).status).toBe(200);
    expect(ran()).toBe(1);
  });

  it("a body already read is held to each later limit without being read again", async () => {
    const { app } = echoApp();
    const e = envWith(5_000);
    expect((await post(app, "/twice", '{"a":1}', e)).status).toBe(200);
    const over = await post(app, "/twice", '{"a":"0123456789"}', e);
    expect(over.status).toBe(413);
    expect(((await over.json()) as ErrorBody).error.message).toContain("at most 10 bytes");
  });

  it("a body whose stream breaks is the client's mistake (400), not a 500", async () => {
    const { app, ran } = echoApp();
    const res = await post(app, "/echo", bodyOf(['{"a":'], 0, { breaks: true }), envWith(5_000));
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe("invalid_request");
    expect(JSON.stringify(body)).not.toContain("went away");
    expect(ran()).toBe(0);
  });

  it("a request without a body passes", async () => {
    const { app } = echoApp();
    app.get("/bare", defaultBodyLimit, (c) => c.text("bare"));
    expect(await (await app.request("/bare", {}, envWith(5_000))).text()).toBe("bare");
  });
});
