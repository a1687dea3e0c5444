// The Webhooks Durable Object delivering, in workerd: the URL guard (url.ts) runs again before every
// attempt, not only when the endpoint is registered (issue 14; issue 26: no test held it there).
// The URL an endpoint was registered with passed the check of its day: a deployment that was local
// then (SIGIL_ENV development or test, loopback http allowed), or whose rules have grown stricter
// since, must still not send an account's events — signed with its secret — to a loopback or
// private address. The object's storage is the one Durable Object's; the same storage is delivered
// from under a production policy by an instance made with that environment, as a redeployed
// worker would make it. The network is a stub that records what would have left the object, so
// nothing is ever sent anywhere.
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../env.ts";
import { Webhooks } from "./store.ts";

const namespace = (env as unknown as Env).WEBHOOKS!;
let n = 0;
/** A fresh account's object. */
const webhooks = (): DurableObjectStub<Webhooks> =>
  namespace.get(namespace.idFromName(`webhooks-test-${Date.now()}-${n++}`));
const ACCOUNT = `0x${"26".repeat(32)}`;
/** A receiver on this machine, as a local deployment lets one register. */
const LOOPBACK_URL = "http://127.0.0.1:9/hook";
/** URLs a local deployment registers and production refuses, and the refusal each attempt must record. */
const REFUSED_IN_PRODUCTION: Array<[string, RegExp]> = [
  [LOOPBACK_URL, /^refused: a webhook URL must use https/],
  ["https://127.0.0.1:9/hook", /^refused: a webhook URL may not point to a loopback address/],
  ["https://[::1]:9/hook", /^refused: a webhook URL may not point to a loopback address/],
  ["https://10.0.0.26/hook", /^refused: a webhook URL may not point to a private address/],
  ["https://169.254.169.254/latest/meta-data", /^refused: a webhook URL may not point to a cloud metadata address/],
  ["https://localhost:9/hook", /^refused: a webhook URL may not name a host that only resolves inside a network/],
];

/** Stubs the network: every request the object sends is recorded and answered 200. */
function network(): string[] {
  const sent: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL) => {
      sent.push(String(input instanceof Request ? input.url : input));
      return new Response("ok");
    }),
  );
  return sent;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

/**
 * Registers `url` (as the route did under a local policy) and emits one event to it, then
 * runs one delivery round of `deliverer(state)` — the object's storage as an instance with some
 * environment sees it. No alarm is left set: the round runs here, from the test, and only once.
 */
async function deliverOnce(url: string, deliverer: (state: DurableObjectState, registered: Webhooks) => Webhooks) {
  return runInDurableObject(webhooks(), async (registered: Webhooks, state) => {
    // The object runs in the tests' isolate, so it sends through the stub; were that ever not so, stop here.
    if (!vi.isMockFunction(globalThis.fetch)) throw new Error("the network is not stubbed where the object runs");
    const { endpoint } = (await registered.addEndpoint(ACCOUNT, url, ["run.failed"])) as { endpoint: { id: string } };
    const instance = deliverer(state, registered);
    // Held against the object's own alarm, which emit sets for now: this round is the only one.
    await state.blockConcurrencyWhile(async () => {
      const emitted = await instance.emit(ACCOUNT, {
        type: "run.failed",
        dedupe: "run.failed:r-26",
        data: { request_id: "r-26" },
      });
      expect(emitted.deliveries).toBe(1);
      await state.storage.deleteAlarm();
      await instance.alarm();
    });
    const deliveries = instance.deliveries(endpoint.id, 0, 10)!;
    await state.storage.deleteAlarm();
    return deliveries.items;
  });
}

describe("a delivery", () => {
  it.each(REFUSED_IN_PRODUCTION)(
    "to %s, registered while the deployment was local, is refused at the attempt under production: nothing is sent, and the delivery fails at once",
    async (url, refusal) => {
      const sent = network();
      const [delivery] = await deliverOnce(
        url,
        (state) => new Webhooks(state, { ...(env as unknown as Record<string, unknown>), SIGIL_ENV: "production" }),
      );
      expect(sent, "the event was sent to an address production refuses").toEqual([]);
      expect(delivery).toMatchObject({
        status: "failed",
        next_attempt_at: null,
        attempts: [{ n: 1, status_code: null, error: expect.stringMatching(refusal) }],
      });
    },
  );

  it("to a URL the policy allows is sent (the stubbed network sees the object's requests)", async () => {
    const sent = network();
    const [delivery] = await deliverOnce(LOOPBACK_URL, (_state, registered) => registered);
    expect(sent).toEqual([LOOPBACK_URL]);
    expect(delivery).toMatchObject({ status: "succeeded", attempts: [{ n: 1, status_code: 200, error: null }] });
  });
});
