// The local stack as `npm start` runs it (anvil, AccountConfig, the enclave, the local Stripe, the
// edge under wrangler dev, billing on), started as its own process group on free loopback ports
// with a state folder of its own, for the end-to-end suites that test what a user runs against it.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress, type Address } from "viem";

export type LocalStack = {
  /** The edge's origin, e.g. http://127.0.0.1:41234 (the API is under /core/v1). */
  origin: string;
  /** The same origin, as local.json names it (what the CLI finds). */
  edgeUrl: string;
  /** `${origin}/core/v1`. */
  api: string;
  rpcUrl: string;
  contract: Address;
  /** The state folder (`.sigil/` of this stack: local.json, dev keys). */
  stateDir: string;
  output(): string;
  stop(): Promise<void>;
};

const root = join(import.meta.dirname, "../..");

/**
 * Starts `sigil start` and resolves once it has printed its whole banner (local.json written); `env`
 * adds to its environment. `stop()` removes the state folder, unless `keepState`; `stateDir` starts
 * on a folder kept by an earlier stack (a restart: the chain, the edge's Durable Objects, the keys).
 */
export async function startLocalStack(
  options: { timeoutMs?: number; env?: Record<string, string>; keepState?: boolean; stateDir?: string } = {},
): Promise<LocalStack> {
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), "sigil-stack-"));
  let output = "";
  const child: ChildProcess = spawn(process.execPath, ["bin/sigil.ts", "start"], {
    cwd: root,
    env: {
      ...process.env,
      SIGIL_STATE_DIR: stateDir,
      SIGIL_ANVIL_PORT: "0",
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_EDGE_PORT: "0",
      SIGIL_STRIPE_PORT: "0",
      ...options.env,
    },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (output += c.toString()));
  const stop = async () => {
    if (child.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGINT");
      await exited;
    }
    if (!options.keepState) rmSync(stateDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.timeoutMs ?? 110_000);
  while (!output.includes("Press Ctrl-C to stop.")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the stack did not come up:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const origin = /API\s+(\S+)\/core\/v1/.exec(output)![1]!;
  return {
    origin,
    edgeUrl: origin,
    api: `${origin}/core/v1`,
    rpcUrl: /rpc url\s+(\S+)/.exec(output)?.[1] ?? "",
    contract: getAddress(/AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(output)?.[1] ?? ""),
    stateDir,
    output: () => output,
    stop,
  };
}

/** What a project's shared stack hands its files (through vitest's `inject`): addresses, not the process. */
export type SharedLocalStack = Omit<LocalStack, "output" | "stop"> & {
  /** The IPFS gateway emulator the stack's enclave fetches `ipfs_id` scripts from. */
  gatewayUrl: string;
};

declare module "vitest" {
  export interface ProvidedContext {
    localStack: SharedLocalStack;
  }
}

/**
 * The stack of a suite whose files need only *a* stack and make their own accounts (test/e2e and
 * test/browser globalSetup): one per project instead of one per file, with an IPFS gateway emulator
 * for scripts sent by CID. Files whose subject is the stack's own life (start and stop, restarts,
 * retries after a kill, the soak) start their own.
 */
export async function startSharedLocalStack(): Promise<{ shared: SharedLocalStack; stop(): Promise<void> }> {
  const { startIpfsGateway } = await import("../../emulators/ipfsGateway.ts");
  const gateway = await startIpfsGateway();
  let stack: LocalStack;
  try {
    // Receipts anchored every 2 s: a file checks them on chain without waiting out the default minute.
    stack = await startLocalStack({ env: { SIGIL_IPFS_GATEWAY: gateway.url, SIGIL_RECEIPT_ANCHOR_INTERVAL_S: "2" } });
  } catch (err) {
    await gateway.close();
    throw err;
  }
  const { output: _output, stop: _stop, ...addresses } = stack;
  return {
    shared: { ...addresses, gatewayUrl: gateway.url },
    stop: async () => {
      await stack.stop();
      await gateway.close();
    },
  };
}
