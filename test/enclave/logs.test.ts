// The enclave's own logs never carry a key or a secret (docs/design/keys-and-authz.md: keys are "never logged
// (log the first 6 characters of its hash at most)"). An enclave of its own, logging at debug, runs
// the operations that handle keys — new_account, create_wallet, add_usage_api_key, add_group, runs
// that use every kind of key and one that fails with a private key in its error message, refused
// requests — and everything it printed is searched for each key and secret involved.
import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { keyRef } from "../../shared/log.ts";
import { computeCid } from "../../shared/cid.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import { walletDerivation, type RunResult } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";
import { callAt, okAt, startOwnEnclave } from "./ownEnclave.ts";

/** Its own payer range: it writes, and must not share payers (and nonces) with the shared enclave. */
const INSTANCE_INDEX = 13;
const PAYERS_PER_INSTANCE = 4;

const USE_EVERY_KEY = `async function main({ wallet }) {
  const A = Sigil.Actions;
  const privateKey = await A.getPrivateKey({ pkpId: wallet });
  console.log("the wallet's key is", privateKey);
  return {
    privateKey,
    signature: await A.signMessage({ pkpId: wallet, message: "hello" }),
    ciphertext: await A.encrypt({ pkpId: wallet, plaintext: "secret" }),
    actionPrivateKey: await A.getActionPrivateKey(),
  };
}`;
const FAIL_WITH_KEY = `async function main({ wallet }) {
  const privateKey = await Sigil.Actions.getPrivateKey({ pkpId: wallet });
  throw new Error("leaking " + privateKey);
}`;

let enclave: EnclaveProcess;

beforeAll(async () => {
  enclave = await startOwnEnclave({
    instanceIndex: INSTANCE_INDEX,
    registerPayers: true,
    env: {
      SIGIL_LOG_LEVEL: "debug",
      SIGIL_PAYERS_PER_INSTANCE: String(PAYERS_PER_INSTANCE),
      SIGIL_LISTENER_POLL_MS: "200",
    },
  });
});

afterAll(async () => {
  await enclave?.stop();
});

