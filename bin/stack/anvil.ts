// Starts a local anvil chain (the binary from @foundry-rs/anvil-linux-amd64) on loopback, in its
// own process group, and stops that group. Used by `npm start` and by the test harness.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export type Anvil = {
  rpcUrl: string;
  port: number;
  pid: number;
  /** Settles when the anvil process exits, for whatever reason. */
  exited: Promise<void>;
  /** Whether `stop()` was called (an exit without it is a crash). */
  readonly stopRequested: boolean;
  /** Stops anvil's process group: SIGTERM, then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<void>;
};

export type AnvilOptions = {
  /** 0 (the default) lets anvil pick a free port and report it. */
  port?: number;
  chainId?: number;
  /** Dev accounts anvil unlocks; tests want many actors. */
  accounts?: number;
  /** How long to wait for anvil to listen. */
  timeoutMs?: number;
  /**
   * Keep the chain in this file: loaded at start when it exists, written on a clean exit and every
   * `intervalSeconds` meanwhile (a killed anvil writes nothing on its way out).
   */
  state?: { path: string; intervalSeconds: number };
  /**
   * Mine a block every this many seconds with what is pending (anvil's interval mining), as the
   * chains the service runs on do, instead of a block per transaction at once (the default).
   * anvil 1.7.1 rebuilds the whole state trie for every block it mines, and since Prague its
   * block-hash history contract (EIP-2935) grows with every block, so with a block per transaction
   * each block and each `eth_call` costs more the longer the chain runs (measured: a plain transfer
   * 2.3 → 7.8 ms of anvil's CPU over 6 000 blocks; `eth_call` 1–5 ms against 0.2 with a block a
   * second). Long runs under load (the soak) mine by interval so that the chain's cost stays flat.
   */
  blockTimeSeconds?: number;
};

export function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil");
}

export async function startAnvil({
  port = 0,
  chainId = 31337,
  accounts = 20,
  timeoutMs = 20_000,
  state,
  blockTimeSeconds,
}: AnvilOptions = {}): Promise<Anvil> {
  // Anvil otherwise writes old states under ~/.foundry/anvil/tmp (gigabytes over a test run) and
  // leaves them behind when it is killed; nothing here reads state at old blocks.
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--chain-id",
    String(chainId),
    "--accounts",
    String(accounts),
    "--max-persisted-states",
    "0",
  ];
  if (state) args.push("--state", state.path, "--state-interval", String(state.intervalSeconds));
  if (blockTimeSeconds !== undefined) args.push("--block-time", String(blockTimeSeconds));
  const child = spawn(anvilBinary(), args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const pid = child.pid;
  if (pid === undefined) throw new Error("anvil did not start");

  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // What anvil printed until it listens (for the error when it does not). Read only until then:
  // anvil prints a line for every RPC call it serves, and a reader kept on would hold all of it and
  // scan it again at every chunk (the soak's clients paid more CPU for every call as the chain grew).
  let output = "";
  let onData: (chunk: Buffer) => void = () => {};
  let onExit: (code: number | null, signal: NodeJS.Signals | null) => void = () => {};
  const listening = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`anvil did not listen within ${timeoutMs} ms:\n${output.slice(-2000)}`)),
      timeoutMs,
    );
    onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
      const m = /Listening on 127\.0\.0\.1:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    onExit = (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited (${signal ?? code}) before listening:\n${output.slice(-2000)}`));
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });

  let actualPort: number;
  try {
    actualPort = await listening;
  } catch (err) {
    await stopGroup(child);
    throw err;
  } finally {
    child.stdout?.off("data", onData);
    child.stderr?.off("data", onData);
    child.off("exit", onExit);
    output = "";
  }
  // Keep draining its output (unread) so a chatty anvil never blocks on a full pipe.
  child.stdout?.resume();
  child.stderr?.resume();
  let stopRequested = false;
  return {
    rpcUrl: `http://127.0.0.1:${actualPort}`,
    port: actualPort,
    pid,
    exited,
    get stopRequested() {
      return stopRequested;
    },
    stop: () => {
      stopRequested = true;
      return stopGroup(child);
    },
  };
}

/**
 * Signals a detached child's whole process group and waits for the child to exit. When the child
 * has already died, what it started may live on in its group (wrangler dev's launcher dies, its CLI
 * and workerd do not, and keep the stack's pipes open): those are killed.
 */
export async function stopGroup(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.pid === undefined) return;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // the group is already gone
    }
  };
  if (child.exitCode !== null || child.signalCode !== null) {
    signal("SIGKILL");
    return;
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
