// The specification's typical workflow through the real stack as `npm start` runs it (anvil,
// AccountConfig, the enclave, the local Stripe, the edge under wrangler dev, billing on), over HTTP
// only: a new account buys credit, then a usage key, a wallet, a group with the action and the
// wallet, and a script that signs with it — the signature checked against the wallet's address;
// then the ChainSecured path, where a wallet administers its own account on chain; Stripe's
// webhook crediting a payment by itself; and the documented walkthroughs, run as written: the first
// run's curl walkthrough (docs/guides/first-run.md) and the credits walkthrough (docs/guides/billing.md).
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  parseEventLogs,
  recoverMessageAddress,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildTypedData, signableTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { cidHash, walletLookupHash } from "../../shared/hashing.ts";
import { topUp } from "../harness/topUp.ts";
import { verifyDeployment, type CheckLine } from "../../bin/verify/verify.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const root = join(import.meta.dirname, "../..");
/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let api = "";
let rpcUrl = "";
let contract: Address;

const SIGN = `async function main({ wallet, message }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}`;

beforeAll(async () => {
  stack = inject("localStack");
  ({ api, rpcUrl, contract } = stack);
}, 120_000);

afterAll(async () => {});

async function call<T = Record<string, unknown>>(
  method: "GET" | "POST",
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(`${api}${path}`, {
    method,
    headers: {
      ...(options.key ? { "x-api-key": options.key } : {}),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, body: (await res.json()) as T, headers: res.headers };
}

async function ok<T = Record<string, unknown>>(
  method: "GET" | "POST",
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<T> {
  const r = await call<T>(method, path, options);
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

describe("the typical workflow over HTTP", () => {
  it("account → usage key → wallet → group with the action → a run that signs with the wallet", async () => {
    const account = await ok<{ api_key: string; wallet_address: string }>("POST", "/new_account", {
      body: { account_name: "e2e" },
    });
    expect(await topUp({ api, key: account.api_key, amountCents: 500 })).toMatchObject({ balanceCents: 500 });
    const usage = await ok<{ usage_api_key: string }>("POST", "/add_usage_api_key", {
      key: account.api_key,
      body: {
        name: "runner",
        description: "runs the signing action",
        ...NO_PERMISSIONS,
        execute_in_groups: [0],
      },
    });
    const wallet = await ok<{ wallet_address: Address }>("POST", "/create_wallet", {
      key: account.api_key,
      body: { name: "signer" },
    });
    const cid = await ok<string>("POST", "/get_sigil_action_ipfs_id", { body: SIGN });
    const group = await ok<{ group_id: string }>("POST", "/add_group", {
      key: account.api_key,
      body: {
        group_name: "signers",
        group_description: "",
        pkp_ids_permitted: [wallet.wallet_address],
        cid_hashes_permitted: [cid],
      },
    });
    expect(group.group_id).toMatch(/^\d+$/);

    const run = await ok<{ response: Hex; has_error: boolean; cid: string }>("POST", "/sigil_action", {
      key: usage.usage_api_key,
      body: { code: SIGN, js_params: { wallet: wallet.wallet_address, message: "end to end" } },
    });
    expect(run.has_error).toBe(false);
    expect(run.cid).toBe(cid);
    expect(await recoverMessageAddress({ message: "end to end", signature: run.response })).toBe(
      getAddress(wallet.wallet_address),
    );

    const groups = await call<Array<{ id: string }>>("GET", "/list_groups", { key: usage.usage_api_key });
    expect(groups.status).toBe(200);
    expect(groups.headers.get("x-total-count")).toBe("1");
  });
});

describe("the ChainSecured path", () => {
  it("a wallet learns its master wallet and a PKP by signature, creates its account on chain with wallet 0, gets a usage key, registers them, and runs a script", async () => {
    const admin = privateKeyToAccount(generatePrivateKey());
    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 50 });
    await createTestClient({ mode: "anvil", transport }).setBalance({ address: admin.address, value: 10n ** 20n });
    const walletClient = createWalletClient({ account: admin, transport });
    const send = async (functionName: string, args: readonly unknown[]) => {
      const hash = await walletClient.writeContract({
        address: contract,
        abi: accountConfigAbi,
        functionName,
        args,
        chain: null,
      } as never);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
      return receipt;
    };
    const chainId = await publicClient.getChainId();
    const signed = async (primaryType: SigilPrimaryType) => {
      const typed = buildTypedData({
        primaryType,
        chainId,
        address: admin.address,
        issuedAt: BigInt(Math.floor(Date.now() / 1000)),
      });
      return { typed_data: typed, signature: await admin.signTypedData(signableTypedData(typed)) };
    };
    const master = walletLookupHash(admin.address);

    const pkp = await ok<{ wallet_address: Address; derivation_path: Hex; master_wallet_address: Address }>(
      "POST",
      "/create_wallet_with_signature",
      {
        body: await signed("CreateWallet"),
      },
    );
    await send("newChainSecuredAccount", ["e2e chain secured", "", pkp.master_wallet_address]);
    await send("registerWalletDerivation", [master, pkp.wallet_address, BigInt(pkp.derivation_path), "pkp", ""]);
    const usage = await ok<{ usage_api_key: string; usage_api_key_hash: Hex }>(
      "POST",
      "/add_usage_api_key_with_signature",
      { body: await signed("AddUsageApiKey") },
    );
    const cid = await ok<string>("POST", "/get_sigil_action_ipfs_id", { body: SIGN });
    // The admin's own transactions: the action registered, then a group listing it (by its CID hash) and the PKP.
    await send("registerActions", [master, 0n, [cid]]);
    const receipt = await send("addGroup", [master, "g", "", [cidHash(cid)], [pkp.wallet_address]]);
    const groupId =
      parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0]?.args.groupId ?? 0n;
    await send("setUsageApiKey", [
      master,
      BigInt(usage.usage_api_key_hash),
      0n,
      0n,
      "k",
      "",
      false,
      false,
      false,
      [],
      [],
      [],
      [groupId],
    ]);
    // Its runs are billed too: the usage key buys the credit (its admin could, with X-Wallet-Auth).
    await topUp({ api, key: usage.usage_api_key, amountCents: 500 });

    const run = await ok<{ response: Hex; has_error: boolean }>("POST", "/sigil_action", {
      key: usage.usage_api_key,
      body: { code: SIGN, js_params: { wallet: pkp.wallet_address, message: "chain secured" } },
    });
    expect(run.has_error).toBe(false);
    expect(await recoverMessageAddress({ message: "chain secured", signature: run.response })).toBe(
      getAddress(pkp.wallet_address),
    );
  });
});

describe("conversion and ownership transfer", () => {
  it("a managed account converts to ChainSecured through the edge, then its admin hands it on; scripts keep running", async () => {
    const account = await ok<{ api_key: string }>("POST", "/new_account", { body: { account_name: "to convert" } });
    await topUp({ api, key: account.api_key, amountCents: 500 });
    const wallet = await ok<{ wallet_address: Address }>("POST", "/create_wallet", { key: account.api_key, body: {} });
    const cid = await ok<string>("POST", "/get_sigil_action_ipfs_id", { body: SIGN });
    await ok("POST", "/add_group", {
      key: account.api_key,
      body: {
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [wallet.wallet_address],
        cid_hashes_permitted: [cid],
      },
    });
    const usage = await ok<{ usage_api_key: string }>("POST", "/add_usage_api_key", {
      key: account.api_key,
      body: { name: "runner", description: "", ...NO_PERMISSIONS, execute_in_groups: [0] },
    });

    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 50 });
    const chainId = await publicClient.getChainId();
    const first = privateKeyToAccount(generatePrivateKey());
    const typed = buildTypedData({
      primaryType: "ConvertAccount",
      chainId,
      address: first.address,
      issuedAt: BigInt(Math.floor(Date.now() / 1000)),
    });
    const converted = await call("POST", "/convert_to_chain_secured_account", {
      key: account.api_key,
      body: {
        new_admin_wallet_address: first.address,
        typed_data: typed,
        signature: await first.signTypedData(signableTypedData(typed)),
      },
    });
    expect(converted.status, JSON.stringify(converted.body)).toBe(200);
    // The old master key may still read, but no longer write.
    expect((await call("GET", "/list_wallets", { key: account.api_key })).status).toBe(200);
    const write = await call<{ error: { code: string } }>("POST", "/create_wallet", { key: account.api_key, body: {} });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe("chain_secured_account");

    // The admin hands the account to a second wallet by its own transaction.
    const second = privateKeyToAccount(generatePrivateKey());
    const test = createTestClient({ mode: "anvil", transport });
    await test.setBalance({ address: first.address, value: 10n ** 20n });
    await test.setBalance({ address: second.address, value: 10n ** 20n });
    const asFirst = createWalletClient({ account: first, transport });
    const master = walletLookupHash(first.address);
    const hash = await asFirst.writeContract({
      address: contract,
      abi: accountConfigAbi,
      functionName: "transferChainSecuredAccountOwnership",
      args: [master, second.address],
      chain: null,
    });
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    // The former admin can no longer write; the new one can.
    await expect(
      publicClient.simulateContract({
        address: contract,
        abi: accountConfigAbi,
        functionName: "addGroup",
        args: [master, "x", "", [], []],
        account: first.address,
      }),
    ).rejects.toThrow(/NoAccountAccess/);
    await publicClient.simulateContract({
      address: contract,
      abi: accountConfigAbi,
      functionName: "addGroup",
      args: [master, "x", "", [], []],
      account: second.address,
    });

    // The account's usage key still runs the script with its wallet.
    const run = await ok<{ response: Hex; has_error: boolean }>("POST", "/sigil_action", {
      key: usage.usage_api_key,
      body: { code: SIGN, js_params: { wallet: wallet.wallet_address, message: "after transfer" } },
    });
    expect(run.has_error).toBe(false);
    expect(await recoverMessageAddress({ message: "after transfer", signature: run.response })).toBe(
      getAddress(wallet.wallet_address),
    );
  });
});

