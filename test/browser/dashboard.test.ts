// The dashboard in a real headless Chromium against the real local stack (anvil, the enclave, the
// edge under workerd serving /dashboard, the Stripe emulator): served under its CSP from the
// origin alone, signed in with a key, the overview's balance, spend chart and runs, screenshots at
// 1280 and 360 px, axe-core's check, and bad input shown in words with its code and request id.
import { createTestClient, getAddress, http, parseEther, recoverMessageAddress, type Address } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser } from "playwright-core";
import {
  createSigilClient,
  sendSigilTransaction,
  topUp,
  waitForTransaction,
  type SigilClient,
} from "../../sdk/src/index.ts";
import { computeCid } from "../../shared/cid.ts";
import { launchBrowser, screenshots, seriousViolations, watchedPage } from "../harness/browser.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "dashboard" }) }`;
const FAIL = `async function main() { throw new Error("on purpose") }`;

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let browser: Browser;
let key = "";
let client: SigilClient;

beforeAll(async () => {
  stack = inject("localStack");
  browser = await launchBrowser();
  const created = await createSigilClient({ baseUrl: stack.origin }).newAccount({ account_name: "dashboard" });
  key = created.api_key;
  client = createSigilClient({ baseUrl: stack.origin, apiKey: key });
  await topUp(client, { amountCents: 500 });
  const { wallet_address } = await client.createWallet({});
  await client.addGroup({
    group_name: "g",
    group_description: "",
    pkp_ids_permitted: [wallet_address],
    cid_hashes_permitted: [await computeCid(SIGN), await computeCid(FAIL)],
  });
  await client.sigilAction({ code: SIGN, js_params: { wallet: wallet_address } });
  await client.sigilAction({ code: FAIL });
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

/** "$4.96" as 496. */
const cents = (text: string | null) => Math.round(Number((text ?? "").replace("$", "")) * 100);

/** A watched page signed in with `apiKey` (the test account's by default) at `#/path`, as a user does it: the key typed into the form. */
async function signedIn(path: string, apiKey = key, width = 1280) {
  const watched = await watchedPage(browser, width);
  await watched.page.goto(`${stack.origin}/dashboard${path ? `#/${path}` : ""}`);
  await watched.page.getByLabel("API key").fill(apiKey);
  await watched.page.getByRole("button", { name: "Sign in with key" }).click();
  return watched;
}

describe("the dashboard", () => {
  it("is served at /dashboard under a CSP that allows nothing from another origin but Stripe's API and the PCCS, its files from the origin", async () => {
    const res = await fetch(`${stack.origin}/dashboard`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    const stripe = new URL(
      ((await (await fetch(`${stack.api}/billing/stripe_config`)).json()) as { api_base: string }).api_base,
    ).origin;
    // And the deployment's public RPC, where the wallet page reads receipts' anchors.
    const rpc = new URL(
      ((await (await fetch(`${stack.api}/get_node_chain_config`)).json()) as { rpc_url: string }).rpc_url,
    ).origin;
    expect(csp).toContain(`connect-src 'self' ${stripe} https://pccs.phala.network ${rpc};`);
    const html = await res.text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) expect(src, "every file from the origin").toMatch(/^\/dashboard\//);
    for (const src of sources) expect((await fetch(`${stack.origin}${src}`)).status, src).toBe(200);
    expect((await fetch(`${stack.origin}/dashboard/missing.js`)).status).toBe(404);
  });

  it("a wrong key is refused in words, with its code and request id; no console error, no blank page", async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`${stack.origin}/dashboard`);
    await page.getByLabel("API key").fill(btoa("k".repeat(32)));
    await page.getByRole("button", { name: "Sign in with key" }).click();
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent()).toMatch(/invalid_api_key/);
    expect(await alert.textContent()).toMatch(/request [0-9a-f-]{36}/);
    expect(await page.getByRole("heading", { name: "Sign in to Sigil" }).isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "signin");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("signs in with a key: the overview shows the balance, the month's spend as a chart and the runs with their outcome; a reload keeps the session", async () => {
    const { page, problems } = await signedIn("");
    await expect.poll(() => page.getByTestId("balance").textContent({ timeout: 30_000 })).toBe("$4.96");
    const bars = page.locator("[data-testid=spend-chart] rect");
    expect(await bars.count()).toBe(2); // today's runs and today's writes
    expect(await page.getByTestId("spend-chart").getAttribute("aria-label")).toContain("$0.04 in all");
    const runs = page.getByRole("table", { name: "The latest runs" });
    expect(await runs.locator("tbody tr").count()).toBe(2);
    expect(await runs.textContent()).toContain("failed: script_error");
    expect(await page.getByText("master key").isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "overview");

    await page.reload();
    await expect.poll(() => page.getByTestId("balance").textContent({ timeout: 30_000 })).toBe("$4.96");
    await page.getByRole("button", { name: "Sign out" }).click();
    expect(await page.getByRole("heading", { name: "Sign in to Sigil" }).isVisible()).toBe(true);
    // The key lived in this tab's sessionStorage, never in a cookie or the URL.
    expect(await page.context().cookies()).toEqual([]);
    expect(page.url()).not.toContain(key);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Wallets: lists the account's wallets with their addresses, and creates one from the form", async () => {
    const { page, problems } = await signedIn("wallets");
    const table = page.getByRole("table", { name: /The account's wallets/ });
    await table.waitFor({ timeout: 30_000 });
    expect(await table.locator("tbody tr").count()).toBe(2);
    await page.getByLabel("Name").fill("from the browser");
    await page.getByRole("button", { name: "Create wallet" }).click();
    const made = page.getByRole("status").filter({ hasText: "Created" });
    await made.waitFor({ timeout: 60_000 });
    const address = (await made.locator("code").textContent()) as string;
    await expect.poll(() => table.locator("tbody tr").count()).toBe(3);
    expect((await client.listWallets()).map((w) => w.wallet_address)).toContain(address.toLowerCase());
    expect(await page.getByRole("button", { name: `Copy address: ${address.toLowerCase()}` }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "wallets");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Keys: adds a key (shown once, with a copy button) that then works, edits its permissions, refuses a bad group id in words, and removes it after a confirmation", async () => {
    const { page, problems } = await signedIn("keys");
    await page.getByText("No usage keys yet").waitFor({ timeout: 30_000 });

    await page.getByLabel("Name").fill("browser key");
    await page.getByLabel("Run in groups").fill("x");
    await page.getByRole("button", { name: "Add key" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain('"x" is not a group id');

    await page.getByLabel("Run in groups").fill("1");
    await page.getByLabel("Spend cap (cents)").fill("100");
    await page.getByRole("button", { name: "Add key" }).click();
    const shownKey = (await page.getByTestId("new-key").textContent({ timeout: 60_000 })) as string;
    expect(await createSigilClient({ baseUrl: stack.origin, apiKey: shownKey }).accountExists()).toEqual({
      exists: true,
      managed: true,
    });
    expect(await page.getByRole("button", { name: `Copy key: ${shownKey}` }).count()).toBe(1);
    const table = page.getByRole("table", { name: "The account's usage keys" });
    await expect.poll(() => table.textContent()).toContain("run in groups 1");
    expect(await table.textContent()).toContain("$0.00 of $1.00");
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "keys");

    await page.getByRole("button", { name: "Edit browser key" }).click();
    await page.getByRole("checkbox", { name: "Create wallets" }).check();
    await page.getByRole("button", { name: "Save changes" }).click();
    await expect.poll(() => table.textContent(), { timeout: 60_000 }).toContain("create wallets");
    expect((await client.listApiKeys())[0]).toMatchObject({
      name: "browser key",
      can_create_pkps: true,
      execute_in_groups: ["1"],
      spend_limit_cents: 100,
    });

    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Remove browser key" }).click();
    await page.getByText("No usage keys yet").waitFor({ timeout: 60_000 });
    expect(await client.listApiKeys()).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Groups and actions: an action added by pasting its code (its CID computed and shown), a group made of a wallet and that action, edited, and removed after a confirmation", async () => {
    const { page, problems } = await signedIn("groups");
    await page.getByRole("table", { name: "The account's groups" }).waitFor({ timeout: 30_000 });

    const code = `async function main() { return "from the groups page" }`;
    await page.getByLabel("Code", { exact: true }).fill(code);
    await page.getByRole("button", { name: "Compute CID" }).click();
    expect(await page.getByTestId("computed-cid").textContent({ timeout: 30_000 })).toBe(await computeCid(code));
    await page.getByLabel("Action name").fill("pasted");
    await page.getByRole("button", { name: "Add action" }).click();
    const actions = page.getByRole("table", { name: "The account's registered actions" });
    await expect.poll(() => actions.textContent(), { timeout: 60_000 }).toContain(await computeCid(code));

    await page.getByLabel("Group name").fill("browser group");
    const [wallet] = (await client.listWallets()).slice(-1);
    await page.getByRole("checkbox", { name: new RegExp(wallet!.wallet_address) }).check();
    await page.getByRole("checkbox", { name: /^pasted/ }).check();
    await page.getByRole("button", { name: "Create group" }).click();
    const groups = page.getByRole("table", { name: "The account's groups" });
    await expect.poll(() => groups.textContent(), { timeout: 60_000 }).toContain("browser group");
    const made = (await client.listGroups()).find((g) => g.group_name === "browser group")!;
    expect(made.pkp_ids_permitted).toEqual([wallet!.wallet_address]);
    expect(made.cid_hashes_permitted).toHaveLength(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "groups");

    await page.getByRole("button", { name: "Edit group browser group" }).click();
    await page.getByLabel("Group description").fill("edited in the browser");
    await page.getByRole("button", { name: "Save group" }).click();
    await expect.poll(() => groups.textContent(), { timeout: 60_000 }).toContain("edited in the browser");

    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Remove group browser group" }).click();
    await expect.poll(() => groups.textContent(), { timeout: 60_000 }).not.toContain("browser group");
    expect((await client.listGroups()).map((g) => g.group_name)).toEqual(["g"]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Playground: runs a signing script with a picked wallet (response, logs, duration, cost); bad JSON and a script that throws are shown with their codes", async () => {
    const { page, problems } = await signedIn("playground");
    const editor = page.getByLabel("Script");
    await editor.waitFor({ timeout: 30_000 });
    const wallet = (await client.listGroups()).find((g) => g.group_name === "g")!.pkp_ids_permitted[0]!;

    await page.getByLabel("Parameters (JSON)").fill("{ not json");
    await page.getByRole("button", { name: "Run" }).click();
    await expect.poll(() => page.getByRole("alert").first().textContent()).toMatch(/not JSON.*invalid_json/);

    await editor.fill(SIGN);
    await page.getByLabel("Parameters (JSON)").fill("{}");
    await page.getByLabel("Wallet").selectOption(wallet);
    await page.getByRole("button", { name: "Run" }).click();
    const response = JSON.parse(
      (await page.getByTestId("run-response").textContent({ timeout: 60_000 })) as string,
    ) as `0x${string}`;
    expect(await recoverMessageAddress({ message: "dashboard", signature: response })).toBe(getAddress(wallet));
    expect(await page.getByTestId("run-cost").textContent()).toBe("$0.01");
    expect(await page.locator("pre.editor-highlight .token.keyword").count()).toBeGreaterThan(0);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "playground");

    await editor.fill(FAIL);
    await page.getByRole("button", { name: "Run" }).click();
    await page.getByRole("heading", { name: "The script failed" }).waitFor({ timeout: 60_000 });
    expect(await page.getByTestId("run-result").textContent()).toMatch(/on purpose.*script_error/);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Billing: buys $5 with the emulator's test card, the balance and the payment history follow; a declined card and too small an amount are refused in words", async () => {
    const { page, problems } = await signedIn("billing");
    const balance = page.getByTestId("billing-balance");
    const before = Math.round(Number(((await balance.textContent({ timeout: 30_000 })) as string).slice(1)) * 100);

    await page.getByLabel("Amount in dollars").fill("2");
    await page.getByRole("button", { name: "Pay" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/at least \$5\.00.*amount_below_minimum/);

    await page.getByLabel("Amount in dollars").fill("5");
    await page.getByLabel("Card").selectOption("pm_card_chargeDeclined");
    await page.getByRole("button", { name: "Pay" }).click();
    await expect
      .poll(() => page.getByRole("alert").textContent(), { timeout: 60_000 })
      .toMatch(/declined.*payment_not_succeeded/i);

    await page.getByLabel("Card").selectOption("pm_card_visa");
    await page.getByRole("button", { name: "Pay" }).click();
    await page.getByRole("status").filter({ hasText: "Paid" }).waitFor({ timeout: 60_000 });
    await expect.poll(() => balance.textContent()).toBe(`$${((before + 500) / 100).toFixed(2)}`);
    const history = page.getByRole("table", { name: "Top-ups and refunds, newest first" });
    expect(await history.locator("tbody tr").count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "billing");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("an account without credit: a run in the playground says so with insufficient_credits, and the overview warns of the low balance", async () => {
    const poor = await createSigilClient({ baseUrl: stack.origin }).newAccount({ account_name: "no credit" });
    const { page, problems } = await signedIn("", poor.api_key);
    await page.getByText("Low balance").waitFor({ timeout: 30_000 });
    expect(await page.getByText("Nothing spent in the last 30 days.").isVisible()).toBe(true);
    await page.getByRole("navigation").getByRole("link", { name: "Playground" }).click();
    await page.getByRole("heading", { level: 1, name: "Playground" }).waitFor();
    await page.getByRole("button", { name: "Run" }).click();
    await expect
      .poll(() => page.getByRole("alert").textContent(), { timeout: 30_000 })
      .toMatch(/insufficient_credits.*request [0-9a-f-]{36}/);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Transactions: what the account's scripts sent, followed to confirmed, newest first, filtered by status", async () => {
    const { wallet_address } = await client.createWallet({ name: "sender" });
    await createTestClient({ chain: foundry, transport: http(stack.rpcUrl), mode: "anvil" }).setBalance({
      address: wallet_address as Address,
      value: parseEther("1"),
    });
    const sent = await sendSigilTransaction(client, {
      wallet: wallet_address,
      transaction: { chainId: 31337, to: "0x5555555555555555555555555555555555555555", value: 1n },
      grant: true,
    });
    const done = await waitForTransaction(client, sent.id, { timeoutMs: 30_000 });
    expect(done.status).toBe("confirmed");
    const { page, problems } = await signedIn("transactions");
    const table = page.getByRole("table", { name: "Transactions the account's scripts sent, newest first" });
    await table.waitFor({ timeout: 30_000 });
    const rows = await table.locator("tbody tr").allTextContents();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(sent.id);
    expect(rows[0]).toContain("confirmed");
    expect(rows[0]).toContain(`block ${done.block_number}`);
    await page.getByLabel("Status").selectOption("dropped");
    await page.getByText("No transactions sent yet").waitFor({ timeout: 30_000 });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Audit log: the account's administrative history from the chain, newest first, as the API gives it", async () => {
    const { page, problems } = await signedIn("audit");
    const table = page.getByRole("table", { name: "The account's administrative history, newest first" });
    await table.waitFor({ timeout: 30_000 });
    const api = await client.audit({ limit: 25 });
    const rows = await table.locator("tbody tr").allTextContents();
    expect(rows).toHaveLength(api.events.length);
    for (const [i, e] of api.events.entries()) expect(rows[i]).toContain(e.summary);
    expect(rows.join("\n")).toMatch(/group \d+ removed/);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "audit");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("in one session: a run in the playground and $5 bought in Billing appear in the overview — the balance, the chart's day, the latest runs and payments", async () => {
    const { page, problems } = await signedIn("");
    const chart = page.getByTestId("spend-chart");
    await chart.waitFor({ timeout: 30_000 });
    const spent = async () =>
      Math.round(Number(/\$([\d.]+) in all/.exec((await chart.getAttribute("aria-label")) ?? "")?.[1]) * 100);
    const before = { spent: await spent(), balance: cents(await page.getByTestId("balance").textContent()) };
    // The chart names its days, today's under the newest bar.
    const today = new Date().toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
    expect(await chart.locator("text.chart-day").last().textContent()).toBe(today);
    expect(await chart.locator("text.chart-day").count()).toBe(5);

    const nav = page.getByRole("navigation");
    await nav.getByRole("link", { name: "Playground" }).click();
    await page.getByRole("heading", { level: 1, name: "Playground" }).waitFor();
    await page.getByLabel("Script").fill(SIGN);
    const wallet = (await client.listGroups()).find((g) => g.group_name === "g")!.pkp_ids_permitted[0]!;
    await page.getByLabel("Wallet").selectOption(wallet);
    await page.getByRole("button", { name: "Run" }).click();
    await page.getByTestId("run-response").waitFor({ timeout: 60_000 });

    await nav.getByRole("link", { name: "Billing" }).click();

    await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
    await page.getByLabel("Amount in dollars").fill("5");
    await page.getByRole("button", { name: "Pay" }).click();
    await page.getByRole("status").filter({ hasText: "Paid" }).waitFor({ timeout: 60_000 });

    await nav.getByRole("link", { name: "Overview" }).click();

    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await expect
      .poll(() => page.getByTestId("balance").textContent({ timeout: 30_000 }).then(cents))
      .toBe(before.balance + 500 - 1);
    await expect.poll(spent).toBe(before.spent + 1);
    const runs = page.getByRole("table", { name: "The latest runs" });
    expect(await runs.locator("tbody tr").first().textContent()).toMatch(/ok.*\$0\.01/);
    const payments = page.getByRole("table", { name: "The latest payments" });
    expect(await payments.locator("tbody tr").first().textContent()).toMatch(/top-up\$5\.00/);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Attestation: the checks `sigil verify` makes, run in the page against the deployment, each with its result; the simulated TEE said first", async () => {
    const { page, problems } = await signedIn("attestation");
    const verdict = page.getByRole("status").filter({ hasText: /verified/i });
    await expect
      .poll(() => verdict.textContent({ timeout: 60_000 }), { timeout: 60_000 })
      .toBe("Verified: every required check passed on 1 instance(s) (simulated).");
    expect(await page.getByRole("note").textContent()).toMatch(/Simulated TEE\..*not by Intel/);
    const table = page.getByRole("table", { name: /^Instance [0-9a-f]+$/ });
    const rows = Object.fromEntries(
      await Promise.all(
        (await table.locator("tbody tr").all()).map(async (r) => [
          await r.locator("td").nth(0).textContent(),
          await r.locator("td").nth(1).textContent(),
        ]),
      ),
    ) as Record<string, string>;
    for (const check of ["quote", "freshness", "event_log", "claims", "evidence.quote", "instance"])
      expect(rows[check], check).toBe("Passed");
    // What a page cannot do is skipped and says why, as the CLI says it for a simulated TEE.
    expect(rows.tls).toBe("Skipped");
    expect(rows.governance).toBe("Skipped");
    expect(await table.textContent()).toContain("http: not TLS, no certificate to compare");
    // The verifier is a chunk of its own, fetched when this page opened.
    const scripts = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .map((e) => e.name)
        .filter((n) => n.endsWith(".js")),
    );
    expect(scripts.some((n) => /\/dashboard\/chunk-[A-Z0-9]+\.js$/.test(n))).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "attestation");

    await page.getByRole("button", { name: "Run the checks again" }).click();
    await expect.poll(() => verdict.textContent({ timeout: 60_000 }), { timeout: 60_000 }).toContain("Verified");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("is usable from the keyboard: the skip link first, then the sections, each with visible focus", async () => {
    const { page, problems } = await watchedPage(browser, 360);
    await page.goto(`${stack.origin}/dashboard`);
    await page.getByLabel("API key").fill(key);
    await page.keyboard.press("Enter");
    await page.getByTestId("balance").waitFor({ timeout: 30_000 });
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(outline).not.toBe("none");
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
