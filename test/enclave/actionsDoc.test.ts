// Every example of docs/actions.md, run as it is written there against the enclave, and its answer
// compared with the json block the page shows after it (docs/actions.md, "How to read the
// examples"). One account, one wallet, and groups that list the wallet with every example's CID,
// so that each example runs as a user's would after add_group. Values that differ per run or per
// account are `<…>` placeholders, each checked by what the page says it is: signatures recovered
// with viem, keys and action identities derived here as the enclave derives them (the test root
// key), ciphertexts opened with the wallet's encryption key. A placeholder this file does not know
// fails the example.
import { ed25519 } from "@noble/curves/ed25519";
import { secp256k1 } from "@noble/curves/secp256k1";
import { getTransferSolInstruction } from "@solana-program/system";
import {
  appendTransactionMessageInstruction,
  blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase58Encoder,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address as SolanaAddress,
} from "@solana/kit";
import {
  bytesToHex,
  getAddress,
  hexToBytes,
  isHex,
  parseTransaction,
  recoverAddress,
  recoverTransactionAddress,
  verifyMessage,
  verifyTypedData,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAddress, publicKeyToAddress } from "viem/accounts";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { canonicalCid, computeCid } from "../../shared/cid.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { ed25519PublicKey } from "../../enclave/keys/ed25519.ts";
import { readActionsDoc, type DocExample } from "../harness/actionsDoc.ts";
import { ok, run, walletDerivation, type RunResult } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

const { examples } = readActionsDoc();
/** A group lists at most 64 actions (AccountConfig MAX_GROUP_CIDS). */
const CIDS_PER_GROUP = 60;
const N = secp256k1.CURVE.n;

const keyring = new Keyring(hexToBytes(TEST_ROOT_KEY));
let apiKey: string;
let wallet: Address;
let walletEncryptionKey: Uint8Array;
/** The wallet's Solana address and public key, as the enclave derives them. */
let walletSolana: { address: SolanaAddress; publicKey: Uint8Array };
const cids = new Map<DocExample, string>();

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "actions doc" })).api_key;
  wallet = getAddress(
    (await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey, name: "doc" })).wallet_address,
  );
  for (const example of examples) cids.set(example, await computeCid(example.code));
  const all = [...new Set(cids.values())];
  for (let i = 0; i < all.length; i += CIDS_PER_GROUP) {
    await ok("add_group", {
      api_key: apiKey,
      group_name: `doc ${i / CIDS_PER_GROUP}`,
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: all.slice(i, i + CIDS_PER_GROUP),
    });
  }
  const master = apiKeyHash(apiKey);
  const derivation = await walletDerivation(master, wallet);
  expect(keyring.pkpKey(master, derivation).address).toBe(wallet);
  walletEncryptionKey = keyring.pkpEncryptionKey(master, derivation);
  const solana = keyring.solanaKey(master, derivation);
  walletSolana = { address: solana.address, publicKey: ed25519PublicKey(solana.seed) };
  solana.seed.fill(0);
}, 120_000);

/** The request-side placeholders: what the example's js_params stand for here. */
function requestValue(token: string): unknown {
  if (token === "<wallet>") return wallet;
  if (token === "<echo URL>") return `${inject("fetchTargetUrl")}/echo`;
  if (token === "<unsigned Solana transfer from the wallet, base64>") {
    const payer = createNoopSigner(walletSolana.address);
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash("4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"), lastValidBlockHeight: 1n },
          m,
        ),
      (m) =>
        appendTransactionMessageInstruction(
          getTransferSolInstruction({ source: payer, destination: walletSolana.address, amount: lamports(1_000n) }),
          m,
        ),
    );
    return getBase64EncodedWireTransaction(compileTransaction(message));
  }
  throw new Error(`unknown placeholder ${token} in js_params`);
}

function substitute(value: unknown): unknown {
  if (typeof value === "string" && /^<.*>$/s.test(value)) return requestValue(value);
  if (Array.isArray(value)) return value.map(substitute);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]));
  return value;
}

type Context = { example: DocExample; cid: string; params: unknown; response: unknown };

function at(root: unknown, path: string): unknown {
  let v = root;
  for (const key of path.split("."))
    v = v !== null && typeof v === "object" ? (v as Record<string, unknown>)[key] : undefined;
  return v;
}

/** What `js_params.x.y` or `response.x` names, in this run. */
function named(ctx: Context, source: string, path: string): unknown {
  const value = at(source === "js_params" ? ctx.params : ctx.response, path);
  if (value === undefined) throw new Error(`${source}.${path} is not there`);
  return value;
}

