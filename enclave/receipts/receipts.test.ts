// Run receipts in the enclave (shared/receipt.ts, receipts.ts): the receipt key (stable per
// instance, another per instance), the quote that binds it, the batches (receipts asked for in one
// turn share one signature over their Merkle root; each carries its audit path), the record of what
// each key signed — the digest the key really signed, never the key — and the SDK's verifyReceipt
// against a real simulated quote, failing on any changed field, index, size or path, and still
// checking receipts of version 1.
import { hexToBytes } from "@noble/hashes/utils";
import {
  bytesToHex,
  hashMessage,
  keccak256,
  parseTransaction,
  recoverAddress,
  recoverMessageAddress,
  serializeTransaction,
  sha256,
  type Hex,
  type TransactionSerializable,
} from "viem";
import { privateKeyToAddress, signMessage } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { runChargeCents, runSeconds } from "../../shared/fees.ts";
import {
  batchHead,
  jsonSha256,
  merkleBatch,
  quoteReportData,
  RECEIPT_VERSION,
  receiptKeyReportData,
  receiptLeaf,
  receiptMessage,
  rootFromProof,
  textSha256,
  type ReceiptKeyAttestation,
  type RunReceipt,
  type RunReceiptBody,
  type RunReceiptV1,
} from "../../shared/receipt.ts";
import { verifyReceipt } from "../../sdk/src/receipt.ts";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { SimulatedSource } from "../attestation/simulated/simulatedSource.ts";
import { readEnclaveConfig } from "../config.ts";
import { Keyring } from "../keys/derive.ts";
import { createRunHost, type KeyRequest } from "../sandbox/hostOps.ts";
import { CodedError } from "../sandbox/runtime.ts";
import { KeyUses, ReceiptSigner } from "./receipts.ts";

const COMPOSE_YAML = `services:\n  enclave:\n    image: sigil@sha256:${"ab".repeat(32)}\n`;
const APP_COMPOSE = `${JSON.stringify({ manifest_version: 2, name: "sigil-unit", runner: "docker-compose", docker_compose_file: COMPOSE_YAML }, null, 2)}\n`;
const keyring = () => new Keyring(hexToBytes(TEST_ROOT_KEY.replace(/^0x/, "")));

describe("the fee (shared/fees.ts), one function for the edge and the receipt", () => {
  it("charges every started second, at least one, never past the seconds granted, nothing with billing off", () => {
    expect(runSeconds(0)).toBe(1);
    expect(runSeconds(1000)).toBe(1);
    expect(runSeconds(1001)).toBe(2);
    expect(runChargeCents(2500, 30)).toBe(3);
    expect(runChargeCents(3000, 3)).toBe(3);
    expect(runChargeCents(5200, 3)).toBe(3);
    expect(runChargeCents(0, 0)).toBe(0);
    expect(runChargeCents(2500, undefined)).toBe(0);
  });
});

describe("the receipt key", () => {
  it("is the same for one instance across keyrings (restarts), another for another instance, and never a wallet's", () => {
    const a = keyring().receiptKey("aa".repeat(20)).address;
    expect(keyring().receiptKey("aa".repeat(20)).address).toBe(a);
    expect(keyring().receiptKey("bb".repeat(20)).address).not.toBe(a);
    expect(keyring().payerKey(0).address).not.toBe(a);
    expect(() => keyring().receiptKey("")).toThrow(/instance id/);
  });
});

