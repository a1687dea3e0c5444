// `sigil key delegate|narrow|describe|revoke-delegation` against the real local stack: keys minted from
// a usage key whose guardrail allows it, one narrowed offline and described, the narrowed key running
// within its bounds (once, with its one wallet) and refused past them, a caveat wider than its key a
// usage error with no key printed, and a revocation by id refusing the key from the next run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { errorLineOf, runSigil, type CliResult } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";

const SIGN = `async function main({ wallet, message }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}`;

let stack: SharedLocalStack;
let work: string;
let owner: SigilClient;
let anon: SigilClient;
let ownerKey: string;
let usageKey: string;
let cid: string;
let walletA: Address;
let walletB: Address;

beforeAll(async () => {
  stack = inject("localStack");
  work = mkdtempSync(join(tmpdir(), "sigil-cli-delegation-"));
  anon = createSigilClient({ baseUrl: stack.origin });
  ownerKey = (await anon.newAccount({ account_name: "cli delegation" })).api_key;
  owner = anon.with({ apiKey: ownerKey });
  await topUp(owner, { amountCents: 500 });
  walletA = (await owner.createWallet({ name: "a" })).wallet_address as Address;
  walletB = (await owner.createWallet({ name: "b" })).wallet_address as Address;
  cid = await owner.getSigilActionIpfsId(SIGN);
  await fetch(`${stack.gatewayUrl}/add`, { method: "POST", body: SIGN });
  const { group_id } = await owner.addGroup({
    group_name: "agent",
    group_description: "",
    pkp_ids_permitted: [walletA, walletB],
    cid_hashes_permitted: [cid],
  });
  usageKey = (
    await owner.addUsageApiKey({ name: "agent", description: "", ...NO_PERMISSIONS, execute_in_groups: [group_id] })
  ).usage_api_key;
  await owner.setUsageKeyGuardrail({
    usage_api_key: usageKey,
    guardrail: { version: 1, messages: {}, delegation: { max_lifetime_seconds: 3600 } },
  });
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

function sigil(args: string[], key: string): Promise<CliResult> {
  return runSigil([...args, "--key", key], {
    env: { SIGIL_STATE_DIR: stack.stateDir, SIGIL_PROFILE_FILE: join(work, "profiles.json") },
    cwd: work,
  });
}

async function json<T>(args: string[], key: string): Promise<T> {
  const r = await sigil([...args, "--json"], key);
  expect(r.code, `sigil ${args.join(" ")}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const sign = (key: string, wallet: Address) =>
  anon.with({ apiKey: key }).sigilAction({ ipfs_id: cid, js_params: { wallet, message: "from the cli" } });

describe("sigil key delegate, narrow, describe, revoke-delegation", () => {
  it("mints, narrows offline, runs within the bounds and is refused past them; revoking by id ends it", async () => {
    const minted = await json<{ keys: string[]; ids: string[]; root: string }>(
      [
        "key",
        "delegate",
        "--expires-in",
        "600",
        "--max-uses",
        "5",
        "--wallets",
        `${walletA},${walletB}`,
        "--count",
        "2",
      ],
      usageKey,
    );
    expect(minted.keys).toHaveLength(2);
    const narrowed = await json<{ key: string; id: string }>(
      ["key", "narrow", minted.keys[0] as string, "--max-uses", "1", "--wallets", walletA, "--sealed"],
      usageKey,
    );
    const described = await json<{ ids: string[]; wallets: string[]; uses: unknown[]; delegable: boolean }>(
      ["key", "describe", narrowed.key],
      usageKey,
    );
    expect(described).toMatchObject({
      ids: [minted.ids[0], narrowed.id],
      wallets: [walletA.toLowerCase()],
      delegable: false,
    });
    expect((await sign(narrowed.key, walletB)).error?.code).toBe("permission_denied");
    await expect(sign(narrowed.key, walletA)).rejects.toMatchObject({ status: 401 });

    // Wider than its key: refused here, no key printed.
    const wider = await sigil(["key", "narrow", minted.keys[1] as string, "--max-uses", "50"], usageKey);
    expect(wider.code).not.toBe(0);
    expect(wider.stdout).toBe("");
    expect(errorLineOf(wider).message).toMatch(/at most 5 uses/);

    expect((await sign(minted.keys[1] as string, walletB)).has_error).toBe(false);
    // By the usage key that minted it, the key itself on standard input is the form it takes (by id: the master key).
    const byUsageKey = await sigil(["key", "revoke-delegation", minted.ids[1] as string], usageKey);
    expect(byUsageKey.code).not.toBe(0);
    expect(errorLineOf(byUsageKey).code).toBe("permission_denied");
    const revoked = await json<{ id: string; revoked: boolean }>(
      ["key", "revoke-delegation", minted.ids[1] as string],
      ownerKey,
    );
    expect(revoked).toMatchObject({ id: minted.ids[1], revoked: true });
    await expect(sign(minted.keys[1] as string, walletB)).rejects.toMatchObject({
      status: 401,
      code: "invalid_api_key",
    });
  });

  it("a usage error before anything is sent: an ID that is not one, a budget without its window", async () => {
    const badId = await sigil(["key", "revoke-delegation", "xyz"], ownerKey);
    expect(badId.code).not.toBe(0);
    expect(badId.stderr).toMatch(/32 lowercase hex digits.*or the delegated key/);
    const badBudget = await sigil(["key", "delegate", "--budget-max-signatures", "3"], usageKey);
    expect(badBudget.code).not.toBe(0);
    expect(badBudget.stderr).toMatch(/--budget-window/);
  });
});
