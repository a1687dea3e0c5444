// `sigil … --help` prints usage, exits 0 and does nothing else, for every command and subcommand:
// `start --help` starts no stack (its state folder is never made) and `edge-identity --help` does
// not fail. Usage errors exit 2 with one line; commands that need nothing from the service (cid)
// work with no stack at all. Each runs `node bin/sigil.ts` as a user would, with nothing listening.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";

const root = join(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "sigil-cli-help-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Nothing to find: no profile, no stack (its state folder does not exist), an API URL where nothing listens. */
const env = {
  ...process.env,
  SIGIL_PROFILE_FILE: join(dir, "profiles.json"),
  SIGIL_STATE_DIR: join(dir, "state"),
  SIGIL_API_URL: "http://127.0.0.1:9",
  SIGIL_API_KEY: "",
};

function sigil(
  args: string[],
  options: { node?: string[]; env?: Record<string, string> } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [...(options.node ?? []), "bin/sigil.ts", ...args],
      { cwd: root, env: { ...env, ...options.env }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const commands = [
  "start",
  "verify",
  "verify-receipt",
  "edge-identity",
  "profile set",
  "profile show",
  "account create",
  "account show",
  "key add",
  "key list",
  "key update",
  "key remove",
  "wallet create",
  "wallet list",
  "guardrail set",
  "guardrail show",
  "guardrail remove",
  "guardrail template",
  "group add",
  "group list",
  "group update",
  "group remove",
  "action add",
  "action list",
  "action remove",
  "audit",
  "cid",
  "run",
  "balance",
  "topup",
  "usage",
  "webhook add",
  "webhook list",
  "webhook remove",
  "webhook deliveries",
  "webhook resend",
  "webhook settings",
  "chain-secured create",
  "convert",
];
const groups = ["profile", "account", "key", "wallet", "guardrail", "group", "action", "webhook", "chain-secured"];

// Each test spawns Node on the whole CLI, which takes seconds on a loaded 2-core machine: the
// processes have 30 s each (sigil() above), the tests a minute.
describe("--help", { timeout: 60_000 }, () => {
  // `-h` is the same flag to the one parser every command goes through (context.ts): it is checked on
  // a command of each kind (the stack, a single command, a group's subcommand), not spawned for all.
  const SHORT_FLAG = new Set(["start", "cid", "key add", "guardrail show", "webhook settings"]);
  it.each(commands)("sigil %s --help prints its usage and exits 0", async (command) => {
    for (const flag of SHORT_FLAG.has(command) ? ["--help", "-h"] : ["--help"]) {
      const r = await sigil([...command.split(" "), flag]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`usage: sigil ${command}\\b`));
      expect(r.stderr).toBe("");
    }
  });

  it.each(groups)("sigil %s --help lists its commands", async (group) => {
    const r = await sigil([group, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`usage: sigil ${group} <command>`);
  });

  it("does nothing else: start --help makes no state folder, a help flag after other options still only prints", async () => {
    expect((await sigil(["start", "--help"])).code).toBe(0);
    expect(existsSync(join(dir, "state"))).toBe(false);
    const r = await sigil(["account", "create", "--name", "x", "--save", "--help"]);
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, "profiles.json"))).toBe(false);
  });

  it("sigil help <command> is <command> --help; sigil with no command prints every command", async () => {
    expect((await sigil(["help", "key", "add"])).stdout).toContain("usage: sigil key add");
    const all = await sigil([]);
    expect(all.code).toBe(0);
    for (const name of [
      "start",
      "account create|show",
      "key add|list|update|remove",
      "cid",
      "run",
      "balance",
      "topup",
      "chain-secured create",
      "convert",
    ])
      expect(all.stdout).toContain(name);
  });
});

