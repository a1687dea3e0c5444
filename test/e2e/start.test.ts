// `npm start` as a user runs it: the stack comes up and serves the API (the time it took is printed,
// not asserted: the 30 s of the acceptance is a number to read, and timed assertions are flaky on
// these shared 2-core machines), prints its address, Ctrl-C stops every process it started, it uses a
// chain it is given and leaves it running, bad configuration is refused, and a restart keeps the
// chain with the ledgers. What ends it when one of its processes dies, and a chain other than the
// recorded one (new AccountConfig, ledgers cleared), are unit tests with stand-ins: bin/stack/start.test.ts.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { topUp } from "../harness/topUp.ts";
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
    env: {
      ...process.env,
      SIGIL_STATE_DIR: stateDir,
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_EDGE_PORT: "0",
      SIGIL_STRIPE_PORT: "0",
      ...env,
    },
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
    if (started.child.exitCode !== null)
      throw new Error(`sigil start exited before it served the API:\n${started.output()}`);
    if (performance.now() - started.spawnedAt > timeoutMs)
      throw new Error(`the API did not answer within ${timeoutMs} ms:\n${started.output()}`);
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function up(started: Started) {
  const address = await waitFor(
    "AccountConfig address",
    () => /AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(started.output())?.[1] as Address | undefined,
    started,
  );
  const rpcUrl = /rpc url\s+(\S+)/.exec(started.output())![1]!;
  const anvilPid = Number(/anvil \(pid (\d+)\)/.exec(started.output())?.[1] ?? 0) || undefined;
  if (anvilPid) strayPids.push(anvilPid);
  const edgeMatch = /edge \(pid (\d+)\) listening on (\S+)/.exec(started.output());
  if (edgeMatch) strayPids.push(Number(edgeMatch[1]));
  const enclave = /enclave \(pid (\d+)\) listening on (\S+)/.exec(started.output());
  const enclavePid = Number(enclave?.[1] ?? 0) || undefined;
  if (enclavePid) strayPids.push(enclavePid);
  return {
    address,
    rpcUrl,
    anvilPid,
    enclavePid,
    enclaveUrl: enclave?.[2],
    edgePid: Number(edgeMatch?.[1] ?? 0) || undefined,
    edgeUrl: edgeMatch?.[2],
  };
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Ctrl-C, as a user stops the stack; it must exit cleanly. */
async function stopStack(started: Started): Promise<void> {
  started.child.kill("SIGINT");
  expect(await exitWithin(started)).toBe(0);
}

async function api<T = Record<string, unknown>>(
  base: string,
  method: "GET" | "POST",
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(options.key ? { "x-api-key": options.key } : {}),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function ok<T = Record<string, unknown>>(
  base: string,
  method: "GET" | "POST",
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<T> {
  const r = await api<T>(base, method, path, options);
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A listener on a free loopback port, standing for another program that holds it. */
async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  occupied.push(server);
  return { port: (server.address() as { port: number }).port, server };
}
const occupied: Server[] = [];

afterEach(async () => {
  for (const server of occupied.splice(0)) server.close();
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
    console.log(
      `npm start: the API answered ${(servedAfterMs / 1000).toFixed(1)} s after the start (the acceptance asks for 30 s)`,
    );
    const { address, rpcUrl, anvilPid, enclavePid, enclaveUrl, edgePid, edgeUrl } = await up(started);
    expect(edgeUrl).toBe(`http://127.0.0.1:${edgePort}`);
    expect(enclavePid).toBeDefined();
    expect(edgePid).toBeDefined();
    // The edge serves the API and reaches the enclave (its health aggregates the enclave's).
    const edgeHealth = await fetch(`${edgeUrl}/core/v1/health`);
    expect(edgeHealth.status).toBe(200);
    expect(((await edgeHealth.json()) as { enclaves: Array<{ status: string }> }).enclaves[0]?.status).toBe("ok");
    // The OpenAPI document names the edge as its server; Swagger UI's page loads every file it
    // needs from the edge (its own static assets, wrangler.toml [assets]), none from elsewhere.
    const doc = (await (await fetch(`${edgeUrl}/core/v1/openapi.json`)).json()) as { servers: Array<{ url: string }> };
    expect(doc.servers).toEqual([{ url: edgeUrl }]);
    const page = await (await fetch(`${edgeUrl}/core/v1/swagger-ui`)).text();
    const files = [...page.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string);
    expect(files).toEqual(expect.arrayContaining(["/swagger-ui/swagger-ui-bundle.js", "/swagger-ui/swagger-ui.css"]));
    for (const file of files) {
      expect(file).toMatch(/^\/[^/]/);
      expect((await fetch(`${edgeUrl}${file}`)).status, file).toBe(200);
    }
    expect(started.output()).toContain("SIMULATED TEE");
    // It prints where the dashboard is, and the edge serves it there.
    expect(started.output()).toMatch(new RegExp(`dashboard\\s+${edgeUrl}/dashboard\\n`));
    expect((await fetch(`${edgeUrl}/dashboard`)).status).toBe(200);
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
    expect(JSON.parse(readFileSync(join(stateDir, "local.json"), "utf8"))).toMatchObject({
      rpcUrl,
      chainId: 31337,
      accountConfig: address,
    });

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

  it("refuses invalid configuration with a message naming the variable, and starts nothing", async () => {
    const started = startStack({ SIGIL_ANVIL_PORT: "not-a-port" });
    expect(await started.exit).toBe(1);
    expect(started.output()).toMatch(/invalid configuration: SIGIL_ANVIL_PORT/);
    expect(started.output()).not.toContain("anvil (pid");
  });

  it("refuses a port variable that names a port in use, naming that variable and how to choose another, before it starts anything", async () => {
    for (const variable of ["SIGIL_ANVIL_PORT", "SIGIL_ENCLAVE_PORT", "SIGIL_EDGE_PORT", "SIGIL_STRIPE_PORT"]) {
      const { port } = await occupiedPort();
      const started = startStack({ SIGIL_ANVIL_PORT: "0", [variable]: String(port) });
      expect(await exitWithin(started), variable).toBe(1);
      const line = started
        .output()
        .split("\n")
        .find((l) => l.includes(String(port)) && /in use/.test(l));
      expect(line, `${variable}:\n${started.output()}`).toContain(variable);
      expect(line, variable).toMatch(new RegExp(`${variable}=0`));
      expect(started.output(), variable).not.toContain("anvil (pid");
    }
  });

  it("keeps the chain with the ledgers across a restart: after Ctrl-C and npm start again, the account, its wallet and its credit are all there, and it can act and buy more", {
    timeout: 360_000,
  }, async () => {
    const stateDir = newStateDir();
    const first = startStack({ SIGIL_ANVIL_PORT: "0" }, stateDir);
    const before = await up(first);
    const base = `${before.edgeUrl}/core/v1`;
    const account = await ok<{ api_key: string; account_id: string }>(base, "POST", "/new_account", {
      body: { account_name: "kept" },
    });
    await topUp({ api: base, key: account.api_key, amountCents: 500 });
    const wallet = await ok<{ wallet_address: string }>(base, "POST", "/create_wallet", {
      key: account.api_key,
      body: {},
    });
    expect(
      (await ok<{ balance_cents: number }>(base, "GET", "/billing/balance", { key: account.api_key })).balance_cents,
    ).toBe(499);
    await stopStack(first);

    const second = startStack({ SIGIL_ANVIL_PORT: "0" }, stateDir);
    const after = await up(second);
    const again = `${after.edgeUrl}/core/v1`;
    expect(after.address).toBe(before.address);
    expect(await ok(again, "GET", "/account_exists", { key: account.api_key })).toEqual({
      exists: true,
      managed: true,
    });
    expect(
      (await ok<{ balance_cents: number }>(again, "GET", "/billing/balance", { key: account.api_key })).balance_cents,
    ).toBe(499);
    expect(second.output()).toContain(`keeping the AccountConfig of an earlier run at ${before.address}`);
    expect(
      (await ok<Array<{ wallet_address: string }>>(again, "GET", "/list_wallets", { key: account.api_key })).map(
        (w) => w.wallet_address,
      ),
    ).toContain(wallet.wallet_address);
    // It still acts (its payers, registered in the first run, still pay) and buys credit (its
    // Stripe customer, made in the first run, is still known).
    await ok(again, "POST", "/create_wallet", { key: account.api_key, body: {} });
    expect((await topUp({ api: again, key: account.api_key, amountCents: 500 })).balanceCents).toBe(998);
    await stopStack(second);
  });
});