describe("what a run's keys were used for (hostOps → KeyUses)", () => {
  const limits = readEnclaveConfig({
    SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
    SIGIL_RPC_URL: "http://127.0.0.1:1",
    SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
  }).limits;
  const WALLET_KEY = `0x${"42".repeat(32)}` as Hex;
  const wallet = privateKeyToAddress(WALLET_KEY);
  function host() {
    const requests: KeyRequest[] = [];
    const uses = new KeyUses();
    const h = createRunHost({
      cid: "QmReceiptTest",
      deadline: () => Date.now() + 60_000,
      limits,
      fetchPolicy: {
        allowHosts: new Set(),
        denyPorts: new Set(),
        timeoutMs: 1000,
        maxResponseBytes: 1000,
        maxRedirects: 1,
      },
      requestKey: async (request) => {
        requests.push(request);
        uses.note(wallet, request.kind === "action", request.use);
        return { privateKey: hexToBytes(WALLET_KEY.slice(2)), encryptionKey: new Uint8Array(32) };
      },
    });
    return { h, requests, uses };
  }

  it("records each signature's digest: the hash the key really signed (it recovers to the wallet)", async () => {
    const { h, uses } = host();
    const message = await h.callAsync("signMessage", { pkpId: wallet, message: "hello" });
    const typedData = {
      domain: { name: "t", chainId: 1 },
      types: { M: [{ name: "x", type: "uint256" }] },
      primaryType: "M",
      message: { x: { $bigint: "5" } },
    };
    const typed = await h.callAsync("signTypedData", { pkpId: wallet, typedData });
    const tx: TransactionSerializable = {
      chainId: 1,
      nonce: 3,
      to: wallet,
      value: 7n,
      gas: 21000n,
      maxFeePerGas: 10n,
      maxPriorityFeePerGas: 1n,
    };
    const signedTx = (await h.callAsync("signTransaction", {
      pkpId: wallet,
      transaction: { ...tx, value: "7", gas: "21000", maxFeePerGas: "10", maxPriorityFeePerGas: "1" },
    })) as Hex;
    const digest = `0x${"ab".repeat(32)}` as Hex;
    const raw = (await h.callAsync("signDigest", { pkpId: wallet, digest })) as { signature: Hex };
    await h.callAsync("getPublicKey", { pkpId: wallet });

    const [entry] = uses.list();
    expect(uses.list()).toHaveLength(1);
    expect(entry).toMatchObject({ address: wallet.toLowerCase(), action: false, key_exported: false });
    expect(entry?.signed.map((s) => s.kind)).toEqual(["message", "typed_data", "transaction", "hash"]);
    const [m, t, x, d] = entry?.signed ?? [];
    expect(m?.digest).toBe(hashMessage("hello"));
    expect(await recoverAddress({ hash: m?.digest as Hex, signature: message as Hex })).toBe(wallet);
    expect(await recoverAddress({ hash: t?.digest as Hex, signature: typed as Hex })).toBe(wallet);
    expect(x?.digest).toBe(keccak256(serializeTransaction(tx)));
    const parsed = parseTransaction(signedTx);
    expect(
      await recoverAddress({
        hash: x?.digest as Hex,
        signature: { r: parsed.r as Hex, s: parsed.s as Hex, yParity: parsed.yParity as number },
      }),
    ).toBe(wallet);
    expect(d?.digest).toBe(digest);
    expect(await recoverAddress({ hash: digest, signature: raw.signature })).toBe(wallet);
    // Never the key itself.
    expect(JSON.stringify(uses.list())).not.toContain(WALLET_KEY.slice(2));
  });

  it("marks a key the script read (getPrivateKey, getActionPrivateKey), and action identity signatures as action", async () => {
    const { h, uses } = host();
    await h.callAsync("getPrivateKey", { pkpId: wallet });
    await h.callAsync("signMessageAsAction", { message: "as the action" });
    await h.callAsync("getActionPrivateKey", {});
    expect(uses.list()).toEqual([
      { address: wallet.toLowerCase(), action: false, signed: [], key_exported: true },
      {
        address: wallet.toLowerCase(),
        action: true,
        signed: [{ kind: "message", digest: hashMessage("as the action") }],
        key_exported: true,
      },
    ]);
  });

  it("typed data it cannot hash fails as before, after the wallet's authorization, and records no signature", async () => {
    const { h, requests, uses } = host();
    await expect(
      h.callAsync("signTypedData", { pkpId: wallet, typedData: { types: {}, primaryType: "Nope", message: {} } }),
    ).rejects.toThrow(/signTypedData: /);
    expect(requests).toHaveLength(1);
    expect(uses.list()[0]?.signed).toEqual([]);
    await expect(
      h.callAsync("signTransaction", { pkpId: wallet, transaction: { value: "not a number" } }),
    ).rejects.toBeInstanceOf(CodedError);
    expect(uses.list()[0]?.signed).toEqual([]);
  });
});

