// The payer pool (docs/design/keys-and-authz.md, "Payers and transaction submission") against a real anvil
// with AccountConfig deployed and three derived payers registered and funded, as enclave/main.ts
// builds it: a write that would revert is refused by the simulation without spending gas;
// concurrent writes spread over the least-busy payers with gap-free nonces; a payer whose local
// nonce went stale behind the pool's back resynchronizes; the answer comes from the receipt's events.
import {
  bytesToHex,
  createPublicClient,
  createWalletClient,
  custom,
  getAddress,
  http,
  HttpRequestError,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from "viem/accounts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { generateApiKey } from "../../shared/apiKey.ts";
import { SigilError, transactionHashIn } from "../../shared/errors.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { connectChain, type ChainContext } from "../chain/client.ts";
import { Keyring, newDerivation } from "../keys/derive.ts";
import { createLogger } from "../../shared/log.ts";
import { PayerPool, type DecodedEvent, type WriteResult } from "./pool.ts";

const PAYERS = 3;

let anvil: Anvil;
let chain: ChainContext;
let publicClient: PublicClient;
let keyring: Keyring;
let pool: PayerPool;
let payers: Address[];
/** The pool's log lines (warn and above), parsed. */
const logLines: Array<{ level: string; msg: string; payer?: string }> = [];

beforeAll(async () => {
  anvil = await startAnvil({ accounts: 2 });
  const transport = http(anvil.rpcUrl);
  publicClient = createPublicClient({ transport, pollingInterval: 50 }) as PublicClient;
  const walletClient = createWalletClient({ transport });
  const [owner] = await walletClient.getAddresses();
  if (!owner) throw new Error("anvil unlocked no account");
  const deployment = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
  chain = await connectChain(anvil.rpcUrl, deployment.proxy, 50);
  // As enclave/main.ts does: the payer keys of instance 0, derived from the root. The pool zeroes
  // the bytes it is given; the same keys are derived again below to act behind its back.
  keyring = new Keyring(crypto.getRandomValues(new Uint8Array(32)));
  pool = new PayerPool({
    chain,
    rpcUrl: anvil.rpcUrl,
    keys: Array.from({ length: PAYERS }, (_, i) => keyring.payerKey(i)),
    confirmations: 1,
    minBalanceWei: 1n,
    log: createLogger("warn", {}, (line) => logLines.push(JSON.parse(line) as (typeof logLines)[number])),
  });
  payers = pool.addresses;
  await registerLocalPayers({
    rpcUrl: anvil.rpcUrl,
    publicClient,
    walletClient,
    owner,
    contract: deployment.proxy,
    payers,
  });
}, 120_000);

afterAll(async () => {
  keyring?.destroy();
  await anvil?.stop();
});

/**
 * An RPC in front of anvil that passes everything but the next eth_sendRawTransaction calls, which
 * it handles as `plan` says, one each: `lose-answer` passes it on and cuts the connection before the
 * answer, `drop` cuts it before passing it on.
 */
async function lossyRpc(
  plan: Array<"lose-answer" | "drop">,
  options: { refuseReceipts?: boolean } = {},
): Promise<{ url: string; readonly lost: number; close(): Promise<void> }> {
  let lost = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      const { method, id } = JSON.parse(body) as { method?: string; id?: number };
      if (options.refuseReceipts && method === "eth_getTransactionReceipt") {
        // A node that will not say what became of a transaction (an error viem does not retry).
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: "receipts refused" } }));
        return;
      }
      const fault = method === "eth_sendRawTransaction" ? plan.shift() : undefined;
      if (fault === "drop") {
        lost++;
        req.socket.destroy();
        return;
      }
      void fetch(anvil.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
        async (r) => {
          const text = await r.text();
          if (fault === "lose-answer") {
            lost++;
            req.socket.destroy();
            return;
          }
          res.writeHead(r.status, { "content-type": "application/json" }).end(text);
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get lost() {
      return lost;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A new managed account created through the pool: its master hash and the write's result. */
async function newAccount(): Promise<{ master: bigint; amw: Address; result: WriteResult }> {
  const master = apiKeyHash(generateApiKey());
  const amw = privateKeyToAddress(generatePrivateKey());
  const result = await pool.write({ functionName: "newAccount", args: [master, "payer pool test", "", amw, master] });
  return { master, amw, result };
}

const addGroup = (master: bigint, name: string) =>
  pool.write({ functionName: "addGroup", args: [master, name, "", [], []] }, { keyHash: master });

function groupIdOf(result: WriteResult): bigint {
  const added = result.events.filter(
    (e): e is Extract<DecodedEvent, { eventName: "GroupAdded" }> => e.eventName === "GroupAdded",
  );
  expect(added).toHaveLength(1);
  return (added[0] as Extract<DecodedEvent, { eventName: "GroupAdded" }>).args.groupId;
}

/** Every payer's mined and pending nonce and balance, and the chain head. */
async function chainState() {
  const perPayer = await Promise.all(
    payers.map(async (address) => ({
      address,
      latest: await publicClient.getTransactionCount({ address, blockTag: "latest" }),
      pending: await publicClient.getTransactionCount({ address, blockTag: "pending" }),
      balance: await publicClient.getBalance({ address }),
    })),
  );
  // Uncached: viem keeps a block number for the client's polling interval, and a head read within 50 ms
  // of the set-up's last one would be the block before newAccount's.
  return { head: await publicClient.getBlockNumber({ cacheTime: 0 }), perPayer };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(
        `expected a rejection, got ${JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? x.toString() : x))}`,
      );
    },
    (err: unknown) => err,
  );
}

describe("PayerPool", { timeout: 60_000 }, () => {
  it("writes that would revert are refused by the simulation with the mapped error code, and no payer's nonce, balance or the chain moves", async () => {
    const { master } = await newAccount();
    const before = await chainState();

    // A key hash no account has: AccountDoesNotExist, the caller's own key → invalid_api_key (401).
    const unknownKey = apiKeyHash(generateApiKey());
    const unknown = await rejection(addGroup(unknownKey, "never"));
    expect(unknown).toBeInstanceOf(SigilError);
    expect(unknown).toMatchObject({ code: "invalid_api_key", status: 401 });

    // The same master again: AccountAlreadyExists → already_exists (409).
    const again = await rejection(
      pool.write({
        functionName: "newAccount",
        args: [master, "again", "", privateKeyToAddress(generatePrivateKey()), master],
      }),
    );
    expect(again).toBeInstanceOf(SigilError);
    expect(again).toMatchObject({ code: "already_exists" });

    // A group that does not exist on a real account: GroupDoesNotExist → group_not_found.
    const missing = await rejection(
      pool.write({ functionName: "removeGroup", args: [master, 999n] }, { keyHash: master }),
    );
    expect(missing).toMatchObject({ code: "group_not_found" });

    expect(await chainState()).toEqual(before);
  });

  it("12 concurrent writes all succeed, spread evenly over the payers, each payer's nonces consecutive without gaps, repeats or nonce conflicts", async () => {
    const { master } = await newAccount();
    const before = await chainState();
    const count = 12;
    logLines.length = 0;

    const results = await Promise.all(Array.from({ length: count }, (_, i) => addGroup(master, `concurrent ${i}`)));

    for (const r of results) expect(r.receipt.status).toBe("success");
    // Every write got its own group: ids 1..12 in some order, each read from its own receipt.
    expect(results.map(groupIdOf).sort((a, b) => Number(a - b))).toEqual(
      Array.from({ length: count }, (_, i) => BigInt(i + 1)),
    );
    expect(new Set(results.map((r) => r.transactionHash)).size).toBe(count);
    // The pool alone never trips over its own nonces: no conflict had to be resolved on the way.
    expect(logLines).toEqual([]);

    // Least-busy choice with all twelve in flight at once: four per payer.
    const byPayer = new Map<Address, number[]>(payers.map((p) => [p, []]));
    for (const r of results) {
      const from = getAddress(r.receipt.from);
      const tx = await publicClient.getTransaction({ hash: r.transactionHash });
      expect(getAddress(tx.from)).toBe(from);
      const nonces = byPayer.get(from);
      if (!nonces) throw new Error(`${from} is not one of the pool's payers`);
      nonces.push(tx.nonce);
    }
    expect([...byPayer.values()].map((n) => n.length)).toEqual(payers.map(() => count / PAYERS));

    const after = await chainState();
    for (const [i, address] of payers.entries()) {
      const start = (before.perPayer[i] as { latest: number }).latest;
      const nonces = (byPayer.get(address) as number[]).sort((a, b) => a - b);
      expect(nonces, `nonces of ${address}`).toEqual(Array.from({ length: nonces.length }, (_, k) => start + k));
      expect((after.perPayer[i] as { latest: number; pending: number }).latest).toBe(start + nonces.length);
      expect((after.perPayer[i] as { latest: number; pending: number }).pending).toBe(start + nonces.length);
    }
  });

  it("a payer whose local nonce went stale (a transaction sent from its key behind the pool's back) resynchronizes and its next write succeeds", async () => {
    const { master } = await newAccount();
    // Three writes at once: every payer has sent, so every payer holds a local nonce.
    const warm = await Promise.all([0, 1, 2].map((i) => addGroup(master, `warm ${i}`)));
    expect(new Set(warm.map((r) => getAddress(r.receipt.from)))).toEqual(new Set(payers));

    // Each payer's key, derived again from the same root, sends a plain transfer the pool does not see.
    for (const [i, address] of payers.entries()) {
      const key = keyring.payerKey(i);
      const account = privateKeyToAccount(bytesToHex(key.privateKey) as Hex);
      key.privateKey.fill(0);
      expect(account.address).toBe(address);
      const wallet = createWalletClient({ account, chain: chain.chain, transport: http(anvil.rpcUrl) });
      const hash = await wallet.sendTransaction({ to: address, value: 0n });
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    }
    const before = await chainState();
    logLines.length = 0;

    const results = await Promise.all([0, 1, 2].map((i) => addGroup(master, `after ${i}`)));

    expect(results.map(groupIdOf).sort((a, b) => Number(a - b))).toEqual([4n, 5n, 6n]);
    expect(new Set(results.map((r) => getAddress(r.receipt.from)))).toEqual(new Set(payers));
    // Each payer's local nonce was one behind: each hit the nonce error once and resynchronized.
    const conflicts = logLines.filter((l) => l.msg.includes("nonce conflict"));
    expect(new Set(conflicts.map((l) => getAddress(l.payer as string)))).toEqual(new Set(payers));
    for (const r of results) {
      const tx = await publicClient.getTransaction({ hash: r.transactionHash });
      const i = payers.indexOf(getAddress(tx.from));
      expect(tx.nonce).toBe((before.perPayer[i] as { latest: number }).latest);
    }
  });

  it("a chain unreachable when a payer's nonce must be read (a fresh pool, or after a send error) is 503 chain_unavailable naming no transaction, not a 500, and nothing is sent", async () => {
    // The chain answers everything but the payer's nonce, as when the RPC goes away between the
    // simulation and the send.
    const reachable = createPublicClient({ chain: chain.chain, transport: http(anvil.rpcUrl) });
    const transport = custom({
      async request({ method, params }: { method: string; params?: unknown }) {
        if (method === "eth_getTransactionCount")
          throw new HttpRequestError({ url: anvil.rpcUrl, details: "fetch failed" });
        return reachable.request({ method, params } as never);
      },
    });
    const cut: ChainContext = {
      ...chain,
      client: createPublicClient({ chain: chain.chain, transport }) as PublicClient,
    };
    const fresh = new PayerPool({
      chain: cut,
      rpcUrl: anvil.rpcUrl,
      keys: [keyring.payerKey(0)],
      confirmations: 1,
      minBalanceWei: 1n,
      log: createLogger("silent"),
    });
    const nonceBefore = await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" });
    const master = apiKeyHash(generateApiKey());
    const err = await fresh
      .write({
        functionName: "newAccount",
        args: [master, "cut", "", privateKeyToAddress(generatePrivateKey()), master],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(SigilError);
    expect((err as SigilError).code).toBe("chain_unavailable");
    expect((err as SigilError).status).toBe(503);
    expect((err as SigilError).details).toBeUndefined();
    expect(await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" })).toBe(nonceBefore);
  });

  it("a send whose answer is lost after the node took the transaction is that write, done once: its events answered, the payer's next write after it without a conflict", async () => {
    const rpc = await lossyRpc(["lose-answer"]);
    try {
      const lines: Array<{ msg: string }> = [];
      const lossy = new PayerPool({
        chain,
        rpcUrl: rpc.url,
        keys: [keyring.payerKey(0)],
        confirmations: 1,
        minBalanceWei: 1n,
        log: createLogger("warn", {}, (l) => void lines.push(JSON.parse(l) as { msg: string })),
      });
      const before = await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" });
      const master = apiKeyHash(generateApiKey());
      const result = await lossy.write({
        functionName: "newAccount",
        args: [master, "lost answer", "", privateKeyToAddress(generatePrivateKey()), master],
      });
      expect(rpc.lost).toBe(1);
      expect(result.events.map((e) => e.eventName)).toContain("AccountCreated");
      expect(lines.map((l) => l.msg)).toContain("a send lost its answer, but the node took the transaction");
      // One transaction for it, and the payer's next write takes the next nonce.
      const next = await lossy.write(
        { functionName: "addGroup", args: [master, "after a lost answer", "", [], []] },
        { keyHash: master },
      );
      expect((await publicClient.getTransaction({ hash: result.transactionHash })).nonce).toBe(before);
      expect((await publicClient.getTransaction({ hash: next.transactionHash })).nonce).toBe(before + 1);
      expect(await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" })).toBe(before + 2);
      expect(lines.some((l) => l.msg.includes("nonce conflict"))).toBe(false);
    } finally {
      await rpc.close();
    }
  });

  it("sendCall: a transaction sent whose receipt does not come is an error naming it (so the anchorer can), and the transaction is mined all the same", async () => {
    const rpc = await lossyRpc([], { refuseReceipts: true });
    try {
      const lossy = new PayerPool({
        chain: await connectChain(rpc.url, chain.contract, 50),
        rpcUrl: rpc.url,
        keys: [keyring.payerKey(0)],
        confirmations: 1,
        minBalanceWei: 1n,
        log: createLogger("silent"),
      });
      const err = await lossy.sendCall({ to: privateKeyToAddress(generatePrivateKey()), data: "0x" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SigilError);
      expect((err as SigilError).code).toBe("chain_unavailable");
      const hash = transactionHashIn((err as SigilError).details) as Hex;
      expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    } finally {
      await rpc.close();
    }
  });

  it("a send cut before the node took the transaction is 503 chain_unavailable naming no transaction (a retry may send it), and nothing is on chain", async () => {
    const rpc = await lossyRpc(["drop"]);
    try {
      const lossy = new PayerPool({
        chain,
        rpcUrl: rpc.url,
        keys: [keyring.payerKey(0)],
        confirmations: 1,
        minBalanceWei: 1n,
        log: createLogger("silent"),
      });
      const before = await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" });
      const master = apiKeyHash(generateApiKey());
      const err = await lossy
        .write({
          functionName: "newAccount",
          args: [master, "dropped", "", privateKeyToAddress(generatePrivateKey()), master],
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(SigilError);
      expect((err as SigilError).code).toBe("chain_unavailable");
      expect((err as SigilError).details).toBeUndefined();
      expect(await publicClient.getTransactionCount({ address: payers[0]!, blockTag: "pending" })).toBe(before);
      // Sent again (as the retry of the write would be), it is made once.
      const again = await lossy.write({
        functionName: "newAccount",
        args: [master, "dropped", "", privateKeyToAddress(generatePrivateKey()), master],
      });
      expect((await publicClient.getTransaction({ hash: again.transactionHash })).nonce).toBe(before);
    } finally {
      await rpc.close();
    }
  });

  it("answers from the receipt's decoded events: the account's wallet 0, a registered wallet's id, and each new group's id", async () => {
    const { master, amw, result } = await newAccount();
    expect(result.receipt.transactionHash).toBe(result.transactionHash);
    const created = result.events.find((e) => e.eventName === "AccountCreated");
    expect(created?.args).toEqual({ master, admin: amw, managed: true });
    const amwRegistered = result.events.find((e) => e.eventName === "WalletRegistered");
    expect(amwRegistered?.args).toEqual({ master, wallet: amw, walletId: 0n });

    const wallet = privateKeyToAddress(generatePrivateKey());
    const registered = await pool.write(
      { functionName: "registerWalletDerivation", args: [master, wallet, newDerivation(), "second", ""] },
      { keyHash: master },
    );
    expect(registered.events.map((e) => e.eventName)).toEqual(["WalletRegistered"]);
    expect(registered.events[0]?.args).toEqual({ master, wallet, walletId: 1n });

    expect(groupIdOf(await addGroup(master, "first"))).toBe(1n);
    expect(groupIdOf(await addGroup(master, "second"))).toBe(2n);
    // Every decoded event is from that write's own transaction.
    expect(registered.events.every((e) => e.transactionHash === registered.transactionHash)).toBe(true);
  });
});
