// Sigil.Actions function by function (docs/design/sandbox.md, "Sigil.Actions"), each result checked outside
// the enclave: signatures recovered with viem, hashes recomputed with @noble / viem, keys compared
// with the pinned derivation of docs/design/keys-and-authz.md (the wallet's derivation read from the chain),
// ciphertexts opened with WebCrypto. One account, one wallet and one group listing every script
// of this file.
import { secp256k1 } from "@noble/curves/secp256k1";
import { sha256 } from "@noble/hashes/sha2";
import {
  bytesToHex,
  getAddress,
  hexToBytes,
  keccak256,
  parseTransaction,
  recoverAddress,
  recoverMessageAddress,
  recoverTransactionAddress,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress, publicKeyToAddress, sign } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { ok, run, walletDerivation, type Reply, type RunResult } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

/** The CID whose action address is pinned in enclave/keys/derive.test.ts (VECTORS.action). */
const PINNED_CID = "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG";
const PINNED_ACTION_ADDRESS = "0xF34496f85b0fd5c9E784c212CE62765D7e4b13AA";
const N = secp256k1.CURVE.n;

const SCRIPTS = {
  action: `async function main({ otherCid, message }) {
    const A = Sigil.Actions;
    return {
      address: await A.getActionWalletAddress(),
      addressWithEmptyArgs: await A.getActionWalletAddress({}),
      otherAddress: await A.getActionWalletAddress({ cid: otherCid }),
      publicKey: await A.getActionPublicKey(),
      otherPublicKey: await A.getActionPublicKey({ cid: otherCid }),
      signature: await A.signMessageAsAction({ message }),
      rawSignature: await A.signMessageAsAction({ message: { raw: "0x0102ff" } }),
      signatureNamingOtherCid: await A.signMessageAsAction({ message, cid: otherCid }),
      privateKey: await A.getActionPrivateKey(),
      privateKeyNamingOtherCid: await A.getActionPrivateKey({ cid: otherCid }),
    };
  }`,
  setResponseOnly: `async function main() {
    Sigil.Actions.setResponse({ first: true });
    await new Promise((resolve) => setTimeout(resolve, 10));
    Sigil.Actions.setResponse({ last: [1, "two"] });
  }`,
  setResponseThenReturn: `async function main() { Sigil.Actions.setResponse("set"); return "returned"; }`,
  setResponseThenReturnNull: `async function main() { Sigil.Actions.setResponse("set"); return null; }`,
  hashes: `async function main() {
    const A = Sigil.Actions;
    const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
    const inputs = {
      text: "hello sigil",
      unicode: "h\\u00e9llo \\u2713",
      empty: "",
      hex: "0xdeadbeef",
      upperHex: "0xDEADBEEF",
      emptyHex: "0x",
      oddHex: "0xabc",
      bytes,
      view: bytes.subarray(2, 5),
      buffer: bytes.buffer,
      dataView: new DataView(bytes.buffer, 1, 3),
    };
    const out = {};
    for (const name of Object.keys(inputs)) out[name] = { sha256: A.sha256(inputs[name]), keccak256: A.keccak256(inputs[name]) };
    return out;
  }`,
  signRaw: `async function main({ wallet, raw }) {
    return {
      raw: await Sigil.Actions.signMessage({ pkpId: wallet, message: { raw } }),
      asText: await Sigil.Actions.signMessage({ pkpId: wallet, message: raw }),
    };
  }`,
  transactions: `async function main({ wallet, authorization }) {
    const sign = (transaction) => Sigil.Actions.signTransaction({ pkpId: wallet, transaction });
    const to = "0x000000000000000000000000000000000000dEaD";
    return {
      legacy: await sign({ to, value: 1n, nonce: 1, gas: 21000n, gasPrice: 1000000000n, chainId: 31337 }),
      eip2930: await sign({ type: "eip2930", to, value: "0x2", nonce: 2, gas: "30000", gasPrice: "0x3b9aca00", chainId: 31337, accessList: [{ address: to, storageKeys: ["0x" + "00".repeat(31) + "01"] }] }),
      eip1559: await sign({ to, value: 3, nonce: 3, gas: 21000, maxFeePerGas: 2000000000, maxPriorityFeePerGas: 1000000000, chainId: 31337, data: "0xabcdef" }),
      eip7702: await sign({ type: "eip7702", to, value: 0n, nonce: 4, gas: 100000n, maxFeePerGas: 2000000000n, maxPriorityFeePerGas: 1000000000n, chainId: 31337, authorizationList: [authorization] }),
    };
  }`,
  digests: `async function main({ wallet, digests }) {
    const out = [];
    for (const digest of digests) out.push(await Sigil.Actions.signDigest({ pkpId: wallet, digest }));
    return out;
  }`,
  keys: `async function main({ wallet }) {
    return { publicKey: await Sigil.Actions.getPublicKey({ pkpId: wallet }), privateKey: await Sigil.Actions.getPrivateKey({ pkpId: wallet }) };
  }`,
  encrypt: `async function main({ wallet, text }) {
    const A = Sigil.Actions;
    const ciphertext = await A.encrypt({ pkpId: wallet, plaintext: text });
    const again = await A.encrypt({ pkpId: wallet, plaintext: text });
    const rawCiphertext = await A.encrypt({ pkpId: wallet, plaintext: { raw: "0x00ff10" } });
    return {
      ciphertext,
      again,
      plaintext: await A.decrypt({ pkpId: wallet, ciphertext }),
      rawPlaintext: await A.decrypt({ pkpId: wallet, ciphertext: rawCiphertext, raw: true }),
    };
  }`,
  decrypt: `async function main({ wallet, ciphertext }) { return await Sigil.Actions.decrypt({ pkpId: wallet, ciphertext }); }`,
} as const;
type Script = keyof typeof SCRIPTS;

