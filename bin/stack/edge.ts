// Runs the edge under `wrangler dev` (workerd, the same runtime as production) as its own process
// group, wired to the local chain and enclave through an env file in the state folder, and waits
// until it answers. Nothing leaves the machine: Cloudflare's request metadata (`cf.json`) is not
// fetched and wrangler sends no metrics.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { stopGroup } from "./anvil.ts";
import { captureOutput } from "./output.ts";

export type EdgeProcess = {
  url: string;
  pid: number;
  exited: Promise<number | null>;
  output(): string;
  stop(): Promise<void>;
};

const root = join(import.meta.dirname, "../..");
const wranglerBin = join(root, "node_modules/wrangler/bin/wrangler.js");

/**
 * A free port on 127.0.0.1 held by a listening socket until `release()`: while held, no other
 * process can listen on it and no outgoing connection is given it as its local port. For a port
 * chosen long before wrangler dev listens on it (the enclave must know it first), so that the
 * seconds between are no window for another taker; released just before wrangler starts.
 */
export async function reservePort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  let released: Promise<void> | undefined;
  return { port, release: () => (released ??= new Promise<void>((resolve) => server.close(() => resolve()))) };
}

/** A port that is free right now on 127.0.0.1 (wrangler dev cannot be asked to pick one). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * `value` as a dotenv file says it: in single quotes (taken literally) when it holds a double quote
 * and no single quote or line break — a JSON variable such as SIGIL_CHAINS, which double quotes would
 * hand over with its backslashes, since dotenv unescapes only `\n` there — else in double quotes.
 */
export function dotenvValue(value: string): string {
  return /"/.test(value) && !/['\n\r]/.test(value) ? `'${value}'` : JSON.stringify(value);
}

export async function spawnEdge(options: {
  port: number;
  stateDir: string;
  vars: Record<string, string>;
  timeoutMs?: number;
  echo?: (line: string) => void;
  /** wrangler's log level: "warn" (the default) hides the worker's own console.log lines, "log" shows them. */
  logLevel?: "warn" | "log";
}): Promise<EdgeProcess> {
  const dir = join(options.stateDir, "dev");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // An env file, not --var flags, so the edge identity key never shows in the process list.
  const envFile = join(dir, "edge.env");
  writeFileSync(
    envFile,
    `${Object.entries(options.vars)
      .map(([k, v]) => `${k}=${dotenvValue(v)}`)
      .join("\n")}\n`,
    { mode: 0o600 },
  );
  const child = spawn(
    process.execPath,
    [
      wranglerBin,
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(options.port),
      "--env-file",
      envFile,
      "--persist-to",
      join(options.stateDir, "wrangler"),
      "--show-interactive-dev-session=false",
      "--log-level",
      options.logLevel ?? "warn",
    ],
    {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    },
  );
  if (child.pid === undefined) throw new Error("wrangler dev did not start");
  const pid = child.pid;
  const output = captureOutput(child, (line) => {
    if (line.trim()) options.echo?.(line.trimEnd());
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = `http://127.0.0.1:${options.port}`;
  await waitForEdge("wrangler dev", child, url, output, options.timeoutMs ?? 60_000);
  return { url, pid, exited, output, stop: () => stopGroup(child) };
}

/**
 * Waits until the edge `child` serves `url` (its /core/v1/version answers); if it exits first or
 * does not answer in time, stops it and throws with the end of its output.
 */
export async function waitForEdge(
  name: string,
  child: ChildProcess,
  url: string,
  output: () => string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited (${child.exitCode}) before it answered:\n${output().slice(-3000)}`);
    try {
      if ((await fetch(`${url}/core/v1/version`, { signal: AbortSignal.timeout(1_000) })).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopGroup(child);
      throw new Error(`${name} did not answer within ${timeoutMs} ms:\n${output().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
