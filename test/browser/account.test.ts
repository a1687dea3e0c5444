// The dashboard a new user keeps open (issue 29, point 6), in a real Chromium against the local
// stack: sign-up in the page (the master key shown once, then signed in with it), the header naming
// the account and its id, credit bought with the Stripe emulator's test card, a wallet made on the
// Wallets page, a signing script refused in the Playground and allowed with one click (what it will
// write, and the most the run can cost, said first), its signature in the wallet's page beside the
// balance and the groups, the Keys page's last use and spend against the cap, the spend chart's
// axis, /favicon.ico — and every page at 360 px with nothing clipped or wider than the window,
// screenshots at 1280 and 360 px, and axe-core's check at both widths.
import { getAddress, recoverMessageAddress } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { createSigilClient, type SigilClient } from "../../sdk/src/index.ts";
import { horizontalOverflow, launchBrowser, screenshots, seriousViolations, watchedPage } from "../harness/browser.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "one click" }) }`;

let stack: SharedLocalStack;
let browser: Browser;
/** What the sign-up made, read from the page. */
let key = "";
let accountId = "";
let client: SigilClient;
let wallet = "";

beforeAll(async () => {
  stack = inject("localStack");
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

/** Screenshots at 1280 and 360, then at 360: nothing wider than the window or clipped, and axe clean there too. */
async function checkLayouts(page: Page, name: string): Promise<void> {
  expect(await seriousViolations(page), `${name} at 1280`).toEqual([]);
  await screenshots(page, name);
  expect(await horizontalOverflow(page, 360), `${name} at 360`).toEqual([]);
  expect(await seriousViolations(page), `${name} at 360`).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function signedIn(path: string, width = 1280) {
  const watched = await watchedPage(browser, width);
  await watched.page.goto(`${stack.origin}/dashboard${path ? `#/${path}` : ""}`);
  await watched.page.getByLabel("API key").fill(key);
  await watched.page.getByRole("button", { name: "Sign in with key" }).click();
  await watched.page.getByTestId("account-name").waitFor({ timeout: 30_000 });
  return watched;
}

describe("a new account in the dashboard", () => {
  it("/favicon.ico and the page's icons are served, with their content types", async () => {
    const ico = await fetch(`${stack.origin}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get("content-type")).toBe("image/x-icon");
    const svg = await fetch(`${stack.origin}/dashboard/favicon.svg`);
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
  });

  it("signs up in the page: the master key shown once with a copy button, then the dashboard signed in with it, its name and id in the header", async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`${stack.origin}/dashboard`);
    await page.getByRole("button", { name: "Create an account" }).click();
    await page.getByLabel("Account name").fill("Acme treasury");
    await checkLayouts(page, "signup");
    await page.getByRole("button", { name: "Create account" }).click();
    key = (await page.getByTestId("new-master-key").textContent({ timeout: 60_000 })) as string;
    expect(key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(await page.getByRole("button", { name: `Copy key: ${key}` }).count()).toBe(1);
    // Not before the user says it is saved.
    const next = page.getByRole("button", { name: "Continue to the dashboard" });
    expect(await next.isDisabled()).toBe(true);
    await checkLayouts(page, "signup-key");
    await page.getByLabel("I have saved the key").check();
    await next.click();

    client = createSigilClient({ baseUrl: stack.origin, apiKey: key });
    const account = await client.getAccount();
    accountId = account.account_id;
    expect(account.account_name).toBe("Acme treasury");
    const header = page.getByRole("banner");
    await expect.poll(() => header.getByTestId("account-name").textContent({ timeout: 30_000 })).toBe("Acme treasury");
    expect(await header.locator("code[data-value]").first().getAttribute("data-value")).toBe(accountId);
    expect(await header.getByRole("button", { name: `Copy account id: ${accountId}` }).count()).toBe(1);
    expect(await header.textContent()).toContain("master key");
    await page.getByTestId("balance").waitFor({ timeout: 30_000 });
    expect(await page.getByText("Nothing spent in the last 30 days.").isVisible()).toBe(true);
    await checkLayouts(page, "new-account");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("buys $5 in Billing, makes a wallet, and the Playground's one-click allow lets a signing script run: what it writes and the most the run costs said first", async () => {
    const { page, problems } = await signedIn("billing");
    await page.getByLabel("Amount in dollars").fill("5");
    await page.getByRole("button", { name: "Pay" }).click();
    await page.getByRole("status").filter({ hasText: "Paid" }).waitFor({ timeout: 60_000 });
    expect((await client.getBalance()).balance_cents).toBe(500);

    const nav = page.getByRole("navigation");
    await nav.getByRole("link", { name: "Wallets" }).click();
    await page.getByRole("heading", { level: 1, name: "Wallets" }).waitFor();
    await page.getByLabel("Name").fill("signer");
    await page.getByRole("button", { name: "Create wallet" }).click();
    const made = page.getByRole("status").filter({ hasText: "Created" });
    await made.waitFor({ timeout: 60_000 });
    wallet = ((await made.locator("code").textContent()) as string).toLowerCase();
    expect(wallet).toMatch(/^0x[0-9a-f]{40}$/);
    await page
      .getByRole("table", { name: /The account's wallets/ })
      .locator("tbody tr")
      .nth(1)
      .waitFor();
    await checkLayouts(page, "wallets-list");

    await nav.getByRole("link", { name: "Playground" }).click();
    // The link changes the hash; the page follows on hashchange: until then the Wallets page (whose
    // form has a "Wallet" field too) is the one shown.
    await page.getByRole("heading", { level: 1, name: "Playground" }).waitFor();
    await page.getByLabel("Wallet").selectOption(wallet);
    const limits = await client.getSigilActionClientConfig();
    const most = `$${(Math.ceil(limits.timeout_ms / 1000) / 100).toFixed(2)}`;
    await expect.poll(() => page.getByTestId("run-most").textContent()).toContain(`at most ${most}`);
    // The script is typed once the page has what it loads (its wallets, the run limits), and is
    // what runs: the run's CID is the script's.
    await page.getByLabel("Script").fill(SIGN);
    await expect.poll(() => page.getByLabel("Script").inputValue()).toBe(SIGN);
    await page.getByRole("button", { name: "Run" }).click();

    // No group lets the script run: the refusal, and the offer to allow it.
    await expect
      .poll(() => page.getByRole("alert").first().textContent(), { timeout: 60_000 })
      .toMatch(/permission_denied/);
    const allow = page.getByTestId("allow");
    const plan = page.getByTestId("allow-plan");
    await plan.waitFor({ timeout: 30_000 });
    expect(await plan.textContent()).toContain("Create the group playground with the script's CID and the wallet");
    expect(await plan.locator(`code[data-value="${wallet}"]`).count()).toBe(1);
    expect(await page.getByTestId("allow-cost").textContent()).toBe(
      `The write costs $0.01; the run then costs at most ${most}.`,
    );
    await checkLayouts(page, "playground-allow");
    expect(await client.listGroups()).toEqual([]);
    await allow.getByRole("button", { name: 'Create "playground" and run again' }).click();

    const response = JSON.parse(
      (await page.getByTestId("run-response").textContent({ timeout: 60_000 })) as string,
    ) as `0x${string}`;
    expect(await recoverMessageAddress({ message: "one click", signature: response })).toBe(getAddress(wallet));
    const [group] = await client.listGroups();
    expect(group).toMatchObject({ group_name: "playground", pkp_ids_permitted: [wallet] });
    expect(group?.cid_hashes_permitted).toHaveLength(1);
    expect(await page.getByTestId("run-cost").textContent()).toBe("$0.01");
    await checkLayouts(page, "playground-run");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("the wallet's page: its balance on the chain in ETH, its group, and the signature the run made (the digest its receipt records)", async () => {
    // 1.5 ETH, set on the local chain.
    const funded = await fetch(stack.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "anvil_setBalance",
        params: [wallet, "0x14d1120d7b160000"],
      }),
    });
    expect(funded.status).toBe(200);
    const { page, problems } = await signedIn("wallets");
    await page.getByRole("link", { name: "signer", exact: true }).click();
    await expect.poll(() => page.getByTestId("wallet-balance").textContent({ timeout: 30_000 })).toBe("1.5 ETH");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Wallet");
    expect(await page.getByTestId("wallet-name").textContent()).toBe("signer");
    // Its Solana address beside its EVM address: the one the API lists for it.
    const listed = (await client.listWallets({})).find((w) => w.wallet_address === wallet);
    expect(listed?.solana_address).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(await page.getByTestId("wallet-solana").getAttribute("data-value")).toBe(listed?.solana_address);

    const groups = page.getByRole("table", { name: "Groups that let scripts use this wallet" });
    expect(await groups.textContent()).toMatch(/playground.*lists this wallet.*1 action/);

    const { events } = await client.listUsage({ kind: "run", limit: 10 });
    const used = events[0]?.receipt?.wallets.find((w) => w.address === wallet);
    expect(used?.signed).toHaveLength(1);
    const signatures = page.getByRole("table", { name: /Signatures runs made with this wallet/ });
    const rows = signatures.locator("tbody tr");
    // Listed once its checks are made (they load after the page).
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(1);
    expect(await rows.first().textContent()).toMatch(/just now.*message/);
    expect(await rows.first().locator(`code[data-value="${used?.signed[0]?.digest}"]`).count()).toBe(1);
    // Checked in the page: the receipt at once, its anchor once its epoch is on chain (every 2 s on
    // this stack): the page read again until the mark says so.
    expect(await rows.first().textContent()).toMatch(/receipt ✓|✓ verified/);
    await expect
      .poll(
        async () => {
          await page.getByRole("link", { name: "← All wallets" }).click();
          await page.getByRole("link", { name: "signer", exact: true }).click();
          const row = signatures.locator("tbody tr").first();
          // The mark's title says why it is not verified yet (pending, or what failed).
          const why = await row.locator("td span[title]").last().getAttribute("title", { timeout: 30_000 });
          return `${await row.textContent({ timeout: 30_000 })} (${why ?? ""})`;
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toMatch(/✓ verified/);
    expect(
      await page.getByRole("table", { name: "Runs that used this wallet, newest first" }).locator("tbody tr").count(),
    ).toBe(1);
    await checkLayouts(page, "wallet");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("Keys: a usage key's last use and its spend against its cap, and the master key's last use", async () => {
    const [group] = await client.listGroups();
    const { usage_api_key } = await client.addUsageApiKey({
      name: "ci runner",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [group!.id],
      spend_limit_cents: 50,
    });
    await client.addUsageApiKey({
      name: "unused",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [],
    });
    await client.with({ apiKey: usage_api_key }).sigilAction({ code: SIGN, js_params: { wallet } });

    const { page, problems } = await signedIn("keys");
    const table = page.getByRole("table", { name: "The account's usage keys" });
    await table.waitFor({ timeout: 30_000 });
    const runner = table.locator("tbody tr").filter({ hasText: "ci runner" });
    expect(await runner.textContent()).toMatch(/\$0\.01 of \$0\.50.*just now \(a run\)/);
    expect(await runner.getByRole("meter").getAttribute("aria-label")).toBe("2% of the cap of ci runner");
    expect(await table.locator("tbody tr").filter({ hasText: "unused" }).textContent()).toMatch(
      /\$0\.00 \(no cap\)never/,
    );
    // The master key's last act: the usage keys it just added (writes).
    expect(await page.getByTestId("master-last-used").textContent()).toMatch(/just now \(add_usage_api_key\)/);
    await checkLayouts(page, "keys-last-use");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("the overview's spend chart has an axis: amounts beside it, days under it", async () => {
    const { page, problems } = await signedIn("");
    const chart = page.getByTestId("spend-chart");
    await chart.waitFor({ timeout: 30_000 });
    const amounts = await chart.locator("text.chart-amount").allTextContents();
    expect(amounts[0]).toBe("$0");
    expect(amounts.length).toBeGreaterThanOrEqual(2);
    for (const a of amounts) expect(a).toMatch(/^\$\d+(\.\d\d)?$/);
    expect(await chart.locator("text.chart-day").count()).toBe(5);
    // The header at 360: the name, the id shortened with its copy button, Sign out, none clipped.
    await checkLayouts(page, "overview-axis");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("every page holds at 360 px: nothing wider than the window, no button clipped", async () => {
    const { page, problems } = await signedIn("", 360);
    const nav = page.getByRole("navigation");
    for (const name of [
      "Overview",
      "Keys",
      "Wallets",
      "Groups and actions",
      "Playground",
      "Billing",
      "Audit log",
      "Webhooks",
    ]) {
      await nav.getByRole("link", { name }).click();
      await page.locator("main").getByRole("heading", { level: 1, name }).waitFor();
      // What the page loads, loaded (its "Loading …" gone).
      await expect.poll(() => page.getByText(/^Loading /).count(), { timeout: 30_000 }).toBe(0);
      expect(await horizontalOverflow(page, 360), name).toEqual([]);
    }
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
