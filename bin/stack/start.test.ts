// `npm start`'s supervision (bin/stack/start.ts) with stand-in children: a part that dies on its own
// ends the stack with status 1 and a line naming it, a stop signal ends it with 0 and the parts it
// stops are no failure, a dead part's process group is emptied when the stack stops it, and a chain
// other than the recorded deployment's gets a new AccountConfig and the old ledgers cleared. The
// real `npm start`, its Ctrl-C and a restart, are test/e2e/start.test.ts.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startAnvil, stopGroup, type Anvil } from "./anvil.ts";
import { ledgersDir } from "./deployment.ts";
import { keptOrNewDeployment, supervise, type Supervised } from "./start.ts";

const children: ChildProcess[] = [];
/** Set while a test's stand-ins are killed after it: as the stack marks itself stopping before it stops its parts. */
let cleaningUp = false;
beforeEach(() => {
  cleaningUp = false;
});
afterEach(async () => {
  cleaningUp = true;
  const gone = children.splice(0).map((child) => {
    const exited =
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      process.kill(-(child.pid as number), "SIGKILL");
    } catch {
      // gone
    }
    return exited;
  });
  await Promise.all(gone);
  vi.restoreAllMocks();
});

/** A stand-in for anvil, the enclave or the edge: a process that runs until it is killed, in a group of its own. */
function standIn(script = "setInterval(() => {}, 1 << 30)"): {
  child: ChildProcess;
  part: (name: string) => Supervised;
} {
  const child = spawn(process.execPath, ["-e", script], { detached: true, stdio: "ignore" });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, part: (name) => ({ name, exited }) };
}

/** The processes of group `pgid` still running (zombies excluded; Linux /proc). */
function runningInGroup(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z") found.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

describe("supervise: what ends npm start, and with which status", () => {
  for (const dying of ["anvil", "the enclave", "the edge"]) {
    it(`ends with status 1 and says so when ${dying} exits on its own, whichever of the three it is`, async () => {
      const errors: string[] = [];
      vi.spyOn(console, "error").mockImplementation((line: string) => void errors.push(line));
      const parts = ["anvil", "the enclave", "the edge"].map((name) => ({ name, ...standIn() }));
      const code = supervise(
        parts.map((p) => p.part(p.name)),
        new Promise(() => {}),
        () => cleaningUp,
      );
      parts.find((p) => p.name === dying)?.child.kill("SIGKILL");
      expect(await code).toBe(1);
      expect(errors).toEqual([`sigil start: ${dying} exited unexpectedly (null); stopping`]);
    });
  }

  it("ends with the stop signal's status, and the parts the stack then stops are no failure", async () => {
    const errors: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: string) => void errors.push(line));
    let stopping = false;
    let signal: (code: number) => void = () => {};
    const stopped = new Promise<number>((resolve) => (signal = resolve));
    const parts = ["anvil", "the enclave", "the edge"].map((name) => ({ name, ...standIn() }));
    const code = supervise(
      parts.map((p) => p.part(p.name)),
      stopped,
      () => stopping,
    );
    // Ctrl-C: the stack marks itself stopping, stops its parts, then the signal's path resolves.
    stopping = true;
    for (const p of parts) await stopGroup(p.child);
    signal(0);
    expect(await code).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe("stopGroup: nothing a dead part started lives on", () => {
  it("kills what is left in the group of a child that died (as wrangler dev's launcher does, leaving its CLI and workerd)", async () => {
    // A leader that starts a grandchild in its own group, then is killed.
    const { child } = standIn(
      `require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)"], { stdio: "ignore" }); setInterval(() => {}, 1 << 30)`,
    );
    const pgid = child.pid as number;
    for (let i = 0; runningInGroup(pgid).length < 2; i++) {
      if (i > 100) throw new Error("the grandchild never started");
      await new Promise((r) => setTimeout(r, 50));
    }
    const died = new Promise((resolve) => child.once("exit", resolve));
    process.kill(pgid, "SIGKILL");
    await died;
    expect(runningInGroup(pgid).length).toBe(1);
    await stopGroup(child);
    for (let i = 0; runningInGroup(pgid).length > 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 50));
    expect(runningInGroup(pgid)).toEqual([]);
  });
});

describe("keptOrNewDeployment: the recorded AccountConfig, or a new one and the ledgers cleared", () => {
  const anvils: Anvil[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const a of anvils) await a.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("keeps the deployment on the chain it was recorded on; on another chain (a fresh SIGIL_RPC_URL) deploys anew and clears the old ledgers, saying so, so that credit bought on the old chain does not reappear", async () => {
    const logs: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: string) => void logs.push(line));
    const stateDir = mkdtempSync(join(tmpdir(), "sigil-start-test-"));
    dirs.push(stateDir);
    const stateFile = join(stateDir, "local.json");
    const deployOn = async (anvil: Anvil) => {
      const transport = http(anvil.rpcUrl);
      const walletClient = createWalletClient({ transport });
      const [owner] = await walletClient.getAddresses();
      const record = await keptOrNewDeployment(
        { publicClient: createPublicClient({ transport, pollingInterval: 50 }), walletClient, account: owner! },
        { owner: getAddress(owner!), stateDir, stateFile },
      );
      writeFileSync(stateFile, JSON.stringify({ rpcUrl: anvil.rpcUrl, ...record }));
      return record;
    };
    const oldChain = await startAnvil();
    anvils.push(oldChain);
    const first = await deployOn(oldChain);
    // The edge's ledgers (its Durable Objects' storage) hold the credit bought on this chain.
    mkdirSync(ledgersDir(stateDir), { recursive: true });
    writeFileSync(join(ledgersDir(stateDir), "ledger.sqlite"), "credit of the old chain's accounts");
    logs.length = 0;
    expect(await deployOn(oldChain)).toMatchObject(first);
    expect(logs.join("\n")).toContain(`keeping the AccountConfig of an earlier run at ${first.accountConfig}`);
    expect(readdirSync(ledgersDir(stateDir))).toEqual(["ledger.sqlite"]);

    const newChain = await startAnvil();
    anvils.push(newChain);
    logs.length = 0;
    const second = await deployOn(newChain);
    expect(logs.join("\n")).toMatch(/deployed AccountConfig at 0x[0-9a-fA-F]{40} \(not the earlier run's/);
    expect(logs.join("\n")).toMatch(/cleared the credit ledgers/);
    expect(readdirSync(stateDir)).not.toContain(ledgersDir(stateDir).split("/").at(-1));
    expect(
      await createPublicClient({ transport: http(newChain.rpcUrl) }).getCode({ address: second.accountConfig }),
    ).toMatch(/^0x[0-9a-f]{20,}/);
  });
});
