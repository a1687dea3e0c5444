// A wallet's guardrail in the dashboard, in a real Chromium against the local stack: a new account's
// master key makes a wallet, sets a treasury guardrail with a daily cap on its page from the
// template's form (the preview's words and document, and the write's cost, said before "Set
// guardrail"), sees what the wallet may sign in words with the document's hash and block and what
// its budget has used; the Wallets list badges it "guarded"; a usage key sees it read-only; the
// Playground runs a script whose allowed transfer is signed (and counted in the budget) and whose
// refused one fails the run with guardrail_denied; the guardrail is removed after a confirmation; the
// Keys page says what a usage key's own guardrail lets it sign.
// Screenshots at 1280 and 360 px; at 360 nothing wider than the window, and axe clean at both.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { horizontalOverflow, launchBrowser, screenshots, seriousViolations, watchedPage } from "../harness/browser.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";
import { noPermissions } from "../../shared/permissions.ts";

const RECIPIENT = "0x00000000000000000000000000000000000a11ce";
const STRANGER = "0x000000000000000000000000000000000000bad0";
/** Signs a 1000-wei transfer to the recipient (allowed), then 1 wei to a stranger (refused: the run fails). */
const PAY = `async function main({ wallet }) {
  const transfer = (to, value) => ({
    chainId: 1, nonce: 0, to, value, gas: 21000n, maxFeePerGas: 1000000000n, maxPriorityFeePerGas: 1000000000n,
  });
  const allowed = await Sigil.Actions.signTransaction({ pkpId: wallet, transaction: transfer("${RECIPIENT}", 1000n) });
  console.log("allowed, signed:", allowed.slice(0, 12));
  return await Sigil.Actions.signTransaction({ pkpId: wallet, transaction: transfer("${STRANGER}", 1n) });
}`;

let stack: SharedLocalStack;
let browser: Browser;
let key = "";
let client: SigilClient;
let wallet = "";

