// `npm start` as a user runs it: the stack comes up and serves the API (the time it took is printed,
// not asserted: the 30 s of the acceptance is a number to read, and timed assertions are flaky on
// these shared 2-core machines), prints its address, Ctrl-C stops every process it started, a crash of
// its chain, its enclave or its edge ends it loudly (status 1), and bad configuration is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import { freePort } from "../../bin/stack/edge.ts";

const root = join(import.meta.dirname, "../..");

type Started = { child: ChildProcess; output: () => string; exit: Promise<number | null>; spawnedAt: number };


const running: ChildProcess[] = [];
const anvils: Anvil[] = [];
const strayPids: number[] = [];
const stateDirs: string[] = [];

// A state folder of its own per stack, removed after the test.
function newStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sigil-state-"));
  stateDirs.push(dir);
  return dir;
}

function startStack(env: Record<string, string>, stateDir = newStateDir()): Started {
  // Its own process group, so a test can clean up after a failure without touching the runner.
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, ["bin/sigil.ts", "start"], {
    cwd: root,
    // A state folder of its own, so a test never overwrites a developer's .sigil/local.json.
    // A free port for the enclave too, so parallel stacks never collide on the default 8790.
    env: { ...process.env, SIGIL_STATE_DIR: stateDir, SIGIL_ENCLAVE_PORT: "0", SIGIL_EDGE_PORT: "0", SIGIL_STRIPE_PORT: "0", ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let output = "";
  child.stdout?.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (output += c.toString()));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exit, spawnedAt };
}

/**
 * Milliseconds from spawning the stack until the API at `api` answers GET /health with 200 (the
 * edge serving, with its enclave ok), polled from the moment of the spawn.
 */
