// startEnclave's wiring of the chain listener to the permission cache (docs/design/keys-and-authz.md,
// "Permission cache and chain listener"): an event that names an account drops every cache entry of
// that account, so a grant revoked on chain is not served from the cache for the rest of its five
// minutes. The enclave runs in this process against its own anvil, so the test drives the listener's
// polls itself (its own loop waits ten minutes) and looks at the cache entries, not at a run.
//
// Issue 26: the only test of this through a run was masked. The listener re-reads the last
// SIGIL_LISTENER_REORG_DEPTH blocks on every poll, and those still held the test's setup, whose
// events named the same account (and, for a usage key, its key hash): they dropped the entries
// whatever the listener made of the revocation. Here blocks are mined between the setup and the
// revocation, so the revocation's is the only event of the account that the poll reads.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  parseEventLogs,
  type Address,
  type PublicClient,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startAnvil, type Anvil } from "../bin/stack/anvil.ts";
import { deployAccountConfig } from "../contracts/deploy.ts";
import { generateApiKey } from "../shared/apiKey.ts";
import { edgeIdentityFromSeed, toBase64Url } from "../shared/channel/channel.ts";
import { computeCid } from "../shared/cid.ts";
import { accountConfigAbi } from "../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash } from "../shared/hashing.ts";
import { createLogger } from "../shared/log.ts";
import { TEST_EDGE_IDENTITY_SEED, TEST_ROOT_KEY } from "../test/enclave/constants.ts";
import { readEnclaveConfig } from "./config.ts";
import { startEnclave, type RunningEnclave } from "./main.ts";

/** Blocks the listener reads again on every poll (the enclave's default, SIGIL_LISTENER_REORG_DEPTH). */
const REORG_DEPTH = 3;

let anvil: Anvil;
let stateDir: string;
let running: RunningEnclave;
let send: (functionName: string, args: readonly unknown[]) => Promise<TransactionReceipt>;
let mine: (blocks: number) => Promise<void>;

beforeAll(async () => {
  anvil = await startAnvil({ accounts: 2 });
  const transport = http(anvil.rpcUrl);
  const publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 }) as PublicClient;
  const walletClient = createWalletClient({ chain: foundry, transport });
  const [first] = await walletClient.getAddresses();
  if (!first) throw new Error("anvil unlocked no account");
  const owner = getAddress(first);
  const { proxy } = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
  send = async (functionName, args) => {
    const { request } = await publicClient.simulateContract({
      address: proxy,
      abi: accountConfigAbi,
      functionName,
      args,
      account: owner,
    } as never);
    const receipt = await publicClient.waitForTransactionReceipt({
      hash: await walletClient.writeContract(request as never),
    });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
    return receipt;
  };
  const test = createTestClient({ chain: foundry, mode: "anvil", transport });
  mine = (blocks) => test.mine({ blocks });
  // The owner is its own payer, so it writes for the managed account below as the enclave's payers would.
  await send("setApiPayers", [[owner]]);

  stateDir = mkdtempSync(join(tmpdir(), "sigil-main-test-"));
  const config = readEnclaveConfig({
    SIGIL_ENV: "test",
    SIGIL_ENCLAVE_PORT: "0",
    SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED)).publicKey),
    SIGIL_RPC_URL: anvil.rpcUrl,
    SIGIL_CONTRACT_ADDRESS: proxy,
    SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
    SIGIL_STATE_DIR: stateDir,
    // One poll at start, the next in ten minutes: the test polls itself, when it has set the chain up.
    SIGIL_LISTENER_POLL_MS: "600000",
    SIGIL_LISTENER_REORG_DEPTH: String(REORG_DEPTH),
    SIGIL_SANDBOX_WORKERS: "1",
    // Nothing here runs code from IPFS: a closed loopback port, never the public gateway.
    SIGIL_IPFS_GATEWAY: "http://127.0.0.1:9",
    SIGIL_LOG_LEVEL: "silent",
  });
  running = await startEnclave(config, createLogger("silent"));
  await vi.waitFor(() => expect(running.listener.status().lastBlock).not.toBeNull(), { timeout: 10_000 });
}, 120_000);

afterAll(async () => {
  await running?.close();
  await anvil?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/** A managed account with one group listing one action and one registered wallet. */
async function accountWithGroup(): Promise<{ master: bigint; groupId: bigint; wallet: Address; cid: bigint }> {
  const master = apiKeyHash(generateApiKey());
  await send("newAccount", [master, "acct", "", privateKeyToAddress(generatePrivateKey()), master]);
  const wallet = privateKeyToAddress(generatePrivateKey());
  const cidText = await computeCid(`async function main() { return "${master}" }`);
  await send("registerActions", [master, 0n, [cidText]]);
  await send("registerWalletDerivation", [master, wallet, 7n, "w", ""]);
  const receipt = await send("addGroup", [master, "g", "", [cidHash(cidText)], [wallet]]);
  const added = parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0];
  if (!added) throw new Error("addGroup emitted no GroupAdded");
  return { master, groupId: added.args.groupId, wallet: wallet.toLowerCase() as Address, cid: cidHash(cidText) };
}

/** Empty blocks past the listener's re-read window, read by it: none of the account's earlier events is read again. */
async function leaveReadWindow(): Promise<void> {
  await mine(REORG_DEPTH + 1);
  await running.listener.poll();
}

describe("the chain listener feeding the permission cache", () => {
  it("drops the account's cached grants once it has read their revocation: a wallet, then an action taken out of the group", async () => {
    const { cache } = running.enclave;
    const { master, groupId, wallet, cid } = await accountWithGroup();
    await leaveReadWindow();

    // Warm: the wallet's grant and the permission to run the action are cached, and a poll that
    // reads no event of the account keeps them.
    expect(await cache.wallet(master, cid, wallet)).toEqual({
      value: { allowed: true, derivation: 7n, guardrail: null },
      cached: false,
    });
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: false });
    await running.listener.poll();
    expect(cache.cachedWallet(master, cid, wallet)).toEqual({ allowed: true, derivation: 7n, guardrail: null });
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: true });

    await send("removePkpFromGroup", [master, groupId, wallet]);
    await running.listener.poll();
    expect(
      cache.cachedWallet(master, cid, wallet),
      "the revoked wallet's grant outlived the poll that read its revocation",
    ).toBeUndefined();
    expect(await cache.wallet(master, cid, wallet)).toEqual({
      value: { allowed: false, derivation: 0n, guardrail: null },
      cached: false,
    });

    // The poll dropped every entry of the account: the permission to run is cached again, from
    // after the wallet's revocation has left the read window.
    await leaveReadWindow();
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: false });
    await running.listener.poll();
    expect(await cache.canExecute(master, cid)).toEqual({ value: true, cached: true });
    await send("removeActionFromGroup", [master, groupId, cid]);
    await running.listener.poll();
    expect(
      await cache.canExecute(master, cid),
      "the revoked action's permission outlived the poll that read its revocation",
    ).toEqual({ value: false, cached: false });
  });
});
