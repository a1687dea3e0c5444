// @sigil/sdk against the real local stack (anvil, AccountConfig, the enclave, the local Stripe,
// the edge under wrangler dev, billing on), through the SDK alone: the API-mode workflow, the
// ChainSecured workflows (an EOA-owned and an ERC-1271-owned account made on chain, a managed
// account converted), toSigilAccount signing and sending a transaction, bad input as typed
// errors, and every method of the client called at least once.
import { createServer } from "node:net";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  parseEther,
  verifyMessage,
  verifyTypedData,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  accountConfig,
  accountConfigAbi,
  accountConfigCall,
  createSigilClient,
  grantSigner,
  operations,
  signSigilTypedData,
  SigilError,
  SigilNetworkError,
  SIGNER_CID,
  toSigilAccount,
  topUp,
  walletAuthHeader,
  walletLookupHash,
  verifyReceipt,
  type OperationId,
  type SigilClient,
} from "../../sdk/src/index.ts";
import { computeCid } from "../../shared/cid.ts";
import type { RunReceipt } from "../../shared/receipt.ts";
import { receiptHead } from "../../shared/receiptAnchor.ts";
import { cidHash } from "../../shared/hashing.ts";
import { SIGNER_CODE } from "../../sdk/src/signer.ts";
import { compileErc1271Wallet } from "../fixtures/erc1271Wallet.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet, message }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}`;

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
/** Every operation a client of this file asked for, by `METHOD path`. */
const requested = new Set<string>();
const recordingFetch: typeof globalThis.fetch = (input, init) => {
  const url = new URL(String(input));
  requested.add(`${init?.method ?? "GET"} ${url.pathname}`);
  return globalThis.fetch(input, init);
};
let anon: SigilClient;

beforeAll(async () => {
  stack = inject("localStack");
  anon = createSigilClient({ baseUrl: stack.origin, fetch: recordingFetch });
}, 120_000);

afterAll(async () => {});

const rpc = () => {
  const transport = http(stack.rpcUrl);
  return {
    publicClient: createPublicClient({ chain: foundry, transport, pollingInterval: 50 }),
    testClient: createTestClient({ chain: foundry, mode: "anvil", transport }),
    transport,
  };
};

/** A funded EOA on the local chain and its wallet client. */
async function fundedEoa() {
  const account = privateKeyToAccount(generatePrivateKey());
  const { testClient, transport } = rpc();
  await testClient.setBalance({ address: account.address, value: parseEther("100") });
  return { account, walletClient: createWalletClient({ account, chain: foundry, transport }) };
}

async function newManagedAccount(name: string) {
  const created = await anon.newAccount({ account_name: name });
  const client = anon.with({ apiKey: created.api_key });
  await topUp(client, { amountCents: 500 });
  return { created, client };
}