async function msUntilServing(started: Started, api: string, timeoutMs = 90_000): Promise<number> {
  for (;;) {
    try {
      const res = await fetch(`${api}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 200) return performance.now() - started.spawnedAt;
    } catch {
      // not listening yet
    }
    if (started.child.exitCode !== null) throw new Error(`sigil start exited before it served the API:\n${started.output()}`);
    if (performance.now() - started.spawnedAt > timeoutMs) throw new Error(`the API did not answer within ${timeoutMs} ms:\n${started.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined, started: Started, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (started.child.exitCode !== null) throw new Error(`sigil start exited before ${what}:\n${started.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${started.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The stack's exit status, or a failure showing its output if it has not exited within `ms`. */
async function exitWithin(started: Started, ms = 60_000): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`sigil start had not exited ${ms} ms later:\n${started.output()}`)), ms);
  });
  try {
    return await Promise.race([started.exit, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The processes of process group `pgid` that are still running (zombies excluded; Linux /proc). */
function runningInGroup(pgid: number): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid pgrp …: comm may hold spaces, so split after its closing parenthesis.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z") found.push(`${entry} ${readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ").trim()}`);
    } catch {
      // gone while we looked
    }
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function up(started: Started) {
  const address = await waitFor("AccountConfig address", () => /AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(started.output())?.[1] as Address | undefined, started);
  const rpcUrl = /rpc url\s+(\S+)/.exec(started.output())![1]!;
  const anvilPid = Number(/anvil \(pid (\d+)\)/.exec(started.output())?.[1] ?? 0) || undefined;
  if (anvilPid) strayPids.push(anvilPid);
  const edgeMatch = /edge \(pid (\d+)\) listening on (\S+)/.exec(started.output());
  if (edgeMatch) strayPids.push(Number(edgeMatch[1]));
  const enclave = /enclave \(pid (\d+)\) listening on (\S+)/.exec(started.output());
  const enclavePid = Number(enclave?.[1] ?? 0) || undefined;
  if (enclavePid) strayPids.push(enclavePid);
  return { address, rpcUrl, anvilPid, enclavePid, enclaveUrl: enclave?.[2], edgePid: Number(edgeMatch?.[1] ?? 0) || undefined, edgeUrl: edgeMatch?.[2] };
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

afterEach(async () => {
  for (const child of running.splice(0)) if (child.exitCode === null && child.pid) killGroup(child.pid);
  for (const pid of strayPids.splice(0)) killGroup(pid);
  for (const a of anvils.splice(0)) await a.stop();
  for (const dir of stateDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("npm start", () => {
  it("serves the API (printing how long that took), deploys AccountConfig on its own anvil, starts the enclave with funded payers, and leaves no process behind after Ctrl-C", async () => {
    const stateDir = newStateDir();
    // A port chosen here, so the API is polled from the spawn on, before anything is printed.
    const edgePort = await freePort();
    const started = startStack({ SIGIL_ANVIL_PORT: "0", SIGIL_EDGE_PORT: String(edgePort) }, stateDir);
    const servedAfterMs = await msUntilServing(started, `http://127.0.0.1:${edgePort}/core/v1`);
    console.log(`npm start: the API answered ${(servedAfterMs / 1000).toFixed(1)} s after the start (the acceptance asks for 30 s)`);
    const { address, rpcUrl, anvilPid, enclavePid, enclaveUrl, edgePid, edgeUrl } = await up(started);
    expect(edgeUrl).toBe(`http://127.0.0.1:${edgePort}`);
    expect(enclavePid).toBeDefined();
    expect(edgePid).toBeDefined();
    // The edge serves the API and reaches the enclave (its health aggregates the enclave's).
    const edgeHealth = await fetch(`${edgeUrl}/core/v1/health`);
    expect(edgeHealth.status).toBe(200);
    expect(((await edgeHealth.json()) as { enclaves: Array<{ status: string }> }).enclaves[0]?.status).toBe("ok");
    expect(started.output()).toContain("SIMULATED TEE");
    // The enclave's public health names its payers (their balances it keeps to the channel): funded.
    const health = (await (await fetch(`${enclaveUrl}/health`)).json()) as { status: string; payers: `0x${string}`[] };
    expect(health.status).toBe("ok");
    expect(health.payers.length).toBeGreaterThan(0);
    const chain = createPublicClient({ transport: http(rpcUrl) });
    for (const payer of health.payers) expect(await chain.getBalance({ address: payer })).toBeGreaterThan(0n);
    // The dev root key and the local secret are generated into the state folder, never printed.
    expect(readFileSync(join(stateDir, "dev/root.key"), "utf8")).toMatch(/^0x[0-9a-f]{64}\n$/);
    expect(started.output()).not.toContain(readFileSync(join(stateDir, "dev/root.key"), "utf8").trim());
    expect(started.output()).not.toContain(readFileSync(join(stateDir, "dev/edge-identity.key"), "utf8").trim());
    expect(anvilPid).toBeDefined();
    expect(JSON.parse(readFileSync(join(stateDir, "local.json"), "utf8"))).toMatchObject({ rpcUrl, chainId: 31337, accountConfig: address });

    const client = createPublicClient({ transport: http(rpcUrl) });
    expect(await client.getChainId()).toBe(31337);
    expect(await client.getCode({ address })).toMatch(/^0x[0-9a-f]{20,}/);
    expect(started.output()).toContain("chain id         31337");

    started.child.kill("SIGINT");
    expect(await started.exit).toBe(0);
    expect(isAlive(anvilPid!)).toBe(false);
    expect(isAlive(enclavePid!)).toBe(false);
    expect(isAlive(edgePid!)).toBe(false);
    await expect(client.getChainId()).rejects.toThrow();
  });

  it("uses SIGIL_RPC_URL instead of starting a chain, and leaves that chain running when it stops", async () => {
    const chain = await startAnvil();
    anvils.push(chain);
    const started = startStack({ SIGIL_RPC_URL: chain.rpcUrl });
    const { address, rpcUrl, anvilPid } = await up(started);
    expect(rpcUrl).toBe(chain.rpcUrl);
    expect(anvilPid).toBeUndefined();
    expect(started.output()).toContain(`using the chain at ${chain.rpcUrl}`);

    started.child.kill("SIGTERM");
    expect(await started.exit).toBe(0);
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    expect(await client.getCode({ address })).toMatch(/^0x[0-9a-f]+/);
  });

  it("exits non-zero and says so when its anvil dies", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "0" });
    const { anvilPid } = await up(started);
    process.kill(anvilPid!, "SIGKILL");
    expect(await started.exit).toBe(1);
    expect(started.output()).toContain("anvil exited unexpectedly");
  });

  it("exits non-zero and says so when its enclave dies", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "0" });
    const { enclavePid } = await up(started);
    process.kill(enclavePid!, "SIGKILL");
    expect(await started.exit).toBe(1);
    expect(started.output()).toContain("the enclave exited unexpectedly");
  });

  it("exits with status 1 and says so when its edge dies, stopping anvil and the enclave", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "0" });
    // The edge is `wrangler dev`, spawned by bin/stack/edge.ts and printed as `edge (pid N)`.
    const { edgePid, edgeUrl, anvilPid, enclavePid } = await up(started);
    expect(edgePid).toBeDefined();
    expect((await fetch(`${edgeUrl}/core/v1/version`)).status).toBe(200);
    process.kill(edgePid!, "SIGKILL");
    expect(await exitWithin(started)).toBe(1);
    expect(started.output()).toContain("the edge exited unexpectedly");
    expect(isAlive(anvilPid!)).toBe(false);
    expect(isAlive(enclavePid!)).toBe(false);
    // Nothing the edge started (wrangler's CLI, workerd) lives on in its process group: killed on
    // the way out, so gone within moments.
    const deadline = Date.now() + 10_000;
    while (runningInGroup(edgePid!).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(runningInGroup(edgePid!), "processes left in the edge's group").toEqual([]);
  });

  it("refuses invalid configuration with a message naming the variable, and starts nothing", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "not-a-port" });
    expect(await started.exit).toBe(1);
    expect(started.output()).toMatch(/invalid configuration: SIGIL_ANVIL_PORT/);
    expect(started.output()).not.toContain("anvil (pid");
  });
});
