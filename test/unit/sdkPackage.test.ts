// @sigil/sdk as a package: what it imports at run time, that it loads and works on the machine's
// older Node (20) with nothing but its built module and viem, and that a small consumer project
// type-checks against its declarations — and fails to when it misuses them.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const exec = promisify(execFile);
const root = join(import.meta.dirname, "../..");
const sdk = join(root, "sdk");
/** The modules a built entry loads: itself and the chunks it imports, by path under dist/, and their sources. */
function loaded(entry: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (path: string) => {
    if (out.has(path)) return;
    const source = readFileSync(join(sdk, "dist", path), "utf8");
    out.set(path, source);
    for (const s of importsOf(source))
      if (s.startsWith("./") || s.startsWith("../")) visit(join(dirname(path), s).replaceAll("\\", "/"));
  };
  visit(entry);
  return out;
}
const importsOf = (source: string) =>
  [...source.matchAll(/(?:^|[;\s])(?:import|export)\s*(?:[^'"]*?from\s*)?["']([^"']+)["']/g)].map((m) => m[1]!);

/**
 * A folder with node_modules holding the built SDK and viem only, as an installed consumer has
 * (viem's own dependencies resolve from its real path, as Node and tsc follow the link).
 */
function consumerProject(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "sigil-sdk-consumer-"));
  mkdirSync(join(dir, "node_modules/@sigil"), { recursive: true });
  symlinkSync(sdk, join(dir, "node_modules/@sigil/sdk"));
  symlinkSync(join(root, "node_modules/viem"), join(dir, "node_modules/viem"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function run(command: string, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await exec(command, args, { cwd });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

const TSCONFIG = JSON.stringify({
  compilerOptions: {
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    noEmit: true,
    lib: ["es2022", "dom"],
    types: [],
    skipLibCheck: false,
  },
  include: ["*.ts"],
});

const GOOD = `import { createSigilClient, toSigilAccount, SigilError, SigilNetworkError, signSigilTypedData, type SigilClient } from "@sigil/sdk";
import { attenuateKey, describeDelegatedKey, DelegationError } from "@sigil/sdk/delegation";
import { createWalletClient, http, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const client: SigilClient = createSigilClient({ baseUrl: "http://127.0.0.1:8787", apiKey: "key" });
export async function use(wallet: Address): Promise<string> {
  const group = await client.addGroup({ group_name: "g", group_description: "", pkp_ids_permitted: [wallet], cid_hashes_permitted: ["Qm"] });
  const run = await client.sigilAction({ code: "async function main() { return 1 }", js_params: { a: 1 } });
  const ok: boolean = run.has_error;
  for await (const w of client.all.listWallets()) console.log(w.wallet_address);
  const account = toSigilAccount({ client, wallet });
  const walletClient = createWalletClient({ account, transport: http("http://127.0.0.1:8545") });
  const signed = await signSigilTypedData({ signer: privateKeyToAccount("0x${"11".repeat(32)}"), primaryType: "CreateWallet", chainId: 1 });
  await client.createWalletWithSignature(signed);
  try {
    await client.getBalance();
  } catch (err) {
    if (err instanceof SigilNetworkError) return "down";
    if (err instanceof SigilError) return err.code + String(err.requestId) + err.status;
  }
  const { keys } = await client.delegateKey({ caveats: { expires_at: 2_000_000_000, max_uses: 5 }, count: 2 });
  let narrower = "";
  try {
    narrower = attenuateKey(keys[0]!, { max_uses: 1, delegate: false });
  } catch (err) {
    if (err instanceof DelegationError) return err.dimension;
  }
  const uses: number | undefined = describeDelegatedKey(narrower).uses[0]?.max_uses;
  return String(group.group_id) + ok + walletClient.account.address + uses;
}
`;

describe("@sigil/sdk, built", () => {
  it("imports nothing at run time but viem (and its own chunks); the Solana entry also @solana/kit; the delegation entry nothing", () => {
    const peer = (s: string) => s === "viem" || s.startsWith("viem/");
    const own = (s: string) => s.startsWith("./") || s.startsWith("../");
    const main = loaded("index.js");
    const specifiers = [...main.values()].flatMap(importsOf);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(specifiers.filter((s) => !peer(s) && !own(s))).toEqual([]);
    const solana = loaded("solana.js");
    expect([...solana.values()].flatMap(importsOf).filter((s) => !peer(s) && !own(s) && s !== "@solana/kit")).toEqual(
      [],
    );
    // The shared chunks are the main entry's too: one SigilError class for both.
    expect([...solana.keys()].filter((p) => p !== "solana.js").every((p) => main.has(p))).toBe(true);
    // Delegated keys offline (@sigil/sdk/delegation): nothing but its own chunks, none of zod.
    const delegation = loaded("delegation.js");
    expect([...delegation.values()].flatMap(importsOf).filter((s) => !own(s))).toEqual([]);
    expect([...delegation.values()].join("\n")).not.toMatch(/ZodError|\$ZodType/);
    for (const source of [...main.values(), ...solana.values(), ...delegation.values()])
      expect(source).not.toMatch(/\bnode:|require\(|process\.env/);
  });

  it("a consumer project type-checks against the declarations, and a misuse is an error", async () => {
    const dir = consumerProject({ "tsconfig.json": TSCONFIG, "good.ts": GOOD });
    try {
      const tsc = join(root, "node_modules/typescript/bin/tsc");
      const good = await run(process.execPath, [tsc, "-p", "."], dir);
      expect(good.out).toBe("");
      expect(good.code).toBe(0);

      writeFileSync(
        join(dir, "bad.ts"),
        `import { createSigilClient } from "@sigil/sdk";\nconst c = createSigilClient({ baseUrl: "x" });\nawait c.addGroup({ group_name: 1 });\nawait c.listWalets();\n`,
      );
      const bad = await run(process.execPath, [tsc, "-p", "."], dir);
      expect(bad.code).not.toBe(0);
      expect(bad.out).toMatch(/bad\.ts\(3,/);
      expect(bad.out).toMatch(/listWalets/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Two whole tsc runs: seconds each on a busy 2-core machine.
  }, 120_000);

  describe("on the machine's Node 20", () => {
    let server: Server;
    let origin = "";
    beforeAll(async () => {
      server = createServer((req, res) => {
        const body =
          req.url === "/core/v1/list_wallets?page_number=0&page_size=100"
            ? [{ id: "0", wallet_address: "0x1", name: "", description: "" }]
            : { error: { code: "invalid_api_key", message: "no", request_id: "r1" } };
        res
          .writeHead(req.headers["x-api-key"] === "good" ? 200 : 401, {
            "content-type": "application/json",
            "x-total-count": "1",
          })
          .end(JSON.stringify(body));
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it("loads the built module and calls a service", async () => {
      const node20 = "/usr/bin/node";
      const version = await run(node20, ["--version"], root).catch(() => ({ code: 1, out: "" }));
      if (version.code !== 0) return expect.fail("the machine's /usr/bin/node is missing");
      expect(version.out).toMatch(/^v2\d\./);
      const script = `import { createSigilClient, SigilError } from "@sigil/sdk";
const good = createSigilClient({ baseUrl: ${JSON.stringify(origin)}, apiKey: "good" });
const items = []; for await (const w of good.all.listWallets()) items.push(w.id);
const err = await createSigilClient({ baseUrl: ${JSON.stringify(origin)}, apiKey: "bad" }).listWallets().catch((e) => e);
console.log(JSON.stringify({ items, isError: err instanceof SigilError, text: String(err) }));`;
      const dir = consumerProject({ "main.mjs": script });
      try {
        const r = await run(node20, ["main.mjs"], dir);
        expect(r.code, r.out).toBe(0);
        expect(JSON.parse(r.out)).toEqual({ items: ["0"], isError: true, text: "invalid_api_key: no (request r1)" });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
