// The README's quickstart, run as written against the local stack as `npm start` runs it (on free
// ports here: the blocks' http://127.0.0.1:8787 becomes this stack's origin, nothing else changes).
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getAddress, verifyMessage, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp } from "../../sdk/src/index.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const root = join(import.meta.dirname, "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
/** The project's shared local stack (test/e2e or test/browser globalSetup). */
let stack: SharedLocalStack;

beforeAll(async () => {
  stack = inject("localStack");
}, 120_000);
afterAll(async () => {});

/** The fenced block of `lang` right after the `<!-- quickstart:NAME … -->` marker. */
function block(name: string, lang: string): string {
  const found = new RegExp(`<!-- quickstart:${name}[^>]*-->\\n\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1];
  if (!found) throw new Error(`the README has no quickstart:${name} block`);
  return found.replaceAll("http://127.0.0.1:8787", stack.origin);
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) =>
    execFile(
      command,
      args,
      { cwd: options.cwd, env: { ...process.env, ...options.env }, timeout: 120_000 },
      (error, out, err) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

describe("the README's quickstart", () => {
  it("the TypeScript block runs as written: a run's signature and a viem account's, both the wallet's", async () => {
    const dir = join(root, ".sigil/quickstart");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `sdk-${process.pid}.ts`);
    writeFileSync(file, block("sdk", "ts"));
    try {
      const r = await run(process.execPath, [file], { cwd: root });
      expect(r.code, r.out + r.err).toBe(0);
      const [, signature, cost] = /^signature (0x[0-9a-f]{130}) cost (\d+) cent$/m.exec(r.out) ?? [];
      const [, address, second] = /^viem (0x[0-9a-fA-F]{40}) (0x[0-9a-f]{130})$/m.exec(r.out) ?? [];
      expect(signature, r.out).toBeDefined();
      expect(cost).toBe("1");
      expect(
        await verifyMessage({ address: getAddress(address!), message: "hello", signature: signature as Hex }),
      ).toBe(true);
      expect(
        await verifyMessage({ address: getAddress(address!), message: "hello again", signature: second as Hex }),
      ).toBe(true);
    } finally {
      rmSync(file, { force: true });
    }
  });

  it("says what happens to a script no group grants: 403 permission_denied", async () => {
    const sigil = createSigilClient({ baseUrl: stack.origin });
    const { api_key, wallet_address } = await sigil.newAccount({ account_name: "ungranted" });
    expect(readme).toMatch(/Without it, the run answers 403\s+`permission_denied`/);
    const account = sigil.with({ apiKey: api_key });
    await topUp(account, { amountCents: 500 });
    await expect(
      account.sigilAction({
        code: "async function main({ w }) { return Sigil.Actions.signMessage({ pkpId: w, message: 'x' }) }",
        js_params: { w: wallet_address },
      }),
    ).rejects.toMatchObject({ status: 403, code: "permission_denied" });
  });
});
