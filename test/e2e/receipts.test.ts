// Signed run receipts (issue 14, point 4) on the real local stack (anvil, AccountConfig, the
// enclave in simulated-TEE mode, the edge under wrangler dev, billing on): a run that signs with a
// wallet in every way answers a receipt that verifies with the SDK (verifyReceipt) and with
// `sigil verify-receipt` (from the API, and offline from saved files); its hashes, wallets and
// digests are what the client can recompute; flipping any field in turn, or a byte of the
// signature, fails; an attestation of another instance (a second enclave) fails; its charged_cents
// is X-Sigil-Charged-Cents and what the ledger charged; a run that fails still has a receipt.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  getAddress,
  hashMessage,
  hashTypedData,
  keccak256,
  parseTransaction,
  recoverAddress,
  serializeTransaction,
  type Hex,
  type TransactionSerializable,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createSigilClient,
  topUp,
  verifyReceipt,
  type ReceiptKeyAttestation,
  type RunReceipt,
  type SigilClient,
} from "../../sdk/src/index.ts";
import { spawnEnclave, type EnclaveProcess } from "../../bin/stack/enclave.ts";
import { verifyReceiptFile } from "../../bin/verify/receipt.ts";
import { edgeIdentityFromSeed, toBase64Url } from "../../shared/channel/channel.ts";
import { runSigil } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN_ALL = `async function main({ wallet, digest }) {
  const A = Sigil.Actions;
  const message = await A.signMessage({ pkpId: wallet, message: "receipt me" });
  const typed = await A.signTypedData({ pkpId: wallet, typedData: {
    domain: { name: "receipts", version: "1", chainId: 31337 },
    types: { Note: [{ name: "text", type: "string" }] },
    primaryType: "Note",
    message: { text: "typed" },
  } });
  const tx = await A.signTransaction({ pkpId: wallet, transaction: { chainId: 31337, nonce: 0, to: wallet, value: "1", gas: "21000", maxFeePerGas: "100", maxPriorityFeePerGas: "1" } });
  const raw = await A.signDigest({ pkpId: wallet, digest });
  console.log("signed four times");
  return { message, typed, tx, raw: raw.signature };
}`;
const FAILS = `async function main() { console.log("about to fail"); throw new Error("on purpose") }`;
const DIGEST = `0x${"5a".repeat(32)}` as Hex;

type RunAnswer = {
  response: unknown;
  logs: string;
  has_error: boolean;
  error?: { code: string };
  cid: string;
  duration_ms: number;
  charged_cents: number;
  receipt: RunReceipt;
};

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let anon: SigilClient;
let client: SigilClient;
let apiKey: string;
let wallet: Hex;
let dir: string;
let second: EnclaveProcess | undefined;

beforeAll(async () => {
  stack = inject("localStack");
  dir = mkdtempSync(join(tmpdir(), "sigil-receipts-"));
  anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "receipts" });
  apiKey = created.api_key;
  client = anon.with({ apiKey });
  await topUp(client, { amountCents: 500 });
  wallet = (await client.createWallet({ name: "signer", description: "" })).wallet_address as Hex;
  await client.addGroup({
    group_name: "all",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: ["0"],
  });
}, 180_000);

