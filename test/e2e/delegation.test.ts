// Delegated keys (docs/design/delegation.md) against the real local stack — the enclave mints and
// checks them, the edge's Delegations store counts their uses and keeps revocations: a usage key
// whose guardrail allows it mints children (a master key, or a usage key without the section, may
// not); a child runs what it names and nothing more (action, wallet, group), whatever blocks a holder
// adds to it by hand — a block cannot widen it, a changed block or a forged tag is refused and costs
// the root's account nothing; a used-up, expired, revoked child is refused, a revoked child's narrowed
// keys with it and its siblings not; removing the root usage key on chain refuses every child within
// the permission cache's bound; the receipt names the chain; a delegated key drives MCP and cannot write.
import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Address } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import {
  attenuate,
  decodeDelegatedKey,
  encodeDelegatedKey,
  type DelegationBlock,
  type DelegationToken,
} from "../../shared/delegation.ts";
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet, message }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}`;
const OTHER = `async function main() { return "other"; }`;

let stack: SharedLocalStack;
let anon: SigilClient;
let owner: SigilClient;
let usageKey: string;
let parent: SigilClient;
let cid: string;
let otherCid: string;
let walletA: Address;
let walletB: Address;
let groupBoth: string;
let groupB: string;
let groupIds: string[];

const now = () => Math.floor(Date.now() / 1000);
const as = (key: string) => anon.with({ apiKey: key });

/** The error a call ends with (a SigilError from the SDK), or a failure if it answers. */
async function refusal(call: Promise<unknown>): Promise<{ status: number; code: string; message: string }> {
  try {
    await call;
  } catch (err) {
    return err as { status: number; code: string; message: string };
  }
  throw new Error("the call was not refused");
}

const sign = (key: string, wallet: Address, action = cid, message = "hello") =>
  as(key).sigilAction({ ipfs_id: action, js_params: { wallet, message } });

/** `token` with one more block, tagged as a holder can tag it — without attenuate's checks. */
function forceBlock(token: DelegationToken, block: Omit<DelegationBlock, "id">): string {
  const full = { ...block, id: bytesToHex(randomBytes(16)) } as DelegationBlock;
  const tag = hmac(sha256, hexToBytes(token.tag), utf8ToBytes(canonicalJson(full)));
  return encodeDelegatedKey({ ...token, blocks: [...token.blocks, full], tag: bytesToHex(tag) });
}

async function addScript(code: string): Promise<string> {
  const id = await owner.getSigilActionIpfsId(code);
  expect(await (await fetch(`${stack.gatewayUrl}/add`, { method: "POST", body: code })).json()).toMatchObject({
    cid: id,
  });
  return id;
}

beforeAll(async () => {
  stack = inject("localStack");
  anon = createSigilClient({ baseUrl: stack.origin });
  owner = as((await anon.newAccount({ account_name: "delegating" })).api_key);
  await topUp(owner, { amountCents: 500 });
  walletA = (await owner.createWallet({ name: "a" })).wallet_address as Address;
  walletB = (await owner.createWallet({ name: "b" })).wallet_address as Address;
  cid = await addScript(SIGN);
  otherCid = await addScript(OTHER);
  groupBoth = (
    await owner.addGroup({
      group_name: "both",
      group_description: "",
      pkp_ids_permitted: [walletA, walletB],
      cid_hashes_permitted: [cid, otherCid],
    })
  ).group_id;
  groupB = (
    await owner.addGroup({
      group_name: "b only",
      group_description: "",
      pkp_ids_permitted: [walletB],
      cid_hashes_permitted: [cid],
    })
  ).group_id;
  groupIds = [groupBoth, groupB];
  usageKey = (
    await owner.addUsageApiKey({ name: "agent", description: "", ...NO_PERMISSIONS, execute_in_groups: groupIds })
  ).usage_api_key;
  await owner.setUsageKeyGuardrail({
    usage_api_key: usageKey,
    guardrail: { version: 1, messages: {}, delegation: { max_lifetime_seconds: 3600 } },
  });
  parent = as(usageKey);
}, 120_000);

describe("minting", () => {
  it("is a usage key's whose guardrail has a delegation section, never the master key's or another usage key's", async () => {
    expect(await refusal(owner.delegateKey({ caveats: { expires_at: now() + 60 } }))).toMatchObject({
      status: 403,
      code: "permission_denied",
    });
    const plain = (
      await owner.addUsageApiKey({ name: "plain", description: "", ...NO_PERMISSIONS, execute_in_groups: groupIds })
    ).usage_api_key;
    const refused = await refusal(as(plain).delegateKey({ caveats: { expires_at: now() + 60 } }));
    expect(refused).toMatchObject({ status: 403, code: "permission_denied" });
    expect(refused.message).toMatch(/delegation section/);
  });

  it("holds the guardrail's lifetime: an expiry is required, within max_lifetime_seconds", async () => {
    expect(await refusal(parent.delegateKey({ caveats: { max_uses: 1 } }))).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
    expect(await refusal(parent.delegateKey({ caveats: { expires_at: now() + 7200 } }))).toMatchObject({
      status: 400,
    });
  });

  it("answers count keys, each with its own id, naming the usage key", async () => {
    const minted = await parent.delegateKey({ caveats: { expires_at: now() + 600, max_uses: 1 }, count: 50 });
    expect(minted.keys).toHaveLength(50);
    expect(new Set(minted.ids).size).toBe(50);
    expect(minted.root).toBe(toHash32(apiKeyHash(usageKey)));
    for (const [i, key] of minted.keys.entries()) expect(decodeDelegatedKey(key).blocks[0]?.id).toBe(minted.ids[i]);
  });
});

describe("a child runs what it names and nothing more", () => {
  it("signs with its wallet, names its chain in the receipt, and is refused another wallet or action", async () => {
    const { keys, ids } = await parent.delegateKey({
      caveats: { expires_at: now() + 600, wallets: [walletA.toLowerCase()], actions: [cid] },
    });
    const child = keys[0] as string;
    const run = await sign(child, walletA);
    expect(run.has_error).toBe(false);
    expect(run.receipt?.delegation).toEqual({ root: toHash32(apiKeyHash(usageKey)), blocks: [ids[0]] });
    const other = await sign(child, walletB);
    expect(other.has_error).toBe(true);
    expect(other.error?.code).toBe("permission_denied");
    expect(await refusal(sign(child, walletA, otherCid))).toMatchObject({ status: 403, code: "permission_denied" });
    // The parent itself may use both.
    expect((await sign(usageKey, walletB)).has_error).toBe(false);
  });

  it("in a group: only its actions and wallets", async () => {
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 600, groups: [groupB] } }))
      .keys[0] as string;
    expect((await sign(child, walletB)).has_error).toBe(false);
    expect((await sign(child, walletA)).error?.code).toBe("permission_denied");
    expect(await refusal(sign(child, walletB, otherCid))).toMatchObject({ status: 403, code: "permission_denied" });
  });

  it("cannot be widened by a block a holder adds by hand, in any dimension; attenuate refuses to make one", async () => {
    const minted = await parent.delegateKey({
      caveats: {
        expires_at: now() + 600,
        max_uses: 3,
        wallets: [walletA.toLowerCase()],
        groups: [groupBoth],
        actions: [cid],
      },
    });
    const token = decodeDelegatedKey(minted.keys[0] as string);
    const wider = forceBlock(token, {
      expires_at: now() + 3000,
      max_uses: 100,
      wallets: [walletA.toLowerCase(), walletB.toLowerCase()],
      groups: [groupBoth, groupB],
      actions: [cid, otherCid],
    });
    expect((await sign(wider, walletB)).error?.code).toBe("permission_denied");
    expect(await refusal(sign(wider, walletA, otherCid))).toMatchObject({ status: 403 });
    expect((await sign(wider, walletA)).has_error).toBe(false);
    expect((await sign(wider, walletA)).has_error).toBe(false);
    // The first block's three uses (one went to the refused wallet) are all the wider one gets.
    expect(await refusal(sign(wider, walletA))).toMatchObject({ status: 401, code: "invalid_api_key" });
    for (const [caveat, value] of [
      ["wallets", [walletB.toLowerCase()]],
      ["actions", [otherCid]],
      ["groups", [groupB]],
      ["max_uses", 100],
      ["expires_at", now() + 3000],
    ] as const)
      expect(() => attenuate(token, { [caveat]: value }), caveat).toThrow(/not this key's|at most|outlive/);
  });

  it("refuses a changed block or a forged tag, and the root's account pays nothing for either", async () => {
    const minted = await parent.delegateKey({ caveats: { expires_at: now() + 600, wallets: [walletA.toLowerCase()] } });
    const token = decodeDelegatedKey(minted.keys[0] as string);
    const changed = encodeDelegatedKey({
      ...token,
      blocks: [{ ...(token.blocks[0] as DelegationBlock), wallets: [walletB.toLowerCase()] }],
    });
    const forged = encodeDelegatedKey({ ...token, tag: bytesToHex(randomBytes(32)) });
    const before = await owner.getBalance();
    for (const key of [changed, forged]) {
      expect(await refusal(sign(key, walletA))).toMatchObject({ status: 401, code: "invalid_api_key" });
      expect(await refusal(as(key).listWallets())).toMatchObject({ status: 401, code: "invalid_api_key" });
    }
    expect((await owner.getBalance()).balance_cents).toBe(before.balance_cents);
  });

  it("drives Sigil over MCP: lists its wallets and runs its action; another wallet is refused", async () => {
    const child = (
      await parent.delegateKey({ caveats: { expires_at: now() + 600, wallets: [walletA.toLowerCase()], max_uses: 5 } })
    ).keys[0] as string;
    const transport = new StreamableHTTPClientTransport(new URL(`${stack.origin}/core/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${child}` } },
    });
    const client = new Client({ name: "sigil-delegation-test", version: "1.0.0" });
    await client.connect(transport as Transport);
    try {
      const ran = await client.callTool({
        name: "run_action",
        arguments: { ipfs_id: cid, js_params: { wallet: walletA, message: "hi" } },
      });
      expect(ran.isError ?? false).toBe(false);
      const refused = await client.callTool({
        name: "run_action",
        arguments: { ipfs_id: cid, js_params: { wallet: walletB, message: "hi" } },
      });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toMatch(/permission_denied/);
    } finally {
      await client.close();
    }
  });

  it("in a group that lists any wallet (the zero address): any of the account's wallets", async () => {
    const anyGroup = (
      await owner.addGroup({
        group_name: "any wallet",
        group_description: "",
        pkp_ids_permitted: ["0x0000000000000000000000000000000000000000"],
        cid_hashes_permitted: [cid],
      })
    ).group_id;
    const key = (
      await owner.addUsageApiKey({ name: "any", description: "", ...NO_PERMISSIONS, execute_in_groups: [anyGroup] })
    ).usage_api_key;
    await owner.setUsageKeyGuardrail({ usage_api_key: key, guardrail: { version: 1, messages: {}, delegation: {} } });
    const child = (await as(key).delegateKey({ caveats: { groups: [anyGroup] } })).keys[0] as string;
    expect((await sign(child, walletA)).has_error).toBe(false);
    expect((await sign(child, walletB)).has_error).toBe(false);
  });

  it("reads as its root and cannot write", async () => {
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 600 } })).keys[0] as string;
    const wallets = await as(child).listWallets();
    expect(wallets.map((w) => w.wallet_address.toLowerCase())).toContain(walletA.toLowerCase());
    expect(await refusal(as(child).createWallet({ name: "x" }))).toMatchObject({
      status: 403,
      code: "permission_denied",
    });
    // Nor by the deprecated GET that writes.
    const byGet = await fetch(`${stack.origin}/core/v1/create_wallet`, {
      headers: { authorization: `Bearer ${child}` },
    });
    expect(byGet.status).toBe(403);
    expect(await refusal(as(child).delegateKey({ caveats: { max_uses: 1 } }))).toMatchObject({ status: 403 });
  });
});

describe("bounded and revoked", () => {
  it("a block's budget counts every signature through it, across wallets; a narrowed key's own budget is counted too", async () => {
    const { keys } = await parent.delegateKey({
      caveats: { expires_at: now() + 600, budget: { window_seconds: 3600, max_signatures: 3 } },
    });
    const child = keys[0] as string;
    const grandchild = encodeDelegatedKey(
      attenuate(decodeDelegatedKey(child), { budget: { window_seconds: 3600, max_signatures: 1 } }),
    );
    // A budget counts a payload once (the same message to the same wallet again is not a new signature).
    expect((await sign(grandchild, walletA, cid, "one")).has_error).toBe(false);
    const over = await sign(grandchild, walletB, cid, "two");
    expect(over.error?.code).toBe("guardrail_denied");
    expect(over.error?.message).toMatch(/delegation\.budget/);
    // The child's block counted the grandchild's signature: two left of its three.
    expect((await sign(child, walletB, cid, "three")).has_error).toBe(false);
    expect((await sign(child, walletA, cid, "four")).has_error).toBe(false);
    expect((await sign(child, walletA, cid, "five")).error?.code).toBe("guardrail_denied");
  });

  it("never reads a wallet's private key", async () => {
    const exportCid = await addScript(
      "async function main({ wallet }) { return await Sigil.Actions.getPrivateKey({ pkpId: wallet }); }",
    );
    await owner.addActionToGroup({ group_id: groupBoth, action_ipfs_cid: exportCid });
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 600 } })).keys[0] as string;
    const run = await as(child).sigilAction({ ipfs_id: exportCid, js_params: { wallet: walletA } });
    expect(run.error?.code).toBe("permission_denied");
    expect(run.error?.message).toMatch(/private key/);
  });

  it("a used-up child is refused; a one-use key runs once", async () => {
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 600, max_uses: 1 } })).keys[0] as string;
    expect((await sign(child, walletA)).has_error).toBe(false);
    const refused = await refusal(sign(child, walletA));
    expect(refused).toMatchObject({ status: 401, code: "invalid_api_key" });
    expect(refused.message).toMatch(/used/);
  });

  it("an expired child is refused", async () => {
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 2 } })).keys[0] as string;
    expect((await sign(child, walletA)).has_error).toBe(false);
    await new Promise((r) => setTimeout(r, 3_000));
    const refused = await refusal(sign(child, walletA));
    expect(refused).toMatchObject({ status: 401, code: "invalid_api_key" });
    expect(refused.message).toMatch(/expired/);
  });

  it("a revoked child is refused from the next run, with every key narrowed from it; its siblings are not", async () => {
    const { keys, ids } = await parent.delegateKey({ caveats: { expires_at: now() + 600 }, count: 2 });
    const [child, sibling] = keys as [string, string];
    const grandchild = encodeDelegatedKey(attenuate(decodeDelegatedKey(child), { max_uses: 5 }));
    expect((await sign(grandchild, walletA)).has_error).toBe(false);
    // The grandchild may not revoke its parent (and so its siblings); the child may revoke itself.
    expect(await refusal(as(grandchild).revokeDelegation({ id: ids[0] as string }))).toMatchObject({
      status: 403,
      code: "permission_denied",
    });
    const revoked = await as(child).revokeDelegation({ id: ids[0] as string });
    expect(revoked).toMatchObject({ id: ids[0], revoked: true, already_revoked: false });
    for (const key of [child, grandchild])
      expect(await refusal(sign(key, walletA))).toMatchObject({ status: 401, code: "invalid_api_key" });
    expect((await sign(sibling, walletA)).has_error).toBe(false);
    expect((await owner.revokeDelegation({ id: ids[0] as string })).already_revoked).toBe(true);
    // A revoked key reads nothing either, once the edge asks the store again (STANDING_MS, 2 s; its runs at once).
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await refusal(as(grandchild).listWallets())).toMatchObject({ status: 401, code: "invalid_api_key" });
  });

  it("who revokes what: the usage key a key it minted (by the key), a delegated key one narrowed from it, the master key any by id", async () => {
    const { keys, ids } = await parent.delegateKey({ caveats: { expires_at: now() + 600 }, count: 3 });
    const [a, b, c] = keys as [string, string, string];
    // A usage key does not name ids (it could not tell its own from another key's): 403; by the key itself, done.
    expect(await refusal(parent.revokeDelegation({ id: ids[0] as string }))).toMatchObject({ status: 403 });
    expect(await parent.revokeDelegation({ key: a })).toMatchObject({ id: ids[0], revoked: true });
    // Another usage key of the account may not revoke this one's keys.
    const other = (
      await owner.addUsageApiKey({ name: "other", description: "", ...NO_PERMISSIONS, execute_in_groups: groupIds })
    ).usage_api_key;
    expect(await refusal(as(other).revokeDelegation({ key: b }))).toMatchObject({ status: 403 });
    // A sibling is not narrowed from b: 403; a key narrowed from b is b's to revoke.
    expect(await refusal(as(c).revokeDelegation({ key: b }))).toMatchObject({ status: 403 });
    const narrowed = encodeDelegatedKey(attenuate(decodeDelegatedKey(b), { max_uses: 2 }));
    expect((await as(b).revokeDelegation({ key: narrowed })).revoked).toBe(true);
    expect(await refusal(sign(narrowed, walletA))).toMatchObject({ status: 401 });
    expect((await sign(b, walletA)).has_error).toBe(false);
    // A forged key to revoke is refused as a key is.
    const forged = encodeDelegatedKey({ ...decodeDelegatedKey(c), tag: bytesToHex(randomBytes(32)) });
    expect(await refusal(owner.revokeDelegation({ key: forged }))).toMatchObject({ status: 401 });
  });

  it("counts uses by the chain, not by an id: a block copied into another chain spends nothing of the original's", async () => {
    const { keys, ids } = await parent.delegateKey({ caveats: { expires_at: now() + 600, max_uses: 1 }, count: 2 });
    const [victim, thief] = keys as [string, string];
    const thiefToken = decodeDelegatedKey(thief);
    const copied = { id: ids[0] as string, max_uses: 1 } as DelegationBlock;
    const tag = hmac(sha256, hexToBytes(thiefToken.tag), utf8ToBytes(canonicalJson(copied)));
    const stolen = encodeDelegatedKey({ ...thiefToken, blocks: [...thiefToken.blocks, copied], tag: bytesToHex(tag) });
    expect((await sign(stolen, walletA)).has_error).toBe(false);
    // The victim's one use is still its own.
    expect((await sign(victim, walletA)).has_error).toBe(false);
    expect(await refusal(sign(victim, walletA))).toMatchObject({ status: 401 });
  });

  it("a dry run counts a use (it may use the wallets' keys as a run does); a used-up key reads nothing", async () => {
    const child = (await parent.delegateKey({ caveats: { expires_at: now() + 600, max_uses: 1 } })).keys[0] as string;
    const dry = await as(child).sigilAction({
      ipfs_id: cid,
      js_params: { wallet: walletA, message: "x" },
      dry_run: true,
    });
    expect(dry.has_error).toBe(false);
    expect(await refusal(sign(child, walletA))).toMatchObject({ status: 401, code: "invalid_api_key" });
    // Reads look at the store at most every 2 s (delegations/verify.ts STANDING_MS).
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await refusal(as(child).listWallets())).toMatchObject({ status: 401, code: "invalid_api_key" });
  });

  it("ends when the usage key's guardrail stops allowing delegation", async () => {
    const root = (
      await owner.addUsageApiKey({ name: "withdrawn", description: "", ...NO_PERMISSIONS, execute_in_groups: groupIds })
    ).usage_api_key;
    await owner.setUsageKeyGuardrail({ usage_api_key: root, guardrail: { version: 1, messages: {}, delegation: {} } });
    const child = (await as(root).delegateKey({ caveats: { max_uses: 10 } })).keys[0] as string;
    expect((await sign(child, walletA)).has_error).toBe(false);
    await owner.setUsageKeyGuardrail({ usage_api_key: root, guardrail: { version: 1, messages: {} } });
    let status = 0;
    for (let i = 0; i < 80 && status !== 401; i++) {
      status = (await refusal(sign(child, walletA)).catch(() => ({ status: 200 }))).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
  }, 60_000);

  it("removing the root usage key on chain refuses every child within the permission cache's bound", async () => {
    const root = (
      await owner.addUsageApiKey({
        name: "short-lived",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: groupIds,
      })
    ).usage_api_key;
    await owner.setUsageKeyGuardrail({ usage_api_key: root, guardrail: { version: 1, messages: {}, delegation: {} } });
    const { keys } = await as(root).delegateKey({ caveats: { max_uses: 100 }, count: 2 });
    const [a, b] = keys as [string, string];
    const narrowed = encodeDelegatedKey(attenuate(decodeDelegatedKey(b), { wallets: [walletA.toLowerCase()] }));
    expect((await sign(a, walletA)).has_error).toBe(false);
    await owner.removeUsageApiKey({ usage_api_key: root });
    const removedAt = Date.now();
    // The listener's poll (SIGIL_LISTENER_POLL_MS) drops the key from the permission cache.
    for (const key of [a, narrowed]) {
      let status = 0;
      while (Date.now() - removedAt < 20_000) {
        status = (await refusal(sign(key, walletA)).catch(() => ({ status: 200 }))).status;
        if (status === 401) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(status).toBe(401);
    }
  }, 60_000);
});
