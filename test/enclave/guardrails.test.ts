// Guardrails as the enclave enforces them (docs/design/guardrails.md), against the real chain: a
// guardrail set through the managed write, kept on chain, read back by the enclave, and checked
// before every signature a script asks a guarded wallet for — what it allows is signed, what it
// does not fails the script's call with guardrail_denied naming the rule and the value seen, and the
// run goes on. A wallet without a guardrail, and a usage key trying to set one, are the controls.
import {
  encodeFunctionData,
  getAddress,
  hashMessage,
  keccak256,
  parseAbi,
  parseTransaction,
  recoverAddress,
  recoverMessageAddress,
  toBytes,
  type Address,
  type Hex,
} from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { noPermissions } from "../../shared/permissions.ts";
import { callEnclave, ok, run, type RunResult } from "./client.ts";

const ALICE = "0x00000000000000000000000000000000000a11ce";
const MALLORY = "0x000000000000000000000000000000000000bad0";
const TOKEN = "0x1111111111111111111111111111111111111111";
const ERC20 = parseAbi([
  "function transfer(address to, uint256 amount)",
  "function approve(address spender, uint256 amount)",
]);

const GUARDRAIL = {
  version: 1,
  name: "treasury",
  transactions: {
    chains: [1],
    max_value_wei: "1000",
    transfers: { allow: [ALICE] },
    contracts: [
      {
        address: TOKEN,
        functions: [{ signature: "function transfer(address to, uint256 amount)", args: { amount: { lte: "50" } } }],
      },
    ],
  },
  messages: { pattern: "hello*" },
};

/** A script that asks for one signature and answers what came of it: the result, or the error's code and details. */
const TRY = `async function main({ wallet, op, args }) {
  try {
    return { ok: await Sigil.Actions[op]({ pkpId: wallet, ...args }) };
  } catch (e) {
    return { code: e.code ?? null, message: e.message, details: e.details ?? null };
  }
}`;

let apiKey: string;
let guarded: Address;
let open: Address;

async function attempt(wallet: Address, op: string, args: Record<string, unknown>) {
  const r = await run(apiKey, TRY, { wallet, op, args });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
  return r.body.response as { ok?: unknown; code?: string; message?: string; details?: Record<string, unknown> };
}

const tx = (t: Record<string, unknown>) => ({
  transaction: {
    type: "eip1559",
    nonce: 0,
    gas: "50000",
    maxFeePerGas: "1",
    maxPriorityFeePerGas: "1",
    chainId: 1,
    ...t,
  },
});

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "guardrails" })).api_key;
  guarded = getAddress((await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey })).wallet_address);
  open = getAddress((await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey })).wallet_address);
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any",
    group_description: "",
    pkp_ids_permitted: [guarded, open],
    cid_hashes_permitted: ["0"],
  });
  const set = await ok<{ guardrail_hash: Hex; transaction_hash: Hex }>("set_wallet_guardrail", {
    api_key: apiKey,
    wallet_address: guarded,
    guardrail: GUARDRAIL,
  });
  // The hash is of the document's canonical JSON, addresses as the schema keeps them (lowercase).
  expect(set.guardrail_hash).toBe(keccak256(toBytes(canonicalJson(GUARDRAIL))));
}, 120_000);