afterAll(async () => {
  await second?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One run through the API as any client makes it: the answer, its request id and charge header. */
async function run(
  code: string,
  jsParams: unknown,
): Promise<{ answer: RunAnswer; requestId: string | null; chargedHeader: string | null }> {
  const res = await fetch(`${stack.api}/sigil_action`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify({ code, js_params: jsParams }),
  });
  const answer = (await res.json()) as RunAnswer;
  if (res.status !== 200) throw new Error(`sigil_action answered ${res.status}: ${JSON.stringify(answer)}`);
  return {
    answer,
    requestId: res.headers.get("x-request-id"),
    chargedHeader: res.headers.get("x-sigil-charged-cents"),
  };
}

/** Canonical JSON as docs/guides/receipts.md defines it, written here independently of shared/canonicalJson.ts. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}
const sha256 = (text: string) => `0x${createHash("sha256").update(text, "utf8").digest("hex")}`;

/** Another value of the same kind, as a tamperer would write it. */
function flip(value: unknown): unknown {
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (typeof value === "string")
    return /^0x[0-9a-f]+$/.test(value) ? `${value.slice(0, -1)}${value.endsWith("0") ? "1" : "0"}` : `${value}x`;
  if (Array.isArray(value)) return value.length > 0 ? value.slice(1) : [{}];
  return { changed: true };
}

describe("a signing run's receipt", () => {
  let signing: Awaited<ReturnType<typeof run>>;
  let attestation: ReceiptKeyAttestation;
  let balanceBefore: number;
  const params = { wallet: "", digest: DIGEST };

  beforeAll(async () => {
    params.wallet = wallet;
    balanceBefore = (await client.getBalance()).balance_cents;
    signing = await run(SIGN_ALL, params);
    attestation = (await anon.getReceiptKey({ instance: signing.answer.receipt.instance_id })) as ReceiptKeyAttestation;
  }, 60_000);

  it("says what ran and what it answered, in hashes any client recomputes from what it sent and got", async () => {
    const { answer, requestId } = signing;
    expect(answer.has_error, JSON.stringify(answer)).toBe(false);
    const r = answer.receipt;
    expect(r).toMatchObject({
      version: 2,
      request_id: requestId,
      cid: answer.cid,
      has_error: false,
      duration_ms: answer.duration_ms,
    });
    expect(r.account).toMatch(/^0x[0-9a-f]{64}$/);
    expect(r.params_sha256).toBe(sha256(canonical(params)));
    expect(r.response_sha256).toBe(sha256(canonical(answer.response)));
    expect(r.logs_sha256).toBe(sha256(answer.logs));
    expect(Date.parse(r.ended_at)).toBeGreaterThanOrEqual(Date.parse(r.started_at));
    expect(attestation).toMatchObject({ instance_id: r.instance_id, compose_hash: r.compose_hash, simulated: true });
  });

  it("lists the wallet and the digest of each signature, in order: each recovers to the wallet", async () => {
    const { response, receipt } = signing.answer as RunAnswer & {
      response: { message: Hex; typed: Hex; tx: Hex; raw: Hex };
    };
    expect(receipt.wallets).toHaveLength(1);
    const [entry] = receipt.wallets;
    expect(entry).toMatchObject({ address: wallet.toLowerCase(), action: false, key_exported: false });
    expect(entry?.signed.map((s) => s.kind)).toEqual(["message", "typed_data", "transaction", "hash"]);
    const [m, t, x, d] = entry?.signed ?? [];
    expect(m?.digest).toBe(hashMessage("receipt me"));
    expect(t?.digest).toBe(
      hashTypedData({
        domain: { name: "receipts", version: "1", chainId: 31337 },
        types: { Note: [{ name: "text", type: "string" }] },
        primaryType: "Note",
        message: { text: "typed" },
      }),
    );
    const tx = parseTransaction(response.tx);
    const { r: sigR, s: sigS, yParity, ...unsigned } = tx;
    void sigR;
    void sigS;
    expect(x?.digest).toBe(keccak256(serializeTransaction(unsigned as TransactionSerializable)));
    expect(d?.digest).toBe(DIGEST);
    const signer = getAddress(wallet);
    expect(await recoverAddress({ hash: m?.digest as Hex, signature: response.message })).toBe(signer);
    expect(await recoverAddress({ hash: t?.digest as Hex, signature: response.typed })).toBe(signer);
    expect(
      await recoverAddress({
        hash: x?.digest as Hex,
        signature: { r: tx.r as Hex, s: tx.s as Hex, yParity: yParity as number },
      }),
    ).toBe(signer);
    expect(await recoverAddress({ hash: DIGEST, signature: response.raw })).toBe(signer);
  });

  it("charges what X-Sigil-Charged-Cents says and the ledger charged", async () => {
    const { answer, chargedHeader } = signing;
    expect(answer.receipt.charged_cents).toBeGreaterThanOrEqual(1);
    expect(answer.receipt.charged_cents).toBe(answer.charged_cents);
    expect(String(answer.receipt.charged_cents)).toBe(chargedHeader);
    expect(balanceBefore - (await client.getBalance()).balance_cents).toBe(answer.receipt.charged_cents);
  });

  it("verifies with the SDK, given the params sent", async () => {
    const v = await verifyReceipt(signing.answer, attestation, { params });
    expect(v.checks.filter((c) => !c.ok)).toEqual([]);
    expect(v.ok).toBe(true);
    expect(
      (await verifyReceipt(signing.answer, attestation, { params: { ...params, digest: `0x${"00".repeat(32)}` } })).ok,
    ).toBe(false);
  });

  it("verifies with sigil verify-receipt: from the API, and offline from saved files", async () => {
    const file = join(dir, "run.json");
    writeFileSync(file, JSON.stringify(signing.answer));
    const paramsFile = join(dir, "params.json");
    writeFileSync(paramsFile, JSON.stringify(params));
    const online = await runSigil(
      ["verify-receipt", file, "--api", stack.origin, "--allow-simulated", "--params", paramsFile],
      { env: {}, cwd: dir },
    );
    expect(online.code, online.stdout + online.stderr).toBe(0);
    expect(online.stdout).toContain("verified: the receipt is signed by the attested receipt key");
    expect(online.stdout).toMatch(/PASS\s+quote/);
    expect(online.stdout).toMatch(/PASS\s+claims\.receipt/);

    const attestationFile = join(dir, "receipt-key.json");
    writeFileSync(attestationFile, JSON.stringify(attestation));
    const collateralFile = join(dir, "collateral.json");
    writeFileSync(
      collateralFile,
      JSON.stringify(await anon.getSimulatedCollateral({ instance: signing.answer.receipt.instance_id })),
    );
    const receiptOnly = join(dir, "receipt.json");
    writeFileSync(receiptOnly, JSON.stringify(signing.answer.receipt));
    const offline = await runSigil(
      [
        "verify-receipt",
        receiptOnly,
        "--attestation",
        attestationFile,
        "--collateral",
        collateralFile,
        "--allow-simulated",
        "--json",
      ],
      { env: {}, cwd: dir },
    );
    expect(offline.code, offline.stdout + offline.stderr).toBe(0);
    const lines = offline.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { check: string; status: string });
    expect(lines.every((l) => l.status === "pass")).toBe(true);
    expect(lines.map((l) => l.check)).toContain("quote");

    // The same from what `sigil run --json` prints, as a user saves it.
    writeFileSync(join(dir, "sign.js"), SIGN_ALL);
    const ran = await runSigil(["run", "sign.js", "--params", JSON.stringify(params), "--key", apiKey, "--json"], {
      env: { SIGIL_STATE_DIR: stack.stateDir, SIGIL_PROFILE_FILE: join(dir, "no-profiles.json") },
      cwd: dir,
    });
    expect(ran.code, ran.stderr).toBe(0);
    writeFileSync(join(dir, "ran.json"), ran.stdout);
    const fromRun = await runSigil(
      ["verify-receipt", "ran.json", "--api", stack.origin, "--allow-simulated", "--params", paramsFile],
      { env: {}, cwd: dir },
    );
    expect(fromRun.code, fromRun.stdout + fromRun.stderr).toBe(0);

    // Without --allow-simulated a simulated TEE's receipt is not verified.
    const strict = await runSigil(["verify-receipt", file, "--api", stack.origin], { env: {}, cwd: dir });
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain("NOT verified");
  });

  it("fails when any single field is flipped, in turn, or a byte of the signature (SDK and the CLI's checks)", async () => {
    const receipt = signing.answer.receipt;
    const changed: Array<[string, RunReceipt]> = Object.keys(receipt)
      .filter((k) => k !== "signature")
      .map((k) => [k, { ...receipt, [k]: flip((receipt as Record<string, unknown>)[k]) } as RunReceipt]);
    const sig = receipt.signature;
    changed.push([
      "signature byte",
      { ...receipt, signature: `${sig.slice(0, 20)}${sig[20] === "f" ? "e" : "f"}${sig.slice(21)}` as Hex },
    ]);
    changed.push([
      "wallet digest",
      {
        ...receipt,
        wallets: receipt.wallets.map((w) => ({
          ...w,
          signed: w.signed.map((s, i) => (i === 0 ? { ...s, digest: flip(s.digest) as Hex } : s)),
        })),
      },
    ]);
    // Every field the receipt has is flipped (a field added later is flipped too).
    expect(Object.keys(receipt).sort()).toEqual([
      "account",
      "anchor",
      "batch",
      "charged_cents",
      "cid",
      "compose_hash",
      "duration_ms",
      "ended_at",
      "has_error",
      "instance_id",
      "logs_sha256",
      "params_sha256",
      "request_id",
      "response_sha256",
      "signature",
      "started_at",
      "version",
      "wallets",
    ]);
    // And where it sits in its batch: another index, size or audit path leads to another root.
    changed.push(["batch index", { ...receipt, batch: { ...receipt.batch, index: receipt.batch.index + 1 } }]);
    changed.push(["batch size", { ...receipt, batch: { ...receipt.batch, size: receipt.batch.size + 1 } }]);
    changed.push([
      "batch path",
      { ...receipt, batch: { ...receipt.batch, proof: [...receipt.batch.proof, `0x${"00".repeat(32)}` as Hex] } },
    ]);
    expect(changed).toHaveLength(22);
    for (const [name, r] of changed) {
      expect((await verifyReceipt(r, attestation)).ok, `SDK: ${name}`).toBe(false);
      const lines = await verifyReceiptFile(r, { attestation, api: stack.origin, allowSimulated: true });
      expect(
        lines.some((l) => l.status === "fail"),
        `CLI: ${name}`,
      ).toBe(true);
    }
    // And through the command itself, for one field and the signature.
    for (const [name, r] of changed.filter(([n]) => n === "charged_cents" || n === "signature byte")) {
      const file = join(dir, `flipped-${name.replace(/\W/g, "_")}.json`);
      writeFileSync(file, JSON.stringify(r));
      const out = await runSigil(["verify-receipt", file, "--api", stack.origin, "--allow-simulated"], {
        env: {},
        cwd: dir,
      });
      expect(out.code, name).toBe(1);
      expect(out.stdout).toMatch(/FAIL\s+receipt\.signature/);
    }
  });

  it("fails against the attestation of another instance (a second enclave, another instance id)", {
    timeout: 120_000,
  }, async () => {
    second = await spawnEnclave({
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed("07".repeat(32))).publicKey),
      SIGIL_RPC_URL: stack.rpcUrl,
      SIGIL_CONTRACT_ADDRESS: stack.contract,
      SIGIL_DEV_ROOT_KEY: `0x${"77".repeat(32)}`,
      SIGIL_INSTANCE_INDEX: "5",
      SIGIL_SANDBOX_WORKERS: "1",
      SIGIL_LOG_LEVEL: "warn",
    });
    const other = (await (await fetch(`${second.url}/attestation/receipt-key`)).json()) as ReceiptKeyAttestation;
    expect(other.instance_id).not.toBe(signing.answer.receipt.instance_id);
    const v = await verifyReceipt(signing.answer, other);
    expect(v.ok).toBe(false);
    expect(v.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(["signature", "instance"]);

    const file = join(dir, "run-other.json");
    writeFileSync(file, JSON.stringify(signing.answer));
    const otherFile = join(dir, "other-key.json");
    writeFileSync(otherFile, JSON.stringify(other));
    const otherCollateral = join(dir, "other-collateral.json");
    writeFileSync(otherCollateral, await (await fetch(`${second.url}/attestation/simulated-collateral`)).text());
    const out = await runSigil(
      ["verify-receipt", file, "--attestation", otherFile, "--collateral", otherCollateral, "--allow-simulated"],
      { env: {}, cwd: dir },
    );
    expect(out.code).toBe(1);
    // Its quote is genuine (it verifies), but it is another instance's: the key and RTMR3's claims are not this receipt's.
    expect(out.stdout).toMatch(/PASS\s+quote/);
    expect(out.stdout).toMatch(/FAIL\s+receipt\.signature/);
    expect(out.stdout).toMatch(/FAIL\s+claims\.receipt/);
  });
});

