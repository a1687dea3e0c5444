// The ChainSecured path through the enclave, and the permission cache meeting the chain listener:
// a wallet learns its account's master wallet from the signature flow, creates its account with
// it as wallet 0, gets a PKP and a usage key from the signature flows, registers both with its own
// transactions, runs a script with them — and when the admin revokes the permission by a direct
// transaction, the enclave stops honouring it within the listener's poll interval (plus one
// second), without a restart. A usage key another account registers under a wallet's lookup hash
// never pulls that wallet's signature flows into the other account.
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
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { buildTypedData, signableTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { callEnclave, ok, run, walletDerivation } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

const SIGN = `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "chain secured" }); }`;

const publicClient = () => createPublicClient({ transport: http(inject("rpcUrl")), pollingInterval: 50 });

async function adminWallet() {
  const admin = privateKeyToAccount(generatePrivateKey());
  await createTestClient({ mode: "anvil", transport: http(inject("rpcUrl")) }).setBalance({
    address: admin.address,
    value: 10n ** 20n,
  });
  const wallet = createWalletClient({ account: admin, transport: http(inject("rpcUrl")) });
  const send = async (functionName: string, args: readonly unknown[]) => {
    const hash = await wallet.writeContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName,
      args,
      chain: null,
    } as never);
    const receipt = await publicClient().waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
    return receipt;
  };
  const signed = async (primaryType: SigilPrimaryType, issuedAt = BigInt(Math.floor(Date.now() / 1000))) => {
    const typed = buildTypedData({
      primaryType,
      chainId: await publicClient().getChainId(),
      address: admin.address,
      issuedAt,
    });
    return { typed_data: typed, signature: await admin.signTypedData(signableTypedData(typed)) };
  };
  return { admin, send, signed, master: walletLookupHash(admin.address) };
}

type MintedWallet = { wallet_address: Address; derivation_path: Hex; master_wallet_address: Address; account_id: Hex };

