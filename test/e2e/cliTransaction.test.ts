// `sigil transaction …` against the real local stack (what `npm start` runs: its edge follows the
// contract's chain at its RPC URL, the default of SIGIL_CHAINS): a wallet's transfer sent from the
// command line through the SDK's signing action (granted on the way with --grant) and waited for
// until confirmed; listed, shown and waited for again by id; a speed-up of a transaction already
// mined refused in one line, an unknown id said at once; malformed input a usage error before
// anything is sent.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createTestClient, http, parseEther, type Address, type Hex } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type Transaction } from "../../sdk/src/index.ts";
import { errorLineOf, runSigil, type CliResult } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const RECIPIENT = "0x4444444444444444444444444444444444444444";

let stack: SharedLocalStack;
let work: string;
let key: string;
let wallet: Address;

beforeAll(async () => {
  stack = inject("localStack");
  work = mkdtempSync(join(tmpdir(), "sigil-cli-tx-"));
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "cli sends" });
  key = created.api_key;
  const client = anon.with({ apiKey: key });
  await topUp(client, { amountCents: 1_000 });
  wallet = (await client.createWallet({ name: "cli sender" })).wallet_address as Address;
  await createTestClient({ chain: foundry, transport: http(stack.rpcUrl), mode: "anvil" }).setBalance({
    address: wallet,
    value: parseEther("1"),
  });
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

function sigil(args: string[]): Promise<CliResult> {
  return runSigil([...args, "--key", key], {
    env: { SIGIL_STATE_DIR: stack.stateDir, SIGIL_PROFILE_FILE: join(work, "profiles.json") },
    cwd: work,
  });
}

async function json<T>(args: string[]): Promise<T> {
  const r = await sigil([...args, "--json"]);
  expect(r.code, `sigil ${args.join(" ")}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe("sigil transaction", () => {
  let sent: Transaction;

  it("send --grant --wait sends a transfer through the service and waits until it is confirmed", async () => {
    const chain = createPublicClient({ transport: http(stack.rpcUrl) });
    const before = await chain.getBalance({ address: RECIPIENT });
    sent = await json<Transaction>([
      "transaction",
      "send",
      "--wallet",
      wallet,
      "--chain",
      "31337",
      "--to",
      RECIPIENT,
      "--value",
      "1234",
      "--grant",
      "--wait",
    ]);
    expect(sent).toMatchObject({ status: "confirmed", wallet_address: wallet.toLowerCase(), chain_id: 31337 });
    const receipt = await chain.getTransactionReceipt({ hash: sent.hash as Hex });
    expect(sent.block_number).toBe(receipt.blockNumber.toString());
    expect(await chain.getBalance({ address: RECIPIENT })).toBe(before + 1234n);
  });

  it("list, show and wait find it by wallet and by id", async () => {
    const listed = await json<Transaction[]>(["transaction", "list", "--wallet", wallet, "--status", "confirmed"]);
    expect(listed.map((t) => t.id)).toEqual([sent.id]);
    expect(await json<Transaction>(["transaction", "show", sent.id])).toEqual(listed[0]);
    const table = await sigil(["transaction", "list", "--wallet", wallet]);
    expect(table.stdout).toMatch(new RegExp(`${sent.id}\\s+confirmed\\s+31337`));
    expect(await json<Transaction>(["transaction", "wait", sent.id, "--timeout", "5"])).toMatchObject({
      status: "confirmed",
    });
  });

  it("a speed-up of a mined transaction is refused in one line; malformed input is a usage error", async () => {
    const r = await sigil(["transaction", "speed-up", sent.id, "--wallet", wallet]);
    expect(r.code, r.stderr).toBe(1);
    expect(errorLineOf(r)).toMatchObject({ command: "transaction speed-up", code: "conflict" });
    expect(r.stderr).toMatch(/is confirmed; only a pending transaction can be sped up/);
    // An id the account has no transaction of is said at once, not waited for.
    const unknown = await sigil(["transaction", "wait", "tx_000000000000000000000000", "--timeout", "60"]);
    expect(unknown.code, unknown.stderr).toBe(1);
    expect(errorLineOf(unknown)).toMatchObject({ command: "transaction wait", code: "not_found" });
    const bad = await sigil(["transaction", "show", "0x1234"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a transaction id/);
    const noChain = await sigil(["transaction", "send", "--wallet", wallet, "--to", RECIPIENT]);
    expect(noChain.code).toBe(2);
    expect(noChain.stderr).toMatch(/--chain is required/);
  });
});
