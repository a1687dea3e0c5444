// Runs the enclave as its own process group (as it runs in its CVM) and waits until it prints its
// ready line with its URL and payer addresses. Used by `npm start` and by the test suites.
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Address } from "viem";
import { ENCLAVE_PROCESS, THREAD_POOL_SIZE } from "../../enclave/config.ts";
import { stopGroup } from "./anvil.ts";
import { captureOutput } from "./output.ts";

export type EnclaveProcess = {
  url: string;
  payers: Address[];
  pid: number;
  exited: Promise<number | null>;
  /** Everything it printed (structured JSON log lines). */
  output(): string;
  stop(): Promise<void>;
};

const mainScript = join(import.meta.dirname, "../../enclave/main.ts");

/** `execArgv`: Node's own options before the script (the benchmark's `--cpu-prof`, say). */
export async function spawnEnclave(
  env: Record<string, string>,
  options: { timeoutMs?: number; echo?: (line: string) => void; execArgv?: string[] } = {},
): Promise<EnclaveProcess> {
  const childEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    // Node's compile cache when the caller has one (npm test sets it): a setting of Node's, not the enclave's.
    ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
    UV_THREADPOOL_SIZE: String(THREAD_POOL_SIZE),
    ...ENCLAVE_PROCESS.env,
    ...env,
  };
  const child = spawn(process.execPath, [...ENCLAVE_PROCESS.nodeFlags, ...(options.execArgv ?? []), mainScript], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // As a ProcessEnv: the edge's typecheck sees the one wrangler generates (the edge's variables), which a child's need not have.
    env: childEnv as NodeJS.ProcessEnv,
  });
  if (child.pid === undefined) throw new Error("the enclave did not start");
  const pid = child.pid;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let onReady: (info: { url: string; payers: Address[] }) => void = () => {};
  const output = captureOutput(child, (line) => {
    options.echo?.(line);
    const m = /^SIGIL_ENCLAVE_READY (.*)$/.exec(line);
    if (m) onReady(JSON.parse(m[1] as string) as { url: string; payers: Address[] });
  });
  const ready = new Promise<{ url: string; payers: Address[] }>((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const timer = setTimeout(
      () => reject(new Error(`the enclave did not start within ${timeoutMs} ms:\n${output().slice(-3000)}`)),
      timeoutMs,
    );
    onReady = (info) => {
      clearTimeout(timer);
      resolve(info);
    };
    // "close", not "exit": by then its output has been read to the end, for the message.
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the enclave exited (${signal ?? code}) before it was ready:\n${output().slice(-3000)}`));
    });
  });
  let info: { url: string; payers: Address[] };
  try {
    info = await ready;
  } catch (err) {
    await stopGroup(child);
    throw err;
  }
  return { ...info, pid, exited, output, stop: () => stopGroup(child) };
}
