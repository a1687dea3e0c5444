// The enclave end to end against anvil: an account made through the internal API, a wallet, a
// group, and scripts that sign with the wallet — each signature checked by viem against the
// wallet's address — and every way a script may try to use a wallet it should not have.
import {
  bytesToHex,
  createPublicClient,
  createWalletClient,
  getAddress,
  hashMessage,
  http,
  parseEventLogs,
  recoverMessageAddress,
  recoverTypedDataAddress,
  parseTransaction,
  recoverTransactionAddress,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { buildTypedData, signableTypedData } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { leaveReadWindow } from "../harness/listener.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import { callEnclave, ok, run, walletDerivation, type RunResult } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

const SIGN = `async function main({ wallet, message }) {
  const signature = await Sigil.Actions.signMessage({ pkpId: wallet, message });
  console.log("signed", message);
  return { signature };
}`;

/** Every operation a script may ask a wallet's key for. */
const WALLET_OPERATIONS = [
  "getPrivateKey",
  "getPublicKey",
  "signMessage",
  "signDigest",
  "signTypedData",
  "signTransaction",
  "encrypt",
  "decrypt",
] as const;

/** Tries each of WALLET_OPERATIONS with `wallet` and answers, per operation, the error code it threw or what it gave. */
const EVERY_WALLET_OPERATION = `async function main({ wallet }) {
  const A = Sigil.Actions;
  const attempts = {
    getPrivateKey: () => A.getPrivateKey({ pkpId: wallet }),
    getPublicKey: () => A.getPublicKey({ pkpId: wallet }),
    signMessage: () => A.signMessage({ pkpId: wallet, message: "x" }),
    signDigest: () => A.signDigest({ pkpId: wallet, digest: "0x" + "11".repeat(32) }),
    signTypedData: () => A.signTypedData({ pkpId: wallet, typedData: { domain: { name: "T", version: "1", chainId: 1 }, types: { M: [{ name: "x", type: "uint256" }] }, primaryType: "M", message: { x: 1n } } }),
    signTransaction: () => A.signTransaction({ pkpId: wallet, transaction: { to: "0x000000000000000000000000000000000000dEaD", value: 1n, nonce: 0, gas: 21000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n, chainId: 31337 } }),
    encrypt: () => A.encrypt({ pkpId: wallet, plaintext: "x" }),
    decrypt: () => A.decrypt({ pkpId: wallet, ciphertext: "0x" + "00".repeat(40) }),
  };
  const out = {};
  for (const [name, attempt] of Object.entries(attempts)) {
    try { out[name] = { gave: await attempt() }; } catch (e) { out[name] = e.code ?? e.message; }
  }
  return out;
}`;

const transport = () => http(inject("rpcUrl"));
const publicClient = () => createPublicClient({ transport: transport(), pollingInterval: 50 });

async function newAccount(name = "test account") {
  return ok<{ api_key: string; wallet_address: string; account_id: string; transaction_hash: string }>("new_account", {
    account_name: name,
  });
}

async function newWallet(apiKey: string) {
  return ok<{ wallet_address: Address; wallet_id: string }>("create_wallet", { api_key: apiKey, name: "w" });
}

async function groupFor(apiKey: string, cids: string[], wallets: string[]) {
  return ok<{ group_id: string }>("add_group", {
    api_key: apiKey,
    group_name: "g",
    group_description: "",
    pkp_ids_permitted: wallets,
    cid_hashes_permitted: cids,
  });
}

function expectRunError(r: { status: number; body: RunResult }, code: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body)).toBe(true);
  expect(r.body.error?.code, JSON.stringify(r.body)).toBe(code);
}

