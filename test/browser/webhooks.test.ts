// The dashboard's Webhooks page in a real headless Chromium against the real local stack, with a
// receiver in this process on 127.0.0.1: an endpoint added from the form, its secret shown once and
// verifying what the receiver gets, the low-balance threshold set from the form firing balance.low,
// the delivery in the page's log and sent again with Resend, a bad URL refused in words with its code
// and request id, removal after a confirmation; and a usage key refused in words, not a blank page.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser } from "playwright-core";
import {
  createSigilClient,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  topUp,
  verifyWebhook,
  type SigilClient,
} from "../../sdk/src/index.ts";
import { launchBrowser, screenshots, seriousViolations, watchedPage } from "../harness/browser.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

/** One request as the receiver got it. */
type Received = { body: string; signature: string | undefined; eventId: string | undefined };

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let browser: Browser;
let key = "";
let client: SigilClient;
let receiver: Server;
let receiverUrl = "";
const received: Received[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      received.push({
        body,
        signature: req.headers[SIGNATURE_HEADER.toLowerCase()] as string | undefined,
        eventId: req.headers[EVENT_ID_HEADER.toLowerCase()] as string | undefined,
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  stack = inject("localStack");
  browser = await launchBrowser();
  const created = await createSigilClient({ baseUrl: stack.origin }).newAccount({ account_name: "webhooks page" });
  key = created.api_key;
  client = createSigilClient({ baseUrl: stack.origin, apiKey: key });
  await topUp(client, { amountCents: 500 });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

/** A watched page signed in with `apiKey` (the test account's by default) at `#/path`, as a user does it: the key typed into the form. */
async function signedIn(path: string, apiKey = key, width = 1280) {
  const watched = await watchedPage(browser, width);
  await watched.page.goto(`${stack.origin}/dashboard${path ? `#/${path}` : ""}`);
  await watched.page.getByLabel("API key").fill(apiKey);
  await watched.page.getByRole("button", { name: "Sign in with key" }).click();
  return watched;
}

describe("the Webhooks page", () => {
  it("adds an endpoint (its secret shown once, verifying what the receiver gets), fires balance.low from the threshold set in the form, lists the delivery and resends it, refuses a bad URL in words, removes the endpoint after a confirmation", async () => {
    const { page, problems } = await signedIn("webhooks");
    await page.getByText("No webhook endpoints yet").waitFor({ timeout: 30_000 });

    // A URL the API refuses: its words, its code and the request id.
    await page.getByLabel("Endpoint URL").fill("ftp://x");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const refused = page.getByRole("alert");
    await expect.poll(() => refused.textContent()).toMatch(/http\(s\).*invalid_webhook_url.*request [0-9a-f-]{36}/);
    expect(await client.listWebhooks()).toEqual([]);

    // The default events include balance.low; submitted from the keyboard.
    expect(await page.getByRole("checkbox", { name: /balance\.low/ }).isChecked()).toBe(true);
    expect(await page.getByRole("checkbox", { name: /run\.failed/ }).isChecked()).toBe(false);
    await page.getByLabel("Endpoint URL").fill(receiverUrl);
    await page.getByLabel("Endpoint URL").press("Enter");
    const secret = (await page.getByTestId("webhook-secret").textContent({ timeout: 30_000 })) as string;
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(await page.getByText("it will not be shown again").isVisible()).toBe(true);
    expect(await page.getByRole("button", { name: `Copy secret: ${secret}` }).count()).toBe(1);
    expect(await page.getByRole("alert").count()).toBe(0);
    const endpoints = page.getByRole("table", { name: "The account's webhook endpoints" });
    await expect.poll(() => endpoints.textContent()).toContain(receiverUrl);
    const [endpoint] = await client.listWebhooks();
    expect(endpoint).toMatchObject({
      url: receiverUrl,
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
      disabled: false,
    });
    expect(await endpoints.textContent()).toContain("enabled");

    // The balance is $5.00: a threshold of $5.00 is armed, and a 1-cent wallet takes the balance under it.
    expect(await page.getByTestId("balance-low-now").textContent()).toBe("balance.low is off.");
    await page.getByLabel("Low-balance threshold in dollars").fill("5");
    await page.getByRole("button", { name: "Save threshold" }).click();
    await page.getByRole("status").filter({ hasText: "Saved: the threshold is $5.00" }).waitFor({ timeout: 30_000 });
    expect(await client.getWebhookSettings()).toEqual({ balance_low_cents: 500 });
    await expect
      .poll(() => page.getByTestId("balance-low-now").textContent())
      .toBe("balance.low fires when the balance goes under $5.00.");
    await client.createWallet({});
    await expect.poll(() => received.length, { timeout: 60_000 }).toBe(1);
    const event = await verifyWebhook(received[0]!.body, received[0]!.signature, secret);
    expect(event).toMatchObject({ type: "balance.low", data: { balance_cents: 499, threshold_cents: 500 } });
    expect(received[0]!.eventId).toBe(event.id);

    // The delivery in the endpoint's log: its event, its outcome, the receiver's answer.
    await page.getByRole("button", { name: `Deliveries to ${receiverUrl}` }).click();
    const log = page.getByRole("table", { name: /Deliveries to this endpoint, newest first/ });
    const refresh = page.getByRole("button", { name: "Refresh deliveries" });
    await expect
      .poll(
        async () => {
          if (!(await log.isVisible()) || !(await log.textContent())?.includes("succeeded")) await refresh.click();
          return (await log.isVisible()) ? log.locator("tbody tr").allTextContents() : [];
        },
        { timeout: 30_000 },
      )
      .toEqual([expect.stringMatching(/balance\.low.*succeeded, 1 attempt200/)]);
    expect(await log.textContent()).toContain("1 in all");
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "webhooks");

    // Resend: the receiver gets the same event again, signed afresh with the same secret.
    await page.getByRole("button", { name: new RegExp(`^Resend balance\\.low ${event.id}`) }).click();
    await page.getByRole("status").filter({ hasText: "again now" }).waitFor({ timeout: 30_000 });
    await expect.poll(() => received.length, { timeout: 60_000 }).toBe(2);
    expect(received[1]!.eventId).toBe(event.id);
    await expect(verifyWebhook(received[1]!.body, received[1]!.signature, secret)).resolves.toMatchObject({
      id: event.id,
      type: "balance.low",
    });
    await expect
      .poll(
        async () => {
          if (!(await log.textContent())?.includes("succeeded, 2 attempts")) await refresh.click();
          return log.locator("tbody tr").allTextContents();
        },
        { timeout: 30_000 },
      )
      .toEqual([expect.stringMatching(/balance\.low.*succeeded, 2 attempts200/)]);

    // The secret was shown once: a reload of the page has it nowhere.
    await page.reload();
    await endpoints.waitFor({ timeout: 30_000 });
    expect(await page.content()).not.toContain(secret);

    // Removal asks first; dismissed, nothing happens; accepted, the endpoint is gone.
    page.once("dialog", (d) => void d.dismiss());
    await page.getByRole("button", { name: `Remove ${receiverUrl}` }).click();
    expect(await client.listWebhooks()).toHaveLength(1);
    let asked = "";
    page.once("dialog", (d) => {
      asked = d.message();
      void d.accept();
    });
    await page.getByRole("button", { name: `Remove ${receiverUrl}` }).click();
    await page.getByText("No webhook endpoints yet").waitFor({ timeout: 30_000 });
    expect(asked).toContain(receiverUrl);
    expect(await client.listWebhooks()).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("a usage key is refused in words, with account_key_required and its request id, and told to use the master key; no blank page, no console error", async () => {
    const { usage_api_key } = await client.addUsageApiKey({
      name: "reader",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [],
    });
    const { page, problems } = await signedIn("webhooks", usage_api_key, 360);
    const alert = page.getByRole("alert");
    await expect
      .poll(() => alert.textContent(), { timeout: 30_000 })
      .toMatch(/master key.*account_key_required.*request [0-9a-f-]{36}/);
    expect(await page.getByText("Sign in with the master key to see them.").isVisible()).toBe(true);
    expect(await page.getByRole("heading", { name: "Webhooks" }).isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "webhooks-usage-key");
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
