// Webhooks to users (issue 14) on the real local stack (anvil, the enclave, the local Stripe, the
// edge under wrangler dev with its Webhooks Durable Objects), through the SDK: receivers are HTTP
// servers in this process on 127.0.0.1. The retry schedule's base is 200 ms here
// (SIGIL_WEBHOOK_RETRY_BASE_MS), so retries come within seconds; the 10 s attempt timeout is the
// production one. The last test restarts the stack on the same state folder.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSigilClient,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  SigilWebhookError,
  topUp,
  verifyWebhook,
  type SigilClient,
  type WebhookEvent,
} from "../../sdk/src/index.ts";
import { errorLineOf, runSigil } from "../harness/cli.ts";
import { startLocalStack, type LocalStack } from "../harness/localStack.ts";

const RETRY_BASE_MS = "200";
let stack: LocalStack;
let anon: SigilClient;
const servers: Server[] = [];

beforeAll(async () => {
  stack = await startLocalStack({ env: { SIGIL_WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS }, keepState: true });
  anon = createSigilClient({ baseUrl: stack.origin });
}, 150_000);

afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await stack?.stop();
  if (stack) rmSync(stack.stateDir, { recursive: true, force: true });
});

/** One request as a receiver got it. */
type Received = { body: string; signature: string | undefined; eventId: string | undefined };

/**
 * A webhook receiver on 127.0.0.1: `answer(n)` says what the n-th request (1-based) gets — a status,
 * or "hang" (never answered). Requests that get a 2xx and verify with the endpoint's secret reach
 * the handler once per event id, as a receiver de-duplicating by id does.
 */
async function receiver(answer: (n: number) => number | "hang" = () => 200, port = 0) {
  const requests: Received[] = [];
  const handled: WebhookEvent[] = [];
  const seen = new Set<string>();
  let secret = "";
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const signature = req.headers[SIGNATURE_HEADER.toLowerCase()] as string | undefined;
      const eventId = req.headers[EVENT_ID_HEADER.toLowerCase()] as string | undefined;
      requests.push({ body, signature, eventId });
      const what = answer(requests.length);
      if (what === "hang") return;
      if (what >= 200 && what < 300) {
        void verifyWebhook(body, signature, secret).then(
          (event) => {
            if (!seen.has(event.id)) {
              seen.add(event.id);
              handled.push(event);
            }
            res.writeHead(what).end();
          },
          () => res.writeHead(400).end(),
        );
        return;
      }
      res.writeHead(what).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    server,
    requests,
    handled,
    setSecret: (s: string) => (secret = s),
    of: (type: string) => handled.filter((e) => e.type === type),
  };
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function newAccount(name: string, credit = 500) {
  const created = await anon.newAccount({ account_name: name });
  const client = anon.with({ apiKey: created.api_key });
  if (credit > 0) await topUp(client, { amountCents: credit });
  return { created, client };
}