describe("a managed account signs through its wallet", () => {
  let account: Awaited<ReturnType<typeof newAccount>>;
  let wallet: Address;
  let signCid: string;

  beforeAll(async () => {
    account = await newAccount();
    wallet = (await newWallet(account.api_key)).wallet_address;
    signCid = await computeCid(SIGN);
    await groupFor(account.api_key, [signCid], [wallet]);
  });

  it("new_account answers a 44-character key, the master hash as account id, and the Account Master Wallet derived from it", async () => {
    expect(account.api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(account.account_id).toBe(toHash32(apiKeyHash(account.api_key)));
    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    const master = apiKeyHash(account.api_key);
    expect(account.wallet_address).toBe(keyring.accountMasterWallet(master).address.toLowerCase());
    const [items] = await publicClient().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "listWallets",
      args: [master, 0n, 10n],
    });
    expect(items[0]?.wallet.toLowerCase()).toBe(account.wallet_address);
    expect(items[0]?.id).toBe(0n);
  });

  it("create_wallet registers a new wallet with the next id", async () => {
    const w = await newWallet(account.api_key);
    expect(w.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(Number(w.wallet_id)).toBeGreaterThanOrEqual(2);
  });

  it("a script signs a message with the wallet, and the signature recovers to the wallet's address", async () => {
    const r = await run(account.api_key, SIGN, { wallet, message: "hello sigil" });
    expect(r.status).toBe(200);
    expect(r.body.has_error).toBe(false);
    expect(r.body.cid).toBe(signCid);
    expect(r.body.logs).toBe("signed hello sigil\n");
    const { signature } = r.body.response as { signature: Hex };
    expect(await recoverMessageAddress({ message: "hello sigil", signature })).toBe(getAddress(wallet));
  });

  it("the next run of the same script by the same key gets its wallet's key with the run (no round trip between threads), signs the same, and its receipt records the signature", async () => {
    type Health = { sandbox: { keys_asked: number; offered_keys_used: number } };
    const health = () => internalHealthOf<Health>(inject("enclaveUrl"));
    // A script this key has not run before: its first run asks for the wallet's key.
    const code = `${SIGN}\n// offered keys`;
    await groupFor(account.api_key, [await computeCid(code)], [wallet]);
    // The listener reads the group's event again on each poll while its block is recent, and each
    // read drops the account's cached grants: a poll between the two runs would make the second ask.
    await leaveReadWindow(inject("rpcUrl"), inject("enclaveUrl"));
    const before = (await health()).sandbox;
    const first = await run(account.api_key, code, { wallet, message: "first" });
    expect(first.body.has_error, JSON.stringify(first.body.error)).toBe(false);
    const between = (await health()).sandbox;
    expect(between.keys_asked - before.keys_asked).toBe(1);
    expect(between.offered_keys_used - before.offered_keys_used).toBe(0);
    // The second is offered the key: it never asks, and its signature and receipt are those of the wallet.
    const second = await run(account.api_key, code, { wallet, message: "second" });
    expect(second.body.has_error, JSON.stringify(second.body.error)).toBe(false);
    const after = (await health()).sandbox;
    expect(after.keys_asked - between.keys_asked).toBe(0);
    expect(after.offered_keys_used - between.offered_keys_used).toBe(1);
    const { signature } = second.body.response as { signature: Hex };
    expect(await recoverMessageAddress({ message: "second", signature })).toBe(getAddress(wallet));
    const receipt = (
      second.body as unknown as {
        receipt: { wallets: Array<{ address: string; signed: Array<{ kind: string; digest: string }> }> };
      }
    ).receipt;
    expect(receipt.wallets).toEqual([
      expect.objectContaining({
        address: wallet.toLowerCase(),
        signed: [{ kind: "message", digest: hashMessage("second") }],
      }),
    ]);
  });

  it("signTypedData, signTransaction, signDigest and getPublicKey all use the wallet's key", async () => {
    const code = `async function main({ wallet }) {
      const A = Sigil.Actions;
      const typedData = { domain: { name: "T", version: "1", chainId: 1 }, types: { M: [{ name: "x", type: "uint256" }] }, primaryType: "M", message: { x: 42n } };
      const typed = await A.signTypedData({ pkpId: wallet, typedData });
      const tx = await A.signTransaction({ pkpId: wallet, transaction: { to: "0x000000000000000000000000000000000000dEaD", value: 1000n, nonce: 0, gas: 21000n, maxFeePerGas: 2000000000n, maxPriorityFeePerGas: 1000000000n, chainId: 31337 } });
      const digest = await A.signDigest({ pkpId: wallet, digest: "0x" + "11".repeat(32) });
      const publicKey = await A.getPublicKey({ pkpId: wallet });
      return { typed, tx, digest, publicKey };
    }`;
    const cid = await computeCid(code);
    await groupFor(account.api_key, [cid], [wallet]);
    const r = await run(account.api_key, code, { wallet });
    expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
    const out = r.body.response as { typed: Hex; tx: Hex; digest: { signature: Hex; v: number }; publicKey: Hex };
    const typedSigner = await recoverTypedDataAddress({
      domain: { name: "T", version: "1", chainId: 1 },
      types: { M: [{ name: "x", type: "uint256" }] },
      primaryType: "M",
      message: { x: 42n },
      signature: out.typed,
    });
    expect(typedSigner).toBe(getAddress(wallet));
    expect(parseTransaction(out.tx).value).toBe(1000n);
    expect(await recoverTransactionAddress({ serializedTransaction: out.tx as `0x02${string}` })).toBe(
      getAddress(wallet),
    );
    const { recoverAddress } = await import("viem");
    expect(await recoverAddress({ hash: `0x${"11".repeat(32)}`, signature: out.digest.signature })).toBe(
      getAddress(wallet),
    );
    expect(out.publicKey).toMatch(/^0x04[0-9a-f]{128}$/);
  });

  it("encrypt and decrypt round-trip with the wallet's encryption key, and another wallet cannot decrypt", async () => {
    const other = (await newWallet(account.api_key)).wallet_address;
    const code = `async function main({ wallet, other }) {
      const ciphertext = await Sigil.Actions.encrypt({ pkpId: wallet, plaintext: "secret text" });
      const plaintext = await Sigil.Actions.decrypt({ pkpId: wallet, ciphertext });
      let otherError = null;
      try { await Sigil.Actions.decrypt({ pkpId: other, ciphertext }); } catch (e) { otherError = e.message; }
      return { ciphertext, plaintext, otherError };
    }`;
    const cid = await computeCid(code);
    await groupFor(account.api_key, [cid], [wallet, other]);
    const r = await run(account.api_key, code, { wallet, other });
    expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
    const out = r.body.response as { ciphertext: string; plaintext: string; otherError: string };
    expect(out.plaintext).toBe("secret text");
    expect(out.ciphertext).toMatch(/^0x[0-9a-f]+$/);
    expect((out.ciphertext.length - 2) / 2).toBe(12 + "secret text".length + 16);
    expect(out.otherError).toMatch(/not made by this wallet/);
  });

  it("the action identity is the same for every account running the same code, and differs for other code", async () => {
    const code = `async function main() { return { address: await Sigil.Actions.getActionWalletAddress(), other: await Sigil.Actions.getActionWalletAddress({ cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG" }) }; }`;
    const cid = await computeCid(code);
    const second = await newAccount("second");
    await groupFor(account.api_key, [cid], []);
    await groupFor(second.api_key, [cid], []);
    const a = await run(account.api_key, code);
    const b = await run(second.api_key, code);
    expect(a.body.has_error, JSON.stringify(a.body)).toBe(false);
    expect(a.body.response).toEqual(b.body.response);
    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    expect((a.body.response as { address: string }).address).toBe(keyring.actionKey(cid).address.toLowerCase());
    expect((a.body.response as { other: string }).other).not.toBe((a.body.response as { address: string }).address);
  });

  it("a key may not run code that no group of its scope lists (403 before any code runs)", async () => {
    const r = await run(account.api_key, `async function main() { console.log("ran"); return 1 }`);
    expect(r.status).toBe(403);
    expect((r.body as unknown as { error: { code: string } }).error.code).toBe("permission_denied");
  });

  it("a wallet not in the action's group is refused inside the script with permission_denied", async () => {
    const outside = (await newWallet(account.api_key)).wallet_address;
    const r = await run(account.api_key, SIGN, { wallet: outside, message: "x" });
    expectRunError(r, "permission_denied");
    expect(r.body.logs).toBe("");
  });

  it("a refused wallet throws a catchable error with its code, and the script goes on", async () => {
    const code = `async function main({ wallet }) {
      try { await Sigil.Actions.signMessage({ pkpId: wallet, message: "x" }); return "signed"; }
      catch (e) { return { code: e.code, name: e.name }; }
    }`;
    const cid = await computeCid(code);
    await groupFor(account.api_key, [cid], [wallet]);
    const outside = (await newWallet(account.api_key)).wallet_address;
    const r = await run(account.api_key, code, { wallet: outside });
    expect(r.body.response).toEqual({ code: "permission_denied", name: "Error" });
  });

  it("a wallet of another account is refused even when this account's group lists any wallet", async () => {
    const other = await newAccount("other");
    const otherWallet = (await newWallet(other.api_key)).wallet_address;
    const code = `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "steal" }); }`;
    const cid = await computeCid(code);
    await groupFor(account.api_key, [cid], ["0x0000000000000000000000000000000000000000"]);
    expectRunError(await run(account.api_key, code, { wallet: otherWallet }), "permission_denied");
    // The same script may use this account's own wallets through the wildcard.
    const mine = await run(account.api_key, code, { wallet });
    expect(mine.body.has_error, JSON.stringify(mine.body)).toBe(false);
  });

  it("a group cannot even list another account's wallet (404 wallet_not_found, no gas spent)", async () => {
    const other = await newAccount("other2");
    const otherWallet = (await newWallet(other.api_key)).wallet_address;
    const r = await callEnclave("add_pkp_to_group", { api_key: account.api_key, group_id: 1, pkp_id: otherWallet });
    expect(r.status).toBe(404);
    expect((r.body as { error: { code: string } }).error.code).toBe("wallet_not_found");
  });

  it("an unregistered address is refused", async () => {
    const code = `async function main({ wallet }) { return Sigil.Actions.getPrivateKey({ pkpId: wallet }); }`;
    const cid = await computeCid(code);
    await groupFor(account.api_key, [cid], ["0x0000000000000000000000000000000000000000"]);
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    expectRunError(await run(account.api_key, code, { wallet: stranger }), "permission_denied");
  });

  // Issue 26: the refusals above use signMessage, or an address nobody registered. The key most
  // worth stealing is the one getPrivateKey hands out, of a wallet the account does own: each wallet
  // operation asks for the key the same way, and none may get it outside the run's groups.
  it("getPrivateKey of the account's own wallet outside the run's group — a registered wallet, the Account Master Wallet — is permission_denied, as is every other wallet operation, and nothing of the key comes out", async () => {
    const code = `${EVERY_WALLET_OPERATION}\n// own wallets outside the group`;
    await groupFor(account.api_key, [await computeCid(code)], [wallet]);
    const outside = (await newWallet(account.api_key)).wallet_address;
    const master = apiKeyHash(account.api_key);
    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    for (const own of [outside, account.wallet_address as Address]) {
      const derivation = await walletDerivation(master, getAddress(own));
      expect(derivation, "the wallet is the account's own, registered on chain").not.toBe(0n);
      const r = await run(account.api_key, code, { wallet: own });
      expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
      expect(r.body.response, own).toEqual(
        Object.fromEntries(WALLET_OPERATIONS.map((op) => [op, "permission_denied"])),
      );
      const privateKey = bytesToHex(keyring.pkpKey(master, derivation).privateKey).slice(2);
      expect(JSON.stringify(r.body)).not.toContain(privateKey);
      expect((r.body as unknown as { receipt: { wallets: unknown[] } }).receipt.wallets).toEqual([]);
    }
    // And alone, uncaught: the run ends in permission_denied.
    const alone = `async function main({ wallet }) { return Sigil.Actions.getPrivateKey({ pkpId: wallet }); }\n// alone`;
    await groupFor(account.api_key, [await computeCid(alone)], [wallet]);
    expectRunError(await run(account.api_key, alone, { wallet: outside }), "permission_denied");
    // The same script gets the key of the wallet its group lists (the refusal is the group's, not the operation's).
    const allowed = await run(account.api_key, alone, { wallet });
    expect(allowed.body.has_error, JSON.stringify(allowed.body)).toBe(false);
    expect(privateKeyToAccount(allowed.body.response as Hex).address).toBe(getAddress(wallet));
  });

  // The contract's truth table (test/contract/authorizeExecution.test.ts) had the only test of
  // this: a key's groups are not pooled. A wallet is usable by a run only through a group that lists
  // both the wallet and the run's CID, not because one group of the key lists the CID and another
  // the wallet.
  it("a wallet in another group of the key, one that does not list the script's CID, is refused (master key and usage key alike)", async () => {
    const owner = await newAccount("groups are not pooled");
    const code = `${EVERY_WALLET_OPERATION}\n// groups are not pooled`;
    const other = `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "its own group" }); }\n// groups are not pooled`;
    const listed = (await newWallet(owner.api_key)).wallet_address;
    const elsewhere = (await newWallet(owner.api_key)).wallet_address;
    const g1 = (await groupFor(owner.api_key, [await computeCid(code)], [listed])).group_id;
    const g2 = (await groupFor(owner.api_key, [await computeCid(other)], [elsewhere])).group_id;
    const usage = (
      await ok<{ usage_api_key: string }>("add_usage_api_key", {
        api_key: owner.api_key,
        name: "both groups",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: [g1, g2],
      })
    ).usage_api_key;
    for (const key of [owner.api_key, usage]) {
      const refused = await run(key, code, { wallet: elsewhere });
      expect(refused.body.has_error, JSON.stringify(refused.body)).toBe(false);
      expect(refused.body.response).toEqual(
        Object.fromEntries(WALLET_OPERATIONS.map((op) => [op, "permission_denied"])),
      );
      // The same run's own wallet works, and the other wallet works for the action its group lists.
      const own = await run(key, code, { wallet: listed });
      expect(
        Object.values(own.body.response as Record<string, unknown>).every((v) => v !== "permission_denied"),
        JSON.stringify(own.body.response),
      ).toBe(true);
      const theirs = await run(key, other, { wallet: elsewhere });
      expect(theirs.body.has_error, JSON.stringify(theirs.body)).toBe(false);
      expect(await recoverMessageAddress({ message: "its own group", signature: theirs.body.response as Hex })).toBe(
        getAddress(elsewhere),
      );
    }
  });

  it("a forged pkpId (not an address) is a TypeError in the script", async () => {
    const r = await run(account.api_key, SIGN, { wallet: "0x1234", message: "x" });
    expectRunError(r, "script_error");
    expect(r.body.error?.message).toMatch(/TypeError: signMessage: pkpId must be a wallet address/);
  });

  it("a derivation copied from another account derives a different key: its registration is refused at use with wallet_key_mismatch", async () => {
    // A ChainSecured attacker registers a made-up address with the victim wallet's derivation.
    const victimDerivation = await walletDerivation(apiKeyHash(account.api_key), getAddress(wallet));
    expect(victimDerivation).not.toBe(0n);
    const attacker = privateKeyToAccount(generatePrivateKey());
    const test = (await import("viem")).createTestClient({ mode: "anvil", transport: transport() });
    await test.setBalance({ address: attacker.address, value: 10n ** 20n });
    const walletClient = createWalletClient({ account: attacker, transport: transport() });
    const send = async (functionName: string, args: readonly unknown[]) => {
      const hash = await walletClient.writeContract({
        address: inject("contract"),
        abi: accountConfigAbi,
        functionName: functionName as never,
        args: args as never,
        chain: null,
      } as never);
      const receipt = await publicClient().waitForTransactionReceipt({ hash });
      expect(receipt.status).toBe("success");
      return receipt;
    };
    const master = walletLookupHash(attacker.address);
    const keyring = new Keyring(Buffer.from(TEST_ROOT_KEY.slice(2), "hex"));
    await send("newChainSecuredAccount", ["attacker", "", keyring.accountMasterWallet(master).address]);
    const fake = privateKeyToAccount(generatePrivateKey()).address;
    await send("registerWalletDerivation", [master, fake, victimDerivation, "copied", ""]);
    // The key the enclave would derive for the attacker is bound to the attacker's account.
    expect(keyring.pkpKey(master, victimDerivation).address).not.toBe(getAddress(wallet));

    // The attacker needs a usage key to run anything: one from the signature flow, registered by its own transaction.
    const now = BigInt(Math.floor(Date.now() / 1000));
    const chainId = await publicClient().getChainId();
    const typed = buildTypedData({ primaryType: "AddUsageApiKey", chainId, address: attacker.address, issuedAt: now });
    const signature = await attacker.signTypedData(signableTypedData(typed));
    const minted = await ok<{ usage_api_key: string; usage_api_key_hash: Hex }>("add_usage_api_key_with_signature", {
      typed_data: typed,
      signature,
    });
    const code = `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "x" }); }`;
    const cid = await computeCid(code);
    await send("registerActions", [master, 0n, [cid]]);
    const receipt = await send("addGroup", [master, "g", "", [cidHash(cid)], [fake]]);
    expect(
      parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs }).some((e) => e.eventName === "GroupAdded"),
    ).toBe(true);
    await send("setUsageApiKey", [
      master,
      BigInt(minted.usage_api_key_hash),
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
      [0n],
    ]);
    expectRunError(await run(minted.usage_api_key, code, { wallet: fake }), "wallet_key_mismatch");
  });
});

