// GET /core/v1/audit through the edge in workerd, against the real chain and enclave: a scripted
// sequence of admin writes on a managed account listed exactly, newest first, with their
// transactions, senders and summaries; cursor pages that return each event once while writes land
// between them; a wallet-made ChainSecured account read under X-Wallet-Auth, and a converted
// account whose ownership moved, read with its old master key; the refusals (a cursor it did not
// give, a bad limit, a wrong key, a former admin). The workers-stack project reads the chain in
// windows of a few blocks (SIGIL_AUDIT_WINDOW_BLOCKS in vitest.config.ts), so every page here is
// the walk across several eth_getLogs windows.
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createPublicClient, createTestClient, createWalletClient, http, parseEther, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { computeCid } from "../../shared/cid.ts";
import { buildTypedData, signableTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, walletLookupHash } from "../../shared/hashing.ts";
import type { Env } from "../../workers/env.ts";
import { edgeClient, type EdgeCall } from "./stack.ts";

const CHAIN_ID = 31337;
const { edge, ok200, expectError } = edgeClient(SELF);

type AuditEvent = {
  block_number: number;
  block_time: number | null;
  tx_hash: string;
  log_index: number;
  event: string;
  actor: string | null;
  summary: string;
  args: Record<string, string | boolean>;
};
type Page = { events: AuditEvent[]; next_cursor: string | null };
type Write = { success: true; transaction_hash: string };

const transport = () => http((env as unknown as Env).SIGIL_RPC_URL);
const publicClient = () => createPublicClient({ chain: foundry, transport: transport(), pollingInterval: 50 });

const short = (hash: string) => `${hash.slice(0, 6)}…${hash.slice(-4)}`;
const lower = (a: string) => a.toLowerCase();

/** Every event, page after page of `limit`, following next_cursor to the end. */
async function allEvents(auth: EdgeCall, limit = 100, between?: () => Promise<void>): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const page: Page = await ok200<Page>(`audit?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`, auth);
    expect(page.events.length).toBeLessThanOrEqual(limit);
    events.push(...page.events);
    cursor = page.next_cursor;
    if (cursor === null) return events;
    await between?.();
  }
  throw new Error("the cursor never ended");
}

const view = (events: AuditEvent[]) => events.map((e) => [e.event, e.summary]);

async function payers(): Promise<string[]> {
  return (await ok200<string[]>("get_api_payers")).map(lower);
}

/** X-Wallet-Auth signed as BillingAuth by `signer`. */
async function walletAuth(signer: PrivateKeyAccount): Promise<EdgeCall> {
  const typed_data = buildTypedData({
    primaryType: "BillingAuth" as SigilPrimaryType,
    address: signer.address,
    chainId: CHAIN_ID,
    issuedAt: Math.floor(Date.now() / 1000),
  });
  const signature = await signer.signTypedData(signableTypedData(typed_data));
  const bytes = new TextEncoder().encode(JSON.stringify({ typed_data, signature }));
  return {
    headers: {
      "x-wallet-auth": btoa(String.fromCharCode(...bytes))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, ""),
    },
  };
}

/** Sends `functionName` to AccountConfig from `wallet` (given gas first); the transaction's hash. */
async function sendAs(wallet: PrivateKeyAccount, functionName: string, args: readonly unknown[]): Promise<Hex> {
  await createTestClient({ chain: foundry, mode: "anvil", transport: transport() }).setBalance({
    address: wallet.address,
    value: parseEther("1"),
  });
  const client = createWalletClient({ chain: foundry, transport: transport(), account: wallet });
  const hash = await client.writeContract({
    address: inject("contract"),
    abi: accountConfigAbi,
    functionName,
    args,
  } as never);
  expect((await publicClient().waitForTransactionReceipt({ hash })).status).toBe("success");
  return hash;
}