describe("the enclave's logs, at debug level, after operations with known keys", () => {
  const keyring = new Keyring(hexToBytes(TEST_ROOT_KEY));
  /** name → secret text that must not appear in the logs. */
  const secrets = new Map<string, string>();
  const hexSecret = (name: string, bytes: Uint8Array | Hex) =>
    secrets.set(name, (typeof bytes === "string" ? bytes : bytesToHex(bytes)).slice(2).toLowerCase());
  const apiKeySecret = (name: string, key: string) => {
    secrets.set(name, key);
    secrets.set(`${name} (base64url)`, Buffer.from(key, "base64").toString("base64url"));
    hexSecret(`${name} (decoded bytes)`, Uint8Array.from(Buffer.from(key, "base64")));
  };
  let masterHash: bigint;
  let usageHash: bigint;
  let logs: string;

  beforeAll(async () => {
    const base = enclave.url;
    const account = await okAt<{ api_key: string; wallet_address: string }>(base, "new_account", {
      account_name: "logged",
    });
    const wallet = getAddress(
      (await okAt<{ wallet_address: Address }>(base, "create_wallet", { api_key: account.api_key, name: "w" }))
        .wallet_address,
    );
    const { usage_api_key: usageKey } = await okAt<{ usage_api_key: string }>(base, "add_usage_api_key", {
      api_key: account.api_key,
      name: "runner",
      description: "",
      ...NO_PERMISSIONS,
      execute_in_groups: [0],
    });
    const [useCid, failCid] = [await computeCid(USE_EVERY_KEY), await computeCid(FAIL_WITH_KEY)];
    await okAt(base, "add_group", {
      api_key: account.api_key,
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: [useCid, failCid],
    });

    const used = await callAt<RunResult>(base, "sigil_action", {
      api_key: account.api_key,
      code: USE_EVERY_KEY,
      js_params: { wallet },
    });
    expect(used.body.has_error, JSON.stringify(used.body)).toBe(false);
    const out = used.body.response as { privateKey: Hex; actionPrivateKey: Hex };
    const failedRun = await callAt<RunResult>(base, "sigil_action", {
      api_key: usageKey,
      code: FAIL_WITH_KEY,
      js_params: { wallet },
    });
    expect(failedRun.body.error).toMatchObject({ code: "script_error", message: `Error: leaking ${out.privateKey}` });
    // Refused before running: code in no group (403), and a well-formed key nobody holds (401).
    expect(
      (await callAt(base, "sigil_action", { api_key: account.api_key, code: "async function main() {}" })).status,
    ).toBe(403);
    const strangerKey = Buffer.alloc(32, 0x5a).toString("base64");
    expect(
      (await callAt(base, "sigil_action", { api_key: strangerKey, code: "async function main() {}" })).status,
    ).toBe(401);

    masterHash = apiKeyHash(account.api_key);
    usageHash = apiKeyHash(usageKey);
    const derivation = await walletDerivation(masterHash, wallet);
    const walletKey = keyring.pkpKey(masterHash, derivation);
    // The keys searched for are the ones the enclave used: derived here the same way, checked against what it answered.
    expect(walletKey.address).toBe(wallet);
    expect(bytesToHex(walletKey.privateKey)).toBe(out.privateKey);
    expect(bytesToHex(keyring.actionKey(useCid).privateKey)).toBe(out.actionPrivateKey);
    expect(keyring.accountMasterWallet(masterHash).address.toLowerCase()).toBe(account.wallet_address);
    const payerKeys = Array.from({ length: PAYERS_PER_INSTANCE }, (_, i) =>
      keyring.payerKey(INSTANCE_INDEX * PAYERS_PER_INSTANCE + i),
    );
    expect(payerKeys.map((k) => k.address)).toEqual(enclave.payers.map((a) => getAddress(a)));

    apiKeySecret("the master API key", account.api_key);
    apiKeySecret("the usage API key", usageKey);
    apiKeySecret("an unknown API key sent", strangerKey);
    hexSecret("the root key", TEST_ROOT_KEY);
    secrets.set("the root key (base64)", Buffer.from(hexToBytes(TEST_ROOT_KEY)).toString("base64"));
    hexSecret("the Account Master Wallet's private key", keyring.accountMasterWallet(masterHash).privateKey);
    hexSecret("the wallet's private key", walletKey.privateKey);
    hexSecret("the wallet's encryption key", keyring.pkpEncryptionKey(masterHash, derivation));
    hexSecret("the action key of the run that succeeded", keyring.actionKey(useCid).privateKey);
    hexSecret("the action key of the run that failed", keyring.actionKey(failCid).privateKey);
    for (const [i, k] of payerKeys.entries()) hexSecret(`payer key ${i}`, k.privateKey);

    // The chain listener's debug line comes after the writes' events are polled: wait for it, so
    // that debug output is part of what is searched.
    for (let waited = 0; waited < 10_000 && !enclave.output().includes('"level":"debug"'); waited += 100)
      await new Promise((resolve) => setTimeout(resolve, 100));
    logs = enclave.output();
    expect(logs, "no debug line within 10 s").toContain('"level":"debug"');
  });

  it("were captured: they name the operations, the runs and their outcome, with keys as 6-digit hash references", () => {
    for (const msg of ["account created", "write sent", "run finished", "operation done"])
      expect(logs, msg).toContain(`"msg":"${msg}"`);
    expect(logs).toContain(`"key":"${keyRef(masterHash)}"`);
    expect(logs).toContain(`"key":"${keyRef(usageHash)}"`);
    expect(logs).toContain('"error":"script_error"');
  });

  it("contain none of the API keys, the root key, the wallet keys, the action keys or the payer keys, in any encoding searched", () => {
    expect(secrets.size).toBe(20); // 3 API keys × 3 encodings, the root key × 2, 3 wallet keys, 2 action keys, 4 payer keys
    const lower = logs.toLowerCase();
    for (const [name, secret] of secrets) {
      expect(secret.length, name).toBeGreaterThanOrEqual(40);
      expect(/^[0-9a-f]+$/.test(secret) ? lower.includes(secret) : logs.includes(secret), name).toBe(false);
    }
  });

  it("contain no more of a key's hash than its first 6 hex digits", () => {
    for (const [name, hash] of [
      ["master key hash", masterHash],
      ["usage key hash", usageHash],
    ] as const) {
      const hex = hash.toString(16).padStart(64, "0");
      expect(logs.toLowerCase().includes(hex.slice(0, 7)), name).toBe(false);
    }
  });

  it("do not echo what a script printed or threw: its console output and error message go to the caller only", () => {
    expect(logs).not.toContain("the wallet's key is");
    expect(logs).not.toContain("leaking");
  });
});