describe("the API-mode workflow through the SDK", () => {
  it("account → top-up → wallet → group → run, every list paged, balances charged", async () => {
    const { created, client } = await newManagedAccount("sdk workflow");
    expect(await client.accountExists()).toEqual({ exists: true, managed: true });
    const before = await client.getBalance();
    expect(before.balance_cents).toBe(500);

    const wallet = await client.createWallet({ name: "signer", description: "sdk" });
    const cid = await client.getSigilActionIpfsId(SIGN);
    expect(cid).toBe(await computeCid(SIGN));
    await client.addAction({ action_ipfs_cid: cid, name: "sign", description: "" });
    const group = await client.addGroup({
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [wallet.wallet_address],
      cid_hashes_permitted: [cid],
    });

    const run = await client.sigilAction({
      code: SIGN,
      js_params: { wallet: wallet.wallet_address, message: "through the sdk" },
    });
    expect(run.has_error).toBe(false);
    expect(
      await verifyMessage({
        address: getAddress(wallet.wallet_address),
        message: "through the sdk",
        signature: run.response as Hex,
      }),
    ).toBe(true);
    // The run's receipt verifies against the receipt key of the instance that signed it.
    const receiptKey = await anon.getReceiptKey({ instance: run.receipt.instance_id });
    expect(
      (await verifyReceipt(run, receiptKey, { params: { wallet: wallet.wallet_address, message: "through the sdk" } }))
        .ok,
    ).toBe(true);

    const wallets = [];
    for await (const w of client.all.listWallets({ page_size: 1 })) wallets.push(w.wallet_address.toLowerCase());
    expect(wallets).toEqual([created.wallet_address.toLowerCase(), wallet.wallet_address.toLowerCase()]);
    expect((await client.listGroups()).map((g) => g.id)).toEqual([group.group_id]);
    expect((await client.listActions({ group_id: group.group_id })).map((a) => a.action_ipfs_cid)).toEqual([cid]);
    expect(
      (await client.listWalletsInGroup({ group_id: group.group_id })).map((w) => w.wallet_address.toLowerCase()),
    ).toEqual([wallet.wallet_address.toLowerCase()]);
    // A new wallet holds nothing on the chain yet; a wallet of another account is not this one's.
    expect(await client.getWalletBalance({ wallet_address: wallet.wallet_address })).toMatchObject({
      wallet_address: wallet.wallet_address.toLowerCase(),
      balance_wei: "0",
      balance_eth: "0",
    });
    await expect(
      client.getWalletBalance({ wallet_address: privateKeyToAccount(generatePrivateKey()).address }),
    ).rejects.toMatchObject({ status: 404, code: "wallet_not_found" });
    // Three writes and a run at a cent each.
    expect((await client.getBalance()).balance_cents).toBe(496);
    // The usage history says the same, newest first, page by page.
    const kinds: string[] = [];
    for await (const e of client.all.listUsage({ limit: 2 })) kinds.push(e.kind);
    expect(kinds).toEqual(["run", "write", "write", "write", "top_up"]);
    // Its scripts sent no transaction (test/e2e/sendTransaction.test.ts sends some): an empty first page.
    expect(await client.listTransactions({ limit: 10 })).toEqual({ transactions: [], next_cursor: null });
  });

  it("a card Stripe declines: topUp throws payment_not_succeeded with Stripe's reason, and nothing is credited", async () => {
    const { client } = await newManagedAccount("sdk declined");
    const err = await topUp(client, { amountCents: 500, paymentMethod: "pm_card_chargeDeclined" }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "payment_not_succeeded" });
    expect(String(err)).toMatch(/declined/i);
    expect((await client.getBalance()).balance_cents).toBe(500);
  });

  it("webhooks: register, list, settings, the delivery log, a re-send of nothing (404), remove", async () => {
    const { client } = await newManagedAccount("sdk webhooks");
    // Subscribed to run.failed only, and this account runs nothing: nothing is ever sent to it.
    const hook = await client.createWebhook({ url: "http://127.0.0.1:9/sdk", events: ["run.failed"] });
    expect(hook.secret).toMatch(/^whsec_/);
    expect(await client.listWebhooks()).toMatchObject([{ id: hook.id, events: ["run.failed"] }]);
    expect(await client.updateWebhookSettings({ balance_low_cents: 100 })).toEqual({ balance_low_cents: 100 });
    expect(await client.getWebhookSettings()).toEqual({ balance_low_cents: 100 });
    expect(await client.listWebhookDeliveries({ webhook_id: hook.id })).toEqual([]);
    await expect(
      client.resendWebhookDelivery({ webhook_id: hook.id, delivery_id: `evt_${"0".repeat(24)}` }),
    ).rejects.toMatchObject({ status: 404, code: "delivery_not_found" });
    expect(await client.deleteWebhook({ webhook_id: hook.id })).toEqual({ deleted: true, id: hook.id });
  });

  it("usage keys, groups and actions: every write and its list", async () => {
    const { client } = await newManagedAccount("sdk writes");
    const w1 = await client.createWallet({});
    const w2 = await client.createWalletByGet();
    const g = await client.addGroup({
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [w1.wallet_address],
      cid_hashes_permitted: [],
    });
    const cid = await client.getSigilActionIpfsId(SIGN);
    await client.addActionToGroup({ group_id: g.group_id, action_ipfs_cid: cid });
    await client.addPkpToGroup({ group_id: g.group_id, pkp_id: w2.wallet_address });
    await client.removePkpFromGroup({ group_id: g.group_id, pkp_id: w2.wallet_address });
    const hashed = `0x${cidHash(cid).toString(16).padStart(64, "0")}`;
    await client.updateActionMetadata({ hashed_cid: hashed, name: "renamed", description: "d" });
    await client.removeActionFromGroup({ group_id: g.group_id, hashed_cid: hashed });
    await client.updateGroup({
      group_id: g.group_id,
      name: "g2",
      description: "",
      pkp_ids_permitted: [w1.wallet_address],
      cid_hashes_permitted: [cid],
    });
    expect((await client.listGroups())[0]).toMatchObject({ group_name: "g2" });
    await client.deleteAction({ hashed_cid: hashed });

    const key = await client.addUsageApiKey({
      name: "runner",
      description: "",
      can_create_groups: false,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [g.group_id],
    });
    await client.updateUsageApiKey({
      usage_api_key: key.usage_api_key,
      name: "runner",
      description: "",
      can_create_groups: true,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [g.group_id],
    });
    await client.updateUsageApiKeyMetadata({ usage_api_key: key.usage_api_key, name: "renamed", description: "x" });
    const keys = [];
    for await (const k of client.all.listApiKeys()) keys.push(k);
    expect(keys).toMatchObject([{ name: "renamed", can_create_groups: true }]);
    // The key's own guardrail (test/e2e/keyGuardrail.test.ts has it at work): set, read back by hash, removed.
    const own = await client.setUsageKeyGuardrail({
      usage_api_key: key.usage_api_key,
      guardrail: { version: 1, messages: { pattern: "hello*" } },
    });
    expect(await client.getUsageKeyGuardrail({ usage_api_key: keys[0]!.id })).toMatchObject({
      usage_key_hash: keys[0]!.id,
      guardrail_hash: own.guardrail_hash,
      guardrail: { messages: { pattern: "hello*" } },
      budgets: [],
    });
    // Delegated keys (test/e2e/delegation.test.ts has them at work): a guardrail with a delegation
    // section lets the key mint children; one is revoked by its id.
    await client.setUsageKeyGuardrail({
      usage_api_key: key.usage_api_key,
      guardrail: { version: 1, messages: { pattern: "hello*" }, delegation: {} },
    });
    const minted = await client.with({ apiKey: key.usage_api_key }).delegateKey({ caveats: { max_uses: 1 }, count: 2 });
    expect(minted.keys).toHaveLength(2);
    expect(await client.revokeDelegation({ id: minted.ids[0]! })).toMatchObject({
      revoked: true,
      already_revoked: false,
    });
    await client.setUsageKeyGuardrail({ usage_api_key: keys[0]!.id, guardrail: null });
    expect((await client.getUsageKeyGuardrail({ usage_api_key: keys[0]!.id })).guardrail).toBeNull();
    await client.removeUsageApiKey({ usage_api_key: key.usage_api_key });
    await expect(client.with({ apiKey: key.usage_api_key }).listGroups()).rejects.toMatchObject({
      code: "invalid_api_key",
      status: 401,
    });
    await client.removeGroup({ group_id: g.group_id });
    expect(await client.listGroups()).toEqual([]);
  });

  it("public information, billing's configuration and the attestation endpoints", async () => {
    expect(await anon.getVersion()).toMatchObject({ name: expect.any(String) });
    const chain = await anon.getNodeChainConfig();
    expect(chain.chain_id).toBe(31337);
    expect(chain.contract_address?.toLowerCase()).toBe(stack.contract.toLowerCase());
    expect((await anon.getSigilActionClientConfig()).max_wallet_operations).toBeGreaterThan(0);
    expect(await anon.getApiPayers()).toBeDefined();
    expect(await anon.getAdminApiPayer()).toBeDefined();
    expect(await anon.getHealth()).toBeDefined();
    expect((await anon.getStripeConfig()).publishable_key).toMatch(/^pk_/);
    const attestation = await anon.getAttestation({ nonce: "00".repeat(32) });
    expect(attestation).toBeDefined();
    expect(await anon.getInfo()).toBeDefined();
    expect(await anon.getSimulatedCollateral()).toBeDefined();
    expect(await anon.listEvidences()).toContain("sha256sum.txt");
    expect(await anon.getEvidence({ name: "sha256sum.txt" })).toMatch(/[0-9a-f]{64}/);
    // Stripe's own endpoint refuses a body that Stripe did not sign, with the service's error.
    await expect(anon.stripeWebhook({ id: "evt_1" } as never)).rejects.toMatchObject({ status: 400 });
  });
});