describe("webhooks on the local stack", () => {
  it("a local receiver gets payment.credited within seconds of a top-up, once, and verifies it with the SDK; a tampered body and an old timestamp are refused", async () => {
    const { created, client } = await newAccount("webhooks credited", 0);
    const r = await receiver();
    const endpoint = await client.createWebhook({ url: r.url, events: ["payment.credited"] });
    expect(endpoint).toMatchObject({ url: r.url, events: ["payment.credited"], disabled: false });
    expect(endpoint.id).toMatch(/^we_[0-9a-f]{24}$/);
    expect(endpoint.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    r.setSecret(endpoint.secret);
    // The secret is shown once: the list never has it.
    const listed = await client.listWebhooks();
    expect(listed).toEqual([
      { id: endpoint.id, url: r.url, events: ["payment.credited"], created: endpoint.created, disabled: false },
    ]);
    expect(JSON.stringify(listed)).not.toContain(endpoint.secret);

    const paid = await topUp(client, { amountCents: 700 });
    const event = (await waitFor("payment.credited", () => r.of("payment.credited")[0]))!;
    expect(event).toMatchObject({
      type: "payment.credited",
      account_id: created.account_id,
      data: { payment_intent_id: paid.paymentIntentId, amount_cents: 700, balance_cents: 700 },
    });
    expect(event.id).toMatch(/^evt_/);

    const { body, signature } = r.requests[0]!;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(r.requests[0]!.eventId).toBe(event.id);
    await expect(verifyWebhook(body, signature, endpoint.secret)).resolves.toMatchObject({ id: event.id });
    const tampered = await verifyWebhook(
      body.replace('"amount_cents":700', '"amount_cents":70000'),
      signature,
      endpoint.secret,
    ).catch((e: unknown) => e);
    expect(tampered).toBeInstanceOf(SigilWebhookError);
    expect(tampered).toMatchObject({ code: "webhook_signature_invalid" });
    const t = Number(/t=(\d+)/.exec(signature!)![1]);
    await expect(verifyWebhook(body, signature, endpoint.secret, { now: t + 301 })).rejects.toMatchObject({
      code: "webhook_timestamp_out_of_tolerance",
    });

    // confirm_payment and Stripe's webhook both credited-or-saw the intent: one event, one delivery.
    const deliveries = await client.listWebhookDeliveries({ webhook_id: endpoint.id });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      event_id: event.id,
      event_type: "payment.credited",
      status: "succeeded",
      next_attempt_at: null,
      attempts: [{ n: 1, status_code: 200, error: null }],
    });
  });

  it("a receiver that answers 500 three times then 200 gets the event handled exactly once; a re-send carries the same event id", async () => {
    const { client } = await newAccount("webhooks retried", 0);
    const r = await receiver((n) => (n <= 3 ? 500 : 200));
    const endpoint = await client.createWebhook({ url: r.url, events: ["payment.credited"] });
    r.setSecret(endpoint.secret);
    await topUp(client, { amountCents: 500 });
    const event = await waitFor("the fourth attempt's delivery", () => r.of("payment.credited")[0]);
    expect(r.requests).toHaveLength(4);
    expect(new Set(r.requests.map((q) => q.eventId))).toEqual(new Set([event.id]));
    expect(r.handled).toHaveLength(1);

    const [delivery] = await client.listWebhookDeliveries({ webhook_id: endpoint.id });
    expect(delivery).toMatchObject({ status: "succeeded", event_id: event.id });
    expect(delivery!.attempts.map((a) => a.status_code)).toEqual([500, 500, 500, 200]);
    expect(delivery!.attempts.map((a) => a.error)).toEqual(["answered 500", "answered 500", "answered 500", null]);
    // Backoff: each attempt after the one before.
    const at = delivery!.attempts.map((a) => a.at);
    expect([...at].sort((a, b) => a - b)).toEqual(at);

    // A manual re-send, by delivery id: the same event again (same id), which the receiver's de-duplication drops.
    const resent = await client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: delivery!.id });
    expect(resent).toMatchObject({ id: delivery!.id, status: "pending" });
    await waitFor("the re-sent delivery", () => r.requests.length === 5);
    expect(r.requests[4]!.eventId).toBe(event.id);
    expect(r.handled).toHaveLength(1);
    const after = await waitFor("the re-send in the log", async () => {
      const [d] = await client.listWebhookDeliveries({ webhook_id: endpoint.id });
      return d?.status === "succeeded" && d.attempts.length === 5 ? d : undefined;
    });
    expect(after.attempts[4]).toMatchObject({ n: 5, status_code: 200 });
    // By event id too; an unknown one is 404.
    await expect(
      client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: event.id }),
    ).resolves.toMatchObject({ event_id: event.id });
    await expect(
      client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: `evt_${"0".repeat(24)}` }),
    ).rejects.toMatchObject({ status: 404, code: "delivery_not_found" });
    // Under one Idempotency-Key a re-send is made once, and the key is that delivery's: a re-send of
    // another under it is refused, not answered the first one's answer.
    const once = { idempotencyKey: `resend-${crypto.randomUUID()}` };
    const first = await client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: delivery!.id }, once);
    await expect(
      client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: delivery!.id }, once),
    ).resolves.toEqual(first);
    await expect(
      client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: event.id }, once),
    ).rejects.toMatchObject({ status: 422, code: "idempotency_key_reused" });
  });

  it("a receiver that never answers is retried with backoff, and the delivery log shows each attempt", async () => {
    const { client } = await newAccount("webhooks hanging", 0);
    const r = await receiver(() => "hang");
    const endpoint = await client.createWebhook({ url: r.url, events: ["payment.credited"] });
    await topUp(client, { amountCents: 500 });
    // Each attempt waits 10 s for an answer, then fails; the next follows on the schedule.
    const delivery = await waitFor(
      "two timed-out attempts",
      async () => {
        const [d] = await client.listWebhookDeliveries({ webhook_id: endpoint.id });
        return d && d.attempts.length >= 2 ? d : undefined;
      },
      90_000,
    );
    expect(delivery.status).toBe("pending");
    expect(delivery.next_attempt_at).toBeGreaterThan(0);
    for (const a of delivery.attempts.slice(0, 2))
      expect(a).toMatchObject({ status_code: null, error: "no answer within 10 s" });
    expect(delivery.attempts[1]!.at).toBeGreaterThan(delivery.attempts[0]!.at);
    expect(r.requests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(r.requests.map((q) => q.eventId)).size).toBe(1);
    // Removing the endpoint stops its deliveries and drops its log.
    await expect(client.deleteWebhook({ webhook_id: endpoint.id })).resolves.toEqual({
      deleted: true,
      id: endpoint.id,
    });
    await expect(client.listWebhookDeliveries({ webhook_id: endpoint.id })).rejects.toMatchObject({
      status: 404,
      code: "webhook_not_found",
    });
  }, 150_000);

  it("payment.failed from a declined card; balance.low once per crossing, re-armed by a credit; usage_key.cap_reached once; run.failed only when subscribed", async () => {
    const { client } = await newAccount("webhooks events", 500);
    const r = await receiver();
    const all = await client.createWebhook({ url: r.url });
    // run.failed is opt-in: the default subscription leaves it out.
    expect(all.events).toEqual([
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
    ]);
    r.setSecret(all.secret);

    await expect(topUp(client, { amountCents: 500, paymentMethod: "pm_card_chargeDeclined" })).rejects.toMatchObject({
      code: "payment_not_succeeded",
    });
    const failed = await waitFor("payment.failed", () => r.of("payment.failed")[0]);
    expect(failed.data).toMatchObject({
      amount_cents: 500,
      failure_code: "card_declined",
      decline_code: "generic_decline",
    });

    // 500 cents now, threshold 500: armed. A wallet (1 cent) takes it under: balance.low; the next, nothing.
    await expect(client.updateWebhookSettings({ balance_low_cents: 500 })).resolves.toEqual({ balance_low_cents: 500 });
    await expect(client.getWebhookSettings()).resolves.toEqual({ balance_low_cents: 500 });
    await client.createWallet({});
    const low = await waitFor("balance.low", () => r.of("balance.low")[0]);
    expect(low.data).toEqual({ balance_cents: 499, threshold_cents: 500 });
    await client.createWallet({});
    // A threshold set above the balance (498 < 997) is not armed: the next write says nothing.
    await client.updateWebhookSettings({ balance_low_cents: 997 });
    await client.createWallet({});
    // A credit lifts the balance to the threshold (497 + 500 = 997): re-armed; the next write crosses again.
    await topUp(client, { amountCents: 500 });
    await waitFor("the credit's payment.credited", () => r.of("payment.credited").length === 1);
    await client.createWallet({});
    const second = await waitFor("the second balance.low", () => r.of("balance.low")[1]);
    expect(second.data).toEqual({ balance_cents: 996, threshold_cents: 997 });
    expect(r.of("balance.low")).toHaveLength(2);

    // A usage key with a 1-cent cap: its first wallet brings it to the cap, its second is refused (402) — one event.
    const { usage_api_key } = await client.addUsageApiKey({
      name: "capped",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: true,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [],
      spend_limit_cents: 1,
    });
    const capped = client.with({ apiKey: usage_api_key });
    await capped.createWallet({});
    await expect(capped.createWallet({})).rejects.toMatchObject({ status: 402, code: "insufficient_credits" });
    const cap = await waitFor("usage_key.cap_reached", () => r.of("usage_key.cap_reached")[0]);
    expect(cap.data).toMatchObject({ spend_limit_cents: 1, spent_cents: 1 });
    expect(cap.data.usage_key_hash).toMatch(/^0x[0-9a-f]{64}$/);
    // A usage key may not manage webhooks.
    await expect(capped.listWebhooks()).rejects.toMatchObject({ status: 403, code: "account_key_required" });

    // A failing run: nothing for the default subscription; an endpoint that opted in gets run.failed.
    const optIn = await receiver();
    const runs = await client.createWebhook({ url: optIn.url, events: ["run.failed"] });
    optIn.setSecret(runs.secret);
    const code = 'async function main() { throw new Error("boom"); }';
    const cid = await client.getSigilActionIpfsId(code);
    await client.addAction({ action_ipfs_cid: cid, name: "boom", description: "" });
    await client.addGroup({
      group_name: "runs",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [cid],
    });
    const run = await client.sigilAction({ code, js_params: null });
    expect(run.has_error).toBe(true);
    const runFailed = await waitFor("run.failed", () => optIn.of("run.failed")[0]);
    expect(runFailed.data).toMatchObject({ cid, error: { code: "script_error" }, usage_key_hash: null });
    expect(String((runFailed.data.error as { message: string }).message)).toContain("boom");
    expect(r.of("run.failed")).toEqual([]);
  }, 180_000);

  it("bad input: a malformed or non-http URL, an unknown event → 400 with a clear code; an eleventh endpoint → 409; an unknown id → 404; a wrong key → 401", async () => {
    const { client } = await newAccount("webhooks limits", 0);
    await expect(client.createWebhook({ url: "not a url" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_webhook_url",
      details: { reason: "malformed" },
    });
    await expect(client.createWebhook({ url: "ftp://127.0.0.1/hook" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_webhook_url",
      details: { reason: "scheme" },
    });
    await expect(client.createWebhook({ url: "http://user:pw@127.0.0.1/hook" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_webhook_url",
      details: { reason: "credentials" },
    });
    await expect(
      client.createWebhook({ url: "http://127.0.0.1:9/hook", events: ["payment.refunded" as never] }),
    ).rejects.toMatchObject({ status: 400, code: "invalid_request" });
    for (let i = 0; i < 10; i++) await client.createWebhook({ url: `http://127.0.0.1:9/hook${i}` });
    await expect(client.createWebhook({ url: "http://127.0.0.1:9/hook10" })).rejects.toMatchObject({
      status: 409,
      code: "webhook_limit",
    });
    expect(await client.listWebhooks()).toHaveLength(10);
    await expect(client.deleteWebhook({ webhook_id: `we_${"0".repeat(24)}` })).rejects.toMatchObject({
      status: 404,
      code: "webhook_not_found",
    });
    await expect(client.deleteWebhook({ webhook_id: "nope" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    await expect(anon.with({ apiKey: `${"A".repeat(43)}=` }).listWebhooks()).rejects.toMatchObject({
      status: 401,
      code: "invalid_api_key",
    });
    await expect(anon.listWebhooks()).rejects.toMatchObject({ status: 401, code: "missing_api_key" });
  });

  it("sigil webhook add|list|deliveries|resend|settings|remove on the stack; a wrong key is one error line, exit 1", async () => {
    const { client, created } = await newAccount("webhooks cli", 0);
    const cwd = mkdtempSync(join(tmpdir(), "sigil-webhook-cli-"));
    const cli = (args: string[], key = created.api_key) =>
      runSigil([...args, "--api", stack.origin, "--key", key], { env: {}, cwd });
    try {
      const r = await receiver();
      const added = await cli(["webhook", "add", r.url, "--event", "payment.credited", "--json"]);
      expect(added.code, added.stderr).toBe(0);
      const endpoint = JSON.parse(added.stdout) as { id: string; secret: string; events: string[] };
      expect(endpoint.events).toEqual(["payment.credited"]);
      r.setSecret(endpoint.secret);
      const human = await cli(["webhook", "list"]);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toContain(endpoint.id);
      expect(human.stdout).not.toContain(endpoint.secret);

      await topUp(client, { amountCents: 500 });
      const event = await waitFor("payment.credited", () => r.of("payment.credited")[0]);
      const log = await cli(["webhook", "deliveries", endpoint.id]);
      expect(log.code, log.stderr).toBe(0);
      expect(log.stdout).toMatch(new RegExp(`${event.id}\\s+payment\\.credited\\s+succeeded\\s+200`));
      const resent = await cli(["webhook", "resend", endpoint.id, event.id]);
      expect(resent.code, resent.stderr).toBe(0);
      expect(resent.stdout).toContain(`re-sending ${event.id}`);
      await waitFor("the re-send", () => r.requests.length === 2);
      expect(r.requests[1]!.eventId).toBe(event.id);
      const set = await cli(["webhook", "settings", "--balance-low", "200"]);
      expect(set.stdout).toContain("balance.low threshold $2.00");
      const removed = await cli(["webhook", "remove", endpoint.id]);
      expect(removed.code, removed.stderr).toBe(0);
      expect(await client.listWebhooks()).toEqual([]);

      const wrong = await cli(["webhook", "list"], `${"A".repeat(43)}=`);
      expect(wrong.code).toBe(1);
      expect(errorLineOf(wrong)).toMatchObject({ command: "webhook list", code: "invalid_api_key" });
      const badEvent = await cli(["webhook", "add", r.url, "--event", "payment.refunded"]);
      expect(badEvent.code).toBe(2);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("nothing is lost across a restart of the local stack: an event pending while its receiver is down arrives after the restart", async () => {
    const { client, created } = await newAccount("webhooks restart", 0);
    // A port with nothing on it yet: attempts fail (connection refused) until the receiver comes up there.
    const probe = await receiver();
    const port = (probe.server.address() as AddressInfo).port;
    probe.server.closeAllConnections();
    await new Promise((r) => probe.server.close(r));
    const endpoint = await client.createWebhook({ url: probe.url, events: ["payment.credited"] });
    await topUp(client, { amountCents: 500 });
    await waitFor(
      "a failed attempt",
      async () => ((await client.listWebhookDeliveries({ webhook_id: endpoint.id }))[0]?.attempts.length ?? 0) >= 1,
    );

    const stateDir = stack.stateDir;
    await stack.stop();
    stack = await startLocalStack({ env: { SIGIL_WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS }, keepState: true, stateDir });
    const r = await receiver(() => 200, port);
    r.setSecret(endpoint.secret);
    const event = await waitFor("the event after the restart", () => r.of("payment.credited")[0], 120_000);
    expect(event).toMatchObject({ account_id: created.account_id, data: { amount_cents: 500 } });
    const again = createSigilClient({ baseUrl: stack.origin, apiKey: created.api_key });
    const [delivery] = await again.listWebhookDeliveries({ webhook_id: endpoint.id });
    expect(delivery!.status).toBe("succeeded");
    expect(delivery!.attempts.at(-1)).toMatchObject({ status_code: 200 });
    expect(
      delivery!.attempts.slice(0, -1).every((a) => a.status_code === null && a.error?.startsWith("could not connect")),
    ).toBe(true);
  }, 300_000);
});
