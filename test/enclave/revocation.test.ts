// Revocations meeting the permission cache, where runs rely on them (docs/design/keys-and-authz.md, "Permission
// cache and chain listener"): a grant the cache holds must not be served once it is revoked.
//
// - Through the API: the enclave's own write drops the account's entries before it answers, so a
//   run sent the moment the revocation is answered is refused. On an enclave of its own whose chain
//   listener polls once at start and then sleeps for ten minutes: nothing but the write can drop
//   the entries, so a write that forgot to would be caught every time, not only when the run beats
//   the listener's next poll.
// - On chain, by the admin's own transaction: the chain listener reads the revocation's block and
//   drops the entries. Issue 26: the one test of this (chainSecured.test.ts) was masked — the
//   listener reads the last SIGIL_LISTENER_REORG_DEPTH blocks again on every poll, and they still
//   held the test's setup, whose events named the same account and dropped its entries whatever the
//   listener did with the revocation. Here empty blocks are mined between the setup and the warm-up,
//   and the test waits (GET /health's last_block, no timed sleep) until the listener has read the
//   revocation's block, then runs once: refused, or the rule is broken.
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  parseEventLogs,
  type Address,
  type Hex,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { computeCid } from "../../shared/cid.ts";
import { buildTypedData, signableTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { cidHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { leaveReadWindow, listenerHasRead } from "../harness/listener.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import { ok, run, type Reply, type RunResult } from "./client.ts";
import { callAt, okAt, startOwnEnclave } from "./ownEnclave.ts";

const SIGN = `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "revocation" }); }`;
/** An action that uses no wallet, for the revocations of an action. */
const PLAIN = `async function main() { return "ran" }`;

function expectRefusedInScript(r: Reply<RunResult>): void {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, `the revoked wallet still signed: ${JSON.stringify(r.body)}`).toBe(true);
  expect(r.body.error?.code, JSON.stringify(r.body)).toBe("permission_denied");
}

function expectRefused(r: Reply<RunResult>, status: number, code: string): void {
  expect(r.status, `the revoked permission still ran: ${JSON.stringify(r.body)}`).toBe(status);
  expect((r.body as unknown as { error: { code: string } }).error.code).toBe(code);
}

/** The run ran to its end without an error (a signing script signed). */
function expectSigned(r: Reply<RunResult>): void {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
}

describe("a revocation through the API, answered: the next run is refused at once", () => {
  let enclave: EnclaveProcess | undefined;
  let base: string;
  let apiKey: string;
  let wallet: Address;
  let groupId: string;
  let signCid: string;

  beforeAll(async () => {
    // Its listener polls at start and then not for ten minutes: only the writes can drop entries.
    enclave = await startOwnEnclave({
      instanceIndex: 26,
      registerPayers: true,
      env: { SIGIL_LISTENER_POLL_MS: "600000" },
    });
    base = enclave.url;
    apiKey = (await okAt<{ api_key: string }>(base, "new_account", { account_name: "revoked through the API" }))
      .api_key;
    wallet = (await okAt<{ wallet_address: Address }>(base, "create_wallet", { api_key: apiKey, name: "w" }))
      .wallet_address;
    signCid = await computeCid(SIGN);
    groupId = (
      await okAt<{ group_id: string }>(base, "add_group", {
        api_key: apiKey,
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [wallet],
        cid_hashes_permitted: [signCid],
      })
    ).group_id;
  });

  afterAll(async () => {
    await enclave?.stop();
  });

  it("remove_pkp_from_group: the wallet's cached grant is gone before the answer", async () => {
    // Twice: the grant is cached, and the second run is even offered the wallet's key from it.
    expectSigned(await callAt<RunResult>(base, "sigil_action", { api_key: apiKey, code: SIGN, js_params: { wallet } }));
    expectSigned(await callAt<RunResult>(base, "sigil_action", { api_key: apiKey, code: SIGN, js_params: { wallet } }));
    await okAt(base, "remove_pkp_from_group", { api_key: apiKey, group_id: groupId, pkp_id: wallet });
    expectRefusedInScript(
      await callAt<RunResult>(base, "sigil_action", { api_key: apiKey, code: SIGN, js_params: { wallet } }),
    );
  });

  it("remove_action_from_group: the cached permission to run the action is gone before the answer (403)", async () => {
    const code = `async function main() { return "still runs" }`;
    const cid = await computeCid(code);
    const group = (
      await okAt<{ group_id: string }>(base, "add_group", {
        api_key: apiKey,
        group_name: "a",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [cid],
      })
    ).group_id;
    expectSigned(await callAt<RunResult>(base, "sigil_action", { api_key: apiKey, code }));
    await okAt(base, "remove_action_from_group", {
      api_key: apiKey,
      group_id: group,
      hashed_cid: toHash32(cidHash(cid)),
    });
    expectRefused(await callAt<RunResult>(base, "sigil_action", { api_key: apiKey, code }), 403, "permission_denied");
  });

  it("remove_usage_api_key: the key's cached resolution is gone before the answer (401)", async () => {
    const code = `async function main() { return "usage key runs" }`;
    const group = (
      await okAt<{ group_id: string }>(base, "add_group", {
        api_key: apiKey,
        group_name: "u",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [await computeCid(code)],
      })
    ).group_id;
    const usage = (
      await okAt<{ usage_api_key: string }>(base, "add_usage_api_key", {
        api_key: apiKey,
        name: "k",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: [group],
      })
    ).usage_api_key;
    expectSigned(await callAt<RunResult>(base, "sigil_action", { api_key: usage, code }));
    await okAt(base, "remove_usage_api_key", { api_key: apiKey, usage_api_key: usage });
    expectRefused(await callAt<RunResult>(base, "sigil_action", { api_key: usage, code }), 401, "invalid_api_key");
  });
});

describe("a revocation on chain by the admin's own transaction: refused once the listener has read its block", () => {
  const rpc = () => http(inject("rpcUrl"));
  const publicClient = () => createPublicClient({ transport: rpc(), pollingInterval: 50 });
  let send: (functionName: string, args: readonly unknown[]) => Promise<TransactionReceipt>;
  let master: bigint;
  let usageKey: string;
  let wallet: Address;
  let groupId: bigint;

  beforeAll(async () => {
    const admin = privateKeyToAccount(generatePrivateKey());
    await createTestClient({ mode: "anvil", transport: rpc() }).setBalance({
      address: admin.address,
      value: 10n ** 20n,
    });
    const walletClient = createWalletClient({ account: admin, transport: rpc() });
    send = async (functionName, args) => {
      const hash = await walletClient.writeContract({
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
    const signed = async (primaryType: SigilPrimaryType) => {
      const typed = buildTypedData({
        primaryType,
        chainId: await publicClient().getChainId(),
        address: admin.address,
        issuedAt: BigInt(Math.floor(Date.now() / 1000)),
      });
      return { typed_data: typed, signature: await admin.signTypedData(signableTypedData(typed)) };
    };
    master = walletLookupHash(admin.address);
    const pkp = await ok<{ wallet_address: Address; derivation_path: Hex; master_wallet_address: Address }>(
      "create_wallet_with_signature",
      await signed("CreateWallet"),
    );
    wallet = pkp.wallet_address;
    await send("newChainSecuredAccount", ["revoked on chain", "", pkp.master_wallet_address]);
    await send("registerWalletDerivation", [master, wallet, BigInt(pkp.derivation_path), "pkp", ""]);
    const usage = await ok<{ usage_api_key: string; usage_api_key_hash: Hex }>(
      "add_usage_api_key_with_signature",
      await signed("AddUsageApiKey"),
    );
    usageKey = usage.usage_api_key;
    const cids = [await computeCid(SIGN), await computeCid(PLAIN)];
    await send("registerActions", [master, 0n, cids]);
    const receipt = await send("addGroup", [master, "g", "", cids.map(cidHash), [wallet]]);
    groupId =
      parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs, eventName: "GroupAdded" })[0]?.args.groupId ?? 0n;
    await send("setUsageApiKey", [
      master,
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

  it("removePkpFromGroup (PkpRemovedFromGroup): the wallet's cached grant is not served after the listener has read it", async () => {
    await leaveReadWindow(inject("rpcUrl"), inject("enclaveUrl"));
    expectSigned(await run(usageKey, SIGN, { wallet }));
    expectSigned(await run(usageKey, SIGN, { wallet }));
    const revoked = await send("removePkpFromGroup", [master, groupId, wallet]);
    await listenerHasRead(inject("enclaveUrl"), revoked.blockNumber);
    expectRefusedInScript(await run(usageKey, SIGN, { wallet }));
  });

  it("removeActionFromGroup (ActionRemovedFromGroup): the cached permission to run is not served after the listener has read it (403)", async () => {
    await leaveReadWindow(inject("rpcUrl"), inject("enclaveUrl"));
    expectSigned(await run(usageKey, PLAIN));
    const revoked = await send("removeActionFromGroup", [master, groupId, cidHash(await computeCid(PLAIN))]);
    await listenerHasRead(inject("enclaveUrl"), revoked.blockNumber);
    expectRefused(await run(usageKey, PLAIN), 403, "permission_denied");
  });
});
