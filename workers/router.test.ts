// An acting route's pipeline (router.ts): its stages run in order around the handler, only once the
// request is valid; what a stage or the handler throws is its error answer at once, which every stage
// before it sees (c.error) and may add to; a stage that throws before next() runs nothing after it.
import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { SigilError } from "../shared/errors.ts";
import { errorResponse } from "./errors.ts";
import { newRouter, pipeline, type Stage } from "./router.ts";

const route = createRoute({
  method: "post",
  path: "/p",
  request: { body: { content: { "application/json": { schema: z.strictObject({ n: z.number() }) } } } },
  responses: { 200: { description: "ok", content: { "application/json": { schema: z.object({ n: z.number() }) } } } },
});

function appWith(stages: Stage[], handler: (n: number) => number) {
  const app = newRouter();
  app.openapi(
    route,
    pipeline<typeof route>(stages, async (c) => c.json({ n: handler(c.req.valid("json").n) }, 200)),
  );
  app.onError((err, c) => errorResponse(c, err));
  return app;
}
const post = (app: ReturnType<typeof appWith>, body: unknown) =>
  app.request("/p", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** A stage that records what it saw, before and after the rest, and marks the answer. */
function recorder(name: string, seen: string[]): Stage {
  return async (c, next) => {
    seen.push(`${name} before`);
    await next();
    seen.push(`${name} after: ${c.res.status}${c.error ? ` ${(c.error as SigilError).code}` : ""}`);
    c.header(`x-${name}`, "seen");
  };
}

describe("pipeline", () => {
  it("runs the stages in order around the handler, and they may add to its answer", async () => {
    const seen: string[] = [];
    const res = await post(
      appWith([recorder("a", seen), recorder("b", seen)], (n) => n * 2),
      { n: 21 },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ n: 42 });
    expect(res.headers.get("x-a")).toBe("seen");
    expect(seen).toEqual(["a before", "b before", "b after: 200", "a after: 200"]);
  });

  it("reaches no stage for a request its route refuses as invalid", async () => {
    const seen: string[] = [];
    const res = await post(
      appWith([recorder("a", seen)], (n) => n),
      { n: "x" },
    );
    expect(res.status).toBe(400);
    expect(seen).toEqual([]);
  });

  it("answers what the handler throws as its error, which every stage before it sees", async () => {
    const seen: string[] = [];
    const app = appWith([recorder("a", seen), recorder("b", seen)], () => {
      throw new SigilError("not_found", "nothing here");
    });
    const res = await post(app, { n: 1 });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
    expect(res.headers.get("x-a")).toBe("seen");
    expect(seen).toEqual(["a before", "b before", "b after: 404 not_found", "a after: 404 not_found"]);
  });

  it("a stage that throws before next() runs neither the stages after it nor the handler", async () => {
    const seen: string[] = [];
    let handled = false;
    const refuse: Stage = async () => {
      throw new SigilError("insufficient_credits", "no credit");
    };
    const res = await post(
      appWith([recorder("a", seen), refuse, recorder("c", seen)], (n) => {
        handled = true;
        return n;
      }),
      { n: 1 },
    );
    expect(res.status).toBe(402);
    expect(handled).toBe(false);
    expect(seen).toEqual(["a before", "a after: 402 insufficient_credits"]);
  });
});