describe("ChainSecured through the SDK", () => {
  it("an EOA-owned account: wallet by signature, account on chain, derivation registered, usage key by signature, billed by X-Wallet-Auth, a run", async () => {
    const { account: admin, walletClient } = await fundedEoa();
    const { publicClient } = rpc();
    const chainId = (await anon.getNodeChainConfig()).chain_id;
    const contract = accountConfig({ walletClient, publicClient, address: stack.contract });

    const first = await anon.createWalletWithSignature(
      await signSigilTypedData({ signer: admin, primaryType: "CreateWallet", chainId }),
    );
    await contract.newChainSecuredAccount({ name: "sdk eoa", masterWallet: first.master_wallet_address as Address });
    await contract.registerWalletDerivation({
      wallet: first.wallet_address as Address,
      derivationPath: first.derivation_path as Hex,
      name: "first",
    });
    // A second wallet by signature, the client asking the chain id itself.
    const second = await anon.createWalletWithSignature(
      await signSigilTypedData({ signer: walletClient, primaryType: "CreateWallet", client: anon }),
    );
    await contract.registerWalletDerivation({
      wallet: second.wallet_address as Address,
      derivationPath: second.derivation_path as Hex,
    });

    // Billing under the admin wallet, a fresh X-Wallet-Auth per call.
    const asAdmin = anon.with({ walletAuth: () => walletAuthHeader({ signer: admin, chainId }) });
    await topUp(asAdmin, { amountCents: 500 });
    expect((await asAdmin.getBalance()).balance_cents).toBe(500);

    const usage = await anon.addUsageApiKeyWithSignature(
      await signSigilTypedData({ signer: admin, primaryType: "AddUsageApiKey", chainId }),
    );
    const cid = await computeCid(SIGN);
    await contract.registerActions({ cids: [cid] });
    const { groupId } = await contract.addGroup({
      name: "g",
      cidHashes: [cidHash(cid)],
      wallets: [first.wallet_address as Address],
    });
    await contract.setUsageApiKey({
      keyHash: usage.usage_api_key_hash as Hex,
      name: "runner",
      executeInGroups: [groupId],
    });

    const runner = anon.with({ apiKey: usage.usage_api_key });
    const run = await runner.sigilAction({
      code: SIGN,
      js_params: { wallet: first.wallet_address, message: "chain secured" },
    });
    expect(run.has_error).toBe(false);
    expect(
      await verifyMessage({
        address: getAddress(first.wallet_address),
        message: "chain secured",
        signature: run.response as Hex,
      }),
    ).toBe(true);
    // A wallet-owned account refuses the managed writes.
    await expect(runner.createWallet({})).rejects.toBeInstanceOf(SigilError);

    // Ownership moves to another wallet: the old admin no longer signs for it.
    const { account: next } = await fundedEoa();
    await contract.transferOwnership({ newAdmin: next.address });
    // The account's history through the SDK's cursor iterator, read by the new admin under X-Wallet-Auth.
    const history: string[] = [];
    for await (const e of anon
      .with({ walletAuth: () => walletAuthHeader({ signer: next, chainId }) })
      .all.audit({ limit: 2 }))
      history.push(e.event);
    expect(history[0]).toBe("ChainSecuredAccountOwnershipTransferred");
    expect(history.at(-1)).toBe("AccountCreated");
    expect(history.filter((e) => e === "WalletRegistered")).toHaveLength(3);
    await expect(
      publicClient.simulateContract({
        address: stack.contract,
        abi: accountConfigAbi,
        functionName: "addGroup",
        args: [walletLookupHash(admin.address), "x", "", [], []],
        account: admin.address,
      }),
    ).rejects.toThrow();
  });

  it("an ERC-1271-owned account: the contract wallet's owner signs for it, the wallet sends the contract calls", async () => {
    const { account: owner, walletClient } = await fundedEoa();
    const { publicClient } = rpc();
    const { abi, bytecode } = compileErc1271Wallet();
    const deployed = await publicClient.waitForTransactionReceipt({
      hash: await walletClient.deployContract({ abi, bytecode, args: [owner.address, false] }),
    });
    const smart = deployed.contractAddress!;
    const viaWallet = async (data: Hex) => {
      const hash = await walletClient.writeContract({
        address: smart,
        abi,
        functionName: "execute",
        args: [stack.contract, 0n, data],
      });
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    };
    const chainId = (await anon.getNodeChainConfig()).chain_id;

    const pkp = await anon.createWalletWithSignature(
      await signSigilTypedData({ signer: owner, address: smart, primaryType: "CreateWallet", chainId }),
    );
    await viaWallet(accountConfigCall("newChainSecuredAccount", ["sdk 1271", "", pkp.master_wallet_address]));
    const accountHash = walletLookupHash(smart);
    await viaWallet(
      accountConfigCall("registerWalletDerivation", [
        accountHash,
        pkp.wallet_address,
        BigInt(pkp.derivation_path),
        "pkp",
        "",
      ]),
    );
    const usage = await anon.addUsageApiKeyWithSignature(
      await signSigilTypedData({ signer: owner, address: smart, primaryType: "AddUsageApiKey", chainId }),
    );
    await viaWallet(
      accountConfigCall("setUsageApiKey", [
        accountHash,
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
        [],
      ]),
    );
    const asWallet = anon.with({ walletAuth: () => walletAuthHeader({ signer: owner, address: smart, chainId }) });
    expect((await asWallet.getBalance()).balance_cents).toBe(0);
    expect(await anon.with({ apiKey: usage.usage_api_key }).accountExists()).toMatchObject({
      exists: true,
      managed: false,
    });
    // A signature by someone else for the same wallet is refused with the service's code.
    const stranger = privateKeyToAccount(generatePrivateKey());
    await expect(
      anon.createWalletWithSignature(
        await signSigilTypedData({ signer: stranger, address: smart, primaryType: "CreateWallet", chainId }),
      ),
    ).rejects.toMatchObject({
      code: "invalid_signature",
      status: 401,
    });
  });

  it("a managed account converted to one its new admin wallet owns", async () => {
    const { client } = await newManagedAccount("sdk convert");
    const { account: admin } = await fundedEoa();
    const signed = await signSigilTypedData({ signer: admin, primaryType: "ConvertAccount", client: anon });
    const converted = await client.convertToChainSecuredAccount({ new_admin_wallet_address: admin.address, ...signed });
    expect(converted).toMatchObject({ success: true });
    expect(await client.accountExists()).toMatchObject({ exists: true, managed: false });
  });
});

