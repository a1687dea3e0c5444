// `npm start` as a user runs it: the stack comes up and prints its address, Ctrl-C stops every
// process it started, a crash of its chain ends it loudly, and bad configuration is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";

const root = join(import.meta.dirname, "../..");

type Started = { child: ChildProcess; output: () => string; exit: Promise<number | null> };

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
  return { child, output: () => output, exit };
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
  it("deploys AccountConfig on its own anvil, starts the enclave with funded payers, and leaves no process behind after Ctrl-C", async () => {
    const stateDir = newStateDir();
    const started = startStack({ SIGIL_ANVIL_PORT: "0" }, stateDir);
    const { address, rpcUrl, anvilPid, enclavePid, enclaveUrl, edgePid, edgeUrl } = await up(started);
    expect(enclavePid).toBeDefined();
    expect(edgePid).toBeDefined();
    // The edge serves the API and reaches the enclave (its health aggregates the enclave's).
    const edgeHealth = await fetch(`${edgeUrl}/core/v1/health`);
    expect(edgeHealth.status).toBe(200);
    expect(((await edgeHealth.json()) as { enclaves: Array<{ status: string }> }).enclaves[0]?.status).toBe("ok");
    expect(started.output()).toContain("SIMULATED TEE");
    const health = (await (await fetch(`${enclaveUrl}/health`)).json()) as { status: string; payers: Array<{ low: boolean }> };
    expect(health.status).toBe("ok");
    expect(health.payers.length).toBeGreaterThan(0);
    expect(health.payers.every((p) => p.low === false)).toBe(true);
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

  it("refuses invalid configuration with a message naming the variable, and starts nothing", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "not-a-port" });
    expect(await started.exit).toBe(1);
    expect(started.output()).toMatch(/invalid configuration: SIGIL_ANVIL_PORT/);
    expect(started.output()).not.toContain("anvil (pid");
  });
});
