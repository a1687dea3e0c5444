// Metering with billing on (docs/design/billing.md, Fees), through the edge in workerd against the real chain
// and enclave, every amount read back from the account's Ledger. Credit is put in the ledger
// directly here (the Stripe paths have their own tests); every test ends with the audit of every
// ledger there is (ledgers.ts).
import { env, listDurableObjectIds, runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../../shared/cid.ts";
import { decodeFunctionResult, encodeFunctionData } from "viem";
import { accountConfigAbi } from "../../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, toHash32 } from "../../../shared/hashing.ts";
import type { Env } from "../../../workers/env.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "../stack.ts";
import { billingLedgers, ledgerRows } from "./ledgers.ts";

const { edge, ok200, expectError } = edgeClient(SELF);
const namespace = (env as unknown as Env).LEDGER!;
// Every account is made through `newAccount`; after each test every ledger is audited (ledgers.ts).
const {
  newAccount: makeAccount,
  credit,
  ledgerOf,
  auditFailures,
} = billingLedgers({
  self: SELF,
  namespace,
  listIds: () => listDurableObjectIds(namespace),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});

/** The account's free balance as its client reads it: through the edge, which first commits the charges it made (lease.ts). */
const free = async (key: string) => (await ok200<{ balance_cents: number }>("billing/balance", { key })).balance_cents;
/** The account's Ledger's balance once the edge's charges are in it (reading the balance through the edge commits them). */
const ledgerBalance = async (key: string) => {
  await free(key);
  return ledgerOf(key).balance();
};
const newAccount = (name: string, cents = 0) => makeAccount(name, { cents });

function charged(r: Reply<unknown>): number {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return Number(r.headers.get("x-sigil-charged-cents"));
}

const QUICK = "async function main() { return 'quick' }";
const SLOW =
  "async function main() { console.log('started'); await new Promise((r) => setTimeout(r, 1500)); return 'slow' }";
const ENDLESS =
  "async function main() { console.log('working'); await new Promise((r) => setTimeout(r, 60000)); return 'never' }";
/** 300 scans of a 16 MiB string: one long built-in call after another, none polling the interrupt handler. */
const SCANS =
  'async function main() { console.log("scanning"); const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return n }';
let cids: string[];

beforeAll(async () => {
  cids = await Promise.all([QUICK, SLOW, ENDLESS, SCANS].map((c) => computeCid(c)));
});

async function groupFor(key: string): Promise<void> {
  await ok200("add_group", {
    key,
    body: { group_name: "runs", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: cids },
  });
}

/** What the account has on chain, as its list reads show it (every page size 100). */
async function onChain(
  key: string,
): Promise<
  Record<"list_wallets" | "list_groups" | "list_api_keys" | "list_actions", { total: string | null; body: unknown[] }>
> {
  const read = async (path: string) => {
    const r = await edge<unknown[]>(`${path}?page_size=100`, { key });
    expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
    expect(Array.isArray(r.body), path).toBe(true);
    return { total: r.headers.get("x-total-count"), body: r.body };
  };
  return {
    list_wallets: await read("list_wallets"),
    list_groups: await read("list_groups"),
    list_api_keys: await read("list_api_keys"),
    list_actions: await read("list_actions"),
  };
}

describe("managed writes", () => {
  it("new_account is free; with no credit every managed write is 402 insufficient_credits and changes nothing on chain", async () => {
    const key = await newAccount("broke");
    expect(await free(key)).toBe(0);
    const before = await onChain(key);
    // The lists are the account's real state: a new account already has its master wallet (wallet 0).
    expect(before.list_wallets.body).toHaveLength(1);
    expect(before.list_wallets.total).toBe("1");
    for (const [path, call] of [
      ["POST create_wallet", { method: "POST" }],
      ["GET create_wallet", { method: "GET" }],
      [
        "add_group",
        { body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] } },
      ],
      ["add_usage_api_key", { body: { name: "u", description: "", ...NO_PERMISSIONS } }],
      ["add_action", { body: { action_ipfs_cid: cids[0], name: "a", description: "" } }],
    ] as const) {
      const r = await edge(path.replace(/^(POST|GET) /, ""), { key, ...call });
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(402);
      expectError(r, 402, "insufficient_credits");
    }
    expect(await onChain(key)).toEqual(before);
    expect(await free(key)).toBe(0);
  });

  it("cost one cent each, to the cent: create_wallet, add_usage_api_key, add_group, add_action", async () => {
    const key = await newAccount("writes", 5);
    expect(charged(await edge("create_wallet", { key, method: "POST" }))).toBe(1);
    expect(
      charged(await edge("add_usage_api_key", { key, body: { name: "u", description: "", ...NO_PERMISSIONS } })),
    ).toBe(1);
    expect(
      charged(
        await edge("add_group", {
          key,
          body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
        }),
      ),
    ).toBe(1);
    expect(
      charged(await edge("add_action", { key, body: { action_ipfs_cid: cids[0], name: "a", description: "" } })),
    ).toBe(1);
    expect(await free(key)).toBe(1);
    expect(charged(await edge("create_wallet", { key, method: "POST" }))).toBe(1);
    expect(await free(key)).toBe(0);
    expectError(await edge("create_wallet", { key, method: "POST" }), 402, "insufficient_credits");
  });

  it("a write the enclave refuses before sending costs nothing (its hold is released)", async () => {
    const key = await newAccount("refused", 3);
    expectError(await edge("remove_group", { key, body: { group_id: "999" } }), 404, "group_not_found");
    expect(await free(key)).toBe(3);
  });

  it("a write sent on chain that then reverts costs its cent, and its error names the transaction", async () => {
    const key = await newAccount("reverted", 10);
    const { group_id: group } = await ok200<{ group_id: string }>("add_group", {
      key,
      body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    });
    expect(await free(key)).toBe(9);
    const bindings = env as unknown as Record<string, string>;
    const contract = bindings.SIGIL_CONTRACT_ADDRESS as `0x${string}`;
    const rpc = async <T = unknown>(method: string, params: unknown[] = []): Promise<T> => {
      const res = await fetch(bindings.SIGIL_RPC_URL as string, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const body = (await res.json()) as { result?: T; error?: unknown };
      if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
      return body.result as T;
    };
    const mined = async (tx: unknown) => {
      const hash = await rpc<string>("eth_sendTransaction", [tx]);
      // Anvil's automine mines right after answering, not before: the receipt may take a moment.
      let receipt: { status: string } | null = null;
      for (let i = 0; !(receipt = await rpc<{ status: string } | null>("eth_getTransactionReceipt", [hash])); i++) {
        if (i > 200) throw new Error(`${hash} was not mined`);
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(receipt.status).toBe("0x1");
    };
    // Another payer, as another enclave instance would be: one of anvil's unlocked accounts, added
    // to the payer set by the contract's owner (anvil's first account).
    const [owner, otherPayer] = await rpc<`0x${string}`[]>("eth_accounts");
    const payers = decodeFunctionResult({
      abi: accountConfigAbi,
      functionName: "apiPayers",
      data: await rpc<`0x${string}`>("eth_call", [
        { to: contract, data: encodeFunctionData({ abi: accountConfigAbi, functionName: "apiPayers" }) },
        "latest",
      ]),
    });
    if (!payers.some((p) => p.toLowerCase() === otherPayer!.toLowerCase())) {
      await mined({
        from: owner,
        to: contract,
        data: encodeFunctionData({
          abi: accountConfigAbi,
          functionName: "setApiPayers",
          args: [[...payers, otherPayer!]],
        }),
      });
    }
    // The enclave simulates the removal and sends it; before it is mined the other payer removes the
    // group, with a higher tip so its transaction comes first in the block, and the enclave's reverts.
    await rpc("evm_setAutomine", [false]);
    let removal: Promise<Reply<unknown>> | undefined;
    let failed: Reply<unknown>;
    try {
      removal = edge("remove_group", { key, body: { group_id: group } });
      // Until the enclave's removal itself waits in the pool (nothing else: another pending
      // transaction must not be taken for it).
      const removeData = encodeFunctionData({
        abi: accountConfigAbi,
        functionName: "removeGroup",
        args: [apiKeyHash(key), BigInt(group)],
      }).toLowerCase();
      const sentByEnclave = async () => {
        const pool = await rpc<{ pending: Record<string, Record<string, { input: string }>> }>("txpool_content");
        return Object.values(pool.pending).some((byNonce) =>
          Object.values(byNonce).some((tx) => tx.input.toLowerCase() === removeData),
        );
      };
      for (let i = 0; !(await sentByEnclave()); i++) {
        if (i > 200)
          throw new Error(
            `the enclave sent no removal: ${JSON.stringify(await Promise.race([removal, new Promise((r) => setTimeout(() => r("(no answer yet)"), 10))]))}`,
          );
        await new Promise((r) => setTimeout(r, 25));
      }
      await rpc("eth_sendTransaction", [
        {
          from: otherPayer,
          to: contract,
          data: removeData,
          maxPriorityFeePerGas: "0x3b9aca000",
          maxFeePerGas: "0x3b9aca0000",
        },
      ]);
      await rpc("evm_mine");
    } finally {
      await rpc("evm_setAutomine", [true]);
      // Whatever happened above, nothing stays pending: the request in flight gets its receipt and settles.
      await rpc("evm_mine");
      failed = await removal!;
    }
    const error = expectError(failed, 404, "group_not_found");
    const sent = (error.details as unknown as { transaction_hash?: string }).transaction_hash;
    expect(sent).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await rpc<{ status: string }>("eth_getTransactionReceipt", [sent])).status).toBe("0x0");
    expect(failed.headers.get("x-sigil-charged-cents")).toBe("1");
    expect(await free(key)).toBe(8);
  });

  it("every other managed write, GET create_wallet included, costs exactly 1 cent, X-Sigil-Charged-Cents: 1, read back from the balance", async () => {
    const key = await newAccount("every write", 100);
    let balance = await free(key);
    /** The write answers 200 with X-Sigil-Charged-Cents: 1, and the ledger has exactly 1 cent less. */
    async function costsOneCent<T>(path: string, call: { method?: string; body?: unknown }): Promise<T> {
      const r = await edge<T>(path, { key, ...call });
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.headers.get("x-sigil-charged-cents"), path).toBe("1");
      const after = await free(key);
      expect(balance - after, `${path}: cents taken from the balance`).toBe(1);
      balance = after;
      return r.body;
    }
    // What the writes act on (each a 1-cent write too).
    const wallet = await costsOneCent<{ wallet_id: string; wallet_address: string }>("create_wallet", {
      method: "POST",
      body: { name: "w", description: "" },
    });
    const { usage_api_key: usage } = await costsOneCent<{ usage_api_key: string }>("add_usage_api_key", {
      body: { name: "u", description: "", ...NO_PERMISSIONS },
    });
    const { group_id: group } = await costsOneCent<{ group_id: string }>("add_group", {
      body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    });
    const { hashed_cid: action } = await costsOneCent<{ hashed_cid: string }>("add_action", {
      body: { action_ipfs_cid: cids[0], name: "a", description: "" },
    });
    expect(balance).toBe(100 - 4);

    const writes: Array<[string, { method?: string; body?: unknown }]> = [
      [
        "update_usage_api_key",
        { body: { usage_api_key: usage, name: "u2", description: "d", ...NO_PERMISSIONS, can_create_groups: true } },
      ],
      ["update_usage_api_key_metadata", { body: { usage_api_key: usage, name: "u3", description: "d3" } }],
      [
        "update_group",
        { body: { group_id: group, name: "g2", description: "d", pkp_ids_permitted: [], cid_hashes_permitted: [] } },
      ],
      ["add_action_to_group", { body: { group_id: group, action_ipfs_cid: cids[1] } }],
      ["remove_action_from_group", { body: { group_id: group, hashed_cid: toHash32(cidHash(cids[1]!)) } }],
      ["add_pkp_to_group", { body: { group_id: group, pkp_id: wallet.wallet_id } }],
      ["remove_pkp_from_group", { body: { group_id: group, pkp_id: wallet.wallet_address } }],
      ["update_action_metadata", { body: { hashed_cid: action, name: "a2", description: "d" } }],
      ["delete_action", { body: { hashed_cid: action } }],
      ["create_wallet", { method: "GET" }],
      ["remove_usage_api_key", { body: { usage_api_key: usage } }],
      ["remove_group", { body: { group_id: group } }],
    ];
    for (const [path, call] of writes) await costsOneCent(path, call);
    expect(balance).toBe(100 - 4 - writes.length);
    // The writes were made: the key, the group and the action are gone; GET made a second wallet;
    // add_action_to_group registered the raw CID it was given, in its one transaction.
    const state = await onChain(key);
    expect(state.list_api_keys.body).toEqual([]);
    expect(state.list_groups.body).toEqual([]);
    expect(state.list_actions.body).toEqual([
      { hashed_cid: toHash32(cidHash(cids[1]!)), action_ipfs_cid: cids[1], name: "", description: "" },
    ]);
    expect(state.list_wallets.body).toHaveLength(3);
  });

  it("reads cost nothing and carry no charge: list_groups, list_actions, list_api_keys, list_wallets, list_wallets_in_group, account_exists, the balance", async () => {
    const key = await newAccount("reader", 10);
    const { group_id: group } = await ok200<{ group_id: string }>("add_group", {
      key,
      body: { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    });
    const { usage_api_key: usage } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body: { name: "u", description: "", ...NO_PERMISSIONS },
    });
    expect(await free(key)).toBe(8);
    for (const [path, caller] of [
      ["list_groups", key],
      ["list_actions", key],
      [`list_actions?group_id=${group}`, key],
      ["list_api_keys", key],
      ["list_wallets", key],
      [`list_wallets_in_group?group_id=${group}`, key],
      ["account_exists", key],
      ["account_exists", usage],
      ["list_groups", usage],
      ["billing/balance", key],
    ] as const) {
      const r = await edge(path, { key: caller });
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      expect([null, "0"], `${path}: X-Sigil-Charged-Cents`).toContain(r.headers.get("x-sigil-charged-cents"));
      expect(await free(key), `${path}: the balance after it`).toBe(8);
    }
  });
});

