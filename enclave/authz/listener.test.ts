// The chain listener (docs/design/keys-and-authz.md, "Permission cache and chain listener") against a real
// anvil with AccountConfig deployed: status before and after polls, events reaching onEvents (the
// revocations among them), bounded ranges, resuming after a failed poll without skipping, and the
// start/stop loop.
import { createServer, type AddressInfo } from "node:net";
import {
  createPublicClient,
  createWalletClient,
  custom,
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
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { computeCid } from "../../shared/cid.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash } from "../../shared/hashing.ts";
import { createLogger, type Logger } from "../../shared/log.ts";
import { ChainListener, type ListenerOptions } from "./listener.ts";

let anvil: Anvil;
let publicClient: PublicClient;
let send: (functionName: string, args: readonly unknown[]) => Promise<TransactionReceipt>;
let contract: Address;

beforeAll(async () => {
  anvil = await startAnvil({ accounts: 2 });
  const transport = http(anvil.rpcUrl);
  publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 }) as PublicClient;
  const walletClient = createWalletClient({ chain: foundry, transport });
  const [first] = await walletClient.getAddresses();
  if (!first) throw new Error("anvil unlocked no account");
  const owner = getAddress(first);
  const deployment = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
  contract = deployment.proxy;
  send = async (functionName, args) => {
    const { request } = await publicClient.simulateContract({
      address: contract,
      abi: accountConfigAbi,
      functionName,
      args,
      account: owner,
    } as never);
    const hash = await walletClient.writeContract(request as never);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted`);
    return receipt;
  };
  // The owner is its own payer, so it can create managed accounts.
  await send("setApiPayers", [[owner]]);
}, 60_000);

afterAll(async () => {
  await anvil?.stop();
});

/** A new managed account (one block): its master hash. */
async function newAccount(): Promise<bigint> {
  const master = apiKeyHash(generateApiKey());
  await send("newAccount", [master, "acct", "", privateKeyToAddress(generatePrivateKey()), master]);
  return master;
}

/** A new usage key of `master` (one block): its hash. */
async function newUsageKey(master: bigint): Promise<bigint> {
  const hash = apiKeyHash(generateApiKey());
  await send("setUsageApiKey", [master, hash, 0n, 0n, "k", "", false, false, false, [], [], [], []]);
  return hash;
}

/** A group of `master` (three blocks: its action registered, its wallet registered, the group) listing one action and one wallet. */
async function newGroup(master: bigint): Promise<{ groupId: bigint; wallet: Address; cid: bigint }> {
  const wallet = privateKeyToAddress(generatePrivateKey());
  const cidText = await computeCid(`async function main() { return ${master % 1_000_000n} }`);
  await send("registerActions", [master, 0n, [cidText]]);
  await send("registerWalletDerivation", [master, wallet, 7n, "w", ""]);
  const receipt = await send("addGroup", [master, "g", "", [cidHash(cidText)], [wallet]]);
  const added = parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0];
  if (!added) throw new Error("addGroup emitted no GroupAdded");
  return { groupId: added.args.groupId, wallet, cid: cidHash(cidText) };
}

/** A client on the test anvil whose RPC can be broken on demand, counting what the listener asks. */
function controlledClient() {
  const direct = createPublicClient({ transport: http(anvil.rpcUrl) });
  const state = { down: false, getLogsCalls: 0, blockNumberCalls: 0, failGetLogsAfter: Number.POSITIVE_INFINITY };
  const client = createPublicClient({
    chain: foundry,
    transport: custom(
      {
        async request({ method, params }: { method: string; params?: unknown }) {
          if (method === "eth_blockNumber") state.blockNumberCalls++;
          if (method === "eth_getLogs") {
            state.getLogsCalls++;
            if (state.getLogsCalls > state.failGetLogsAfter) throw new Error("getLogs failed (simulated)");
          }
          if (state.down) throw new Error("rpc unreachable (simulated)");
          return direct.request({ method, params } as never);
        },
      },
      { retryCount: 0 },
    ),
  }) as PublicClient;
  return { client, state };
}

/** A loopback URL nothing listens on: a port just released by a server of this process. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** What onEvents was handed, as lists (AccountsNamed less the billing sets, which the edge's key cache reads). */
type Seen = { masters: bigint[]; keys: bigint[]; widened: bigint[]; grantsChanged: bigint[] };

function listener(options: Partial<ListenerOptions> = {}) {
  const calls: Seen[] = [];
  const warnings: string[] = [];
  const silent = createLogger("silent");
  const log: Logger = { ...silent, warn: (msg) => void warnings.push(msg) };
  const l = new ChainListener({
    client: publicClient,
    contract,
    pollMs: 10_000,
    maxRange: 2_000,
    reorgDepth: 0,
    onEvents: (named) =>
      void calls.push({
        masters: [...named.masters],
        keys: [...named.keys],
        widened: [...named.widened],
        grantsChanged: [...named.grantsChanged],
      }),
    log,
    ...options,
  });
  const seenMasters = () => calls.flatMap((c) => c.masters);
  return { l, calls, warnings, seenMasters };
}

describe("status", () => {
  it("reports lagSeconds null (and no block) before the first poll", () => {
    const { l } = listener();
    expect(l.status()).toEqual({ lagSeconds: null, lastBlock: null, chainHead: null, lastError: null, stalled: false });
  });

  it("after a poll reports a small lag and lastBlock equal to the chain head", async () => {
    const { l } = listener();
    await l.poll();
    const head = await publicClient.getBlockNumber({ cacheTime: 0 });
    const s = l.status();
    expect(s.lastBlock).toBe(head);
    expect(s.chainHead).toBe(head);
    expect(s.lastError).toBeNull();
    expect(s.lagSeconds).not.toBeNull();
    expect(s.lagSeconds).toBeGreaterThanOrEqual(0);
    expect(s.lagSeconds).toBeLessThan(5);
  });

  it("measures lag in seconds since the last successful poll", async () => {
    let now = 1_000_000;
    const { l } = listener({ now: () => now });
    await l.poll();
    expect(l.status().lagSeconds).toBe(0);
    now += 2_500;
    expect(l.status().lagSeconds).toBe(2.5);
    await l.poll();
    expect(l.status().lagSeconds).toBe(0);
  });

  it("says stalled once no poll has succeeded for longer than stalledAfterMs, from its start when none has, and not after the next success", async () => {
    let now = 1_000_000;
    const { l } = listener({ now: () => now, stalledAfterMs: 3_000 });
    now += 3_000;
    expect(l.status().stalled).toBe(false);
    now += 1;
    // Never polled, well past the threshold: stalled, though the lag is still null.
    expect(l.status()).toMatchObject({ lagSeconds: null, stalled: true });
    await l.poll();
    expect(l.status().stalled).toBe(false);
    now += 3_001;
    expect(l.status()).toMatchObject({ lagSeconds: 3.001, stalled: true });
    await l.poll();
    expect(l.status().stalled).toBe(false);
    expect(l.stalledAfterSeconds).toBe(3);
  });

  it("follows the chain head as blocks are added", async () => {
    const { l } = listener();
    await l.poll();
    const before = l.status().lastBlock ?? 0n;
    await newAccount();
    await newAccount();
    await l.poll();
    expect(l.status().lastBlock).toBe(before + 2n);
    expect(l.status().chainHead).toBe(before + 2n);
  });
});

describe("events", () => {
  it("starts at the chain head: events before the first poll are not replayed", async () => {
    const old = await newAccount();
    const { l, calls } = listener();
    await l.poll();
    expect(calls).toEqual([]);
    await l.poll();
    expect(calls.flatMap((c) => c.masters)).not.toContain(old);
  });

  it("hands onEvents the master hash of a new account (an account that gained), and the key hash of a new usage key (that key alone)", async () => {
    const { l, calls, seenMasters } = listener();
    await l.poll();

    const master = await newAccount();
    await l.poll();
    expect(seenMasters()).toContain(master);
    expect(calls.flatMap((c) => c.widened)).toContain(master);
    expect(calls.flatMap((c) => c.grantsChanged)).not.toContain(master);

    calls.length = 0;
    const usage = await newUsageKey(master);
    await l.poll();
    expect(calls).toHaveLength(1);
    expect(calls[0]?.masters).toEqual([master]);
    expect(calls[0]?.keys).toEqual([usage]);
    expect(calls[0]?.grantsChanged).toEqual([]);
  });

  // The revocations a cached grant must not outlive (issue 26): a wallet or an action taken out of
  // a group. Each is the only event of its poll's range (no re-read depth), so nothing else of the
  // account's can drop its cache entries in its place; a listener that skipped these events would
  // leave a run authorized by the cache for up to five minutes after the revocation.
  it("hands onEvents the master hash of PkpRemovedFromGroup and of ActionRemovedFromGroup, each alone in its poll", async () => {
    const master = await newAccount();
    const { groupId, wallet, cid } = await newGroup(master);
    const { l, calls } = listener();
    await l.poll();

    const pkpRemoved = await send("removePkpFromGroup", [master, groupId, wallet]);
    expect(parseEventLogs({ abi: accountConfigAbi, logs: pkpRemoved.logs }).map((e) => e.eventName)).toEqual([
      "PkpRemovedFromGroup",
    ]);
    await l.poll();
    expect(calls).toEqual([{ masters: [master], keys: [], widened: [], grantsChanged: [master] }]);

    calls.length = 0;
    const actionRemoved = await send("removeActionFromGroup", [master, groupId, cid]);
    expect(parseEventLogs({ abi: accountConfigAbi, logs: actionRemoved.logs }).map((e) => e.eventName)).toEqual([
      "ActionRemovedFromGroup",
    ]);
    await l.poll();
    expect(calls).toEqual([{ masters: [master], keys: [], widened: [], grantsChanged: [master] }]);
  });

  it("calls onEvents only when a range holds events of an account", async () => {
    const { l, calls } = listener();
    await l.poll();
    await l.poll();
    await l.poll();
    expect(calls).toEqual([]);
  });

  it("sees every event when polling in ranges smaller than the new block span (maxRange 1)", async () => {
    const { client, state } = controlledClient();
    const { l, seenMasters } = listener({ client, maxRange: 1 });
    await l.poll();
    const start = l.status().lastBlock ?? 0n;

    const a = await newAccount();
    const b = await newAccount();
    const c = await newAccount();
    const usage = await newUsageKey(b);
    state.getLogsCalls = 0;
    await l.poll();

    expect(state.getLogsCalls).toBe(4); // one per block
    expect(l.status().lastBlock).toBe(start + 4n);
    const seen = seenMasters();
    for (const m of [a, b, c]) expect(seen).toContain(m);
    // With no re-read depth, each account's block is read once.
    expect(seen.filter((m) => m === a)).toHaveLength(1);
    expect(seen.filter((m) => m === c)).toHaveLength(1);
    expect(seen.filter((m) => m === b)).toHaveLength(2); // its account and its usage key
    expect(usage).toBeGreaterThan(0n);
  });

  it("re-reads the last reorgDepth blocks on every poll (events seen again, never missed)", async () => {
    const { l, seenMasters } = listener({ reorgDepth: 3 });
    await l.poll();
    const master = await newAccount();
    await l.poll();
    await l.poll(); // no new block: the last 3 are read again
    expect(seenMasters().filter((m) => m === master).length).toBeGreaterThanOrEqual(2);
    expect(l.status().lastBlock).toBe(await publicClient.getBlockNumber({ cacheTime: 0 }));
  });
});

describe("failures", () => {
  it("records lastError when the RPC cannot be reached, and keeps lagSeconds null", async () => {
    const url = await closedPortUrl();
    const client = createPublicClient({
      chain: foundry,
      transport: http(url, { retryCount: 0, timeout: 2_000 }),
    }) as PublicClient;
    const { l, warnings } = listener({ client, pollMs: 20 });
    l.start();
    try {
      await vi.waitFor(() => expect(l.status().lastError).not.toBeNull(), { timeout: 5_000 });
      // a few more failed polls: the same error is warned about once
      await new Promise((resolve) => setTimeout(resolve, 100));
      const s = l.status();
      expect(s.lagSeconds).toBeNull();
      expect(s.lastBlock).toBeNull();
      expect(s.lastError).not.toContain("\n");
      expect(warnings).toHaveLength(1);
    } finally {
      await l.stop();
    }
  });

  it("resumes from the last processed block after a poll failed part-way (no event skipped)", async () => {
    const { client, state } = controlledClient();
    const { l, seenMasters } = listener({ client, maxRange: 1, reorgDepth: 0 });
    await l.poll();
    const start = l.status().lastBlock ?? 0n;

    const a = await newAccount();
    const b = await newAccount();
    const c = await newAccount();

    state.getLogsCalls = 0;
    state.failGetLogsAfter = 1; // the first range succeeds, the second fails
    await expect(l.poll()).rejects.toThrow();
    expect(l.status().lastBlock).toBe(start + 1n);
    expect(seenMasters()).toEqual([a]);

    state.failGetLogsAfter = Number.POSITIVE_INFINITY;
    await l.poll();
    expect(l.status().lastBlock).toBe(start + 3n);
    expect(seenMasters()).toEqual([a, b, c]);
  });

  it("in the loop: records the error while the RPC is down, clears it and catches up once it is back", async () => {
    const { client, state } = controlledClient();
    const { l, seenMasters } = listener({ client, pollMs: 20, reorgDepth: 0 });
    l.start();
    try {
      await vi.waitFor(() => expect(l.status().lastBlock).not.toBeNull(), { timeout: 5_000 });
      const lastGood = l.status().lastBlock;

      state.down = true;
      const a = await newAccount();
      const b = await newAccount();
      await vi.waitFor(() => expect(l.status().lastError).not.toBeNull(), { timeout: 5_000 });
      expect(l.status().lastBlock).toBe(lastGood);
      expect(seenMasters()).toEqual([]);

      state.down = false;
      await vi.waitFor(() => expect(l.status().lastError).toBeNull(), { timeout: 5_000 });
      await vi.waitFor(() => expect(seenMasters()).toEqual(expect.arrayContaining([a, b])), { timeout: 5_000 });
      expect(l.status().lastBlock).toBe(await publicClient.getBlockNumber({ cacheTime: 0 }));
    } finally {
      await l.stop();
    }
  }, 30_000);
});

describe("start and stop", () => {
  it("polls at once on start(), then every pollMs, and sees new events", async () => {
    const { client, state } = controlledClient();
    const { l, seenMasters } = listener({ client, pollMs: 25 });
    l.start();
    try {
      await vi.waitFor(() => expect(l.status().lastBlock).not.toBeNull(), { timeout: 2_000 });
      await vi.waitFor(() => expect(state.blockNumberCalls).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
      const master = await newAccount();
      await vi.waitFor(() => expect(seenMasters()).toContain(master), { timeout: 5_000 });
    } finally {
      await l.stop();
    }
  });

  it("does not wait pollMs for the first poll", async () => {
    const { l } = listener({ pollMs: 600_000 });
    l.start();
    try {
      await vi.waitFor(() => expect(l.status().lastBlock).not.toBeNull(), { timeout: 2_000 });
    } finally {
      await l.stop();
    }
  });

  it("stops cleanly: no poll runs after stop() resolves, even if start() was called twice", async () => {
    const { client, state } = controlledClient();
    const { l } = listener({ client, pollMs: 10 });
    l.start();
    l.start();
    await vi.waitFor(() => expect(state.blockNumberCalls).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    await l.stop();
    const calls = state.blockNumberCalls;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(state.blockNumberCalls).toBe(calls);
  });

  it("stop() before start() resolves at once and nothing runs", async () => {
    const { client, state } = controlledClient();
    const { l } = listener({ client, pollMs: 10 });
    await l.stop();
    l.start();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(state.blockNumberCalls).toBe(0);
  });
});