const actionAddress = (cid: string): Address => keyring.actionKey(canonicalCid(cid)).address;
const hex = (v: unknown, bytes?: number): v is Hex =>
  typeof v === "string" &&
  isHex(v, { strict: true }) &&
  v === v.toLowerCase() &&
  (bytes === undefined || v.length === 2 + 2 * bytes);

/**
 * Checks `actual` against a response-side placeholder. Each kind is a pattern of docs/actions.md's
 * table of placeholders; the first that matches decides.
 */
async function checkPlaceholder(token: string, actual: unknown, ctx: Context, where: string): Promise<void> {
  const signer = (who: string): Address => (who === "wallet" ? wallet : actionAddress(ctx.cid));
  let m: RegExpExecArray | null;
  if ((m = /^<EIP-191 signature of '(.*)' by the (wallet|action)>$/s.exec(token))) {
    expect(hex(actual, 65), where).toBe(true);
    expect(
      await verifyMessage({ address: signer(m[2] as string), message: m[1] as string, signature: actual as Hex }),
      where,
    ).toBe(true);
    return;
  }
  if ((m = /^<EIP-191 signature of bytes (0x[0-9a-fA-F]*) by the (wallet|action)>$/.exec(token))) {
    expect(hex(actual, 65), where).toBe(true);
    expect(
      await verifyMessage({ address: signer(m[2] as string), message: { raw: m[1] as Hex }, signature: actual as Hex }),
      where,
    ).toBe(true);
    return;
  }
  if ((m = /^<EIP-712 signature of (js_params|response)\.([\w.]+) by the wallet>$/.exec(token))) {
    expect(hex(actual, 65), where).toBe(true);
    const typedData = named(ctx, m[1] as string, m[2] as string) as Parameters<typeof verifyTypedData>[0];
    expect(await verifyTypedData({ ...typedData, address: wallet, signature: actual as Hex }), where).toBe(true);
    return;
  }
  if ((m = /^<signed (legacy|eip2930|eip1559|eip7702) transaction by the wallet>$/.exec(token))) {
    expect(hex(actual), where).toBe(true);
    expect(parseTransaction(actual as Hex).type, where).toBe(m[1]);
    expect(await recoverTransactionAddress({ serializedTransaction: actual as never }), where).toBe(wallet);
    return;
  }
  if (
    (m = /^<signature of the digest (?:(0x[0-9a-f]{64})|(js_params|response)\.([\w.]+)) by the wallet>$/.exec(token))
  ) {
    expect(hex(actual, 65), where).toBe(true);
    const digest = (m[1] ?? named(ctx, m[2] as string, m[3] as string)) as Hex;
    expect(BigInt(`0x${(actual as string).slice(66, 130)}`) <= N / 2n, `${where}: s is low`).toBe(true);
    expect(await recoverAddress({ hash: digest, signature: actual as Hex }), where).toBe(wallet);
    return;
  }
  if ((m = /^<Ed25519 signature of '(.*)' by the wallet's Solana key>$/s.exec(token))) {
    const signature = new Uint8Array(getBase58Encoder().encode(actual as string));
    expect(signature.length, where).toBe(64);
    expect(ed25519.verify(signature, new TextEncoder().encode(m[1] as string), walletSolana.publicKey), where).toBe(
      true,
    );
    return;
  }
  if ((m = /^<(js_params|response)\.([\w.]+) signed by the wallet's Solana key>$/.exec(token))) {
    const sent = getTransactionDecoder().decode(
      Buffer.from(named(ctx, m[1] as string, m[2] as string) as string, "base64"),
    );
    const signed = getTransactionDecoder().decode(Buffer.from(actual as string, "base64"));
    expect(new Uint8Array(signed.messageBytes), where).toEqual(new Uint8Array(sent.messageBytes));
    const signature = signed.signatures[walletSolana.address];
    expect(
      signature !== null &&
        signature !== undefined &&
        ed25519.verify(new Uint8Array(signature), new Uint8Array(signed.messageBytes), walletSolana.publicKey),
      where,
    ).toBe(true);
    return;
  }
  if ((m = /^<(\d+)-byte hex>$/.exec(token))) {
    expect(hex(actual, Number(m[1])), `${where}: ${JSON.stringify(actual)}`).toBe(true);
    return;
  }
  if ((m = /^<AES-GCM ciphertext of '(.*)' for the wallet>$/s.exec(token))) {
    expect(hex(actual), where).toBe(true);
    const bytes = hexToBytes(actual as Hex);
    const key = await crypto.subtle.importKey("raw", Uint8Array.from(walletEncryptionKey), "AES-GCM", false, [
      "decrypt",
    ]);
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.slice(0, 12) }, key, bytes.slice(12));
    expect(new TextDecoder().decode(plain), where).toBe(m[1]);
    return;
  }
  if ((m = /^<action address of (\S+)>$/.exec(token))) {
    expect(actual, where).toBe(actionAddress(m[1] as string).toLowerCase());
    return;
  }
  if ((m = /^<public key of the action of (\S+)>$/.exec(token))) {
    expect(hex(actual, 65) && publicKeyToAddress(actual as Hex), where).toBe(actionAddress(m[1] as string));
    return;
  }
  switch (token) {
    case "<Solana address of the wallet>":
      expect(actual, where).toBe(walletSolana.address);
      return;
    case "<27 or 28>":
      expect([27, 28], where).toContain(actual);
      return;
    case "<public key of the wallet>":
      expect(hex(actual, 65) && (actual as string).startsWith("0x04") && publicKeyToAddress(actual as Hex), where).toBe(
        wallet,
      );
      return;
    case "<private key of the wallet>":
      expect(hex(actual, 32) && privateKeyToAddress(actual as Hex), where).toBe(wallet);
      return;
    case "<action address>":
      expect(actual, where).toBe(actionAddress(ctx.cid).toLowerCase());
      return;
    case "<public key of the action>":
      expect(hex(actual, 65) && (actual as string).startsWith("0x04") && publicKeyToAddress(actual as Hex), where).toBe(
        actionAddress(ctx.cid),
      );
      return;
    case "<private key of the action>":
      expect(actual, where).toBe(bytesToHex(keyring.actionKey(ctx.cid).privateKey));
      return;
    case "<UUID>":
      expect(actual, where).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      return;
    case "<UUID v4>":
      expect(actual, where).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      return;
    case "<CID of this example>":
      expect(actual, where).toBe(ctx.cid);
      return;
    default:
      throw new Error(`${where}: unknown placeholder ${token}`);
  }
}

