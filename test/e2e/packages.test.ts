// The packages as a user outside this repository meets them: @sigil/sdk and @sigil/cli packed as
// `npm run pack` packs them, installed from their tarballs into a fresh folder under the system's
// temp directory (viem beside them, from the npm cache `npm ci` filled), then, with the system Node
// (20 on these machines) and with Node 24: the README's SDK quickstart saved as quickstart.mjs and
// run with `node`, as sdk/README.md says; a viem wallet client on toSigilAccount type-checked by
// TypeScript 7 and 5; and an account made, credited, allowed and run with the installed `sigil`
// alone. The blocks' http://127.0.0.1:8787 becomes this test's stack.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { getAddress, recoverMessageAddress, verifyMessage, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildCliPackage } from "../../bin/package/build.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const root = join(import.meta.dirname, "../..");
let stack: SharedLocalStack;
let fresh = "";

/** The environment of a user's shell: no npm_* variables of the run that started this test. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_")));
  return { ...env, HOME: fresh, SIGIL_PROFILE_FILE: join(fresh, "profiles.json"), ...extra };
}

function run(command: string, args: string[], env = userEnv()): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) =>
    execFile(command, args, { cwd: fresh, env, timeout: 120_000 }, (error, out, err) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

/** The machine's own Node, the first on PATH outside any node_modules (the project's npm scripts put Node 24 first). */
function systemNode(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir.includes("node_modules")) continue;
    const candidate = join(dir, "node");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

const nodes: Array<[string, string]> = [["Node 24", process.execPath]];
const system = systemNode();
const systemVersion = system ? execFileSync(system, ["--version"], { encoding: "utf8" }).trim() : "";
if (system && !systemVersion.startsWith("v24.")) nodes.unshift([`the system Node (${systemVersion})`, system]);

