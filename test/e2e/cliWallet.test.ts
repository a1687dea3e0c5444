// The `sigil` command's wallet-owned flows against the real local stack: a wallet (SIGIL_PRIVATE_KEY,
// or a v3 keystore made here) creates its ChainSecured account with its first wallet, adds a
// wallet and a usage key by signature and grants them on chain from the command line, pays for
// credit with X-Wallet-Auth, and a managed account converts to one. Each failure is one line and a
// non-zero exit: a wrong keystore password, a signer with no ether, a signer that is not the
// account's admin, a wrong key.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestClient, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { toHash32, walletLookupHash } from "../../shared/hashing.ts";
import { errorLineOf, runSigil, type CliResult } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";
import { encryptKeystore } from "../harness/keystore.ts";

const WRONG_KEY = randomBytes(32).toString("base64");
const PASSWORD = "correct horse battery staple";

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let work: string;
let keystore: string;
const adminKey = generatePrivateKey();
const admin = privateKeyToAccount(adminKey);

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sigil-cli-wallet-"));
  keystore = join(work, "admin.json");
  writeFileSync(keystore, encryptKeystore(adminKey, PASSWORD, { kdf: "scrypt" }));
  stack = inject("localStack");
}, 150_000);

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
});

/** `sigil …` with the stack found through SIGIL_STATE_DIR and no profile. */
function sigil(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return runSigil(args, {
    env: { SIGIL_STATE_DIR: stack.stateDir, SIGIL_PROFILE_FILE: join(work, "profiles.json"), ...env },
    cwd: work,
  });
}