describe("a failed run", () => {
  it("still has a signed receipt that verifies, saying has_error, with what it logged and cost", async () => {
    const before = (await client.getBalance()).balance_cents;
    const { answer, chargedHeader } = await run(FAILS, null);
    expect(answer.has_error).toBe(true);
    expect(answer.receipt).toMatchObject({
      has_error: true,
      wallets: [],
      charged_cents: 1,
      params_sha256: sha256("null"),
      response_sha256: sha256("null"),
      logs_sha256: sha256(answer.logs),
    });
    expect(answer.logs).toContain("about to fail");
    expect(chargedHeader).toBe("1");
    expect(before - (await client.getBalance()).balance_cents).toBe(1);
    const attestation = (await anon.getReceiptKey({ instance: answer.receipt.instance_id })) as ReceiptKeyAttestation;
    expect((await verifyReceipt(answer, attestation, { params: null })).ok).toBe(true);
  });

  it("through the SDK: its answer and receipt-key types go to verifyReceipt as they are", async () => {
    const run = await client.sigilAction({ code: FAILS, js_params: null });
    expect(run.receipt.has_error).toBe(true);
    const key = await anon.getReceiptKey({ instance: run.receipt.instance_id });
    expect((await verifyReceipt(run, key, { params: null })).ok).toBe(true);
  });
});
