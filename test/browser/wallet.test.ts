// The dashboard signed in with a browser wallet, in a real headless Chromium against the real local
// stack: a test EIP-1193 provider (window.ethereum) whose requests the page hands to this process,
// where a viem account on the local chain answers them — it signs typed data and sends transactions
// as a browser wallet does, and passes reads through to anvil. The wallet administers a ChainSecured
// account: it signs in (X-Wallet-Auth on every read), sees its balance, and registers a usage key by
// signature — the key made by the service, granted by the wallet's own setUsageApiKey transaction —
// which then runs a signing script and signs in to the dashboard itself.
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  numberToHex,
  parseEther,
  verifyMessage,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import {
  accountConfig,
  createSigilClient,
  signSigilTypedData,
  topUp,
  walletAuthHeader,
  type SigilClient,
} from "../../sdk/src/index.ts";
import { computeCid } from "../../shared/cid.ts";
import { cidHash } from "../../shared/hashing.ts";
import { launchBrowser, screenshots, seriousViolations, watchedPage } from "../harness/browser.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "from a wallet-made key" }) }`;

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let browser: Browser;
let anon: SigilClient;
const admin = privateKeyToAccount(generatePrivateKey());
let chainId = 0;
let groupId = 0n;
let pkp: Address;

beforeAll(async () => {
  stack = inject("localStack");
  browser = await launchBrowser();
  anon = createSigilClient({ baseUrl: stack.origin });
  const transport = http(stack.rpcUrl);
  await createTestClient({ chain: foundry, mode: "anvil", transport }).setBalance({
    address: admin.address,
    value: parseEther("100"),
  });
  const walletClient = createWalletClient({ account: admin, chain: foundry, transport });
  const publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 });
  chainId = (await anon.getNodeChainConfig()).chain_id;
  // A ChainSecured account the wallet administers, with one wallet, credit and a group for SIGN.
  const contract = accountConfig({ walletClient, publicClient, address: stack.contract });
  const first = await anon.createWalletWithSignature(
    await signSigilTypedData({ signer: admin, primaryType: "CreateWallet", chainId }),
  );
  await contract.newChainSecuredAccount({
    name: "browser wallet",
    masterWallet: first.master_wallet_address as Address,
  });
  await contract.registerWalletDerivation({
    wallet: first.wallet_address as Address,
    derivationPath: first.derivation_path as Hex,
    name: "first",
  });
  pkp = first.wallet_address as Address;
  await topUp(anon.with({ walletAuth: () => walletAuthHeader({ signer: admin, chainId }) }), { amountCents: 500 });
  const cid = await computeCid(SIGN);
  await contract.registerActions({ cids: [cid] });
  ({ groupId } = await contract.addGroup({ name: "signers", cidHashes: [cidHash(cid)], wallets: [pkp] }));
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

/**
 * Gives `page` a window.ethereum backed by `admin`: eth_requestAccounts and eth_accounts name it,
 * eth_signTypedData_v4 and eth_sendTransaction are signed here by the viem account (the typed data
 * as a wallet receives it: JSON, EIP712Domain among the types, integers as decimal strings), and
 * every other request is the local chain's answer.
 */