describe("Stripe's webhook, delivered by the local Stripe", () => {
  it("credits a paid intent by itself, once, before anyone calls confirm_payment", async () => {
    const { api_key: key } = await ok<{ api_key: string }>("POST", "/new_account", {
      body: { account_name: "webhook" },
    });
    const config = await ok<{ publishable_key: string; api_base: string }>("GET", "/billing/stripe_config");
    const intent = await ok<{ payment_intent_id: string; client_secret: string }>(
      "POST",
      "/billing/create_payment_intent",
      { key, body: { amount_cents: 700 } },
    );
    const paid = await fetch(`${config.api_base}/v1/payment_intents/${intent.payment_intent_id}/confirm`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${config.publishable_key}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ payment_method: "pm_card_visa", client_secret: intent.client_secret }).toString(),
    });
    expect(paid.status).toBe(200);
    const deadline = Date.now() + 30_000;
    let balance = 0;
    while (balance === 0 && Date.now() < deadline) {
      balance = (await ok<{ balance_cents: number }>("GET", "/billing/balance", { key })).balance_cents;
      if (balance === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(balance).toBe(700);
    expect(
      await ok("POST", "/billing/confirm_payment", { key, body: { payment_intent_id: intent.payment_intent_id } }),
    ).toEqual({ credited_cents: 0, already_credited: true, balance_cents: 700 });
  });
});