describe("signing and verifying a receipt", () => {
  const INSTANCE = "c0ffee".padEnd(40, "0");
  let source: SimulatedSource;
  let signer: ReceiptSigner;
  let attestation: ReceiptKeyAttestation;
  let receipt: RunReceipt;
  const answer = { response: { ok: true, n: [1, 2] }, logs: "line 1\nline 2\n" };
  const params = { b: 2, a: "x" };

  beforeAll(async () => {
    source = await SimulatedSource.create({ appCompose: APP_COMPOSE, instanceId: hexToBytes(INSTANCE) });
    const info = await source.info();
    signer = new ReceiptSigner({
      keyring: keyring(),
      instanceId: info.instance_id,
      composeHash: info.compose_hash,
      quote: async (rd) => ({ ...(await source.getQuote(rd)), simulated: true }),
    });
    attestation = await signer.attestation();
    receipt = await signer.sign({
      version: RECEIPT_VERSION,
      request_id: "00000000-0000-4000-8000-000000000000",
      account: `0x${"11".repeat(32)}`,
      cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
      params_sha256: jsonSha256(params),
      response_sha256: jsonSha256(answer.response),
      logs_sha256: textSha256(answer.logs),
      has_error: false,
      wallets: [
        {
          address: `0x${"22".repeat(20)}`,
          action: false,
          signed: [{ kind: "hash", digest: `0x${"33".repeat(32)}` }],
          key_exported: false,
        },
      ],
      started_at: "2026-01-01T00:00:00.000Z",
      ended_at: "2026-01-01T00:00:01.500Z",
      duration_ms: 1500,
      charged_cents: 2,
    });
  });

  it("alone in its batch, is signed by the receipt key over its own leaf (the root of a tree of one), with this instance and compose hash", async () => {
    expect(receipt.instance_id).toBe(INSTANCE);
    expect(receipt.compose_hash).toBe((await source.info()).compose_hash);
    expect(receipt.batch).toEqual({ index: 0, size: 1, proof: [] });
    const leaf = receiptLeaf(receipt);
    expect(bytesToHex(leaf)).toBe(sha256(new Uint8Array([0, ...new TextEncoder().encode(receiptMessage(receipt))])));
    expect(
      (
        await recoverMessageAddress({ message: { raw: batchHead(leaf, 1) }, signature: receipt.signature })
      ).toLowerCase(),
    ).toBe(signer.address);
    // Canonical: the key order of the object signed does not matter, the values do.
    expect(receiptMessage(receipt)).toBe(
      receiptMessage(Object.fromEntries(Object.entries(receipt).reverse()) as RunReceipt),
    );
    expect(receiptMessage(receipt)).not.toContain("signature");
    expect(receiptMessage(receipt)).not.toContain("batch");
  });

  it("asked for in one turn, share one signature over their batch's Merkle root; each verifies with its own path, and no path serves another receipt", async () => {
    const before = { ...signer.stats };
    const bodies = Array.from({ length: 13 }, (_, i) => ({
      ...bodyOf(receipt),
      request_id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    }));
    const batch = await Promise.all(bodies.map((b) => signer.sign(b)));
    expect(signer.stats.batches - before.batches).toBe(1);
    expect(signer.stats.receipts - before.receipts).toBe(13);
    expect(new Set(batch.map((r) => r.signature)).size).toBe(1);
    expect(batch.map((r) => r.batch.index)).toEqual(bodies.map((_, i) => i));
    expect(batch.every((r) => r.batch.size === 13 && r.batch.proof.length >= 2 && r.batch.proof.length <= 4)).toBe(
      true,
    );
    for (const r of batch) expect((await verifyReceipt(r, attestation)).ok).toBe(true);
    const [a, b] = batch as [RunReceipt, RunReceipt];
    // The path, index or size of another receipt, or a path cut short or made longer: another root, or none.
    for (const forged of [
      { ...a, batch: b.batch },
      { ...a, batch: { ...a.batch, index: 1 } },
      { ...a, batch: { ...a.batch, size: 12 } },
      { ...a, batch: { ...a.batch, size: 14 } },
      { ...a, batch: { ...a.batch, proof: a.batch.proof.slice(1) } },
      { ...a, batch: { ...a.batch, proof: [...a.batch.proof, a.batch.proof[0] as Hex] } },
      { ...a, batch: { ...a.batch, proof: [...a.batch.proof].reverse() } },
      { ...a, batch: { ...a.batch, index: 13 } },
    ]) {
      const v = await verifyReceipt(forged, attestation);
      expect(v.ok, JSON.stringify(forged.batch)).toBe(false);
    }
  });

  it("batches by the runs in flight: alone, a receipt is signed at once; with many in flight it waits for others, up to its wait or until 16 are waiting", async () => {
    const info = await source.info();
    let inFlight = 0;
    const batching = new ReceiptSigner({
      keyring: keyring(),
      instanceId: info.instance_id,
      composeHash: info.compose_hash,
      quote: (rd) => source.getQuote(rd),
      batching: { waitMs: 200, inFlight: () => inFlight },
    });
    const body = bodyOf(receipt);
    // Alone: its own batch, before any timer could run.
    let alone: RunReceipt | undefined;
    void batching.sign(body).then((r) => (alone = r));
    await Promise.resolve();
    await Promise.resolve();
    expect(alone?.batch.size).toBe(1);
    // Many in flight: three wait together for the window...
    inFlight = 10;
    const started = performance.now();
    const three = await Promise.all([0, 1, 2].map(() => batching.sign(body)));
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(three.map((r) => r.batch.size)).toEqual([3, 3, 3]);
    // ...and once 16 are waiting the batch does not wait any more: 20 asked for in one turn are signed together at once.
    const before = performance.now();
    const twenty = await Promise.all(Array.from({ length: 20 }, () => batching.sign(body)));
    expect(performance.now() - before).toBeLessThan(150);
    expect(twenty.map((r) => r.batch.size)).toEqual(Array(20).fill(20));
    for (const r of [alone as RunReceipt, ...three, ...twenty])
      expect((await verifyReceipt(r, attestation)).ok).toBe(true);
  });

  it("a receipt of version 1 (signed over its own message, before batches) still verifies, and fails when changed", async () => {
    const { batch: _batch, signature: _signature, ...rest } = receipt;
    const body = { ...rest, version: 1 as const };
    const key = keyring().receiptKey(INSTANCE);
    const v1: RunReceiptV1 = {
      ...body,
      signature: await signMessage({ message: receiptMessage(body), privateKey: bytesToHex(key.privateKey) }),
    };
    const v = await verifyReceipt({ ...answer, receipt: v1 }, attestation, { params });
    expect(v.checks.filter((c) => !c.ok)).toEqual([]);
    expect(v.checks.map((c) => c.check)).toEqual([
      "shape",
      "signature",
      "key",
      "report_data",
      "instance",
      "params",
      "response",
      "logs",
    ]);
    expect((await verifyReceipt({ ...v1, duration_ms: 1 }, attestation)).ok).toBe(false);
    // A version 1 receipt is not a version 2 one without its batch, nor the other way round.
    expect((await verifyReceipt({ ...v1, version: 2 } as unknown as RunReceipt, attestation)).checks[0]?.ok).toBe(
      false,
    );
    expect((await verifyReceipt({ ...receipt, version: 1 } as unknown as RunReceiptV1, attestation)).ok).toBe(false);
  });

  it('is bound by a quote over SHA-512("sigil-receipt-v1:" ‖ public key), made once', async () => {
    expect(attestation).toMatchObject({
      address: signer.address,
      public_key: signer.publicKey,
      instance_id: INSTANCE,
      simulated: true,
    });
    expect(quoteReportData(attestation.quote)).toEqual(
      await receiptKeyReportData(hexToBytes(signer.publicKey.slice(2))),
    );
    expect(await signer.attestation()).toBe(attestation);
  });

  it("verifies with the SDK, with the answer's response and logs and the params sent", async () => {
    const v = await verifyReceipt({ ...answer, receipt }, attestation, { params: { a: "x", b: 2 } });
    expect(v.checks.filter((c) => !c.ok)).toEqual([]);
    expect(v.checks.map((c) => c.check)).toEqual([
      "shape",
      "batch",
      "signature",
      "key",
      "report_data",
      "instance",
      "params",
      "response",
      "logs",
    ]);
    expect(v.ok).toBe(true);
    expect(v.simulated).toBe(true);
  });

  it("fails when any field of the receipt changes, or a byte of its signature, or a field is added", async () => {
    const flips: Array<[string, (r: RunReceipt) => RunReceipt]> = Object.keys(receipt)
      .filter((k) => k !== "signature")
      .map((k) => [k, (r) => ({ ...r, [k]: flip((r as Record<string, unknown>)[k]) })]);
    flips.push([
      "signature",
      (r) => ({
        ...r,
        signature: `${r.signature.slice(0, 10)}${r.signature[10] === "0" ? "1" : "0"}${r.signature.slice(11)}` as Hex,
      }),
    ]);
    flips.push(["added field", (r) => ({ ...r, extra: 1 }) as RunReceipt]);
    flips.push([
      "wallet digest",
      (r) => ({
        ...r,
        wallets: [
          {
            ...(r.wallets[0] as RunReceipt["wallets"][number]),
            signed: [{ kind: "hash", digest: `0x${"34".repeat(32)}` }],
          },
        ],
      }),
    ]);
    flips.push(["batch index", (r) => ({ ...r, batch: { ...r.batch, index: r.batch.index + 1 } })]);
    flips.push(["batch size", (r) => ({ ...r, batch: { ...r.batch, size: r.batch.size + 1 } })]);
    flips.push(["batch path", (r) => ({ ...r, batch: { ...r.batch, proof: [`0x${"00".repeat(32)}`] } })]);
    for (const [name, change] of flips) {
      const v = await verifyReceipt(change(receipt), attestation);
      expect(v.ok, name).toBe(false);
    }
  });

  it("fails against another instance's attestation, a forged attestation field, or a response that is not the answer's", async () => {
    const other = await SimulatedSource.create({
      appCompose: APP_COMPOSE,
      instanceId: hexToBytes("beef".padEnd(40, "0")),
    });
    const otherInfo = await other.info();
    const otherSigner = new ReceiptSigner({
      keyring: keyring(),
      instanceId: otherInfo.instance_id,
      composeHash: otherInfo.compose_hash,
      quote: (rd) => other.getQuote(rd),
    });
    const otherAttestation = await otherSigner.attestation();
    const v = await verifyReceipt(receipt, otherAttestation);
    expect(v.ok).toBe(false);
    expect(v.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["signature", "instance"]);
    // The other instance's quote with this instance's key and id: the quote does not bind the key.
    const spliced = await verifyReceipt(receipt, { ...attestation, quote: otherAttestation.quote });
    expect(spliced.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["report_data"]);
    const renamed = await verifyReceipt(receipt, { ...attestation, instance_id: otherInfo.instance_id });
    expect(renamed.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["instance"]);
    const response = await verifyReceipt({ ...answer, response: { ok: false }, receipt }, attestation);
    expect(response.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["response"]);
    const logs = await verifyReceipt(receipt, attestation, { logs: "other\n" });
    expect(logs.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["logs"]);
    expect((await verifyReceipt({ version: 2 } as unknown as RunReceipt, attestation)).checks).toEqual([
      { check: "shape", ok: false, detail: expect.any(String) },
    ]);
  });
});