describe("toSigilAccount", () => {
  let client: SigilClient;
  let wallet: Address;

  beforeAll(async () => {
    ({ client } = await newManagedAccount("sdk signer"));
    wallet = getAddress((await client.createWallet({})).wallet_address);
    const group = await grantSigner(client, { wallet });
    expect(group.group_id).toBeDefined();
  });

  it("the signing action's CID is that of its code", async () => {
    expect(SIGNER_CID).toBe(await computeCid(SIGNER_CODE));
    expect(await client.getSigilActionIpfsId(SIGNER_CODE)).toBe(SIGNER_CID);
  });

  it("signs a message and EIP-712 typed data that viem verifies against the wallet's address", async () => {
    const account = toSigilAccount({ client, wallet });
    expect(account.address).toBe(wallet);
    const signature = await account.signMessage({ message: "hello from the enclave" });
    expect(await verifyMessage({ address: wallet, message: "hello from the enclave", signature })).toBe(true);
    const raw = await account.signMessage({ message: { raw: "0xdeadbeef" } });
    expect(await verifyMessage({ address: wallet, message: { raw: "0xdeadbeef" }, signature: raw })).toBe(true);

    const typedData = {
      domain: {
        name: "Mail",
        version: "1",
        chainId: 1,
        verifyingContract: "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
      },
      types: {
        Mail: [
          { name: "to", type: "address" },
          { name: "amount", type: "uint256" },
          { name: "note", type: "string" },
        ],
      },
      primaryType: "Mail",
      message: { to: "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB", amount: 2n ** 130n, note: "big" },
    } as const;
    const typed = await account.signTypedData(typedData);
    expect(await verifyTypedData({ address: wallet, ...typedData, signature: typed })).toBe(true);
  });

  it("sends an EIP-1559 transaction with a viem wallet client: mined, from the Sigil wallet", async () => {
    const { publicClient, testClient, transport } = rpc();
    await testClient.setBalance({ address: wallet, value: parseEther("1") });
    const walletClient = createWalletClient({ account: toSigilAccount({ client, wallet }), chain: foundry, transport });
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const hash = await walletClient.sendTransaction({ to, value: 12345n });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(getAddress(receipt.from)).toBe(wallet);
    const tx = await publicClient.getTransaction({ hash });
    expect(tx.type).toBe("eip1559");
    expect(await publicClient.getBalance({ address: to })).toBe(12345n);
  });

  it("bad input surfaces as typed errors with the service's code", async () => {
    // A wallet that is not the account's: the run refuses it.
    const stranger = toSigilAccount({ client, wallet: privateKeyToAccount(generatePrivateKey()).address });
    const refused = await stranger.signMessage({ message: "x" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SigilError);
    expect((refused as SigilError).code).not.toBe("run_failed");
    expect((refused as SigilError).requestId).toMatch(/^[0-9a-f-]{36}$/);
    // Malformed typed data: a type that does not exist.
    const account = toSigilAccount({ client, wallet });
    const malformed = await account
      .signTypedData({
        domain: {},
        types: { M: [{ name: "v", type: "uint257" }] },
        primaryType: "M",
        message: { v: 1n },
      } as never)
      .catch((e: unknown) => e);
    expect(malformed).toBeInstanceOf(SigilError);
    expect(String(malformed)).toMatch(/signTypedData/);
    // A wrong key.
    await expect(
      toSigilAccount({ client: client.with({ apiKey: "sk_wrong" }), wallet }).signMessage({ message: "x" }),
    ).rejects.toMatchObject({ code: "invalid_api_key", status: 401 });
    // The server down: a typed network error, at once, not a hang.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const port = (server.address() as { port: number }).port;
        server.close(() => resolve(port));
      });
    });
    const down = await createSigilClient({ baseUrl: `http://127.0.0.1:${closed}`, apiKey: "k", retries: 0 })
      .listWallets()
      .catch((e: unknown) => e);
    expect(down).toBeInstanceOf(SigilNetworkError);
    expect((down as SigilError).code).toBe("network_error");
  });
});