/** Runs a documented block with bash, pointed at this test's stack (it runs on free ports, not on 8787). */
function runDocBlock(block: string, suffix = ""): Promise<string> {
  const script = `${block.replace("http://127.0.0.1:8787/core/v1", api)}\n${suffix}`;
  return new Promise<string>((resolve, reject) =>
    execFile("bash", ["-euo", "pipefail", "-c", script], { cwd: root, timeout: 90_000 }, (err, out, errOut) =>
      err ? reject(new Error(`${err.message}\n${out}\n${errOut}`)) : resolve(out),
    ),
  );
}

describe("the documented walkthroughs", () => {
  const doc = (path: string) => readFileSync(join(root, path), "utf8");

  it("the first run's curl walkthrough runs as written against the stack, ends with the wallet's signature, and costs what it says: the run, the wallet and the group 1 cent each", async () => {
    const block = /```sh\n(A=http:\/\/127\.0\.0\.1:8787\/core\/v1;[\s\S]*?)```/.exec(
      doc("docs/guides/first-run.md"),
    )?.[1];
    expect(block, "docs/guides/first-run.md's curl walkthrough").toBeDefined();
    // The commands as written; the suffix only prints what they left in $W and $KEY.
    const stdout = await runDocBlock(block as string, 'echo; echo "WALLET=$W"; echo "KEY=$KEY"');
    const wallet = /WALLET=(0x[0-9a-f]{40})/.exec(stdout)?.[1] as Address;
    const key = /KEY=(\S+)/.exec(stdout)?.[1] ?? "";
    const answer = JSON.parse(/(\{"response"[^\n]*\})/.exec(stdout)?.[1] ?? "{}") as {
      response: Hex;
      has_error: boolean;
      charged_cents: number;
    };
    expect(answer.has_error).toBe(false);
    expect(await recoverMessageAddress({ message: "hello", signature: answer.response })).toBe(getAddress(wallet));
    // docs/guides/first-run.md: "it cost 1 cent (`charged_cents`), as did the wallet and the group".
    expect(answer.charged_cents, JSON.stringify(answer)).toBe(1);
    // The balance before those three steps is what the topup printed; after them, 3 cents less.
    const before = Math.round(Number(/balance \$(\d+\.\d\d)$/m.exec(stdout)?.[1]) * 100);
    expect(before, stdout).toBe(500);
    const after = await ok<{ balance_cents: number }>("GET", "/billing/balance", { key });
    expect(after.balance_cents, "the wallet, the group and the run cost 1 cent each").toBe(before - 3);
  });

  it("the billing guide's credits walkthrough runs as written: the balance goes 0 → 2500, a declined card adds nothing, the steps by hand add 500", async () => {
    const billing = doc("docs/guides/billing.md");
    const blocks = [...billing.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string).slice(0, 2);
    expect(blocks[0], "the walkthrough's first block").toMatch(/^A=http:\/\/127\.0\.0\.1:8787\/core\/v1;/);
    expect(blocks[1], "the steps by hand").toContain("/billing/confirm_payment");
    const stdout = await runDocBlock(blocks.join("\n"));
    const balances = [...stdout.matchAll(/\{"balance_cents":(\d+),"balance_display":"([^"]+)"\}/g)].map((m) => [
      Number(m[1]),
      m[2],
    ]);
    expect(balances).toEqual([
      [0, "$0.00"],
      [2500, "$25.00"],
      [3000, "$30.00"],
    ]);
    expect(stdout).toContain("credited");
    expect(stdout).toMatch(/; balance \$25\.00$/m);
    expect(stdout).toContain("declined");
    expect(stdout).toMatch(/"already_credited":(true|false)/);
  });
});