describe("a managed account's history", () => {
  let key: string;
  let created: { api_key: string; wallet_address: string; account_id: string; transaction_hash: string };
  let expected: Array<[string, string]>;
  let txs: string[];
  let payerSet: string[];

  beforeAll(async () => {
    payerSet = await payers();
    created = await ok200("new_account", { body: { account_name: "audited" } });
    key = created.api_key;
    const write = <T extends Write = Write>(path: string, body: unknown) => ok200<T>(path, { key, body });
    const cidA = await computeCid("async function main() { return 'audit a' }");
    const cidB = await computeCid("async function main() { return 'audit b' }");
    const usage = await write<Write & { usage_api_key: string }>("add_usage_api_key", {
      name: "ops",
      description: "",
      can_create_groups: true,
      can_delete_groups: false,
      can_create_pkps: false,
      manage_ipfs_ids_in_groups: [],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: [],
      execute_in_groups: [],
    });
    const renamed = await write("update_usage_api_key_metadata", {
      usage_api_key: usage.usage_api_key,
      name: "ops 2",
      description: "",
    });
    const wallet = await write<Write & { wallet_address: string; wallet_id: string }>("create_wallet", {
      name: "w",
      description: "",
    });
    const group = await write<Write & { group_id: string }>("add_group", {
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [wallet.wallet_address],
      cid_hashes_permitted: [cidA],
    });
    const added = await write<Write & { hashed_cid: string }>("add_action_to_group", {
      group_id: group.group_id,
      action_ipfs_cid: cidB,
    });
    const removedPkp = await write("remove_pkp_from_group", {
      group_id: group.group_id,
      pkp_id: wallet.wallet_address,
    });
    const removedKey = await write("remove_usage_api_key", { usage_api_key: usage.usage_api_key });
    const g = group.group_id;
    const w = lower(wallet.wallet_address);
    // Newest first; within one transaction, the later event first. KEY: the usage key's hash, which
    // only the events name (the first test takes it from them).
    expected = [
      ["UsageApiKeyRemoved", `usage key ${"KEY"} removed`],
      ["PkpRemovedFromGroup", `wallet ${w} removed from group ${g}`],
      ["ActionAddedToGroup", `action ${cidB} added to group ${g}`],
      ["ActionAdded", `action ${cidB} registered`],
      // add_group registers the raw CID in the same transaction; the group's first members emit no events of their own.
      ["GroupAdded", `group ${g} added`],
      ["ActionAdded", `action ${cidA} registered`],
      ["WalletRegistered", `wallet ${w} registered (id ${wallet.wallet_id})`],
      ["UsageApiKeyMetadataUpdated", `usage key ${"KEY"} renamed (metadata updated)`],
      ["UsageApiKeySet", `usage key ${"KEY"} added or its permissions replaced`],
      ["WalletRegistered", `wallet ${lower(created.wallet_address)} registered (id 0)`],
      ["AccountCreated", `managed account created, master wallet ${lower(created.wallet_address)}`],
    ];
    txs = [removedKey, removedPkp, added, added, group, group, wallet, renamed, usage, created, created].map(
      (r) => r.transaction_hash,
    );
    expect(cidHash(cidA)).not.toBe(cidHash(cidB));
  });

  it("lists exactly the writes, newest first, each with its transaction, block, a payer as sender and a summary", async () => {
    const page = await ok200<Page>("audit", { key });
    expect(page.next_cursor).toBeNull();
    const keyHash = page.events.find((e) => e.event === "UsageApiKeySet")?.args.keyHash as string;
    expect(keyHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(view(page.events)).toEqual(
      expected.map(([event, summary]) => [event, summary.replace("KEY", short(keyHash))]),
    );
    expect(page.events.map((e) => e.tx_hash)).toEqual(txs);
    for (const e of page.events) {
      expect(payerSet).toContain(e.actor);
      expect(e.block_time).toBeGreaterThan(0);
    }
    // Strictly newest first by position in the chain.
    const positions = page.events.map((e) => e.block_number * 1e6 + e.log_index);
    expect([...positions].sort((a, b) => b - a)).toEqual(positions);
    expect(page.events.at(-1)?.args).toEqual({ admin: lower(created.wallet_address), managed: true });
  });

  it("a usage key of the account reads the same history", async () => {
    const usage = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body: {
        name: "reader",
        description: "",
        can_create_groups: false,
        can_delete_groups: false,
        can_create_pkps: false,
        manage_ipfs_ids_in_groups: [],
        add_pkp_to_groups: [],
        remove_pkp_from_groups: [],
        execute_in_groups: [],
      },
    });
    const asUsage = await ok200<Page>("audit", { key: usage.usage_api_key });
    const asMaster = await ok200<Page>("audit", { key });
    expect(asUsage).toEqual(asMaster);
    expect(asUsage.events[0]?.event).toBe("UsageApiKeySet");
  });

  it("pages of 2 return every event exactly once while new writes land between pages; a fresh first page shows the new ones", async () => {
    const before = await ok200<Page>("audit", { key });
    let n = 0;
    const paged = await allEvents({ key }, 2, async () => {
      await ok200("add_group", {
        key,
        body: { group_name: `between ${n++}`, group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
      });
    });
    expect(paged.map((e) => `${e.tx_hash}:${e.log_index}`)).toEqual(
      before.events.map((e) => `${e.tx_hash}:${e.log_index}`),
    );
    expect(n).toBeGreaterThan(3);
    const after = await ok200<Page>(`audit?limit=${n}`, { key });
    expect(after.events.map((e) => e.event)).toEqual(Array.from({ length: n }, () => "GroupAdded"));
    expect(after.next_cursor).not.toBeNull();
  });

  it("from_block leaves out older events", async () => {
    const all = await ok200<Page>("audit", { key });
    const cut = all.events[2]!.block_number;
    const recent = await ok200<Page>(`audit?from_block=${cut}`, { key });
    expect(recent.events.every((e) => e.block_number >= cut)).toBe(true);
    expect(recent.events.length).toBeGreaterThanOrEqual(3);
    expect(recent.events.length).toBeLessThan(all.events.length);
    expect(recent.next_cursor).toBeNull();
  });

  it("a cursor it did not give is 400 invalid_cursor naming cursor: garbage, a made-up position, another account's position", async () => {
    const garbage = expectError(await edge("audit?cursor=!!!", { key }), 400, "invalid_cursor");
    expect(garbage.details?.[0]?.path).toBe("cursor");
    expectError(await edge("audit?cursor=bm90IGEgY3Vyc29y", { key }), 400, "invalid_cursor"); // "not a cursor"
    const page = await ok200<Page>("audit?limit=1", { key });
    const real = page.next_cursor as string;
    const text = atob(
      real
        .replace(/-/g, "+")
        .replace(/_/g, "/")
        .padEnd(Math.ceil(real.length / 4) * 4, "="),
    );
    const [, , block, index] = text.split(":");
    const forge = (t: string) => btoa(t).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    expectError(
      await edge(`audit?cursor=${forge(`1:e:${block}:${Number(index) + 50}`)}`, { key }),
      400,
      "invalid_cursor",
    );
    const other = await ok200<{ api_key: string }>("new_account", { body: { account_name: "other" } });
    expectError(await edge(`audit?cursor=${real}`, { key: other.api_key }), 400, "invalid_cursor");
    // The real one still works for its account.
    expect((await ok200<Page>(`audit?limit=1&cursor=${real}`, { key })).events).toHaveLength(1);
  });

  it("limit outside 1..100 and a from_block that is no number are 400 invalid_request", async () => {
    expectError(await edge("audit?limit=0", { key }), 400, "invalid_request");
    expectError(await edge("audit?limit=101", { key }), 400, "invalid_request");
    expectError(await edge("audit?from_block=-1", { key }), 400, "invalid_request");
  });

  it("no key is 401 missing_api_key; a key of no account is 401 invalid_api_key", async () => {
    expectError(await edge("audit"), 401, "missing_api_key");
    expectError(await edge("audit", { key: generateApiKey() }), 401, "invalid_api_key");
  });
});