describe("guardrails through the SDK", () => {
  it("a wallet's guardrail set, read back with its hash and block, enforced on toSigilAccount's signatures, and removed", async () => {
    const { client } = await newManagedAccount("sdk guardrail");
    const wallet = getAddress((await client.createWallet({})).wallet_address);
    const set = await client.setWalletGuardrail({
      wallet_address: wallet,
      guardrail: { version: 1, messages: { pattern: "login:*" } },
    });
    expect(set.guardrail_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const read = await client.getWalletGuardrail({ wallet_address: wallet });
    expect(read).toMatchObject({
      wallet_address: wallet.toLowerCase(),
      guardrail_hash: set.guardrail_hash,
      guardrail: { version: 1, messages: { pattern: "login:*" } },
      set_at_block: expect.stringMatching(/^\d+$/),
    });
    // The check a script's request would meet, made without a run.
    expect(
      await client.checkGuardrail({ wallet_address: wallet, request: { kind: "message", message: "transfer all" } }),
    ).toMatchObject({ allowed: false, rule: "messages.pattern", guardrail_hash: set.guardrail_hash });
    const account = toSigilAccount({ client, wallet, grant: true });
    const signature = await account.signMessage({ message: "login: 42" });
    expect(await verifyMessage({ address: wallet, message: "login: 42", signature })).toBe(true);
    await expect(account.signMessage({ message: "transfer all" })).rejects.toMatchObject({
      code: "guardrail_denied",
      message: expect.stringContaining("messages.pattern"),
    });
    // A run's receipt records the guardrail, the rule that allowed a signature and what it refused,
    // and still verifies.
    await client.addGroup({
      group_name: "any",
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: ["0"],
    });
    const params = { wallet };
    const run = await client.sigilAction({
      code: `async function main({ wallet }) {
        await Sigil.Actions.signMessage({ pkpId: wallet, message: "login: 7" });
        try { await Sigil.Actions.signDigest({ pkpId: wallet, digest: "0x${"34".repeat(32)}" }); } catch (e) { return e.code; }
      }`,
      js_params: params,
    });
    expect(run.response).toBe("guardrail_denied");
    expect(run.receipt.wallets[0]).toMatchObject({
      guardrail: set.guardrail_hash,
      signed: [{ kind: "message", rule: "messages.pattern" }],
      refused: [{ kind: "hash", rule: "raw_digests" }],
    });
    const receiptKey = await anon.getReceiptKey({ instance: run.receipt.instance_id });
    expect((await verifyReceipt(run, receiptKey, { params })).ok).toBe(true);
    // Where its batch is anchored (test/e2e/anchoredReceipts.test.ts checks it on chain).
    const head = receiptHead(run.receipt as RunReceipt) as Hex;
    const anchor = await anon.getReceiptAnchor({
      instance: run.receipt.instance_id,
      epoch: run.receipt.anchor?.epoch as number,
      head,
    });
    expect(anchor).toMatchObject({ instance_id: run.receipt.instance_id, epoch: run.receipt.anchor?.epoch, head });
    // The same through a dry run: decided and listed, nothing signed, charged as a run, its receipt marked.
    const dry = await client.sigilAction({
      code: `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "nope" }).catch((e) => e.code) }`,
      js_params: params,
      dry_run: true,
    });
    expect(dry.response).toBe("guardrail_denied");
    expect(dry.dry_run?.requests).toEqual([
      expect.objectContaining({ kind: "message", allowed: false, rule: "messages.pattern", observed: "nope" }),
    ]);
    expect(dry.receipt.dry_run).toBe(true);
    expect(dry.charged_cents).toBe(1);
    expect(
      (await verifyReceipt(dry, await anon.getReceiptKey({ instance: dry.receipt.instance_id }), { params })).ok,
    ).toBe(true);
    const signHash = account.sign;
    if (!signHash) throw new Error("toSigilAccount signs raw hashes");
    await expect(signHash({ hash: `0x${"12".repeat(32)}` })).rejects.toMatchObject({ code: "guardrail_denied" });
    expect((await client.setWalletGuardrail({ wallet_address: wallet, guardrail: null })).guardrail_hash).toBeNull();
    expect(await client.getWalletGuardrail({ wallet_address: wallet })).toMatchObject({
      guardrail: null,
      guardrail_hash: null,
    });
    expect(await signHash({ hash: `0x${"12".repeat(32)}` })).toMatch(/^0x/);
    // No guardrail, no budgets (test/e2e/budgets.test.ts has them).
    expect(await client.getWalletBudgets({ wallet_address: wallet })).toMatchObject({
      guardrail_hash: null,
      budgets: [],
    });
    // Not the account's wallet: 404; a document that does not hold together: 400, naming where.
    await expect(
      client.getWalletGuardrail({ wallet_address: privateKeyToAccount(generatePrivateKey()).address }),
    ).rejects.toMatchObject({ status: 404, code: "wallet_not_found" });
    await expect(
      client.setWalletGuardrail({
        wallet_address: wallet,
        guardrail: { version: 1, transactions: { chains: [1], max_value_wei: "1.5" } },
      }),
    ).rejects.toMatchObject({ status: 400, code: "invalid_request" });
  });
});

describe("toSigilAccount({ grant: true })", () => {
  it("signs at first use without grantSigner: concurrent first signatures make one group; without grant the refusal stands", async () => {
    const { client } = await newManagedAccount("sdk self-grant");
    const wallet = getAddress((await client.createWallet({})).wallet_address);
    const refused = await toSigilAccount({ client, wallet })
      .signMessage({ message: "no group yet" })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "permission_denied" });
    expect((await client.getAccount()).group_count).toBe(0);
    const account = toSigilAccount({ client, wallet, grant: true });
    const messages = ["first", "second", "third"];
    const signatures = await Promise.all(messages.map((message) => account.signMessage({ message })));
    for (const [i, signature] of signatures.entries())
      expect(await verifyMessage({ address: wallet, message: messages[i] as string, signature })).toBe(true);
    const groups = await client.listGroups();
    expect(groups).toHaveLength(1);
    expect(groups[0]?.pkp_ids_permitted).toEqual([wallet.toLowerCase()]);
    // Granted now: the next signature is one run, and a fresh account object finds the group there.
    expect(await toSigilAccount({ client, wallet, grant: true }).signMessage({ message: "again" })).toMatch(/^0x/);
    expect(await client.listGroups()).toHaveLength(1);
  });

  it("a usage key that may not create groups gets the refusal, not a grant", async () => {
    const { client } = await newManagedAccount("sdk no grant");
    const wallet = getAddress((await client.createWallet({})).wallet_address);
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
    const refused = await toSigilAccount({ client: client.with({ apiKey: usage_api_key }), wallet, grant: true })
      .signMessage({ message: "x" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SigilError);
    expect((refused as SigilError).code).toBe("permission_denied");
    expect(await client.listGroups()).toHaveLength(0);
  });
});

describe("coverage", () => {
  it("every method of the client was called at least once by this file", () => {
    const pathOf = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    const missing = (Object.keys(operations) as OperationId[]).filter((name) => {
      const op = operations[name];
      return ![...requested].some((seen) => {
        const [method, path] = seen.split(" ");
        return method === op.method && pathOf(op.path).test(path!);
      });
    });
    expect(missing).toEqual([]);
  });
});
