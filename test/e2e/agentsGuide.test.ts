// The agents guide's walkthrough (docs/guides/agents.md) — its per-task key — run as written against the
// real local stack: saved as a module beside the repository's node_modules (where @sigil/sdk, its
// delegation entry and the MCP SDK resolve as they would in a project that installed them), its API
// URL pointed at this stack, run with Node. It must print the one-shot key's one use, a signature of
// "Order #1042" by the wallet the guide made, and the second call refused as used up.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recoverMessageAddress, type Hex } from "viem";
import { describe, expect, inject, it } from "vitest";
import { root } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

function walkthrough(): string {
  const guide = readFileSync(join(root, "docs/guides/agents.md"), "utf8");
  const block = /<!-- walkthrough:agent[^>]*-->\n```ts\n([\s\S]*?)```/.exec(guide)?.[1];
  expect(block, "docs/guides/agents.md's walkthrough").toBeDefined();
  return block as string;
}

describe("docs/guides/agents.md", () => {
  it("the per-task key walkthrough runs as written: the agent signs once over MCP, then its key is spent", async () => {
    const stack: SharedLocalStack = inject("localStack");
    const code = walkthrough().replace('"http://127.0.0.1:8787"', JSON.stringify(stack.origin));
    expect(code).toContain(stack.origin);
    const dir = join(root, ".sigil", `agents-guide-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "agent.mjs");
    writeFileSync(file, code);
    try {
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [file], { cwd: dir, timeout: 90_000 }, (err, out, errOut) =>
          err ? reject(new Error(`${err.message}\n${out}\n${errOut}`)) : resolve(out),
        ),
      );
      expect(stdout).toMatch(
        /one-shot key allows \[\{"id":"[0-9a-f]{32}","max_uses":3\},\{"id":"[0-9a-f]{32}","max_uses":1\}\]/,
      );
      const signature = /signed: ok[\s\S]*?"response": "(0x[0-9a-f]{130})"/.exec(stdout)?.[1] as Hex | undefined;
      expect(signature, stdout).toBeDefined();
      const wallet = /wallet (0x[0-9a-fA-F]{40})/.exec(stdout)?.[1] ?? "";
      const signer = await recoverMessageAddress({ message: "Order #1042", signature: signature as Hex });
      expect(signer.toLowerCase()).toBe(wallet.toLowerCase());
      expect(stdout).toMatch(/again: refused .*invalid_api_key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