beforeAll(async () => {
  stack = inject("localStack");
  fresh = mkdtempSync(join(tmpdir(), "sigil-fresh-project-"));
  const packs = mkdtempSync(join(tmpdir(), "sigil-packs-"));
  execFileSync("npm", ["pack", "-w", "sdk", "--pack-destination", packs], { cwd: root, env: userEnv(), stdio: "pipe" });
  const sdk = join(packs, readdirSync(packs).find((f) => f.startsWith("sigil-sdk-")) as string);
  const cli = await buildCliPackage();
  const version = (pkg: string) =>
    (JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  const viem = version("viem");
  const kit = version("@solana/kit");
  writeFileSync(join(fresh, "package.json"), `${JSON.stringify({ name: "my-app", private: true, type: "module" })}\n`);
  execFileSync(
    "npm",
    ["i", "--prefer-offline", "--no-audit", "--no-fund", sdk, cli, `viem@${viem}`, `@solana/kit@${kit}`],
    {
      cwd: fresh,
      env: userEnv(),
      stdio: "pipe",
    },
  );
}, 240_000);

afterAll(() => {
  if (fresh) rmSync(fresh, { recursive: true, force: true });
});

/** The README's SDK quickstart block, pointed at this stack. */
function quickstart(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = /<!-- quickstart:sdk[^>]*-->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error("the README has no quickstart:sdk block");
  return block.replaceAll("http://127.0.0.1:8787", stack.origin);
}

describe("the packed SDK and CLI in a fresh project", () => {
  it("installed from their tarballs: the SDK's types and entry, and the sigil command, with nothing from the repository", () => {
    const sdkPkg = JSON.parse(readFileSync(join(fresh, "node_modules/@sigil/sdk/package.json"), "utf8"));
    expect(sdkPkg.peerDependencies).toMatchObject({ viem: expect.any(String) });
    const cliPkg = JSON.parse(readFileSync(join(fresh, "node_modules/@sigil/cli/package.json"), "utf8"));
    expect(cliPkg).toMatchObject({ bin: { sigil: "sigil.js" }, engines: { node: ">=20" } });
    expect(cliPkg.dependencies).toBeUndefined();
    // A real folder, not a link back into the repository.
    expect(execFileSync("readlink", ["-f", join(fresh, "node_modules/@sigil/sdk")], { encoding: "utf8" }).trim()).toBe(
      join(fresh, "node_modules/@sigil/sdk"),
    );
  });

  it("a viem wallet client on toSigilAccount type-checks with TypeScript 7 and 5, and a wrong use does not", async () => {
    writeFileSync(
      join(fresh, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          noEmit: true,
          skipLibCheck: true,
        },
        files: ["check.ts"],
      }),
    );
    writeFileSync(
      join(fresh, "check.ts"),
      `import { createSigilClient, SigilError, toSigilAccount } from "@sigil/sdk";
import { createWalletClient, http, type Hex } from "viem";
import { foundry } from "viem/chains";

const client = createSigilClient({ baseUrl: "http://127.0.0.1:8787", apiKey: "key" });
const account = toSigilAccount({ client, wallet: "0x0000000000000000000000000000000000000001", grant: true });
const wallet = createWalletClient({ account, chain: foundry, transport: http() });
export const sign = (message: string): Promise<Hex> => wallet.signMessage({ message });
export const send = () => wallet.sendTransaction({ to: account.address, value: 1n });
export const isRefusal = (e: unknown) => e instanceof SigilError && e.code === "permission_denied";
// @ts-expect-error an address is not a number: the types are real, not any
export const wrong: number = account.address;
`,
    );
    const tsc7 = join(root, "node_modules/typescript/bin/tsc");
    const tsc5 = join(root, "test/generatedClient/node_modules/typescript/bin/tsc");
    for (const tsc of [tsc7, tsc5]) {
      const r = await run(process.execPath, [tsc, "-p", "."]);
      expect(r.code, `${tsc}\n${r.out}${r.err}`).toBe(0);
    }
    // The control: without the expectation the wrong line is an error.
    writeFileSync(
      join(fresh, "check.ts"),
      readFileSync(join(fresh, "check.ts"), "utf8").replace("// @ts-expect-error", "//"),
    );
    const broken = await run(process.execPath, [tsc7, "-p", "."]);
    expect(broken.code).not.toBe(0);
    expect(broken.out).toContain("TS2322");
  });

  for (const [name, node] of nodes) {
    it(`with ${name}: the README's quickstart runs as quickstart.mjs, as written`, async () => {
      writeFileSync(join(fresh, "quickstart.mjs"), quickstart());
      const r = await run(node, ["quickstart.mjs"]);
      expect(r.code, r.out + r.err).toBe(0);
      const [, signature, cost] = /^signature (0x[0-9a-f]{130}) cost (\d+) cent$/m.exec(r.out) ?? [];
      const [, address, second] = /^viem (0x[0-9a-fA-F]{40}) (0x[0-9a-f]{130})$/m.exec(r.out) ?? [];
      expect(cost, r.out).toBe("1");
      const signer = getAddress(address as string);
      expect(await verifyMessage({ address: signer, message: "hello", signature: signature as Hex })).toBe(true);
      expect(await verifyMessage({ address: signer, message: "hello again", signature: second as Hex })).toBe(true);
    });

    it(`with ${name}: @sigil/sdk/solana beside @solana/kit signs a message that kit verifies with the wallet's Solana address`, async () => {
      writeFileSync(
        join(fresh, "solana.mjs"),
        `import { createSigilClient, topUp } from "@sigil/sdk";
import { toSigilSolanaSigner } from "@sigil/sdk/solana";
import { createSignableMessage, getPublicKeyFromAddress, verifySignature } from "@solana/kit";

const anon = createSigilClient({ baseUrl: ${JSON.stringify(stack.origin)} });
const { api_key } = await anon.newAccount({ account_name: "packed solana" });
const client = anon.with({ apiKey: api_key });
await topUp(client, { amountCents: 500 });
const { wallet_address, solana_address } = await client.createWallet({});
const signer = await toSigilSolanaSigner({ client, wallet: wallet_address, grant: true });
const message = createSignableMessage("from a fresh project");
const [signatures] = await signer.signMessages([message]);
const key = await getPublicKeyFromAddress(signer.address);
console.log(signer.address === solana_address, await verifySignature(key, signatures[signer.address], message.content));
`,
      );
      const r = await run(node, ["solana.mjs"]);
      expect(r.code, r.out + r.err).toBe(0);
      expect(r.out).toBe("true true\n");
    });

    it(`with ${name}: the installed sigil signs up, tops up, makes a wallet, allows and runs a script`, async () => {
      const sigil = (...args: string[]) => run(node, [join(fresh, "node_modules/@sigil/cli/sigil.js"), ...args]);
      const version = await sigil("--version");
      expect(version.out).toBe(
        `sigil 0.1.0 (Node ${execFileSync(node, ["--version"], { encoding: "utf8" }).trim()})\n`,
      );
      const created = await sigil("account", "create", "--name", "fresh", "--save", "--api", stack.origin);
      expect(created.code, created.err).toBe(0);
      expect((await sigil("topup", "--amount", "500", "--api", stack.origin)).out).toContain("balance $5.00");
      const made = await sigil("wallet", "create", "--json", "--api", stack.origin);
      const wallet = getAddress((JSON.parse(made.out) as { wallet_address: string }).wallet_address);
      writeFileSync(
        join(fresh, "hello.js"),
        `async function main({ wallet }) { return Sigil.Actions.signMessage({ pkpId: wallet, message: "hello" }) }`,
      );
      const params = JSON.stringify({ wallet });
      const r = await sigil("run", "hello.js", "--params", params, "--allow", "--api", stack.origin);
      expect(r.code, r.err).toBe(0);
      expect(r.err).toMatch(
        /^allow: a new group "hello\.js" with action Qm\w+ with wallet 0x[0-9a-f]{40}, 1 write: \$0\.01$/m,
      );
      expect(r.err).toMatch(/^run: at most 60 s, so at most \$0\.60/m);
      const signature = JSON.parse(/^response\s+(.+)$/m.exec(r.out)?.[1] as string) as Hex;
      expect(await recoverMessageAddress({ message: "hello", signature })).toBe(wallet);
      expect((await sigil("start")).code).toBe(2);
    });
  }
});
