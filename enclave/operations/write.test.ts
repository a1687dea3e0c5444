// submitWrite, the one path of every managed write (docs/design/keys-and-authz.md, "Permission cache and chain listener": the enclave's own writes
// invalidate the account's entries at once, before answering), against a real anvil with
// AccountConfig, a real payer pool and the permission cache reading the chain — and no chain
// listener, so nothing but the write itself can drop a cache entry here.
//
// Issue 26: no test revoked through the enclave and then ran at once; the listener, polling every
// half second in the test stack, dropped the entries soon after anyway, so a write that forgot to
// invalidate went unnoticed. Without the invalidation a revocation answered as done would leave the
// revoked wallet usable from the cache for up to five minutes.
import { createPublicClient, createWalletClient, http, type Address, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { computeCid } from "../../shared/cid.ts";
import { SigilError, sentTransactionError } from "../../shared/errors.ts";
import { apiKeyHash, cidHash } from "../../shared/hashing.ts";
import { createLogger } from "../../shared/log.ts";
import { chainPermissionSource, PermissionCache } from "../authz/cache.ts";
import { connectChain } from "../chain/client.ts";
import { Keyring } from "../keys/derive.ts";
import { PayerPool } from "../payers/pool.ts";
import type { Enclave, RequestContext } from "./context.ts";
import { submitWrite } from "./write.ts";

let anvil: Anvil;
let keyring: Keyring;
let payers: PayerPool;
let cache: PermissionCache;
/** What submitWrite uses of the enclave: its payers and its cache. */
let enclave: Enclave;
const log = createLogger("silent");
const ctx: RequestContext = { requestId: "00000000-0000-4000-8000-000000000026", correlationId: null, log };

beforeAll(async () => {
  anvil = await startAnvil({ accounts: 2 });
  const transport = http(anvil.rpcUrl);
  const publicClient = createPublicClient({ transport, pollingInterval: 50 }) as PublicClient;
  const walletClient = createWalletClient({ transport });
  const [owner] = await walletClient.getAddresses();
  if (!owner) throw new Error("anvil unlocked no account");
  const { proxy } = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
  const chain = await connectChain(anvil.rpcUrl, proxy, 50);
  keyring = new Keyring(crypto.getRandomValues(new Uint8Array(32)));
  payers = new PayerPool({
    chain,
    rpcUrl: anvil.rpcUrl,
    keys: [keyring.payerKey(0)],
    confirmations: 1,
    minBalanceWei: 1n,
    log,
  });
  await registerLocalPayers({
    rpcUrl: anvil.rpcUrl,
    publicClient,
    walletClient,
    owner,
    contract: proxy,
    payers: payers.addresses,
  });
  cache = new PermissionCache(chainPermissionSource(chain));
  enclave = { cache, payers } as unknown as Enclave;
}, 120_000);

afterAll(async () => {
  keyring?.destroy();
  await anvil?.stop();
});

/** A managed account (written by the payer pool, as the enclave writes) with a group listing one action and one wallet. */
async function accountWithGroup(): Promise<{ master: bigint; groupId: bigint; wallet: Address; cid: bigint }> {
  const master = apiKeyHash(generateApiKey());
  await payers.write({
    functionName: "newAccount",
    args: [master, "acct", "", privateKeyToAddress(generatePrivateKey()), master],
  });
  const wallet = privateKeyToAddress(generatePrivateKey()).toLowerCase() as Address;
  const cidText = await computeCid(`async function main() { return "${master}" }`);
  await payers.write({ functionName: "registerActions", args: [master, 0n, [cidText]] });
  await payers.write({ functionName: "registerWalletDerivation", args: [master, wallet, 7n, "w", ""] });
  const { events } = await payers.write({
    functionName: "addGroup",
    args: [master, "g", "", [cidHash(cidText)], [wallet]],
  });
  const added = events.find((e) => e.eventName === "GroupAdded");
  if (added?.eventName !== "GroupAdded") throw new Error("addGroup emitted no GroupAdded");
  return { master, groupId: added.args.groupId, wallet, cid: cidHash(cidText) };
}

describe("submitWrite", () => {
  it("drops the account's cached grants before it answers: a revocation it made is in force at once", async () => {
    const { master, groupId, wallet, cid } = await accountWithGroup();
    expect((await cache.wallet(master, cid, wallet)).value.allowed).toBe(true);
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });

    const { response } = await submitWrite(
      enclave,
      { functionName: "removePkpFromGroup", args: [master, groupId, wallet] },
      ctx,
      { keyHash: master, master },
    );
    expect(response.success).toBe(true);
    expect(
      cache.cachedWallet(master, cid, wallet),
      "the revoked wallet's grant outlived the enclave's own write",
    ).toBeUndefined();
    expect(await cache.wallet(master, cid, wallet)).toEqual({
      value: { allowed: false, derivation: 0n, guardrail: null },
      cached: false,
    });

    // The same for the permission to run: an action taken out of the group by the enclave.
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: false });
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: true });
    await submitWrite(enclave, { functionName: "removeActionFromGroup", args: [master, groupId, cid] }, ctx, {
      keyHash: master,
      master,
    });
    expect(
      await cache.canExecute(master, cid),
      "the revoked action's permission outlived the enclave's own write",
    ).toEqual({ value: false, cached: false });
  });

  it("after a write by which the account only gains, keeps its grants and drops its denials: a wallet just added is usable at once, and runs already granted are not asked of the chain again", async () => {
    const { master, groupId, wallet, cid } = await accountWithGroup();
    const newcomer = privateKeyToAddress(generatePrivateKey()).toLowerCase() as Address;
    expect((await cache.wallet(master, cid, wallet)).value.allowed).toBe(true);
    expect((await cache.wallet(master, cid, newcomer)).value.allowed).toBe(false); // a cached denial

    await submitWrite(
      enclave,
      { functionName: "registerWalletDerivation", args: [master, newcomer, 9n, "n", ""] },
      ctx,
      { keyHash: master, master },
    );
    await submitWrite(enclave, { functionName: "addPkpToGroup", args: [master, groupId, newcomer] }, ctx, {
      keyHash: master,
      master,
    });
    expect(cache.cachedWallet(master, cid, wallet), "a grant was dropped by a write that only adds").toEqual({
      allowed: true,
      derivation: 7n,
      guardrail: null,
    });
    expect(await cache.wallet(master, cid, newcomer), "the wallet just added is still denied").toEqual({
      value: { allowed: true, derivation: 9n, guardrail: null },
      cached: false,
    });
  });

  it("after a write of one usage key, drops that key's entries and keeps the account's others", async () => {
    const { master, cid, wallet } = await accountWithGroup();
    const usage = apiKeyHash(generateApiKey());
    expect((await cache.canExecute(usage, cid)).value).toBe(false); // an unknown key: a cached denial
    expect((await cache.wallet(master, cid, wallet)).value.allowed).toBe(true);
    await submitWrite(
      enclave,
      {
        functionName: "setUsageApiKey",
        args: [master, usage, 0n, 0n, "k", "", false, false, false, [], [], [], [0n]],
      },
      ctx,
      { keyHash: master, master },
    );
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });
    expect(await cache.canExecute(usage, cid), "the new key's old denial outlived its write").toEqual({
      value: true,
      cached: false,
    });
  });

  it("keeps them when a write fails after it was sent (its client is told it failed; should it land, the listener drops what it changed)", async () => {
    const { master, groupId, wallet, cid } = await accountWithGroup();
    expect((await cache.wallet(master, cid, wallet)).value.allowed).toBe(true);
    // The payer pool's answer for a write sent whose receipt did not come: the error names the transaction.
    const lost = {
      ...enclave,
      payers: {
        write: async () => {
          throw sentTransactionError(
            new SigilError("chain_unavailable", "the receipt did not come"),
            `0x${"ab".repeat(32)}`,
          );
        },
      },
    } as unknown as Enclave;
    const failed = await submitWrite(
      lost,
      { functionName: "removePkpFromGroup", args: [master, groupId, wallet] },
      ctx,
      { master },
    ).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(SigilError);
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });
  });

  it("keeps them when the write was refused before it was sent (it changed nothing): a chain outage, which refuses every write, leaves the account's runs to the cache", async () => {
    const { master, groupId, wallet, cid } = await accountWithGroup();
    expect((await cache.wallet(master, cid, wallet)).value.allowed).toBe(true);
    // Refused by the simulation: the wallet to remove is not in the group.
    const stranger = privateKeyToAddress(generatePrivateKey());
    const refused = await submitWrite(
      enclave,
      { functionName: "removePkpFromGroup", args: [master, groupId, stranger] },
      ctx,
      { master },
    ).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SigilError);
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });
    // The chain unreachable: the same.
    const down = {
      ...enclave,
      payers: {
        write: async () => {
          throw new SigilError("chain_unavailable", "the chain could not be reached; try again shortly");
        },
      },
    } as unknown as Enclave;
    await expect(
      submitWrite(down, { functionName: "removePkpFromGroup", args: [master, groupId, wallet] }, ctx, { master }),
    ).rejects.toMatchObject({ code: "chain_unavailable" });
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });
  });
});