const keyring = new Keyring(hexToBytes(TEST_ROOT_KEY));
const cids = {} as Record<Script, string>;
let apiKey: string;
let wallet: Address;
/** The wallet's signing key, derived as docs/design/keys-and-authz.md says from (master, derivation on chain). */
let walletPrivateKey: Hex;
/** The wallet's AES-256-GCM key, derived the same way. */
let walletEncryptionKey: Uint8Array;

function succeeded(r: Reply<RunResult>): unknown {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
  return r.body.response;
}

const exec = (script: Script, params: unknown = null) => run(apiKey, SCRIPTS[script], params);

beforeAll(async () => {
  for (const name of Object.keys(SCRIPTS) as Script[]) cids[name] = await computeCid(SCRIPTS[name]);
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "actions" })).api_key;
  wallet = getAddress(
    (await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey, name: "w" })).wallet_address,
  );
  await ok("add_group", {
    api_key: apiKey,
    group_name: "actions",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: Object.values(cids),
  });
  const master = apiKeyHash(apiKey);
  const derivation = await walletDerivation(master, wallet);
  const derived = keyring.pkpKey(master, derivation);
  expect(derived.address).toBe(wallet);
  walletPrivateKey = bytesToHex(derived.privateKey);
  walletEncryptionKey = keyring.pkpEncryptionKey(master, derivation);
});

