import { afterAll, beforeAll, expect, test } from "vitest";
import { startFetchTarget, type FetchTarget } from "./fetchTarget.ts";

let target: FetchTarget;
beforeAll(async () => {
  target = await startFetchTarget();
});
afterAll(() => target.close());

test("/count counts calls per token and /counts answers every count", async () => {
  const count = async (token: string) =>
    ((await (await fetch(`${target.url}/count?token=${token}`)).json()) as { count: number }).count;
  expect(await count("a")).toBe(1);
  expect(await count("b")).toBe(1);
  expect(await count("a")).toBe(2);
  expect(await (await fetch(`${target.url}/counts`)).json()).toEqual({ a: 2, b: 1 });
});
