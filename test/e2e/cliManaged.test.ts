// The `sigil` command against the real local stack (as `npm start` runs it, billing on), run as a
// user runs it: a process in a folder of its own that finds the stack through SIGIL_STATE_DIR's
// local.json (no --api anywhere) and the key through the profile `account create --save` wrote.
// Every command of a managed account's life, in human and --json form, and for each group a
// failure: a wrong key is one line with code and request id, and a non-zero exit.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress, recoverMessageAddress, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GatewayLog } from "../../emulators/ipfsGateway.ts";
import { computeCid } from "../../shared/cid.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import { CLI_NOTE, errorLineOf, root, runSigil, type CliResult } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet, message }) {
  console.log("signing", message);
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}
`;
const FAIL = `async function main() {
  console.log("about to fail");
  throw new Error("refused on purpose");
}
`;
/** A key of the right form that no account has. */
const WRONG_KEY = randomBytes(32).toString("base64");

/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;
let work: string;
/** How many times the IPFS gateway emulator the stack's enclave fetches `run --cid` scripts from was asked for `cid`. */
const gatewayRequests = async (cid: string) =>
  ((await (await fetch(`${stack.gatewayUrl}/log?cid=${cid}`)).json()) as GatewayLog).requests.length;
const profileFile = () => join(work, "profiles.json");

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sigil-cli-managed-"));
  writeFileSync(join(work, "sign.js"), SIGN);
  writeFileSync(join(work, "fail.js"), FAIL);
  stack = inject("localStack");
  // The stack's gateway is given SIGN; the requests for it and for this file's other CIDs are this file's alone.
  expect(await (await fetch(`${stack.gatewayUrl}/add`, { method: "POST", body: SIGN })).json()).toEqual({
    cid: await computeCid(new TextEncoder().encode(SIGN)),
  });
}, 150_000);

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
});

/** `sigil …` in the test's folder: the stack found through SIGIL_STATE_DIR, the key through the profile file. */
function sigil(
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string; input?: string } = {},
): Promise<CliResult> {
  return runSigil(args, {
    env: { SIGIL_STATE_DIR: stack.stateDir, SIGIL_PROFILE_FILE: profileFile(), ...options.env },
    cwd: options.cwd ?? work,
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
}

async function ok(args: string[]): Promise<string> {
  const r = await sigil(args);
  expect(r.code, `sigil ${args.join(" ")}\n${r.stderr}`).toBe(0);
  // Nothing on stderr but the notes for a person (`sigil run` says first what a run can cost).
  expect(
    r.stderr.split("\n").filter((line) => line !== "" && !CLI_NOTE.test(line)),
    `sigil ${args.join(" ")}`,
  ).toEqual([]);
  return r.stdout;
}

async function json<T>(args: string[]): Promise<T> {
  return JSON.parse(await ok([...args, "--json"])) as T;
}

/** The command refused the wrong key: one line naming the command, invalid_api_key and the request id, exit 1, the key nowhere. */
async function refusesWrongKey(command: string, args: string[] = []): Promise<void> {
  const r = await sigil([...command.split(" "), ...args, "--key", WRONG_KEY]);
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe("");
  const line = errorLineOf(r);
  expect(line.command).toBe(command);
  expect(line.code).toBe("invalid_api_key");
  expect(line.requestId).toMatch(/^[0-9a-f-]{8,}$/);
  expect(r.stderr).not.toContain(WRONG_KEY);
}

let masterKey = "";
let wallet: Address;
let cid = "";
let groupId = "";

describe("account", () => {
  it("create finds the stack in local.json, prints the key once, and --save keeps it and the URL in a 0600 profile", async () => {
    const out = await ok(["account", "create", "--name", "cli", "--email", "cli@example.com"]);
    expect(out).toMatch(/^api key\s+\S{44}\s+\(shown once: keep it\)$/m);
    const saved = await sigil(["account", "create", "--name", "cli-saved", "--save"]);
    expect(saved.code, saved.stderr).toBe(0);
    masterKey = /^api key\s+(\S{44})/m.exec(saved.stdout)?.[1] ?? "";
    expect(masterKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(saved.stdout).toMatch(/^account\s+0x[0-9a-f]{64}$/m);
    expect(saved.stdout).toMatch(/^master wallet\s+0x[0-9a-f]{40}$/m);
    expect(saved.stderr).toContain(`saved the key and ${stack.edgeUrl} as profile "default"`);
    expect(statSync(profileFile()).mode & 0o777).toBe(0o600);
    // Made against the local stack: the profile names it, not today's port (it follows local.json).
    expect(JSON.parse(readFileSync(profileFile(), "utf8"))).toEqual({
      profiles: { default: { api: "local", key: masterKey } },
    });

    const created = await json<{
      api_key: string;
      account_id: string;
      wallet_address: string;
      transaction_hash: string;
      success: true;
    }>(["account", "create", "--name", "json"]);
    expect(created).toMatchObject({
      success: true,
      api_key: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
      account_id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
  });

  it("show: names the account and its id; the profile's key is the master key of a managed account with nothing in it and no credit yet", async () => {
    const out = await ok(["account", "show"]);
    expect(out).toMatch(/^account\s+cli-saved \(0x[0-9a-f]{64}\)$/m);
    expect(out).toMatch(/^mode\s+managed$/m);
    // Its master wallet (id 0) is made with it.
    expect(out).toMatch(/^holds\s+1 wallet, 0 groups, 0 usage keys, 0 actions$/m);
    expect(out).toMatch(/^key\s+master key \(0x[0-9a-f]{64}\)$/m);
    expect(out).toMatch(/^balance\s+\$0\.00$/m);
    expect(out).toContain(`${stack.edgeUrl}   (from profile "default"`);
    expect(out).not.toContain(masterKey);
    expect(await json(["account", "show"])).toMatchObject({
      exists: true,
      account_name: "cli-saved",
      account_id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      managed: true,
      admin: null,
      key_kind: "master",
      wallet_count: 1,
      balance_cents: 0,
      api: stack.edgeUrl,
    });
    await refusesWrongKey("account show");
  });
});

describe("profile", () => {
  it("show masks the key and says where each value comes from; an unknown --profile is a usage error", async () => {
    const out = await ok(["profile", "show"]);
    expect(out).toContain(`${masterKey.slice(0, 4)}… (44 characters)`);
    expect(out).not.toContain(masterKey);
    expect(out).toMatch(/^now: api\s+\S+\s+\(from profile "default"/m);
    const missing = await sigil(["balance", "--profile", "nope"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toMatch(/^sigil balance: no profile "nope" in .*profiles\.json/);
  });

  it("set writes a named profile (the key from stdin with --key -); flags and the environment beat it", async () => {
    const set = await sigil(["profile", "set", "--name", "other", "--api", "http://127.0.0.1:9", "--key", "-"], {
      input: `${masterKey}\n`,
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).not.toContain(masterKey);
    expect(JSON.parse(readFileSync(profileFile(), "utf8")).profiles.other).toEqual({
      api: "http://127.0.0.1:9",
      key: masterKey,
    });
    // The profile's URL answers nothing; the flag's and the environment's do.
    const unreachable = await sigil(["balance", "--profile", "other"]);
    expect(unreachable.code).toBe(1);
    expect(errorLineOf(unreachable).code).toBe("network_error");
    expect(await ok(["balance", "--profile", "other", "--api", stack.edgeUrl])).toContain("balance $0.00");
    expect(
      (await sigil(["balance", "--profile", "other"], { env: { SIGIL_API_URL: `${stack.edgeUrl}/core/v1` } })).stdout,
    ).toContain("balance $0.00");
  });

  it("without SIGIL_STATE_DIR, the stack is found in .sigil/local.json of the current folder or one above it", async () => {
    const project = join(work, "project");
    mkdirSync(join(project, ".sigil"), { recursive: true });
    mkdirSync(join(project, "src"), { recursive: true });
    copyFileSync(join(stack.stateDir, "local.json"), join(project, ".sigil", "local.json"));
    const r = await runSigil(["balance", "--key", masterKey], {
      env: { SIGIL_PROFILE_FILE: join(work, "no-profiles.json") },
      cwd: join(project, "src"),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("balance $0.00");
  });
});

describe("balance and topup", () => {
  it("topup buys credit with the test card and prints the balance; balance shows it", async () => {
    expect(await ok(["topup", "--amount", "500"])).toMatch(
      /^credited(?: by Stripe's webhook)?: \$5\.00; balance \$5\.00$/m,
    );
    expect((await ok(["balance"])).trim()).toBe("balance $5.00");
    expect(await json(["balance"])).toEqual({ balance_cents: 500, balance_display: "$5.00" });
  });

  it("a declined card is one line, exit 1, and adds nothing; a wrong key is refused by both", async () => {
    const declined = await sigil(["topup", "--amount", "500", "--card", "pm_card_chargeDeclined"]);
    expect(declined.code).toBe(1);
    expect(errorLineOf(declined)).toMatchObject({ command: "topup", code: "payment_not_succeeded" });
    expect(errorLineOf(declined).message).toMatch(/Stripe refused the payment/);
    expect((await json<{ balance_cents: number }>(["balance"])).balance_cents).toBe(500);
    await refusesWrongKey("balance");
    await refusesWrongKey("topup", ["--amount", "500"]);
  });
});

describe("wallet", () => {
  it("create prints the new wallet, both its addresses; list shows it beside the master wallet (id 0)", async () => {
    const out = await ok(["wallet", "create", "--name", "signer", "--description", "signs"]);
    wallet = getAddress(/^wallet\s+(0x[0-9a-f]{40})$/m.exec(out)?.[1] as string);
    const solana = /^solana\s+([1-9A-HJ-NP-Za-km-z]{32,44})$/m.exec(out)?.[1] as string;
    expect(solana).toBeDefined();
    expect(out).toMatch(/^id\s+1$/m);
    const table = await ok(["wallet", "list"]);
    expect(table.split("\n")[0]).toMatch(/^ID\s+ADDRESS\s+SOLANA\s+NAME\s+DESCRIPTION$/);
    expect(table).toMatch(new RegExp(`^1\\s+${wallet.toLowerCase()}\\s+${solana}\\s+signer\\s+signs$`, "m"));
    const list = await json<Array<{ id: string; wallet_address: string; solana_address: string; name: string }>>([
      "wallet",
      "list",
    ]);
    expect(list.map((w) => w.id)).toEqual(["0", "1"]);
    expect(list[1]).toMatchObject({ wallet_address: wallet.toLowerCase(), solana_address: solana, name: "signer" });
    await refusesWrongKey("wallet list");
    await refusesWrongKey("wallet create");
  });
});

describe("cid and action", () => {
  it("cid prints what the service computes; action add registers FILE by it; list shows it", async () => {
    cid = (await ok(["cid", "sign.js"])).trim();
    expect(cid).toBe(await computeCid(SIGN));
    const out = await ok(["action", "add", "sign.js", "--description", "signs a message"]);
    expect(out).toMatch(new RegExp(`^action\\s+${cid}$`, "m"));
    expect(out).toMatch(new RegExp(`^hash\\s+${toHash32(cidHash(cid))}$`, "m"));
    expect(await ok(["action", "list"])).toMatch(
      new RegExp(`^${toHash32(cidHash(cid))}\\s+${cid}\\s+sign\\.js\\s+signs a message$`, "m"),
    );
    expect(await json(["action", "list"])).toEqual([
      { hashed_cid: toHash32(cidHash(cid)), action_ipfs_cid: cid, name: "sign.js", description: "signs a message" },
    ]);
    await refusesWrongKey("action list");
    await refusesWrongKey("action add", [cid]);
  });
});

describe("group", () => {
  it("add binds the wallet to the action; list, update (the rest kept), and the group's wallets and actions", async () => {
    const added = await json<{ group_id: string; transaction_hash: string }>([
      "group",
      "add",
      "--name",
      "signers",
      "--wallet",
      wallet,
      "--action",
      cid,
    ]);
    groupId = added.group_id;
    expect(groupId).toMatch(/^\d+$/);
    const table = await ok(["group", "list"]);
    expect(table).toMatch(
      new RegExp(`^${groupId}\\s+signers\\s+${wallet.toLowerCase()}\\s+${toHash32(cidHash(cid))}$`, "m"),
    );
    expect(await ok(["group", "update", groupId, "--name", "renamed", "--description", "now described"])).toMatch(
      new RegExp(`^updated\\s+group ${groupId}$`, "m"),
    );
    const [group] = await json<
      Array<{
        id: string;
        group_name: string;
        group_description: string;
        pkp_ids_permitted: string[];
        cid_hashes_permitted: string[];
      }>
    >(["group", "list"]);
    expect(group).toEqual({
      id: groupId,
      group_name: "renamed",
      group_description: "now described",
      pkp_ids_permitted: [wallet.toLowerCase()],
      cid_hashes_permitted: [toHash32(cidHash(cid))],
    });
    expect(
      (await json<Array<{ wallet_address: string }>>(["wallet", "list", "--group", groupId])).map(
        (w) => w.wallet_address,
      ),
    ).toEqual([wallet.toLowerCase()]);
    expect(
      (await json<Array<{ hashed_cid: string }>>(["action", "list", "--group", groupId])).map((a) => a.hashed_cid),
    ).toEqual([toHash32(cidHash(cid))]);
    await refusesWrongKey("group list");
    await refusesWrongKey("group remove", [groupId]);
  });
});

describe("run", () => {
  it("runs FILE with --params: prints the response, the logs and the cost; --json is the whole answer", async () => {
    const params = JSON.stringify({ wallet, message: "from the CLI" });
    const out = await ok(["run", "sign.js", "--params", params]);
    const signature = JSON.parse(/^response\s+(.+)$/m.exec(out)?.[1] as string) as Hex;
    expect(await recoverMessageAddress({ message: "from the CLI", signature })).toBe(wallet);
    expect(out).toMatch(/^logs:\n {2}signing from the CLI$/m);
    expect(out).toMatch(new RegExp(`^cid\\s+${cid}$`, "m"));
    expect(out).toMatch(/^charged\s+\$0\.01$/m);
    const answer = await json<{ response: Hex; has_error: boolean; charged_cents: number; cid: string }>([
      "run",
      "sign.js",
      "--params",
      params,
    ]);
    expect(answer).toMatchObject({ has_error: false, charged_cents: 1, cid });
    expect(await recoverMessageAddress({ message: "from the CLI", signature: answer.response })).toBe(wallet);
  });

  it("a script that fails exits 1 with the run's error code and request id, its logs printed", async () => {
    await ok(["group", "update", groupId, "--action", cid, "--action", (await ok(["cid", "fail.js"])).trim()]);
    const r = await sigil(["run", "fail.js"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("about to fail");
    expect(errorLineOf(r)).toMatchObject({
      command: "run",
      code: "script_error",
      message: expect.stringContaining("refused on purpose"),
      requestId: expect.stringMatching(/^[0-9a-f-]+$/),
    });
    const asJson = await sigil(["run", "fail.js", "--json"]);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ has_error: true, error: { code: "script_error" } });
    await refusesWrongKey("run", ["sign.js"]);
  });

  it("--cid runs the script the enclave fetches from its IPFS gateway by that CID; a CID the gateway lacks is not_found", async () => {
    const params = JSON.stringify({ wallet, message: "by CID" });
    const out = await ok(["run", "--cid", cid, "--params", params]);
    expect(await gatewayRequests(cid)).toBe(1);
    const signature = JSON.parse(/^response\s+(.+)$/m.exec(out)?.[1] as string) as Hex;
    expect(await recoverMessageAddress({ message: "by CID", signature })).toBe(wallet);
    expect(out).toMatch(new RegExp(`^cid\\s+${cid}$`, "m"));

    // fail.js's CID is in the group (the test above), but the gateway does not have its bytes.
    const failCid = (await ok(["cid", "fail.js"])).trim();
    const missing = await sigil(["run", "--cid", failCid]);
    expect(missing.code).toBe(1);
    expect(errorLineOf(missing)).toMatchObject({
      command: "run",
      code: "not_found",
      message: expect.stringContaining(failCid),
    });
    // A CID no group grants is refused before the gateway is asked.
    const ungranted = (await sigil(["cid", "-"], { input: "async function main() { return 1 }" })).stdout.trim();
    expect(ungranted).toMatch(/^Qm/);
    expect(errorLineOf(await sigil(["run", "--cid", ungranted]))).toMatchObject({ code: "permission_denied" });
    expect(await gatewayRequests(ungranted)).toBe(0);
    await refusesWrongKey("run", ["--cid", cid]);
  });
});

describe("run, first steps", () => {
  it("says first the most a run can cost (its time limit at the rate); --timeout sets both, and an endless script stops there", async () => {
    const params = JSON.stringify({ wallet, message: "priced" });
    const r = await sigil(["run", "sign.js", "--params", params]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("run: at most 60 s, so at most $0.60 ($0.01 a started second; --timeout sets it)\n");
    writeFileSync(
      join(work, "endless.js"),
      "async function main() { await new Promise((r) => setTimeout(r, 60_000)); }",
    );
    const endless = await sigil(["run", "endless.js", "--timeout", "1", "--allow"]);
    expect(endless.code).toBe(1);
    expect(endless.stderr).toContain("run: at most 1 s, so at most $0.01");
    expect(endless.stdout).toMatch(/^charged\s+\$0\.01$/m);
    expect(errorLineOf(endless)).toMatchObject({ code: "timeout", message: expect.stringContaining("1000 ms") });
    // The group --allow made for it goes: the removals below expect only the groups made above.
    await ok(["group", "remove", /^allow: group (\d+) made/m.exec(endless.stderr)?.[1] as string]);
  });

  it("--allow makes a group with the script and the wallets in --params, saying what and what it costs first; then says a group allows it", async () => {
    const code = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "allowed" }) }`;
    writeFileSync(join(work, "allowed.js"), code);
    const allowedCid = await computeCid(code);
    const params = JSON.stringify({ wallet });
    expect(errorLineOf(await sigil(["run", "allowed.js", "--params", params])).code).toBe("permission_denied");
    const first = await sigil(["run", "allowed.js", "--params", params, "--allow"]);
    expect(first.code, first.stderr).toBe(0);
    const notes = first.stderr.trim().split("\n");
    expect(notes[0]).toBe(
      `allow: a new group "allowed.js" with action ${allowedCid} with wallet ${wallet.toLowerCase()}, 1 write: $0.01`,
    );
    expect(notes[1]).toMatch(/^allow: group \d+ made \(transaction 0x[0-9a-f]{64}\)$/);
    const signature = JSON.parse(/^response\s+(.+)$/m.exec(first.stdout)?.[1] as string) as Hex;
    expect(await recoverMessageAddress({ message: "allowed", signature })).toBe(wallet);
    const madeId = /^allow: group (\d+)/.exec(notes[1] as string)?.[1];
    const again = await sigil(["run", "allowed.js", "--params", params, "--allow"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(
      `allow: group ${madeId} "allowed.js" already lets this key's account run ${allowedCid} with wallet ${wallet.toLowerCase()}`,
    );
    // The group goes (the removals below expect only the groups made before), and the usage test
    // after this one reads a run as the newest event: the run below.
    await ok(["group", "remove", madeId as string]);
    // --group: the action added to a group the account has (the wallet is in it already).
    const other = `async function main() { return "in the group" }`;
    writeFileSync(join(work, "other.js"), other);
    const into = await sigil(["run", "other.js", "--allow", "--group", groupId]);
    expect(into.code, into.stderr).toBe(0);
    expect(into.stderr).toContain(`allow: group ${groupId} `);
    expect(into.stderr).toContain(`gets action ${await computeCid(other)}, 1 write: $0.01`);
    expect(into.stdout).toMatch(/^response\s+"in the group"$/m);
    const usage = await sigil(["run", "other.js", "--group", groupId]);
    expect(usage.code).toBe(2);
  });

  it("a script that does not compile exits 1 with compile_error, its line and column, and costs nothing", async () => {
    writeFileSync(join(work, "broken.js"), "async function main() {\n  return (;\n}\n");
    const before = (await json<{ balance_cents: number }>(["balance"])).balance_cents;
    const r = await sigil(["run", "broken.js"]);
    expect(r.code).toBe(1);
    expect(errorLineOf(r)).toMatchObject({
      code: "compile_error",
      message: expect.stringContaining("(line 2, column 11)"),
    });
    expect((await json<{ balance_cents: number }>(["balance"])).balance_cents).toBe(before);
  });
});