describe("ChainSecured accounts' histories", () => {
  it("a wallet-made account, read under X-Wallet-Auth: creation, wallets, a group, a wallet out of it and the ownership transfer, sent by its admins; the former admin is refused", async () => {
    const admin = privateKeyToAccount(generatePrivateKey());
    const next = privateKeyToAccount(generatePrivateKey());
    const master = walletLookupHash(admin.address);
    const pkp = await ok200<{ wallet_address: string; derivation_path: string; master_wallet_address: string }>(
      "create_wallet_with_signature",
      {
        body: await (async () => {
          const typed_data = buildTypedData({
            primaryType: "CreateWallet",
            address: admin.address,
            chainId: CHAIN_ID,
            issuedAt: Math.floor(Date.now() / 1000),
          });
          return { typed_data, signature: await admin.signTypedData(signableTypedData(typed_data)) };
        })(),
      },
    );
    const createdTx = await sendAs(admin, "newChainSecuredAccount", ["cs", "", pkp.master_wallet_address]);
    const walletTx = await sendAs(admin, "registerWalletDerivation", [
      master,
      pkp.wallet_address,
      BigInt(pkp.derivation_path),
      "pkp",
      "",
    ]);
    const groupTx = await sendAs(admin, "addGroup", [master, "g", "", [], [pkp.wallet_address]]);
    const pkpTx = await sendAs(admin, "removePkpFromGroup", [master, 1n, pkp.wallet_address]);
    const transferTx = await sendAs(admin, "transferChainSecuredAccountOwnership", [master, next.address]);

    const events = await allEvents(await walletAuth(next), 2);
    const a = lower(admin.address);
    const p = lower(pkp.wallet_address);
    expect(view(events)).toEqual([
      ["ChainSecuredAccountOwnershipTransferred", `ownership transferred to ${lower(next.address)} (from ${a})`],
      ["PkpRemovedFromGroup", `wallet ${p} removed from group 1`],
      ["GroupAdded", "group 1 added"],
      ["WalletRegistered", `wallet ${p} registered (id 1)`],
      ["WalletRegistered", `wallet ${lower(pkp.master_wallet_address)} registered (id 0)`],
      ["AccountCreated", `ChainSecured account created, admin ${a}`],
    ]);
    expect(events.map((e) => e.tx_hash)).toEqual([transferTx, pkpTx, groupTx, walletTx, createdTx, createdTx]);
    expect(new Set(events.map((e) => e.actor))).toEqual(new Set([a]));
    // The former admin no longer reads it.
    expectError(await edge("audit", await walletAuth(admin)), 403, "permission_denied");
    // A wallet that administers nothing has nothing to read.
    expectError(
      await edge("audit", await walletAuth(privateKeyToAccount(generatePrivateKey()))),
      404,
      "account_not_found",
    );
  });

  it("a managed account converted, then handed to another wallet: its old master key reads the conversion and the transfer", async () => {
    const payerSet = await payers();
    const { api_key: key } = await ok200<{ api_key: string }>("new_account", { body: { account_name: "to convert" } });
    const group = await ok200<Write & { group_id: string }>("add_group", {
      key,
      body: { group_name: "before", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    });
    const admin = privateKeyToAccount(generatePrivateKey());
    const typed_data = buildTypedData({
      primaryType: "ConvertAccount",
      address: admin.address,
      chainId: CHAIN_ID,
      issuedAt: Math.floor(Date.now() / 1000),
    });
    const converted = await ok200<Write>("convert_to_chain_secured_account", {
      key,
      body: {
        new_admin_wallet_address: admin.address,
        typed_data,
        signature: await admin.signTypedData(signableTypedData(typed_data)),
      },
    });
    const next = privateKeyToAccount(generatePrivateKey());
    const transferTx = await sendAs(admin, "transferChainSecuredAccountOwnership", [apiKeyHash(key), next.address]);

    const page = await ok200<Page>("audit", { key });
    expect(view(page.events).slice(0, 3)).toEqual([
      [
        "ChainSecuredAccountOwnershipTransferred",
        `ownership transferred to ${lower(next.address)} (from ${lower(admin.address)})`,
      ],
      ["AccountConvertedToChainSecured", `account converted to ChainSecured, admin ${lower(admin.address)}`],
      ["GroupAdded", `group ${group.group_id} added`],
    ]);
    expect(page.events.slice(0, 3).map((e) => e.tx_hash)).toEqual([
      transferTx,
      converted.transaction_hash,
      group.transaction_hash,
    ]);
    // The transfer was sent by the admin wallet; the conversion and the earlier writes by the service's payers.
    expect(page.events[0]?.actor).toBe(lower(admin.address));
    for (const e of page.events.slice(1)) expect(payerSet).toContain(e.actor);
    // The new admin reads the same history under X-Wallet-Auth.
    expect(await ok200<Page>("audit", await walletAuth(next))).toEqual(page);
  });
});
