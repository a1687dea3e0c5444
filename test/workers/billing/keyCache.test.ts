// The edge's key cache (docs/design/billing.md, "Whose account a key is: the edge's key cache") through
// the real edge in workerd with billing on, against anvil and the enclave. The edge reaches the chain
// through a proxy of its own (globalSetup.ts), which these tests stop: the chain is then gone for the
// edge alone — the enclave reaches anvil directly, as the tests do — so what is checked is the
// edge's part: a key it has seen still runs, one it has not is 503 chain_unavailable, and once the
// chain is back a change made on chain (not through this edge, so only the contract's events can tell
// it) is in force within the poll interval. The changes checked are ones only the edge enforces — a
// spend cap, and a removed key whose account has no credit (402 while the edge believes the key,
// 401 once it knows) — so the enclave's own refusal cannot stand in for the edge's. The tests share
// the edge's modules (vitest.config.ts), so they read its key cache's counters directly.
import { env, listDurableObjectIds, runInDurableObject, SELF } from "cloudflare:test";
import { createPublicClient, createTestClient, http } from "viem";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../../shared/cid.ts";
import { KEY_EVENTS_REORG_DEPTH, keyCacheOf, type KeyCacheStatus } from "../../../workers/chain/keyCache.ts";
import { edgeConfig } from "../../../workers/config.ts";
import type { Env } from "../../../workers/env.ts";
import { ok as enclaveOk } from "../../enclave/client.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "../stack.ts";
import { billingLedgers, ledgerRows } from "./ledgers.ts";

const { edge, expectError } = edgeClient(SELF);
const namespace = (env as unknown as Env).LEDGER!;
const { newAccount } = billingLedgers({
  self: SELF,
  namespace,
  listIds: () => listDurableObjectIds(namespace),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});

const config = edgeConfig(env as unknown as Env);
/** This project's SIGIL_EDGE_KEY_POLL_MS (vitest.config.ts). */
const POLL_MS = config.keyPollMs;
/**
 * The stated bound is pollMs plus one poll's time after the change's block; the margin covers the
 * poll (two RPC calls on loopback) and the request in flight when it lands (a run).
 */
const DEADLINE_MS = POLL_MS + 2_000;

const QUICK = "async function main() { return 'quick' }";
let cid: string;