describe("sigil_action", () => {
  it("with no credit is 402 insufficient_credits", async () => {
    const key = await newAccount("no runs", 1);
    await groupFor(key);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 402, "insufficient_credits");
  });

  it("costs 1 cent per started second, minimum 1: a quick run 1, a 1.5 s run 2", async () => {
    const key = await newAccount("runner", 20);
    await groupFor(key);
    const quick = await edge<{ charged_cents: number; response: string }>("sigil_action", {
      key,
      body: { code: QUICK },
    });
    expect(charged(quick)).toBe(1);
    // The run's signed receipt says what the ledger charged (shared/fees.ts on both sides).
    expect(quick.body).toMatchObject({ response: "quick", charged_cents: 1, receipt: { charged_cents: 1 } });
    const slow = await edge<{
      charged_cents: number;
      duration_ms: number;
      receipt: { charged_cents: number; duration_ms: number };
    }>("sigil_action", { key, body: { code: SLOW } });
    // Past one second, so at least 2 cents. Not necessarily 1 500 ms: time the sandbox's thread spent
    // on its own work meanwhile (preparing the next runtime) is given back to the run, not billed,
    // which on a busy machine was 70 ms of the 1.5 s.
    expect(slow.body.duration_ms).toBeGreaterThan(1000);
    expect(charged(slow)).toBe(Math.max(1, Math.ceil(slow.body.duration_ms / 1000)));
    expect(slow.body.receipt).toMatchObject({ charged_cents: charged(slow), duration_ms: slow.body.duration_ms });
    expect(await free(key)).toBe(20 - 1 - 1 - charged(slow));
  });

  it("a run's own timeout_ms is its limit and the most it costs: an endless run asked for 1.5 s ends in timeout there, charged 2 cents; past the largest limit there is, 400 and nothing held", async () => {
    const key = await newAccount("own limit", 20);
    await groupFor(key);
    const bounded = await edge<{
      charged_cents: number;
      duration_ms: number;
      error: { code: string; message: string };
    }>("sigil_action", { key, body: { code: ENDLESS, timeout_ms: 1500 } });
    expect(charged(bounded)).toBe(2);
    expect(bounded.body.error.code).toBe("timeout");
    expect(bounded.body.error.message).toMatch(/^the script ran past its time limit of 1500 ms/);
    expect(bounded.body.duration_ms).toBeLessThan(2000);
    const tooLong = await edge("sigil_action", { key, body: { code: QUICK, timeout_ms: 900_001 } });
    expectError(tooLong, 400, "invalid_request");
    expect(await ledgerBalance(key)).toEqual({ settledCents: 20 - 1 - 2, heldCents: 0, freeCents: 20 - 1 - 2 });
  });

  it("a run that outlives its credit is stopped at the granted seconds, charged exactly that, code insufficient_credits, logs kept", async () => {
    const key = await newAccount("short of credit", 1 + 2);
    await groupFor(key);
    const r = await edge<{
      has_error: boolean;
      error: { code: string };
      logs: string;
      charged_cents: number;
      duration_ms: number;
    }>("sigil_action", { key, body: { code: ENDLESS } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      has_error: true,
      error: { code: "insufficient_credits" },
      logs: "working\n",
      charged_cents: 2,
      receipt: { has_error: true, charged_cents: 2 },
    });
    expect(r.body.duration_ms).toBeLessThan(3_000);
    expect(await free(key)).toBe(0);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 402, "insufficient_credits");
  });

  it("a run of long built-ins past its granted seconds is ended from outside at the grant and billed exactly the grant, not 1 s and not the scans' 25 s", async () => {
    const key = await newAccount("scans past its credit", 1 + 3);
    await groupFor(key);
    const r = await edge<{
      has_error: boolean;
      error: { code: string };
      logs: string;
      charged_cents: number;
      duration_ms: number;
    }>("sigil_action", { key, body: { code: SCANS } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      has_error: true,
      error: { code: "insufficient_credits" },
      logs: "scanning\n",
      charged_cents: 3,
      duration_ms: 3000,
      receipt: { charged_cents: 3 },
    });
    expect(charged(r)).toBe(3);
    expect(await free(key)).toBe(0);
  });

  it("a client that aborts mid-run does not avoid the charge: the run goes on and is settled at its seconds, its hold freed", async () => {
    const key = await newAccount("leaves early", 100);
    await groupFor(key);
    // The group's charge is in the Ledger (the answer went out before it): what is held next is the run's.
    await free(key);
    const abort = new AbortController();
    const sent = SELF.fetch("http://edge/core/v1/sigil_action", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ code: SLOW }),
      signal: abort.signal,
    }).then(
      () => "answered",
      () => "aborted",
    );
    // The run's hold is there: the request is past billing and on its way to the enclave.
    for (let i = 0; (await ledgerOf(key).balance()).heldCents === 0; i++) {
      if (i > 400) throw new Error("the run never held its credit");
      await new Promise((r) => setTimeout(r, 25));
    }
    abort.abort();
    expect(await sent).toBe("aborted");
    // Settled once the enclave has answered (the run takes 1.5 s); the bound is far beyond that,
    // far short of the hold's expiry (minutes), which would charge the whole hold instead.
    let balance = await ledgerOf(key).balance();
    for (let i = 0; balance.heldCents > 0 && i < 600; i++) {
      await new Promise((r) => setTimeout(r, 50));
      balance = await ledgerOf(key).balance();
    }
    // 1 cent for the group, 2 for the 1.5 s run.
    expect(balance).toEqual({ settledCents: 100 - 1 - 2, heldCents: 0, freeCents: 100 - 1 - 2 });
  });

  it("code that does not compile is 400 compile_error with its line and column, costs nothing and is no run in /usage, allowed or not", async () => {
    const key = await newAccount("uncompiled", 3);
    const broken = "async function main() {\n  return (;\n}";
    const denied = await edge("sigil_action", { key, body: { code: broken } });
    expectError(denied, 400, "compile_error");
    expect(denied.headers.get("x-sigil-charged-cents") ?? "0").toBe("0");
    await ok200("add_group", {
      key,
      body: { group_name: "any", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0"] },
    });
    const allowed = await edge<{ error: { details: unknown } }>("sigil_action", { key, body: { code: broken } });
    expectError(allowed, 400, "compile_error");
    expect(allowed.body.error.details).toEqual({ cid: await computeCid(broken), line: 2, column: 11 });
    // The group's cent, and nothing for either refusal.
    expect(await ledgerBalance(key)).toEqual({ settledCents: 2, heldCents: 0, freeCents: 2 });
    const usage = await edge<{ events: { kind: string }[] }>("usage", { key });
    expect(usage.status).toBe(200);
    expect(usage.body.events.filter((e) => e.kind === "run")).toEqual([]);
  });

  it("code the key may not run is 403 and costs nothing", async () => {
    const key = await newAccount("denied", 2);
    expectError(await edge("sigil_action", { key, body: { code: QUICK } }), 403, "permission_denied");
    expect(await free(key)).toBe(2);
  });
});