describe("a ChainSecured account", () => {
  let a: Awaited<ReturnType<typeof adminWallet>>;
  let pkp: MintedWallet;
  let usage: { usage_api_key: string; wallet_address: Address; derivation_path: Hex; usage_api_key_hash: Hex };
  let groupId: bigint;

  beforeAll(async () => {
    a = await adminWallet();
    // The first CreateWallet also names the account's master wallet, which creation registers as wallet 0.
    pkp = await ok("create_wallet_with_signature", await a.signed("CreateWallet"));
    await a.send("newChainSecuredAccount", ["chain secured", "", pkp.master_wallet_address]);
    await a.send("registerWalletDerivation", [a.master, pkp.wallet_address, BigInt(pkp.derivation_path), "pkp", ""]);
    usage = await ok("add_usage_api_key_with_signature", await a.signed("AddUsageApiKey"));
    await a.send("registerWalletDerivation", [
      a.master,
      usage.wallet_address,
      BigInt(usage.derivation_path),
      "usage key wallet",
      "",
    ]);
    const cid = await computeCid(SIGN);
    await a.send("registerActions", [a.master, 0n, [cid]]);
    const receipt = await a.send("addGroup", [
      a.master,
      "g",
      "",
      [cidHash(cid)],
      [pkp.wallet_address, usage.wallet_address, pkp.master_wallet_address],
    ]);
    const added = parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0];
    groupId = added?.args.groupId ?? 0n;
    await a.send("setUsageApiKey", [
      a.master,
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
  });

  it("the signature flows answer derivations that register on chain, and the usage key hash is the key's keccak", async () => {
    expect(pkp.derivation_path).toMatch(/^0x[0-9a-f]{64}$/);
    expect(usage.usage_api_key_hash).toBe(`0x${apiKeyHash(usage.usage_api_key).toString(16).padStart(64, "0")}`);
    expect(BigInt(usage.derivation_path)).toBe(apiKeyHash(usage.usage_api_key));
    expect(groupId).toBeGreaterThan(0n);
  });

  it("names the signer's account and its master wallet: the PKP whose derivation is the master hash, registered as wallet 0", async () => {
    expect(pkp.account_id).toBe(toHash32(a.master));
    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    expect(getAddress(pkp.master_wallet_address)).toBe(keyring.accountMasterWallet(a.master).address);
    const [wallets] = await publicClient().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "listWallets",
      args: [a.master, 0n, 1n],
    });
    expect(wallets[0]).toMatchObject({ id: 0n, wallet: getAddress(pkp.master_wallet_address) });
    expect(await walletDerivation(a.master, getAddress(pkp.master_wallet_address))).toBe(a.master);
  });

  it("runs a script with the usage key that signs with the PKP, the usage key's own wallet and wallet 0", async () => {
    for (const wallet of [pkp.wallet_address, usage.wallet_address, pkp.master_wallet_address]) {
      const r = await run(usage.usage_api_key, SIGN, { wallet });
      expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
      expect(await recoverMessageAddress({ message: "chain secured", signature: r.body.response as Hex })).toBe(
        getAddress(wallet),
      );
    }
  });

  it("refuses the signature flows with a stale or forged signature", async () => {
    const stale = await callEnclave(
      "create_wallet_with_signature",
      await a.signed("CreateWallet", BigInt(Math.floor(Date.now() / 1000) - 3600)),
    );
    expect(stale.status).toBe(401);
    expect((stale.body as { error: { code: string } }).error.code).toBe("signature_expired");
    const other = privateKeyToAccount(generatePrivateKey());
    const good = await a.signed("CreateWallet");
    const forged = await callEnclave("create_wallet_with_signature", {
      ...good,
      signature: await other.signTypedData(signableTypedData(good.typed_data)),
    });
    expect(forged.status).toBe(401);
    expect((forged.body as { error: { code: string } }).error.code).toBe("invalid_signature");
    const wrongType = await callEnclave("add_usage_api_key_with_signature", good);
    expect((wrongType.body as { error: { code: string } }).error.code).toBe("wrong_primary_type");
  });

  // How soon, not what drops the grant: the listener still re-reads this account's setup blocks
  // here, whose events drop its entries too. revocation.test.ts pins that the revocation's own
  // event does (issue 26).
  it("a permission revoked on chain by the admin's own transaction stops working within the listener's poll interval plus one second", async () => {
    // Warm the cache: the grant is now cached for up to five minutes.
    expect((await run(usage.usage_api_key, SIGN, { wallet: pkp.wallet_address })).body.has_error).toBe(false);
    await a.send("removePkpFromGroup", [a.master, groupId, pkp.wallet_address]);
    const revokedAt = Date.now();
    const limit = inject("listenerPollMs") + 1_000;
    let refusedAfter: number | undefined;
    while (Date.now() - revokedAt <= limit + 2_000) {
      const r = await run(usage.usage_api_key, SIGN, { wallet: pkp.wallet_address });
      if (r.body.has_error && r.body.error?.code === "permission_denied") {
        refusedAfter = Date.now() - revokedAt;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    console.log(`revocation honoured after ${refusedAfter} ms (limit ${limit} ms)`);
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter).toBeLessThanOrEqual(limit);
    // The other wallet of the group still works: only the revoked permission went.
    expect((await run(usage.usage_api_key, SIGN, { wallet: usage.wallet_address })).body.has_error).toBe(false);
  });

  it("a usage key removed on chain stops authorizing runs within the poll interval (401)", async () => {
    await a.send("removeUsageApiKey", [a.master, BigInt(usage.usage_api_key_hash)]);
    const removedAt = Date.now();
    let status = 200;
    while (Date.now() - removedAt <= inject("listenerPollMs") + 3_000) {
      status = (await run(usage.usage_api_key, SIGN, { wallet: usage.wallet_address })).status;
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(401);
    expect(Date.now() - removedAt).toBeLessThanOrEqual(inject("listenerPollMs") + 1_000 + 500);
  });
});

// Issue 11, point 3: an account may register any hash as a usage key, the victim wallet's lookup
// hash included. The enclave looks a signer up among the contract's aliases only, so the victim's
// signature flows stay its own, and its account can be created after the squat.
describe("a usage key registered under a wallet's lookup hash (squatting)", () => {
  it("does not pull the wallet's signature flows into the squatter's account", async () => {
    const attacker = await adminWallet();
    const minted = await ok<MintedWallet>("create_wallet_with_signature", await attacker.signed("CreateWallet"));
    await attacker.send("newChainSecuredAccount", ["attacker", "", minted.master_wallet_address]);
    const victim = await adminWallet();
    await attacker.send("setUsageApiKey", [
      attacker.master,
      victim.master,
      0n,
      0n,
      "squat",
      "",
      false,
      false,
      false,
      [],
      [],
      [],
      [0n],
    ]);

    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    const wallet = await ok<MintedWallet>("create_wallet_with_signature", await victim.signed("CreateWallet"));
    expect(wallet.account_id).toBe(toHash32(victim.master));
    expect(getAddress(wallet.master_wallet_address)).toBe(keyring.accountMasterWallet(victim.master).address);
    expect(getAddress(wallet.wallet_address)).toBe(
      keyring.pkpKey(victim.master, BigInt(wallet.derivation_path)).address,
    );
    const key = await ok<{ wallet_address: Address; derivation_path: Hex }>(
      "add_usage_api_key_with_signature",
      await victim.signed("AddUsageApiKey"),
    );
    expect(getAddress(key.wallet_address)).toBe(keyring.pkpKey(victim.master, BigInt(key.derivation_path)).address);

    // And the victim's account exists after the squat, with what the flows gave it.
    await victim.send("newChainSecuredAccount", ["victim", "", wallet.master_wallet_address]);
    await victim.send("registerWalletDerivation", [
      victim.master,
      wallet.wallet_address,
      BigInt(wallet.derivation_path),
      "pkp",
      "",
    ]);
    expect(await walletDerivation(victim.master, getAddress(wallet.wallet_address))).toBe(
      BigInt(wallet.derivation_path),
    );
  });
});

describe("conversion of a managed account", () => {
  it("convert_to_chain_secured_account hands the account to the signing wallet; the old master key can no longer write or run", async () => {
    const account = await ok<{ api_key: string }>("new_account", { account_name: "to convert" });
    const code = `async function main() { return 1 }`;
    await ok("add_group", {
      api_key: account.api_key,
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [await computeCid(code)],
    });
    expect((await run(account.api_key, code)).body.response).toBe(1);
    const a = await adminWallet();
    const signed = await a.signed("ConvertAccount");
    const mismatch = await callEnclave("convert_to_chain_secured_account", {
      api_key: account.api_key,
      new_admin_wallet_address: privateKeyToAccount(generatePrivateKey()).address,
      ...signed,
    });
    expect((mismatch.body as { error: { code: string } }).error.code).toBe("invalid_typed_data");
    const converted = await ok<{ transaction_hash: Hex }>("convert_to_chain_secured_account", {
      api_key: account.api_key,
      new_admin_wallet_address: a.admin.address,
      ...signed,
    });
    expect(converted.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const [, , managed] = await publicClient().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "resolveKey",
      args: [apiKeyHash(account.api_key)],
    });
    expect(managed).toBe(false);
    const write = await callEnclave("create_wallet", { api_key: account.api_key });
    expect((write.body as { error: { code: string } }).error.code).toBe("chain_secured_account");
    const again = await run(account.api_key, code);
    expect(again.status).toBe(403);
    expect((again.body as unknown as { error: { code: string } }).error.code).toBe("chain_secured_account");
  });
});