beforeAll(async () => {
  cid = await computeCid(QUICK);
  expect(POLL_MS).toBeLessThanOrEqual(500);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The edge's key cache, as this isolate has it. */
function cache(): KeyCacheStatus {
  const status = keyCacheOf(config)?.status();
  if (!status) throw new Error("the edge has no key cache (no chain or contract configured)");
  return status;
}

/** Takes the chain away from the edge (stop) or gives it back (start). */
async function edgeChain(action: "stop" | "start"): Promise<void> {
  const r = await fetch(`${inject("edgeRpcControlUrl")}/${action}`, { method: "POST" });
  expect(r.status, `proxy ${action}`).toBe(200);
}

const run = (key: string) =>
  edge<{ error?: { details?: { spend_limit?: boolean } } }>("sigil_action", { key, body: { code: QUICK } });

function ran(r: Reply<unknown>): void {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.headers.get("x-sigil-charged-cents")).toBe("1");
}

/**
 * Lets the edge's follower take in an account's setup, so that what the test's next runs read is
 * kept: every poll reads the last KEY_EVENTS_REORG_DEPTH blocks again (for reorgs), dropping the
 * entries of the accounts their events name, and anvil mines only on transactions — so the setup's
 * blocks are buried under as many empty ones, and requests with `key` (whatever they answer) start
 * polls until one has read up to them.
 */
async function takenIn(key: string): Promise<void> {
  const anvil = { chain: foundry, transport: http(inject("rpcUrl")) };
  await createTestClient({ ...anvil, mode: "anvil" }).mine({ blocks: KEY_EVENTS_REORG_DEPTH });
  const head = await createPublicClient(anvil).getBlockNumber({ cacheTime: 0 });
  const since = Date.now();
  while ((cache().lastBlock ?? -1n) < head) {
    expect(Date.now() - since, "the edge's follower reads the chain").toBeLessThan(10_000);
    await sleep(POLL_MS);
    await run(key);
  }
}

/** An account with `cents` of credit and a group that lets its keys run QUICK; usage keys made through the enclave (setup, free). */
async function account(name: string, cents: number) {
  const master = await newAccount(name, { cents });
  await enclaveOk("add_group", {
    api_key: master,
    group_name: "runs",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: [cid],
  });
  const usageKey = async (extra: { spend_limit_cents?: number } = {}) =>
    (
      await enclaveOk<{ usage_api_key: string }>("add_usage_api_key", {
        api_key: master,
        name: "u",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: [0],
        ...extra,
      })
    ).usage_api_key;
  return { master, usageKey };
}

/** A run answered from the key cache: it ran, and the cache counted a hit for it. */
async function ranFromMemory(key: string): Promise<void> {
  const hits = cache().hits;
  ran(await run(key));
  expect(cache().hits, "answered from the key cache").toBeGreaterThan(hits);
}

describe("the edge's key cache", () => {
  it("keys the edge has seen still run while its chain is unreachable; a key it has not seen is 503 chain_unavailable", async () => {
    const { master, usageKey } = await account("key cache outage", 30);
    const seen = await usageKey();
    const unseen = await usageKey();
    await takenIn(master);
    ran(await run(seen));
    ran(await run(master));
    await ranFromMemory(seen);
    await ranFromMemory(master);
    const before = cache();
    await edgeChain("stop");
    try {
      // Longer than an idle isolate's catch-up (2 × pollMs), over several poll intervals: every poll fails.
      for (let i = 0; i < 4; i++) {
        await ranFromMemory(seen);
        await ranFromMemory(master);
        await sleep(POLL_MS);
      }
      expect(cache().pollFailures).toBeGreaterThan(before.pollFailures);
      expect(cache().lastError).not.toBeNull();
      expectError(await run(unseen), 503, "chain_unavailable");
      // The billing endpoints find a key as a run does: a seen key reads its balance, an unseen one cannot.
      const balance = await edge("billing/balance", { key: seen });
      expect(balance.status, JSON.stringify(balance.body)).toBe(200);
      expectError(await edge("billing/balance", { key: unseen }), 503, "chain_unavailable");
      // So do the webhook endpoints, which take the master key.
      const webhooks = await edge("webhooks", { key: master });
      expect(webhooks.status, JSON.stringify(webhooks.body)).toBe(200);
    } finally {
      await edgeChain("start");
    }
    ran(await run(unseen));
  });

  it("while its chain is unreachable, a list read before is answered from that read, said stale; a write of the account through this edge ends that", async () => {
    const { master } = await account("stale lists", 30);
    await takenIn(master);
    const live = await edge<unknown[]>("list_groups", { key: master });
    expect(live.status).toBe(200);
    expect(live.headers.get("sigil-stale")).toBeNull();
    await edgeChain("stop");
    try {
      const stale = await edge<unknown[]>("list_groups", { key: master });
      expect(stale.status, JSON.stringify(stale.body)).toBe(200);
      expect(stale.body).toEqual(live.body);
      expect(stale.headers.get("x-total-count")).toBe(live.headers.get("x-total-count"));
      expect(Number(stale.headers.get("sigil-stale"))).toBeGreaterThanOrEqual(0);
      // Another page, never read, has nothing kept: 503 as before.
      expectError(await edge("list_groups?page=2", { key: master }), 503, "chain_unavailable");
      // A write of the account through this edge (the enclave still reaches the chain here): what
      // was kept is no longer given, so its author never lists from before it.
      const made = await edge("add_group", {
        key: master,
        body: { group_name: "after", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      expectError(await edge("list_groups", { key: master }), 503, "chain_unavailable");
    } finally {
      await edgeChain("start");
    }
    const back = await edge<unknown[]>("list_groups", { key: master });
    expect(back.status).toBe(200);
    expect(back.body).toHaveLength((live.body as unknown[]).length + 1);
  });

  it("a spend cap lowered on chain (not through this edge) stops the key within the poll interval", async () => {
    // No cap at first (and credit for every run the deadline leaves room for): only the new cap can stop it.
    const { master, usageKey } = await account("key cache cap", 200);
    const capped = await usageKey();
    await takenIn(master);
    ran(await run(capped));
    await ranFromMemory(capped);
    const since = Date.now();
    await enclaveOk("update_usage_api_key", {
      api_key: master,
      usage_api_key: capped,
      name: "u",
      description: "",
      ...NO_PERMISSIONS,
      execute_in_groups: [0],
      spend_limit_cents: 2,
    });
    let r = await run(capped);
    while (r.status === 200) {
      expect(Date.now() - since, "still run under the old cap").toBeLessThan(DEADLINE_MS);
      await sleep(50);
      r = await run(capped);
    }
    expectError(r, 402, "insufficient_credits");
    expect(r.body.error).toMatchObject({ details: { spend_limit: true } });
  });

  it("a key removed on chain (not through this edge) is refused by the edge within the poll interval", async () => {
    // No credit: while the edge believes the key it answers 402 for the account's balance (before
    // any enclave is asked); once it knows, 401 for the key.
    const { master, usageKey } = await account("key cache removal", 0);
    const doomed = await usageKey();
    await takenIn(master);
    expectError(await run(doomed), 402, "insufficient_credits");
    const hits = cache().hits;
    expectError(await run(doomed), 402, "insufficient_credits");
    expect(cache().hits, "answered from the key cache").toBeGreaterThan(hits);
    const since = Date.now();
    await enclaveOk("remove_usage_api_key", { api_key: master, usage_api_key: doomed });
    let r = await run(doomed);
    while (r.status === 402) {
      expect(Date.now() - since, "still believed after its removal").toBeLessThan(DEADLINE_MS);
      await sleep(50);
      r = await run(doomed);
    }
    expectError(r, 401, "invalid_api_key");
  });

  it("a spend cap lowered through this edge is in force on the key's next request", async () => {
    const { master, usageKey } = await account("key cache own write", 20);
    const capped = await usageKey({ spend_limit_cents: 20 });
    await takenIn(master);
    ran(await run(capped));
    await ranFromMemory(capped);
    const lowered = await edge("update_usage_api_key", {
      key: master,
      body: {
        usage_api_key: capped,
        name: "u",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: [0],
        spend_limit_cents: 1,
      },
    });
    expect(lowered.status, JSON.stringify(lowered.body)).toBe(200);
    // No waiting for a poll: the edge's own write dropped the account's entries.
    const r = await run(capped);
    expectError(r, 402, "insufficient_credits");
    expect(r.body.error).toMatchObject({ details: { spend_limit: true } });
  });
});