async function withTestWallet(page: Page): Promise<string[]> {
  const asked: string[] = [];
  const transport = http(stack.rpcUrl);
  const chain = createPublicClient({ chain: foundry, transport });
  const sender = createWalletClient({ account: admin, chain: foundry, transport });
  await page.exposeFunction("sigilTestWallet", async (method: string, paramsJson: string): Promise<string> => {
    asked.push(method);
    const params = JSON.parse(paramsJson) as unknown[];
    const answer = async (): Promise<unknown> => {
      switch (method) {
        case "eth_requestAccounts":
        case "eth_accounts":
          return [admin.address];
        case "eth_chainId":
          return numberToHex(chainId);
        case "eth_signTypedData_v4": {
          const typed = JSON.parse(params[1] as string) as {
            domain: never;
            types: Record<string, never>;
            primaryType: string;
            message: { address: Address; issuedAt: string };
          };
          const { EIP712Domain: _, ...types } = typed.types;
          return admin.signTypedData({
            domain: typed.domain,
            types,
            primaryType: typed.primaryType,
            message: { ...typed.message, issuedAt: BigInt(typed.message.issuedAt) },
          } as never);
        }
        case "eth_sendTransaction": {
          const tx = params[0] as { to: Address; data: Hex; value?: Hex };
          return sender.sendTransaction({ to: tx.to, data: tx.data, ...(tx.value ? { value: BigInt(tx.value) } : {}) });
        }
        default:
          return chain.request({ method, params } as never);
      }
    };
    return JSON.stringify(await answer());
  });
  await page.addInitScript(() => {
    const call = (globalThis as unknown as { sigilTestWallet(method: string, params: string): Promise<string> })
      .sigilTestWallet;
    (globalThis as unknown as { ethereum: unknown }).ethereum = {
      request: async ({ method, params }: { method: string; params?: unknown[] }) =>
        JSON.parse(await call(method, JSON.stringify(params ?? []))) as unknown,
    };
  });
  return asked;
}

describe("the dashboard with a browser wallet", () => {
  it("signs in with the wallet (X-Wallet-Auth), shows the ChainSecured account's balance, and registers a usage key by signature that then runs and signs in", async () => {
    const { page, problems } = await watchedPage(browser);
    const asked = await withTestWallet(page);
    await page.goto(`${stack.origin}/dashboard`);
    await page.getByRole("button", { name: "Sign in with a browser wallet" }).click();
    await expect.poll(() => page.getByTestId("balance").textContent({ timeout: 30_000 })).toBe("$5.00");
    expect(await page.getByText(`wallet ${admin.address}`).isVisible()).toBe(true);
    // The managed-account pages are not offered to a wallet; its keys page is.
    const nav = page.getByRole("navigation");
    expect(await nav.getByRole("link").allTextContents()).toEqual([
      "Overview",
      "Keys",
      "Billing",
      "Audit log",
      "Webhooks",
      "Attestation",
    ]);
    expect(asked).toContain("eth_signTypedData_v4");
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "wallet-overview");

    await nav.getByRole("link", { name: "Keys" }).click();

    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor();
    await page.getByLabel("Name").fill("browser runner");
    await page.getByLabel("Run in groups").fill("x");
    await page.getByRole("button", { name: "Register key" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain('"x" is not a group id');
    expect(asked).not.toContain("eth_sendTransaction");

    await page.getByLabel("Run in groups").fill(String(groupId));
    await page.getByRole("button", { name: "Register key" }).click();
    const status = page.getByRole("status").filter({ hasText: "shown this once" });
    await expect.poll(() => status.textContent({ timeout: 60_000 }), { timeout: 60_000 }).toContain("it works now");
    expect(asked).toContain("eth_sendTransaction");
    const key = (await page.getByTestId("new-key").textContent()) as string;
    expect(await page.getByRole("button", { name: `Copy key: ${key}` }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshots(page, "wallet-keys");

    // The key the wallet granted runs a signing script in the group it was given.
    const run = await anon.with({ apiKey: key }).sigilAction({ code: SIGN, js_params: { wallet: pkp } });
    expect(run.has_error).toBe(false);
    expect(
      await verifyMessage({
        address: getAddress(pkp),
        message: "from a wallet-made key",
        signature: run.response as Hex,
      }),
    ).toBe(true);

    // And signs in to the dashboard as that usage key.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Sign in with key" }).click();
    await page.getByText("usage key browser runner").waitFor({ timeout: 30_000 });
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("without a browser wallet, the sign-in says so in words", async () => {
    const { page, problems } = await watchedPage(browser, 360);
    await page.goto(`${stack.origin}/dashboard`);
    await page.getByRole("button", { name: "Sign in with a browser wallet" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/no browser wallet found.*no_wallet/);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