describe("the action identity (getActionWalletAddress, getActionPublicKey, signMessageAsAction, getActionPrivateKey)", () => {
  type ActionOut = Record<
    | "address"
    | "addressWithEmptyArgs"
    | "otherAddress"
    | "publicKey"
    | "otherPublicKey"
    | "signature"
    | "rawSignature"
    | "signatureNamingOtherCid"
    | "privateKey"
    | "privateKeyNamingOtherCid",
    Hex
  >;
  let out: ActionOut;
  const message = "signed by the code itself";

  beforeAll(async () => {
    const r = await exec("action", { otherCid: PINNED_CID, message });
    expect(r.body.cid).toBe(cids.action);
    out = succeeded(r) as ActionOut;
  });

  it("getActionWalletAddress() without a cid is the running code's action address (lowercase), with or without an empty argument", () => {
    expect(out.address).toBe(keyring.actionKey(cids.action).address.toLowerCase());
    expect(out.addressWithEmptyArgs).toBe(out.address);
  });

  it("getActionWalletAddress({cid}) is that CID's action address: the pinned vector of derive.test.ts", () => {
    expect(out.otherAddress).toBe(PINNED_ACTION_ADDRESS.toLowerCase());
    expect(out.otherAddress).not.toBe(out.address);
  });

  it("getActionPublicKey() is the uncompressed public key of the running code's action address; with a cid, that CID's", () => {
    expect(out.publicKey).toMatch(/^0x04[0-9a-f]{128}$/);
    expect(publicKeyToAddress(out.publicKey)).toBe(getAddress(out.address));
    expect(publicKeyToAddress(out.otherPublicKey)).toBe(PINNED_ACTION_ADDRESS);
  });

  it("signMessageAsAction signs with the running code's identity: text and {raw} messages recover to its action address", async () => {
    expect(await recoverMessageAddress({ message, signature: out.signature })).toBe(getAddress(out.address));
    expect(await recoverMessageAddress({ message: { raw: "0x0102ff" }, signature: out.rawSignature })).toBe(
      getAddress(out.address),
    );
  });

  it("signMessageAsAction ignores a cid argument: a script cannot sign as another action", async () => {
    expect(await recoverMessageAddress({ message, signature: out.signatureNamingOtherCid })).toBe(
      getAddress(out.address),
    );
  });

  it("getActionPrivateKey() is the key of the running code's action address, whatever cid it is given", () => {
    expect(out.privateKey).toMatch(/^0x[0-9a-f]{64}$/);
    expect(privateKeyToAddress(out.privateKey)).toBe(getAddress(out.address));
    expect(out.privateKeyNamingOtherCid).toBe(out.privateKey);
  });
});

describe("setResponse", () => {
  it("is the response when main returns undefined, and the last value given wins", async () => {
    expect(succeeded(await exec("setResponseOnly"))).toEqual({ last: [1, "two"] });
  });

  it("loses to the value main returns", async () => {
    expect(succeeded(await exec("setResponseThenReturn"))).toBe("returned");
  });

  it("loses to an explicit null returned by main", async () => {
    const r = await exec("setResponseThenReturnNull");
    expect(succeeded(r)).toBeNull();
  });
});