describe("spend caps", () => {
  it("a usage key's cap stops that key (402, details.spend_limit) and not the account's other keys", async () => {
    const key = await newAccount("capped", 50);
    await groupFor(key);
    const usage = (permissions: object) =>
      ok200<{ usage_api_key: string }>("add_usage_api_key", {
        key,
        body: { name: "u", description: "", ...NO_PERMISSIONS, execute_in_groups: [0], ...permissions },
      });
    const capped = (await usage({ spend_limit_cents: 2 })).usage_api_key;
    const uncapped = (await usage({})).usage_api_key;
    expect(charged(await edge("sigil_action", { key: capped, body: { code: QUICK } }))).toBe(1);
    expect(charged(await edge("sigil_action", { key: capped, body: { code: QUICK } }))).toBe(1);
    const stopped = await edge<{ error: { details?: { spend_limit?: boolean } } }>("sigil_action", {
      key: capped,
      body: { code: QUICK },
    });
    expectError(stopped, 402, "insufficient_credits");
    expect(stopped.body.error.details?.spend_limit).toBe(true);
    expect(charged(await edge("sigil_action", { key: uncapped, body: { code: QUICK } }))).toBe(1);
    expect(charged(await edge("sigil_action", { key, body: { code: QUICK } }))).toBe(1);
    expect(await free(key)).toBe(50 - 3 - 2 - 1 - 1);
  });
});