describe("the Merkle batches of receipts (RFC 9162 §2.1, SHA-256)", () => {
  /** The tree hash by the RFC's recursive definition, as a check on the bottom-up builder. */
  const h = (bytes: Uint8Array) => hexToBytes(sha256(bytes).slice(2));
  function mth(leaves: Uint8Array[]): Uint8Array {
    if (leaves.length === 1) return leaves[0] as Uint8Array;
    let k = 1;
    while (k * 2 < leaves.length) k *= 2;
    return h(new Uint8Array([1, ...mth(leaves.slice(0, k)), ...mth(leaves.slice(k))]));
  }

  it("for every size from 1 to 70: the root is the RFC's tree hash, and every leaf's path leads to it and to no other place", () => {
    for (let n = 1; n <= 70; n++) {
      const leaves = Array.from({ length: n }, (_, i) => h(new Uint8Array([0, i, n])));
      const { root, proofs } = merkleBatch(leaves);
      expect(bytesToHex(root), `size ${n}`).toBe(bytesToHex(mth(leaves)));
      for (let i = 0; i < n; i++) {
        expect(
          bytesToHex(rootFromProof(leaves[i] as Uint8Array, i, n, proofs[i] as Uint8Array[]) ?? new Uint8Array()),
          `leaf ${i} of ${n}`,
        ).toBe(bytesToHex(root));
        if (n > 1) {
          const elsewhere = rootFromProof(leaves[i] as Uint8Array, (i + 1) % n, n, proofs[i] as Uint8Array[]);
          expect(elsewhere && bytesToHex(elsewhere)).not.toBe(bytesToHex(root));
        }
      }
    }
  });

  it("refuses what cannot be a place in a tree: an index at or past the size, a negative one, a path too long or too short", () => {
    const leaves = Array.from({ length: 5 }, (_, i) => h(new Uint8Array([i])));
    const { proofs } = merkleBatch(leaves);
    const leaf = leaves[4] as Uint8Array;
    expect(rootFromProof(leaf, 5, 5, proofs[4] as Uint8Array[])).toBeUndefined();
    expect(rootFromProof(leaf, -1, 5, proofs[4] as Uint8Array[])).toBeUndefined();
    expect(rootFromProof(leaf, 4, 5, [...(proofs[4] as Uint8Array[]), leaf])).toBeUndefined();
    expect(rootFromProof(leaves[0] as Uint8Array, 0, 5, (proofs[0] as Uint8Array[]).slice(1))).toBeUndefined();
    expect(() => merkleBatch([])).toThrow(RangeError);
  });
});

/** A receipt's body: what the enclave asks the signer to sign. */
function bodyOf(r: RunReceipt): Omit<RunReceiptBody, "instance_id" | "compose_hash"> {
  const { batch: _b, signature: _s, instance_id: _i, compose_hash: _c, ...body } = r;
  return body;
}

/** Another value of the same kind: what a tamperer would write. */
function flip(value: unknown): unknown {
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (typeof value === "string")
    return /^0x[0-9a-f]+$/.test(value) ? `${value.slice(0, -1)}${value.endsWith("0") ? "1" : "0"}` : `${value}x`;
  if (Array.isArray(value)) return [];
  return { changed: true };
}