/** A proxy in front of the edge that alters what `tamper` says (by path) on the way back. */
async function tamperingProxy(
  target: string,
  tamper: (path: string, body: Buffer) => Buffer,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const upstream = await fetch(`${target}${req.url ?? "/"}`);
    const body = tamper(new URL(req.url ?? "/", "http://x").pathname, Buffer.from(await upstream.arrayBuffer()));
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "x-attestation-simulated"]) {
      const v = upstream.headers.get(name);
      if (v) headers[name] = v;
    }
    res.writeHead(upstream.status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const statusOf = (lines: CheckLine[]) => Object.fromEntries(lines.map((l) => [l.check, l.status]));

describe("sigil verify against the local stack", () => {
  const base = () => api.replace(/\/core\/v1$/, "");

  it("with --allow-simulated, passes every check that can run locally, each labelled SIMULATED; the CLI exits 0", async () => {
    const lines = await verifyDeployment(base(), { allowSimulated: true });
    expect(
      lines.filter((l) => l.status === "fail"),
      JSON.stringify(lines, null, 1),
    ).toEqual([]);
    expect(lines.every((l) => l.simulated)).toBe(true);
    expect(statusOf(lines)).toMatchObject({
      quote: "pass",
      freshness: "pass",
      event_log: "pass",
      claims: "pass",
      "info.compose_hash": "pass",
      "info.images": "pass",
      "evidence.quote": "pass",
      "evidence.report_data": "pass",
      tls: "skipped",
      governance: "skipped",
      os: "skipped",
    });
    const cli = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        process.execPath,
        ["bin/sigil.ts", "verify", base(), "--allow-simulated", "--json"],
        { cwd: root },
        (err, out) => resolve({ code: err ? Number(err.code) : 0, out }),
      ),
    );
    expect(cli.code, cli.out).toBe(0);
    expect(
      cli.out
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as CheckLine).check),
    ).toContain("evidence.report_data");
  });

  it("without --allow-simulated, the quote check fails and the CLI exits 1", async () => {
    expect(statusOf(await verifyDeployment(base()))).toEqual({ quote: "fail" });
    const code = await new Promise<number>((resolve) =>
      execFile(process.execPath, ["bin/sigil.ts", "verify", base()], { cwd: root }, (err) =>
        resolve(err ? Number(err.code) : 0),
      ),
    );
    expect(code).toBe(1);
  });

  it("a served app_compose that was changed fails the compose-hash check; a changed evidence file fails its own", async () => {
    const compose = await tamperingProxy(base(), (path, body) => {
      if (path !== "/info") return body;
      const info = JSON.parse(body.toString()) as { tcb_info: { app_compose: string } };
      info.tcb_info.app_compose = info.tcb_info.app_compose.replace("sigil", "sig1l");
      return Buffer.from(JSON.stringify(info));
    });
    const evidence = await tamperingProxy(base(), (path, body) =>
      path === "/evidences/acme-account.json" ? Buffer.concat([body, Buffer.from(" ")]) : body,
    );
    try {
      const a = statusOf(await verifyDeployment(compose.url, { allowSimulated: true }));
      expect(a["info.compose_hash"]).toBe("fail");
      expect(a["evidence.file:acme-account.json"]).toBe("pass");
      const b = statusOf(await verifyDeployment(evidence.url, { allowSimulated: true }));
      expect(b["info.compose_hash"]).toBe("pass");
      expect(b["evidence.file:acme-account.json"]).toBe("fail");
    } finally {
      await compose.close();
      await evidence.close();
    }
  });

  it("--expect-compose-hash: the stack's own hash passes, another fails", async () => {
    const info = (await (await fetch(`${base()}/info`)).json()) as { compose_hash: string };
    expect(
      statusOf(await verifyDeployment(base(), { allowSimulated: true, expectComposeHash: info.compose_hash }))[
        "info.expected_compose_hash"
      ],
    ).toBe("pass");
    expect(
      statusOf(await verifyDeployment(base(), { allowSimulated: true, expectComposeHash: "11".repeat(32) }))[
        "info.expected_compose_hash"
      ],
    ).toBe("fail");
  });
});