describe("keys that may not act", () => {
  it("get the enclave's answer, 401 invalid_api_key, not a 402 for their account's empty ledger", async () => {
    const key = await newAccount("expiring", 2);
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const { usage_api_key: usage } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body: {
        name: "u",
        description: "",
        ...NO_PERMISSIONS,
        can_create_groups: true,
        execute_in_groups: [0],
        expires_at: expiresAt,
      },
    });
    while (Date.now() / 1000 <= expiresAt + 1) await new Promise((resolve) => setTimeout(resolve, 250));
    // The chain judges expiry by its latest block: one more (paid) write mines a block past it.
    await groupFor(key);
    expect(await free(key)).toBe(0);
    expectError(
      await edge("add_group", {
        key: usage,
        body: { group_name: "x", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
      }),
      401,
      "invalid_api_key",
    );
    expectError(await edge("sigil_action", { key: usage, body: { code: QUICK } }), 401, "invalid_api_key");
    const unknown = btoa("u".repeat(32));
    expectError(await edge("create_wallet", { key: unknown, method: "POST" }), 401, "invalid_api_key");
  });
});

describe("concurrency", () => {
  it("50 runs at once on credit for 20 seconds never drive the balance below zero", async () => {
    const key = await newAccount("crowd", 1);
    await groupFor(key);
    await credit(key, 20);
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        edge<{ charged_cents?: number }>("sigil_action", { key, body: { code: QUICK } }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    const paid = ok.reduce((sum, a) => sum + Number(a.headers.get("x-sigil-charged-cents")), 0);
    for (const a of answers) expect([200, 402, 429]).toContain(a.status);
    expect(ok.length).toBeGreaterThan(0);
    expect(paid).toBeLessThanOrEqual(20);
    const balance = await ledgerBalance(key);
    expect(balance.freeCents).toBe(20 - paid);
    expect(balance.settledCents).toBeGreaterThanOrEqual(0);
  });
});

describe("the audit every billing test ends with (ledgers.ts)", () => {
  it("finds a ledger no helper registered and reports a hold left behind or a balance that is not the sum of its entries", async () => {
    // An account made around the helper; the edge makes its ledger (to keep new_account's email).
    const { api_key: key } = await ok200<{ api_key: string }>("new_account", {
      body: { account_name: "unregistered", email: "audit@example.com" },
    });
    const stub = namespace.get(namespace.idFromName(apiKeyHash(key).toString(16).padStart(64, "0")));
    expect((await listDurableObjectIds(namespace)).map(String)).toContain(stub.id.toString());
    expect(await auditFailures()).toEqual([]);
    await stub.credit("pi_audit_probe", 5);
    expect((await stub.hold("left-behind", 2, 60_000)).granted).toBe(2);
    const leaked = await auditFailures();
    expect(leaked).toHaveLength(1);
    expect(leaked[0]).toContain('"holdRows":1');
    await stub.release("left-behind");
    expect(await auditFailures()).toEqual([]);
    await runInDurableObject(
      stub,
      (_ledger, state) =>
        void state.storage.sql.exec("UPDATE account SET settled_cents = settled_cents + 1 WHERE id = 1"),
    );
    const drifted = await auditFailures();
    expect(drifted).toHaveLength(1);
    expect(drifted[0]).toContain('"consistent":false');
    await runInDurableObject(
      stub,
      (_ledger, state) =>
        void state.storage.sql.exec("UPDATE account SET settled_cents = settled_cents - 1 WHERE id = 1"),
    );
    expect(await auditFailures()).toEqual([]);
  });
});