describe("sha256 and keccak256", () => {
  it("hash text as UTF-8, 0x hex strings as their bytes, and Uint8Array / subarray / ArrayBuffer / DataView as their bytes", async () => {
    const out = succeeded(await exec("hashes")) as Record<string, { sha256: Hex; keccak256: Hex }>;
    const utf8 = (s: string) => new TextEncoder().encode(s);
    const all = Uint8Array.of(0, 1, 2, 253, 254, 255);
    const expectedBytes: Record<string, Uint8Array> = {
      text: utf8("hello sigil"),
      unicode: utf8("héllo ✓"),
      empty: new Uint8Array(0),
      hex: Uint8Array.of(0xde, 0xad, 0xbe, 0xef),
      upperHex: Uint8Array.of(0xde, 0xad, 0xbe, 0xef),
      emptyHex: new Uint8Array(0),
      // Not whole bytes of hex: hashed as the text it is.
      oddHex: utf8("0xabc"),
      bytes: all,
      view: all.subarray(2, 5),
      buffer: all,
      dataView: all.subarray(1, 4),
    };
    expect(Object.keys(out).sort()).toEqual(Object.keys(expectedBytes).sort());
    for (const [name, bytes] of Object.entries(expectedBytes)) {
      expect(out[name], name).toEqual({ sha256: bytesToHex(sha256(bytes)), keccak256: keccak256(bytes) });
    }
    // Sanity of the expectations themselves: a well-known vector.
    expect(out.empty?.keccak256).toBe("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  });
});

describe("signing with the wallet", () => {
  it("signMessage({message: {raw}}) signs the bytes (EIP-191), which viem recovers to the wallet; the same hex as a string is signed as text", async () => {
    const raw: Hex = "0x00ff7f8001";
    const out = succeeded(await exec("signRaw", { wallet, raw })) as { raw: Hex; asText: Hex };
    expect(await recoverMessageAddress({ message: { raw }, signature: out.raw })).toBe(wallet);
    expect(await recoverMessageAddress({ message: raw, signature: out.asText })).toBe(wallet);
    expect(out.raw).not.toBe(out.asText);
    expect(out.raw).toBe(await privateKeyToAccount(walletPrivateKey).signMessage({ message: { raw } }));
  });

  it("signTransaction signs legacy, EIP-2930, EIP-1559 and EIP-7702 transactions that viem parses with their fields and recovers to the wallet", async () => {
    const authorizer = privateKeyToAccount(generatePrivateKey());
    const delegate = getAddress("0x00000000000000000000000000000000000c0de1");
    const { v: _v, ...authorization } = await authorizer.signAuthorization({
      address: delegate,
      chainId: 31337,
      nonce: 7,
    });
    const out = succeeded(await exec("transactions", { wallet, authorization })) as Record<
      "legacy" | "eip2930" | "eip1559" | "eip7702",
      Hex
    >;
    // parseTransaction gives addresses as they were serialized: lowercase.
    const to = "0x000000000000000000000000000000000000dead";

    const legacy = parseTransaction(out.legacy);
    expect(legacy).toMatchObject({
      type: "legacy",
      to,
      value: 1n,
      nonce: 1,
      gas: 21000n,
      gasPrice: 1_000_000_000n,
      chainId: 31337,
    });
    expect([31337n * 2n + 35n, 31337n * 2n + 36n]).toContain(legacy.v); // EIP-155

    const eip2930 = parseTransaction(out.eip2930);
    expect(eip2930).toMatchObject({
      type: "eip2930",
      to,
      value: 2n,
      nonce: 2,
      gas: 30000n,
      gasPrice: 1_000_000_000n,
      chainId: 31337,
    });
    expect(eip2930.accessList).toEqual([{ address: to, storageKeys: [`0x${"00".repeat(31)}01`] }]);

    const eip1559 = parseTransaction(out.eip1559);
    expect(eip1559).toMatchObject({
      type: "eip1559",
      to,
      value: 3n,
      nonce: 3,
      gas: 21000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      chainId: 31337,
      data: "0xabcdef",
    });

    const eip7702 = parseTransaction(out.eip7702);
    expect(eip7702).toMatchObject({ type: "eip7702", to, nonce: 4, gas: 100000n, chainId: 31337 });
    expect(eip7702.authorizationList).toHaveLength(1);
    expect(eip7702.authorizationList?.[0]).toMatchObject({
      address: delegate.toLowerCase(),
      chainId: 31337,
      nonce: 7,
      r: authorization.r,
      s: authorization.s,
      yParity: authorization.yParity,
    });

    for (const [type, serialized] of Object.entries(out)) {
      expect(await recoverTransactionAddress({ serializedTransaction: serialized as never }), type).toBe(wallet);
    }
  });

  it("signDigest returns {r, s, v, signature} with low s (s ≤ n/2) for 16 digests, each recovering to the wallet and equal to viem's signature with the wallet's key", async () => {
    // About half of raw ECDSA signatures have a high s: 16 low ones by chance is a 2^-16 event.
    const digests = Array.from({ length: 16 }, () => bytesToHex(crypto.getRandomValues(new Uint8Array(32))));
    const out = succeeded(await exec("digests", { wallet, digests })) as Array<{
      r: Hex;
      s: Hex;
      v: number;
      signature: Hex;
    }>;
    expect(out).toHaveLength(16);
    for (const [i, sig] of out.entries()) {
      const hash = digests[i] as Hex;
      expect(sig.r).toMatch(/^0x[0-9a-f]{64}$/);
      expect(sig.s).toMatch(/^0x[0-9a-f]{64}$/);
      expect(BigInt(sig.s) <= N / 2n, `s of digest ${i}`).toBe(true);
      expect([27, 28]).toContain(sig.v);
      expect(sig.signature).toBe(`${sig.r}${sig.s.slice(2)}${sig.v.toString(16)}`);
      expect(await recoverAddress({ hash, signature: sig.signature })).toBe(wallet);
      const expected = await sign({ hash, privateKey: walletPrivateKey });
      expect({ r: sig.r, s: sig.s, v: BigInt(sig.v) }).toEqual({ r: expected.r, s: expected.s, v: expected.v });
    }
  });
});

describe("the wallet's keys", () => {
  it("getPublicKey is the wallet's uncompressed public key and getPrivateKey its private key: both lead to the wallet address", async () => {
    const out = succeeded(await exec("keys", { wallet })) as { publicKey: Hex; privateKey: Hex };
    expect(out.publicKey).toMatch(/^0x04[0-9a-f]{128}$/);
    expect(publicKeyToAddress(out.publicKey)).toBe(wallet);
    expect(out.privateKey).toMatch(/^0x[0-9a-f]{64}$/);
    expect(privateKeyToAddress(out.privateKey)).toBe(wallet);
    expect(out.privateKey).toBe(walletPrivateKey);
    expect(out.publicKey).toBe(bytesToHex(secp256k1.getPublicKey(hexToBytes(walletPrivateKey), false)));
  });
});

describe("encrypt and decrypt", () => {
  const text = "attack at dawn ✓";
  const aesKey = () =>
    crypto.subtle.importKey("raw", Uint8Array.from(walletEncryptionKey), "AES-GCM", false, ["encrypt", "decrypt"]);

  it("round-trip text and {raw} bytes; each encryption takes a fresh nonce; the ciphertext is nonce(12) ‖ ct ‖ tag(16) under the wallet's encryption key", async () => {
    const out = succeeded(await exec("encrypt", { wallet, text })) as {
      ciphertext: Hex;
      again: Hex;
      plaintext: string;
      rawPlaintext: Hex;
    };
    expect(out.plaintext).toBe(text);
    expect(out.rawPlaintext).toBe("0x00ff10");
    expect(out.again).not.toBe(out.ciphertext);
    const bytes = hexToBytes(out.ciphertext);
    expect(bytes.length).toBe(12 + new TextEncoder().encode(text).length + 16);
    const opened = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.slice(0, 12) },
      await aesKey(),
      bytes.slice(12),
    );
    expect(new TextDecoder().decode(opened)).toBe(text);
  });

  it("decrypt opens a ciphertext made outside the enclave with the wallet's encryption key", async () => {
    const nonce = crypto.getRandomValues(new Uint8Array(12));
    const sealed = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: nonce },
        await aesKey(),
        new TextEncoder().encode("from outside"),
      ),
    );
    const ciphertext = bytesToHex(Uint8Array.from([...nonce, ...sealed]));
    expect(succeeded(await exec("decrypt", { wallet, ciphertext }))).toBe("from outside");
  });

  it("a ciphertext changed in its nonce, body or tag fails to decrypt with script_error, and so does a truncated one", async () => {
    const out = succeeded(await exec("encrypt", { wallet, text })) as { ciphertext: Hex };
    const bytes = hexToBytes(out.ciphertext);
    const flipped = (at: number) => {
      const copy = Uint8Array.from(bytes);
      copy[at] = (copy[at] as number) ^ 0x01;
      return bytesToHex(copy);
    };
    for (const [where, ciphertext] of [
      ["nonce", flipped(0)],
      ["body", flipped(12)],
      ["tag", flipped(bytes.length - 1)],
    ] as const) {
      const r = await exec("decrypt", { wallet, ciphertext });
      expect(r.body.has_error, where).toBe(true);
      expect(r.body.error, where).toMatchObject({
        code: "script_error",
        message: "Error: decrypt: the ciphertext was not made by this wallet or was altered",
      });
    }
    const truncated = await exec("decrypt", { wallet, ciphertext: bytesToHex(bytes.slice(0, 27)) });
    expect(truncated.body.error).toMatchObject({
      code: "script_error",
      message: "TypeError: decrypt: the ciphertext is too short",
    });
    // The unaltered ciphertext still opens: the failures above are the alterations'.
    expect(succeeded(await exec("decrypt", { wallet, ciphertext: out.ciphertext }))).toBe(text);
  });
});