/** `actual` is what `expected` shows: the same JSON, placeholders checked by what they stand for, objects with the same keys. */
async function matches(actual: unknown, expected: unknown, ctx: Context, where: string): Promise<void> {
  if (typeof expected === "string" && /^<.*>$/s.test(expected)) return checkPlaceholder(expected, actual, ctx, where);
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), `${where} is an array`).toBe(true);
    expect((actual as unknown[]).length, `${where}.length`).toBe(expected.length);
    for (const [i, e] of expected.entries()) await matches((actual as unknown[])[i], e, ctx, `${where}[${i}]`);
    return;
  }
  if (expected !== null && typeof expected === "object") {
    expect(
      actual !== null && typeof actual === "object" && !Array.isArray(actual),
      `${where} is an object: ${JSON.stringify(actual)}`,
    ).toBe(true);
    expect(Object.keys(actual as object).sort(), `${where}'s keys`).toEqual(Object.keys(expected).sort());
    for (const [k, e] of Object.entries(expected))
      await matches((actual as Record<string, unknown>)[k], e, ctx, `${where}.${k}`);
    return;
  }
  expect(actual, where).toBe(expected);
}

describe("docs/actions.md", () => {
  it("has examples, each with its expected answer", () => {
    expect(examples.length).toBeGreaterThan(30);
  });

  for (const example of examples) {
    it(`example ${example.index} (line ${example.line}, "${example.heading}") answers as its json block shows`, async () => {
      const cid = cids.get(example) as string;
      const params = substitute(example.expected.js_params ?? null);
      const r = await run(apiKey, example.code, params);
      const body: RunResult = r.body;
      expect(r.status, JSON.stringify(r.body).slice(0, 2000)).toBe(200);
      const shown = JSON.stringify(body).slice(0, 2000);
      expect(body.cid).toBe(cid);
      expect(body.has_error, shown).toBe(example.expected.has_error);
      const ctx: Context = { example, cid, params, response: body.response };
      await matches(body.response, example.expected.response, ctx, "response");
      if (example.expected.error) {
        const { stack, ...codeAndMessage } = example.expected.error;
        expect({ code: body.error?.code, message: body.error?.message }, shown).toEqual(codeAndMessage);
        if (stack !== undefined) expect(body.error?.stack, shown).toBe(stack);
      } else {
        expect(body.error, shown).toBeUndefined();
      }
      if (example.expected.logs !== undefined) expect(body.logs, shown).toBe(example.expected.logs);
    });
  }
});