beforeAll(async () => {
  stack = inject("localStack");
  browser = await launchBrowser();
  key = (await createSigilClient({ baseUrl: stack.origin }).newAccount({ account_name: "guarded treasury" })).api_key;
  client = createSigilClient({ baseUrl: stack.origin, apiKey: key });
  await topUp(client, { amountCents: 500 });
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

async function signedIn(path: string, apiKey = key) {
  const watched = await watchedPage(browser);
  await watched.page.goto(`${stack.origin}/dashboard${path ? `#/${path}` : ""}`);
  await watched.page.getByLabel("API key").fill(apiKey);
  await watched.page.getByRole("button", { name: "Sign in with key" }).click();
  await watched.page.getByTestId("account-name").waitFor({ timeout: 30_000 });
  return watched;
}

describe("a wallet's guardrail in the dashboard", () => {
  it("the master key makes a wallet and sets a treasury guardrail from the template's form: the preview and the cost first, then its words, hash and block", async () => {
    const { page, problems } = await signedIn("wallets");
    await page.getByLabel("Name").fill("treasury");
    await page.getByRole("button", { name: "Create wallet" }).click();
    const made = page.getByRole("status").filter({ hasText: "Created" });
    await made.waitFor({ timeout: 60_000 });
    wallet = ((await made.locator("code").textContent()) as string).toLowerCase();
    await made.getByRole("link", { name: "Open it" }).click();

    const section = page.getByRole("region", { name: "What this wallet may sign" });
    await section.getByTestId("guardrail-none").waitFor({ timeout: 30_000 });
    await section.getByRole("button", { name: "Set from a template" }).click();
    const editor = section.getByRole("region", { name: "Set from a template" });
    await editor.getByLabel("Template").waitFor({ timeout: 30_000 });
    expect(await editor.getByLabel("Template").inputValue()).toBe("treasury");
    // Nothing filled: each required parameter named.
    await editor.getByRole("button", { name: "Preview" }).click();
    expect(await editor.getByTestId("guardrail-problems").textContent()).toMatch(
      /Chains: is required.*Recipients: is required.*Most wei per transaction: is required/,
    );
    await editor.getByLabel("Chains", { exact: true }).fill("1");
    await editor.getByLabel("Recipients", { exact: true }).fill(RECIPIENT);
    await editor.getByLabel("Most wei per transaction", { exact: true }).fill("1000");
    await editor.getByLabel("Most wei a day (optional)", { exact: true }).fill("5000");
    await editor.getByRole("button", { name: "Preview" }).click();
    const preview = editor.getByTestId("guardrail-preview");
    await preview.waitFor();
    expect(await preview.getByTestId("guardrail-preview-words").textContent()).toContain(
      `plain transfers to ${RECIPIENT}`,
    );
    expect(JSON.parse((await preview.getByTestId("guardrail-preview-json").textContent()) as string)).toMatchObject({
      version: 1,
      name: "treasury",
      transactions: { chains: [1], max_value_wei: "1000", transfers: { allow: [RECIPIENT] } },
      budgets: [{ name: "daily", window_seconds: 86400, max_value_wei: "5000" }],
    });
    expect(await preview.getByTestId("guardrail-cost").textContent()).toContain(
      "Setting it is one write on chain: it costs $0.01",
    );
    await checkLayouts(page, "guardrail-template");
    await preview.getByRole("button", { name: "Set guardrail" }).click();

    await section.getByTestId("guardrail-words").waitFor({ timeout: 60_000 });
    const onChain = await client.getWalletGuardrail({ wallet_address: wallet });
    expect(onChain.guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/);
    // The section's budgets may still be loading (a status of their own): the write's status by its id.
    expect(await section.getByTestId("guardrail-done").textContent()).toBe(`Guardrail set: ${onChain.guardrail_hash}.`);
    const words = (await section.getByTestId("guardrail-words").locator("li").allTextContents()).join("\n");
    expect(words).toContain("transactions on chain 1, each sending at most 1000 wei:");
    expect(words).toContain(`plain transfers to ${RECIPIENT}`);
    expect(words).toContain("raw digests: never");
    expect(words).toContain("budget daily: at most 0.000000000000005 ETH in any day");
    // What the budget has used, read from its counters: nothing yet.
    expect(await section.getByTestId("guardrail-budgets").textContent()).toContain(
      "daily: 0 ETH of 0.000000000000005 ETH used",
    );
    expect(await section.getByTestId("guardrail-hash").getAttribute("data-value")).toBe(onChain.guardrail_hash);
    expect(await section.getByTestId("guardrail-block").textContent()).toBe(onChain.set_at_block);
    await checkLayouts(page, "guardrail-wallet");

    // Edit as JSON starts from the document it has now.
    await section.getByRole("button", { name: "Edit as JSON" }).click();
    const json = section.getByLabel("Guardrail document (JSON)");
    expect(JSON.parse(await json.inputValue())).toEqual(onChain.guardrail);
    await json.fill('{ "version": 1, "transactions": { "chains": [1], "max_value_wei": "1.5" } }');
    await section.getByRole("button", { name: "Preview" }).click();
    expect(await section.getByTestId("guardrail-problems").textContent()).toContain("transactions.max_value_wei");
    await section.getByRole("button", { name: "Cancel" }).click();

    // The list badges it.
    await page.getByRole("navigation").getByRole("link", { name: "Wallets" }).click();
    await page.getByRole("heading", { level: 1, name: "Wallets" }).waitFor();
    const row = page.getByRole("table", { name: /The account's wallets/ }).locator("tbody tr", { hasText: "treasury" });
    await row.locator(".badge", { hasText: "guarded" }).waitFor({ timeout: 30_000 });
    expect(
      await page
        .getByRole("table", { name: /The account's wallets/ })
        .locator("tbody tr", { hasText: "Account Master Wallet" })
        .textContent(),
    ).toContain("none");
    await checkLayouts(page, "guardrail-wallets");
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("a usage key sees it read-only", async () => {
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
    const { page, problems } = await signedIn(`wallets/${wallet}`, usage_api_key);
    const section = page.getByRole("region", { name: "What this wallet may sign" });
    await section.getByTestId("guardrail-words").waitFor({ timeout: 30_000 });
    expect(await section.textContent()).toContain("Read-only: only the account's master key");
    expect(
      await section.getByRole("button", { name: /Set from a template|Edit as JSON|Remove guardrail/ }).count(),
    ).toBe(0);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("the Playground: the allowed transfer is signed, the refused one fails the run with guardrail_denied; then the guardrail is removed after a confirmation", async () => {
    const { page, problems } = await signedIn("playground");
    await page.getByLabel("Script").fill(PAY);
    await page.getByLabel("Wallet").selectOption(wallet);
    await page.getByRole("button", { name: "Run" }).click();
    // No group lets it run yet: the one-click allow, then the run again.
    await page.getByTestId("allow").getByRole("button", { name: 'Create "playground" and run again' }).click({
      timeout: 60_000,
    });
    const result = page.getByTestId("run-result");
    await expect
      .poll(() => result.getByRole("heading", { level: 2 }).textContent({ timeout: 60_000 }), { timeout: 60_000 })
      .toBe("The script failed");
    const error = (await result.getByRole("alert").textContent()) as string;
    expect(error).toContain("guardrail_denied");
    expect(error).toContain("transactions.transfers.allow");
    expect(await page.getByTestId("run-logs").textContent()).toMatch(/allowed, signed: 0x02/);
    await checkLayouts(page, "guardrail-playground");

    await page.goto(`${stack.origin}/dashboard#/wallets/${wallet}`);
    const section = page.getByRole("region", { name: "What this wallet may sign" });
    await section.getByTestId("guardrail-words").waitFor({ timeout: 30_000 });
    // The signed transfer is counted in the daily budget; the refused one is not.
    expect(await section.getByTestId("guardrail-budgets").textContent({ timeout: 30_000 })).toContain(
      "daily: 0.000000000000001 ETH of 0.000000000000005 ETH used; the oldest leaves the window at",
    );
    // Dismissed: nothing changes.
    page.once("dialog", (d) => void d.dismiss());
    await section.getByRole("button", { name: "Remove guardrail" }).click();
    expect((await client.getWalletGuardrail({ wallet_address: wallet })).guardrail_hash).not.toBeNull();
    let asked = "";
    page.once("dialog", (d) => {
      asked = d.message();
      void d.accept();
    });
    await section.getByRole("button", { name: "Remove guardrail" }).click();
    await section.getByTestId("guardrail-none").waitFor({ timeout: 60_000 });
    expect(asked).toContain("Remove this wallet's guardrail?");
    expect(await section.getByTestId("guardrail-done").textContent()).toBe("Guardrail removed.");
    expect(await client.getWalletGuardrail({ wallet_address: wallet })).toMatchObject({
      guardrail: null,
      guardrail_hash: null,
    });
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("the Keys page says what a usage key's own guardrail lets it sign, and what its budget has used", async () => {
    const made = await client.addUsageApiKey({ name: "agent", description: "", ...noPermissions() });
    await client.setUsageKeyGuardrail({
      usage_api_key: made.usage_api_key,
      guardrail: {
        version: 1,
        messages: { pattern: "agent:*" },
        budgets: [{ name: "hourly", window_seconds: 3600, max_signatures: 10 }],
      },
    });
    const { page, problems } = await signedIn("keys");
    await page.getByRole("button", { name: "What it may sign agent" }).click({ timeout: 30_000 });
    const section = page.getByRole("region", { name: 'What "agent" may sign' });
    await section.getByTestId("key-guardrail-words").waitFor({ timeout: 30_000 });
    const words = (await section.getByTestId("key-guardrail-words").locator("li").allTextContents()).join("\n");
    expect(words).toContain('messages matching "agent:*"');
    expect(words).toContain("budget hourly: at most 10 signatures in any hour");
    expect(await section.getByTestId("key-guardrail-budgets").textContent()).toContain(
      "hourly: 0 of 10 signatures used",
    );
    await checkLayouts(page, "guardrail-key");
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