describe("an operation sent with an idempotency-key (enclave/operationMemory.ts)", () => {
  it("is done once: repeats in flight and after get its answer, marked idempotent-replayed; another body is 422; another key acts", async () => {
    const account = await newAccount("idempotent");
    const body = {
      api_key: account.api_key,
      group_name: "once",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [],
    };
    const headers = { "idempotency-key": "group-once" };
    const answers = await Promise.all([
      callEnclave("add_group", body, headers),
      callEnclave("add_group", body, headers),
    ]);
    const later = await callEnclave("add_group", body, headers);
    for (const a of [...answers, later]) expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(answers[1]?.body).toEqual(answers[0]?.body);
    expect(later.body).toEqual(answers[0]?.body);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(1);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
    const reused = await callEnclave("add_group", { ...body, group_name: "other" }, headers);
    expect(reused.status).toBe(422);
    expect((reused.body as { error: { code: string } }).error.code).toBe("idempotency_key_reused");
    const other = await callEnclave("add_group", body, { "idempotency-key": "group-twice" });
    expect(other.body.group_id).not.toBe(answers[0]?.body.group_id);
    const [items, total] = await publicClient().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "listGroups",
      args: [apiKeyHash(account.api_key), 0n, 100n],
    });
    expect(total).toBe(2n);
    expect(items.map((g) => g.name)).toEqual(["once", "once"]);
  });

  it("remembers nothing for an operation that does not exist: each asks anew and gets its own 404", async () => {
    const account = await newAccount("idempotent unknown");
    const headers = { "idempotency-key": "nothing-here" };
    for (let i = 0; i < 2; i++) {
      const r = await callEnclave("no_such_operation", { api_key: account.api_key }, headers);
      expect(r.status).toBe(404);
      expect(r.headers.get("idempotent-replayed")).toBeNull();
    }
  });
});