describe("a guarded wallet", () => {
  it("signs a transaction its guardrail allows: a transfer to a listed recipient under the cap", async () => {
    const answer = await attempt(guarded, "signTransaction", tx({ to: ALICE, value: "1000" }));
    const signed = answer.ok as Hex;
    expect(signed).toMatch(/^0x02/);
    expect(parseTransaction(signed)).toMatchObject({ to: ALICE, value: 1000n, chainId: 1 });
  });

  it("refuses another chain, more value, another recipient: guardrail_denied with the rule and the value seen, the run going on", async () => {
    const chain = await attempt(guarded, "signTransaction", tx({ to: ALICE, value: "1", chainId: 5 }));
    expect(chain).toMatchObject({
      code: "guardrail_denied",
      details: { allowed: false, rule: "transactions.chains", observed: "5" },
    });
    expect(chain.message).toContain("guardrail refused this at transactions.chains: chain 5 is not one of 1");
    expect(chain.details?.guardrail).toBe(keccak256(toBytes(canonicalJson(GUARDRAIL))));
    expect(await attempt(guarded, "signTransaction", tx({ to: ALICE, value: "1001" }))).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "transactions.max_value_wei", observed: "1001" },
    });
    expect(await attempt(guarded, "signTransaction", tx({ to: MALLORY, value: "1" }))).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "transactions.transfers.allow", observed: MALLORY },
    });
  });

  it("checks a contract call's decoded arguments: at the cap signed, over it or another function refused", async () => {
    const call = (fn: "transfer" | "approve", amount: bigint) =>
      tx({ to: TOKEN, data: encodeFunctionData({ abi: ERC20, functionName: fn, args: [MALLORY, amount] }) });
    expect((await attempt(guarded, "signTransaction", call("transfer", 50n))).ok).toMatch(/^0x02/);
    expect(await attempt(guarded, "signTransaction", call("transfer", 51n))).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "transactions.contracts[0].functions[0].args.amount", observed: "51" },
    });
    expect(await attempt(guarded, "signTransaction", call("approve", 1n))).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "transactions.contracts[0].functions" },
    });
  });

  it("cannot be got round: a raw digest, the key's export and typed data are refused; a matching message is signed", async () => {
    expect(await attempt(guarded, "signDigest", { digest: `0x${"ab".repeat(32)}` })).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "raw_digests" },
    });
    expect(await attempt(guarded, "getPrivateKey", {})).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "key_export" },
    });
    const permit = {
      typedData: {
        domain: { name: "Token", chainId: 1, verifyingContract: TOKEN },
        types: {
          Permit: [
            { name: "spender", type: "address" },
            { name: "value", type: "uint256" },
          ],
        },
        primaryType: "Permit",
        message: { spender: MALLORY, value: "1" },
      },
    };
    expect(await attempt(guarded, "signTypedData", permit)).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "typed_data" },
    });
    const signed = await attempt(guarded, "signMessage", { message: "hello there" });
    expect(await recoverMessageAddress({ message: "hello there", signature: signed.ok as Hex })).toBe(guarded);
    expect(await attempt(guarded, "signMessage", { message: "send it all" })).toMatchObject({
      code: "guardrail_denied",
      details: { rule: "messages.pattern" },
    });
    // Signing nothing passes: its public key.
    expect((await attempt(guarded, "getPublicKey", {})).ok).toMatch(/^0x04/);
  });

  it("a run that lets the refusal escape ends in guardrail_denied", async () => {
    const r = await run(
      apiKey,
      `async function main({ wallet }) { return await Sigil.Actions.signDigest({ pkpId: wallet, digest: "0x${"cd".repeat(32)}" }) }`,
      { wallet: guarded },
    );
    expect((r.body as RunResult).error?.code).toBe("guardrail_denied");
  });

  it("a wallet without a guardrail signs as before (a raw digest too)", async () => {
    const digest = `0x${"ab".repeat(32)}` as Hex;
    const answer = await attempt(open, "signDigest", { digest });
    expect(await recoverAddress({ hash: digest, signature: (answer.ok as { signature: Hex }).signature })).toBe(open);
  });
});

describe("the run's receipt", () => {
  it("names the guardrail, the rule that allowed each signature and what it refused; an unguarded wallet's entry is as before", async () => {
    const digest = `0x${"77".repeat(32)}`;
    const r = await run(
      apiKey,
      `async function main({ guarded, open }) {
        await Sigil.Actions.signMessage({ pkpId: guarded, message: "hello receipt" });
        try { await Sigil.Actions.signDigest({ pkpId: guarded, digest: "${digest}" }); } catch {}
        try { await Sigil.Actions.getPrivateKey({ pkpId: guarded }); } catch {}
        await Sigil.Actions.signDigest({ pkpId: open, digest: "${digest}" });
        return "done";
      }`,
      { guarded, open },
    );
    expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
    const wallets = (r.body as unknown as { receipt: { wallets: Record<string, unknown>[] } }).receipt.wallets;
    const hash = keccak256(toBytes(canonicalJson(GUARDRAIL)));
    expect(wallets.find((w) => w.address === guarded.toLowerCase())).toEqual({
      address: guarded.toLowerCase(),
      action: false,
      signed: [{ kind: "message", digest: hashMessage("hello receipt"), rule: "messages.pattern" }],
      key_exported: false,
      guardrail: hash,
      refused: [
        { kind: "hash", digest, rule: "raw_digests" },
        { kind: "export", rule: "key_export" },
      ],
    });
    expect(wallets.find((w) => w.address === open.toLowerCase())).toEqual({
      address: open.toLowerCase(),
      action: false,
      signed: [{ kind: "hash", digest }],
      key_exported: false,
    });
  });
});