describe("usage", () => {
  it("lists the account's events newest first as a table; --kind filters, --all pages, --json is the events; a wrong key is refused", async () => {
    const out = await ok(["usage", "--limit", "3"]);
    const lines = out.trim().split("\n");
    expect(lines[0]).toMatch(/^TIME\s+KIND\s+AMOUNT\s+BALANCE\s+DETAIL$/);
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z\s+run\s+-\$0\.01\s+\$\d+\.\d\d\s+Qm/);
    const events = await json<Array<{ kind: string; amount_cents: number; balance_after_cents: number }>>([
      "usage",
      "--all",
    ]);
    expect(events.at(-1)).toMatchObject({ kind: "top_up", amount_cents: 500, balance_after_cents: 500 });
    expect(events.reduce((sum, e) => sum + e.amount_cents, 0)).toBe(
      (await json<{ balance_cents: number }>(["balance"])).balance_cents,
    );
    expect(
      new Set((await json<Array<{ kind: string }>>(["usage", "--all", "--kind", "run"])).map((e) => e.kind)),
    ).toEqual(new Set(["run"]));
    await refusesWrongKey("usage");
  });
});

describe("key", () => {
  it("add prints the key once; list shows its permissions; the key runs in its group; update keeps the rest; remove ends it", async () => {
    const out = await ok([
      "key",
      "add",
      "--name",
      "runner",
      "--execute-in-groups",
      groupId,
      "--can-create-wallets",
      "--spend-limit-cents",
      "100",
      "--expires-at",
      "2099-01-01",
    ]);
    const usageKey = /^usage key\s+(\S{44})\s+\(shown once: keep it\)$/m.exec(out)?.[1] as string;
    const hash = /^hash\s+(0x[0-9a-f]{64})$/m.exec(out)?.[1] as string;
    expect(usageKey).toBeDefined();
    expect(await ok(["key", "list"])).toMatch(
      new RegExp(
        `^${hash}\\s+runner\\s+2099-01-01T00:00:00Z\\s+\\$0\\.00\\s+\\$1\\.00\\s+create-wallets execute:${groupId}$`,
        "m",
      ),
    );
    expect(await ok(["key", "list"])).not.toContain(usageKey);

    const run = await sigil([
      "run",
      "sign.js",
      "--params",
      JSON.stringify({ wallet, message: "as the usage key" }),
      "--key",
      usageKey,
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(
      await recoverMessageAddress({
        message: "as the usage key",
        signature: (JSON.parse(run.stdout) as { response: Hex }).response,
      }),
    ).toBe(wallet);
    expect(await json(["account", "show", "--key", usageKey])).toMatchObject({
      key_kind: "usage",
      key_name: "runner",
      key_hash: hash,
    });

    await ok(["key", "update", usageKey, "--no-can-create-wallets", "--can-create-groups", "--name", "runner2"]);
    const [updated] = await json<Array<Record<string, unknown>>>(["key", "list"]);
    expect(updated).toMatchObject({
      id: hash,
      name: "runner2",
      can_create_groups: true,
      can_create_pkps: false,
      execute_in_groups: [groupId],
      spend_limit_cents: 100,
      spent_cents: 1,
      expires_at: Date.UTC(2099, 0, 1) / 1000,
    });
    await ok(["key", "update", hash, "--description", "metadata only"]);
    expect((await json<Array<{ description: string; can_create_groups: boolean }>>(["key", "list"]))[0]).toMatchObject({
      description: "metadata only",
      can_create_groups: true,
    });

    expect(await ok(["key", "remove", hash])).toMatch(new RegExp(`^removed\\s+${hash}$`, "m"));
    expect((await ok(["key", "list"])).trim()).toBe("no usage keys");
    const removed = await sigil(["balance", "--key", usageKey]);
    expect(removed.code).toBe(1);
    expect(errorLineOf(removed).code).toBe("invalid_api_key");
    await refusesWrongKey("key list");
    await refusesWrongKey("key add", ["--name", "x"]);
  });
});

describe("removing", () => {
  it("action remove takes the action out of the account and its group; group remove ends the group", async () => {
    expect(await ok(["action", "remove", cid])).toMatch(new RegExp(`^removed\\s+${toHash32(cidHash(cid))}$`, "m"));
    expect((await json<Array<{ hashed_cid: string }>>(["action", "list"])).map((a) => a.hashed_cid)).not.toContain(
      toHash32(cidHash(cid)),
    );
    expect(
      (await json<Array<{ hashed_cid: string }>>(["action", "list", "--group", groupId])).map((a) => a.hashed_cid),
    ).not.toContain(toHash32(cidHash(cid)));
    await ok(["group", "remove", groupId]);
    expect((await ok(["group", "list"])).trim()).toBe("no groups");
    await refusesWrongKey("action remove", [cid]);
  });
});

describe("audit", () => {
  it("lists the account's history newest first (the removals above at the top, the creation last); --limit keeps the newest; --json is the events", async () => {
    const table = await ok(["audit"]);
    const lines = table.trim().split("\n");
    expect(lines[0]).toMatch(/^BLOCK\s+TIME\s+WHAT\s+SENDER\s+TRANSACTION$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^\\d+\\s+\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\s+group ${groupId} removed\\s+0x[0-9a-f]{40}\\s+0x[0-9a-f]{64}$`,
      ),
    );
    expect(lines.at(-1)).toMatch(/managed account created, master wallet 0x[0-9a-f]{40}/);
    expect(table).toContain(`action ${cid} unregistered`);
    expect(table).toContain(`wallet ${wallet.toLowerCase()} registered (id 1)`);
    const events = await json<Array<{ event: string; summary: string }>>(["audit", "--limit", "2"]);
    expect(events.map((e) => e.event)).toEqual(["GroupRemoved", "ActionRemoved"]);
    await refusesWrongKey("audit");
  });
});

describe("the README", () => {
  it("its quickstart CLI snippet runs as written against the stack (npx sigil as node bin/sigil.ts), ending with the wallet's signature and 3 cents spent", async () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const block = /<!-- quickstart:cli[^>]*-->\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, "the quickstart's CLI snippet").toContain("npx sigil account create");
    const folder = mkdtempSync(join(work, "readme-"));
    const script = `${(block as string).replaceAll("npx sigil", `"${process.execPath}" "${join(root, "bin/sigil.ts")}"`)}\necho "WALLET=$W"`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        "bash",
        ["-euo", "pipefail", "-c", script],
        {
          cwd: folder,
          timeout: 120_000,
          env: {
            PATH: process.env.PATH,
            NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
            HOME: folder,
            SIGIL_STATE_DIR: stack.stateDir,
            SIGIL_PROFILE_FILE: join(folder, "profiles.json"),
          },
        },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    const readmeWallet = getAddress(/WALLET=(0x[0-9a-f]{40})/.exec(out)?.[1] as string);
    const signature = JSON.parse(/^response\s+(.+)$/m.exec(out)?.[1] as string) as Hex;
    expect(await recoverMessageAddress({ message: "hello", signature })).toBe(readmeWallet);
    expect(out).toMatch(/^ID\s+NAME\s+WALLETS\s+ACTIONS/m);
    // The wallet, the group and the run: 1 cent each.
    expect(out).toMatch(/^balance \$4\.97$/m);
  });
});

describe("guardrail", () => {
  it("set from a file, show in words with its hash and block, enforced on a run, remove; a document with a problem is named at its path", async () => {
    writeFileSync(
      join(work, "guardrail.json"),
      JSON.stringify({
        version: 1,
        messages: { pattern: "from the CLI*" },
        transactions: { chains: [1], transfers: { allow: [wallet] } },
      }),
    );
    const set = await ok(["guardrail", "set", wallet, "guardrail.json"]);
    expect(set).toMatch(/^guardrail\s+0x[0-9a-f]{64}$/m);
    const shown = await ok(["guardrail", "show", wallet]);
    expect(shown).toMatch(/^set at block\s+\d+$/m);
    expect(shown).toContain('  messages matching "from the CLI*"');
    expect(shown).toContain(`  plain transfers to ${wallet.toLowerCase()}`);
    expect(shown).toContain("  raw digests: never");
    expect(shown).toContain("  key export: never");
    const allowed = await ok([
      "run",
      "sign.js",
      "--allow",
      "--params",
      JSON.stringify({ wallet, message: "from the CLI, guarded" }),
    ]);
    expect(allowed).toMatch(/^response\s+"0x[0-9a-f]{130}"$/m);
    const refused = await sigil(["run", "sign.js", "--params", JSON.stringify({ wallet, message: "something else" })]);
    expect(refused.code).toBe(1);
    expect(errorLineOf(refused)).toMatchObject({
      code: "guardrail_denied",
      message: expect.stringContaining("messages.pattern"),
    });
    // A dry run says what the guardrail would decide, signing nothing (the script lets the refusal
    // escape, so the run fails as the real one would).
    const dryRun = await sigil([
      "run",
      "sign.js",
      "--dry-run",
      "--params",
      JSON.stringify({ wallet, message: "off script" }),
    ]);
    expect(dryRun.code).toBe(1);
    expect(errorLineOf(dryRun).code).toBe("guardrail_denied");
    const dry = dryRun.stdout;
    expect(dry).toContain("dry run, nothing signed:");
    expect(dry).toMatch(/^ {2}REFUSED {2}message by 0x[0-9a-f]{40} \(messages\.pattern\): the message does not match/m);
    expect(dry).toMatch(/^a real run as long would cost \$\d+\.\d\d$/m);
    writeFileSync(
      join(work, "bad-guardrail.json"),
      JSON.stringify({ version: 1, transactions: { chains: [1], max_value_wei: 5 } }),
    );
    const bad = await sigil(["guardrail", "set", wallet, "bad-guardrail.json"]);
    expect(bad.code).toBe(1);
    expect(errorLineOf(bad)).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("max_value_wei"),
    });
    expect(await ok(["guardrail", "remove", wallet])).toMatch(/^guardrail\s+removed$/m);
    expect(await ok(["guardrail", "show", wallet])).toContain("has no guardrail");

    // A usage key's own guardrail, named key:HASH: set, shown in words with its budget's use, removed.
    const made = await ok(["key", "add", "--name", "agent"]);
    const hash = /^hash\s+(0x[0-9a-f]{64})$/m.exec(made)?.[1] as string;
    writeFileSync(
      join(work, "key-guardrail.json"),
      JSON.stringify({
        version: 1,
        messages: { pattern: "agent:*" },
        budgets: [{ name: "hourly", window_seconds: 3600, max_signatures: 10 }],
      }),
    );
    expect(await ok(["guardrail", "set", `key:${hash}`, "key-guardrail.json"])).toMatch(
      /^guardrail\s+0x[0-9a-f]{64}$/m,
    );
    const own = await ok(["guardrail", "show", `key:${hash}`]);
    expect(own).toMatch(new RegExp(`^usage key\\s+${hash}$`, "m"));
    expect(own).toContain('  messages matching "agent:*"');
    expect(own).toContain("  budget hourly: at most 10 signatures in any hour");
    expect(own).toContain("  hourly: 0 of 10 signatures used");
    expect(await ok(["guardrail", "remove", `key:${hash}`])).toMatch(/^guardrail\s+removed$/m);
    expect(await ok(["guardrail", "show", `key:${hash}`])).toContain("has no guardrail of its own");
    expect((await sigil(["guardrail", "show", "key:0x12"])).code).toBe(2);
  });
});
