// For the suites of the `sigil` command: the local stack as `npm start` runs it (its own state
// folder, free ports), and the command run as a user runs it, a process whose exit code and
// output are what the test checks.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const root = join(import.meta.dirname, "../..");

export type LocalStack = {
  /** The folder `sigil start` keeps its state in; local.json there names the API. */
  stateDir: string;
  /** The edge's origin, e.g. http://127.0.0.1:41849. */
  edgeUrl: string;
  rpcUrl: string;
  stop(): Promise<void>;
};

/** Starts `sigil start` with its own state folder and free ports, and resolves once local.json names the edge. */
export async function startLocalStack(): Promise<LocalStack> {
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-cli-stack-"));
  const child: ChildProcess = spawn(process.execPath, ["bin/sigil.ts", "start"], {
    cwd: root,
    env: { ...process.env, SIGIL_STATE_DIR: stateDir, SIGIL_ANVIL_PORT: "0", SIGIL_ENCLAVE_PORT: "0", SIGIL_EDGE_PORT: "0", SIGIL_STRIPE_PORT: "0" },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (output += c.toString()));
  const stop = async () => {
    if (child.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGINT");
      await exited;
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 110_000;
  while (!output.includes("Press Ctrl-C to stop.")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the stack did not come up:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const local = JSON.parse(readFileSync(join(stateDir, "local.json"), "utf8")) as { edgeUrl: string; rpcUrl: string };
  return { stateDir, edgeUrl: local.edgeUrl, rpcUrl: local.rpcUrl, stop };
}

export type CliResult = { code: number; stdout: string; stderr: string };

/** Runs `node bin/sigil.ts …` in `cwd` with exactly `env` on top of PATH and HOME; never rejects. */
export function runSigil(args: string[], options: { env: Record<string, string | undefined>; cwd: string; input?: string }): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(root, "bin/sigil.ts"), ...args],
      // Only what the test gives: no SIGIL_* of the developer's shell leaks in.
      { cwd: options.cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env }, timeout: 150_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** The one error line a failed command prints: `sigil <command>: <code>: <message> (request <id>)`. */
export function errorLineOf(result: CliResult): { command: string; code: string; message: string; requestId: string | undefined } {
  const lines = result.stderr.trim().split("\n");
  if (lines.length !== 1) throw new Error(`expected one line on stderr, got ${lines.length}:\n${result.stderr}`);
  const m = /^sigil ([a-z -]+?): ([a-z_]+): (.*?)(?: \(request ([0-9a-f-]+)\))?$/.exec(lines[0] as string);
  if (!m) throw new Error(`not an error line: ${lines[0]}`);
  return { command: m[1] as string, code: m[2] as string, message: m[3] as string, requestId: m[4] };
}