async function ok(args: string[], env: Record<string, string | undefined> = {}): Promise<string> {
  const r = await sigil(args, env);
  expect(r.code, `sigil ${args.join(" ")}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

const fund = (address: `0x${string}`) =>
  createTestClient({ mode: "anvil", transport: http(stack.rpcUrl) }).setBalance({ address, value: 10n ** 20n });

let usageKey = "";

describe("chain-secured create", () => {
  it("refuses a signer with no ether to pay for its transactions, before anything is made", async () => {
    const r = await sigil(["chain-secured", "create", "--name", "broke"], { SIGIL_PRIVATE_KEY: adminKey });
    expect(r.code).toBe(1);
    expect(errorLineOf(r)).toMatchObject({
      command: "chain-secured create",
      code: "insufficient_funds",
      message: expect.stringContaining(admin.address),
    });
    expect(r.stderr).not.toContain(adminKey.slice(2));
  });

  it("makes the signer's account on chain with its master wallet and a first wallet", async () => {
    await fund(admin.address);
    const out = await ok(
      ["chain-secured", "create", "--name", "cli chain secured", "--wallet-name", "first", "--json"],
      { SIGIL_PRIVATE_KEY: adminKey },
    );
    const created = JSON.parse(out) as {
      account_id: string;
      admin_wallet_address: string;
      master_wallet_address: string;
      wallet_address: string;
      transaction_hashes: Hex[];
    };
    expect(created.account_id).toBe(toHash32(walletLookupHash(admin.address)));
    expect(created.admin_wallet_address).toBe(admin.address);
    expect(created.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(created.transaction_hashes).toHaveLength(2);
    expect(out).not.toContain(adminKey.slice(2));
  });

  it("a malformed SIGIL_PRIVATE_KEY is a usage error that never echoes it", async () => {
    const secret = "0xnot-a-key-but-do-not-print-it";
    const r = await sigil(["chain-secured", "create", "--name", "x"], { SIGIL_PRIVATE_KEY: secret });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("SIGIL_PRIVATE_KEY must be 0x followed by 64 hex digits");
    expect(r.stderr).not.toContain(secret);
  });
});

describe("wallet create --sign and key add --sign", () => {
  it("wallet create --sign derives a wallet for the signer and registers it on chain", async () => {
    const out = await ok(["wallet", "create", "--sign", "--name", "second"], { SIGIL_PRIVATE_KEY: adminKey });
    expect(out).toMatch(/^wallet\s+0x[0-9a-f]{40}$/m);
    expect(out).toMatch(new RegExp(`^account\\s+${toHash32(walletLookupHash(admin.address))}$`, "m"));
  });

  it("key add --sign with the keystore makes a usage key, grants its permissions on chain, and prints it once", async () => {
    const out = await ok(
      [
        "key",
        "add",
        "--sign",
        "--keystore",
        keystore,
        "--name",
        "cli runner",
        "--execute-in-groups",
        "0",
        "--can-create-groups",
      ],
      { SIGIL_KEYSTORE_PASSWORD: PASSWORD },
    );
    usageKey = /^usage key\s+(\S{44})\s+\(shown once: keep it\)$/m.exec(out)?.[1] as string;
    expect(usageKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(out).toMatch(new RegExp(`^admin\\s+${admin.address}$`, "m"));
    // The key reads the account: its own grant, and the three wallets (master, first, second).
    expect(await ok(["key", "list", "--key", usageKey])).toMatch(
      /^0x[0-9a-f]{64}\s+cli runner\s+never\s+\$0\.00\s+none\s+create-groups execute:all$/m,
    );
    const wallets = JSON.parse(await ok(["wallet", "list", "--key", usageKey, "--json"])) as Array<{
      id: string;
      name: string;
    }>;
    expect(wallets.map((w) => [w.id, w.name])).toEqual([
      ["0", ""],
      ["1", "first"],
      ["2", "second"],
    ]);
    expect(JSON.parse(await ok(["account", "show", "--key", usageKey, "--json"]))).toMatchObject({
      exists: true,
      managed: false,
      key_kind: "usage",
      key_name: "cli runner",
    });
  });

  it("refuses a keystore whose password is wrong, in one line, before anything is sent", async () => {
    const r = await sigil(["key", "add", "--sign", "--keystore", keystore, "--name", "never"], {
      SIGIL_KEYSTORE_PASSWORD: "wrong",
    });
    expect(r.code).toBe(1);
    expect(errorLineOf(r)).toMatchObject({ command: "key add", code: "keystore_password_wrong" });
    const noPassword = await sigil(["wallet", "create", "--sign", "--keystore", keystore]);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain("SIGIL_KEYSTORE_PASSWORD");
  });

  it("a signer that administers no account cannot grant a key: the chain refuses it, one line, exit 1", async () => {
    const stranger = generatePrivateKey();
    await fund(privateKeyToAccount(stranger).address);
    const r = await sigil(["key", "add", "--sign", "--name", "not mine"], { SIGIL_PRIVATE_KEY: stranger });
    expect(r.code).toBe(1);
    expect(errorLineOf(r)).toMatchObject({
      command: "key add",
      code: "chain_error",
      message: expect.stringMatching(/"setUsageApiKey" reverted: AccountDoesNotExist\(0x[0-9a-f]{64}\)$/),
    });
    expect(r.stdout).toBe("");
  });
});

describe("billing with X-Wallet-Auth", () => {
  it("topup --sign and balance --sign pay and read as the admin wallet, with no key", async () => {
    expect(
      await ok(["topup", "--sign", "--keystore", keystore, "--amount", "500"], { SIGIL_KEYSTORE_PASSWORD: PASSWORD }),
    ).toMatch(/balance \$5\.00$/m);
    expect((await ok(["balance", "--sign"], { SIGIL_PRIVATE_KEY: adminKey })).trim()).toBe("balance $5.00");
    // The usage key sees the same credit.
    expect(JSON.parse(await ok(["balance", "--key", usageKey, "--json"]))).toEqual({
      balance_cents: 500,
      balance_display: "$5.00",
    });
  });
});

describe("convert", () => {
  it("turns a managed account into one the signer administers; its master key may then only read", async () => {
    const { api_key: master } = JSON.parse(await ok(["account", "create", "--name", "to convert", "--json"])) as {
      api_key: string;
    };
    await ok(["topup", "--key", master, "--amount", "500"]);
    const newAdmin = generatePrivateKey();
    // The service sends the conversion (a managed write, 1 cent): the new admin needs no ether.
    const out = await ok(["convert", "--key", master], { SIGIL_PRIVATE_KEY: newAdmin });
    expect(out).toContain(`administered by ${privateKeyToAccount(newAdmin).address}`);
    expect(JSON.parse(await ok(["account", "show", "--key", master, "--json"]))).toMatchObject({
      exists: true,
      managed: false,
      key_kind: "master",
    });
    const write = await sigil(["wallet", "create", "--key", master]);
    expect(write.code).toBe(1);
    expect(errorLineOf(write)).toMatchObject({
      command: "wallet create",
      code: "chain_secured_account",
      requestId: expect.stringMatching(/^[0-9a-f-]+$/),
    });
  });

  it("a wrong key is refused in one line with its request id", async () => {
    const r = await sigil(["convert", "--key", WRONG_KEY], { SIGIL_PRIVATE_KEY: generatePrivateKey() });
    expect(r.code).toBe(1);
    expect(errorLineOf(r)).toMatchObject({
      command: "convert",
      code: "invalid_api_key",
      requestId: expect.stringMatching(/^[0-9a-f-]+$/),
    });
    expect(r.stderr).not.toContain(WRONG_KEY);
  });
});