describe("usage errors", { timeout: 60_000 }, () => {
  it("exit 2 with one line naming the problem", async () => {
    for (const args of [
      ["key", "add"],
      ["run"],
      ["group", "remove", "x"],
      ["topup", "--amount", "ten"],
      ["usage", "--all", "--limit", "3"],
      ["wallet", "list", "--bogus"],
      ["start", "now"],
    ]) {
      const r = await sigil(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    }
    const unknown = await sigil(["key", "rotate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command: rotate");
  }, 60_000);

  it("sigil verify-receipt without one file and exactly one of --attestation and --api: exit 2, one line", async () => {
    for (const args of [
      ["verify-receipt"],
      ["verify-receipt", "run.json"],
      ["verify-receipt", "run.json", "--api", "ftp://x"],
      ["verify-receipt", "run.json", "--api", "http://127.0.0.1:9", "--attestation", "a.json"],
    ]) {
      const r = await sigil(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.stderr).toMatch(/^sigil verify-receipt: /);
    }
  });

  it("a command that needs a key and finds none says where to put one, exit 2", async () => {
    const r = await sigil(["wallet", "list"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^sigil wallet list: no API key: give --key, set SIGIL_API_KEY, or save one in a profile/);
  });

  it("a service that cannot be reached is one line, exit 1, with no stack trace", async () => {
    const r = await sigil(["balance", "--key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^sigil balance: network_error: could not reach http:\/\/127\.0\.0\.1:9/);
  });

  it("with --json a failure is also one JSON document on stdout, shaped as the API's error body", async () => {
    const r = await sigil(["balance", "--key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: { code: "network_error", message: expect.stringContaining("could not reach http://127.0.0.1:9") },
    });
    expect(r.stderr).toMatch(/^sigil balance: network_error: /);
  });

  it("an unknown command is one line naming the nearest one, exit 2; a far one gets no guess", async () => {
    const near = await sigil(["wallt"]);
    expect(near.code).toBe(2);
    expect(near.stderr.trim()).toBe("sigil: unknown command: wallt (did you mean wallet?) (sigil --help)");
    const sub = await sigil(["key", "ad"]);
    expect(sub.stderr.trim()).toBe("sigil key: unknown command: ad (did you mean add?) (sigil key --help)");
    const far = await sigil(["launch"]);
    expect(far.stderr.trim()).toBe("sigil: unknown command: launch (sigil --help)");
    expect(far.stdout).toBe("");
  });
});

describe("sigil --version", { timeout: 60_000 }, () => {
  it("prints the package's version and the Node it runs on, exit 0 (also -v and version)", async () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-v", "version"]) {
      const r = await sigil([flag]);
      expect(r.code, flag).toBe(0);
      expect(r.stdout.trim(), flag).toBe(`sigil ${version} (Node ${process.version})`);
    }
  });
});

describe("sigil cid", { timeout: 60_000 }, () => {
  it("prints a file's CIDv0 with no service at all, as shared/cid.ts computes it", async () => {
    const file = join(dir, "script.js");
    const code = "async function main() { return 42 }\n";
    writeFileSync(file, code);
    const human = await sigil(["cid", file]);
    expect(human.code).toBe(0);
    expect(human.stdout.trim()).toBe(await computeCid(code));
    expect(JSON.parse((await sigil(["cid", file, "--json"])).stdout)).toEqual({ cid: await computeCid(code) });
    const missing = await sigil(["cid", join(dir, "missing.js")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`sigil cid: file_unreadable: cannot read ${join(dir, "missing.js")}: ENOENT`);
  });
});

describe("what a command loads", { timeout: 60_000 }, () => {
  // Node's module hooks list every module the process loads: --version, a command's --help and a usage
  // error parseArgs finds answer without the SDK, viem or zod (bin/cli/service.ts loads them when a
  // command runs), which is why they answer at once. `guardrail`'s commands are the exception: their
  // options come from the templates' zod schemas.
  const hook = join(dir, "loads.mjs");
  writeFileSync(
    hook,
    `import { registerHooks } from "node:module";
import { appendFileSync } from "node:fs";
registerHooks({ load(url, context, next) { appendFileSync(process.env.SIGIL_TEST_LOADS, url + "\\n"); return next(url, context); } });
`,
  );
  const heavy = /\/node_modules\/(viem|zod|ox|multiformats)\/|\/sdk\/src\/index\.ts$/;
  async function loads(args: string[]): Promise<string[]> {
    const file = join(dir, "loads.txt");
    rmSync(file, { force: true });
    await sigil(args, { node: ["--import", hook], env: { SIGIL_TEST_LOADS: file } });
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((url) => heavy.test(url));
  }

  it("--version, a command's --help and an unknown option load neither the SDK nor viem; a command that runs does", async () => {
    for (const args of [
      ["--version"],
      ["key", "add", "--help"],
      ["wallet", "create", "--help"],
      ["run", "--help"],
      ["transaction", "send", "--help"],
      ["chain-secured", "create", "--help"],
      ["topup", "--help"],
      ["wallet", "list", "--bogus"],
      ["nosuch"],
    ])
      expect(await loads(args), args.join(" ")).toEqual([]);
    // The hook sees them when they load: a command that calls the service (nothing listens there).
    expect((await loads(["key", "list", "--key", "x"])).length).toBeGreaterThan(0);
  });
});