describe("the dry run", () => {
  it("signs nothing: each signing use is decided as in a run and listed with its rule, the script gets zeros, the receipt says dry_run", async () => {
    const digest = `0x${"55".repeat(32)}`;
    const r = await run(
      apiKey,
      `async function main({ guarded, open }) {
        const allowed = await Sigil.Actions.signMessage({ pkpId: guarded, message: "hello dry" });
        let refused = null;
        try { await Sigil.Actions.signDigest({ pkpId: guarded, digest: "${digest}" }); } catch (e) { refused = e.code; }
        const bare = await Sigil.Actions.signDigest({ pkpId: open, digest: "${digest}" });
        const tx = await Sigil.Actions.signTransaction({ pkpId: guarded, transaction: { type: "eip1559", to: "${ALICE}", value: "5", chainId: 1, nonce: 0, gas: "21000", maxFeePerGas: "1", maxPriorityFeePerGas: "1" } });
        let overCap = null;
        try { await Sigil.Actions.signTransaction({ pkpId: guarded, transaction: { type: "eip1559", to: "${TOKEN}", data: "${encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [ALICE, 51n] })}", chainId: 1, nonce: 1, gas: "60000", maxFeePerGas: "1", maxPriorityFeePerGas: "1" } }); } catch (e) { overCap = e.code; }
        return { allowed, refused, bare: bare.signature, tx, overCap };
      }`,
      { guarded, open },
      { dry_run: true },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const body = r.body as unknown as {
      response: { allowed: string; refused: string; bare: string; tx: Hex };
      receipt: { dry_run?: boolean; wallets: { signed: unknown[] }[] };
      dry_run: { requests: Record<string, unknown>[] };
    };
    const zeros = `0x${"00".repeat(65)}`;
    expect(body.response).toMatchObject({
      allowed: zeros,
      refused: "guardrail_denied",
      bare: zeros,
      overCap: "guardrail_denied",
    });
    // The transaction's shape, with a signature of zeros: valid for nothing.
    expect(parseTransaction(body.response.tx)).toMatchObject({ to: ALICE, value: 5n, r: `0x${"00".repeat(32)}` });
    const hash = keccak256(toBytes(canonicalJson(GUARDRAIL)));
    expect(body.dry_run.requests).toEqual([
      {
        wallet: guarded.toLowerCase(),
        action: false,
        kind: "message",
        digest: hashMessage("hello dry"),
        allowed: true,
        rule: "messages.pattern",
        guardrail: hash,
        decoded: { text: "hello dry" },
      },
      {
        wallet: guarded.toLowerCase(),
        action: false,
        kind: "hash",
        digest,
        allowed: false,
        rule: "raw_digests",
        reason: expect.stringContaining("raw digest"),
        observed: digest,
        guardrail: hash,
      },
      { wallet: open.toLowerCase(), action: false, kind: "hash", digest, allowed: true, rule: null, guardrail: null },
      expect.objectContaining({
        wallet: guarded.toLowerCase(),
        kind: "transaction",
        allowed: true,
        rule: "transactions.transfers",
        decoded: { to: ALICE, value: "5", chain_id: 1 },
      }),
      // A contract call refused, as the guardrail's ABI decoded it.
      expect.objectContaining({
        kind: "transaction",
        allowed: false,
        rule: "transactions.contracts[0].functions[0].args.amount",
        observed: "51",
        decoded: {
          to: TOKEN,
          value: "0",
          chain_id: 1,
          selector: "0xa9059cbb",
          call: { function: "transfer", args: { to: ALICE, amount: "51" } },
        },
      }),
    ]);
    expect(body.receipt.dry_run).toBe(true);
    for (const w of body.receipt.wallets) expect(w.signed).toEqual([]);
  });

  it("a real run after it signs for real: the dry run left nothing behind", async () => {
    const answer = await attempt(guarded, "signMessage", { message: "hello again" });
    expect(await recoverMessageAddress({ message: "hello again", signature: answer.ok as Hex })).toBe(guarded);
  });
});

describe("setting a guardrail", () => {
  it("a usage key, whatever its scopes, may not; removing one (null) lets the wallet sign what it refused", async () => {
    const usage = (
      await ok<{ usage_api_key: string }>("add_usage_api_key", {
        api_key: apiKey,
        name: "all scopes",
        description: "",
        ...noPermissions<number>(),
        can_create_groups: true,
        can_delete_groups: true,
        can_create_pkps: true,
        execute_in_groups: [0],
      })
    ).usage_api_key;
    const refused = await callEnclave("set_wallet_guardrail", {
      api_key: usage,
      wallet_address: guarded,
      guardrail: null,
    });
    expect(refused.status).toBe(403);
    const removed = await ok<{ guardrail_hash: null }>("set_wallet_guardrail", {
      api_key: apiKey,
      wallet_address: guarded,
      guardrail: null,
    });
    expect(removed.guardrail_hash).toBeNull();
    const digest = `0x${"ef".repeat(32)}` as Hex;
    const answer = await attempt(guarded, "signDigest", { digest });
    expect(await recoverAddress({ hash: digest, signature: (answer.ok as { signature: Hex }).signature })).toBe(
      guarded,
    );
  });

  it("a document that does not compile is refused before anything is written, naming where", async () => {
    const r = await callEnclave<{ error: { code: string; details: { path: string; message: string }[] } }>(
      "set_wallet_guardrail",
      {
        api_key: apiKey,
        wallet_address: open,
        guardrail: {
          version: 1,
          transactions: {
            chains: [1],
            contracts: [
              {
                address: TOKEN,
                functions: [{ signature: "function transfer(address to)", args: { amount: { lte: "1" } } }],
              },
            ],
          },
        },
      },
    );
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("invalid_request");
    expect(JSON.stringify(r.body.error.details)).toContain("transfer has no argument named amount");
  });
});
