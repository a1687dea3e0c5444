// What a restart keeps, against anvils of its own: a deployment on a chain anvil saved and loaded
// again is kept; on a new chain, after a change of the contract's code or for another deployer it
// is not, and each time the reason says why. Old or broken records are no records.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { startAnvil, type Anvil } from "./anvil.ts";
import {
  clearLedgers,
  contractCodeHash,
  ledgersDir,
  markChain,
  readRecord,
  recordOf,
  whyNotKept,
  type DeploymentRecord,
} from "./deployment.ts";

// anvil's first two dev accounts.
const DEPLOYER: Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const OTHER: Address = "0x70997970C51812dc3A010C7d01b50e0Fd17dc79C";

const anvils: Anvil[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const a of anvils.splice(0)) await a.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sigil-deployment-"));
  dirs.push(dir);
  return dir;
}

async function anvil(statePath?: string): Promise<Anvil> {
  const a = await startAnvil(statePath ? { state: { path: statePath, intervalSeconds: 60 } } : {});
  anvils.push(a);
  return a;
}

const clientOf = (a: Anvil) => createPublicClient({ transport: http(a.rpcUrl), pollingInterval: 50 });

async function deployOn(a: Anvil): Promise<DeploymentRecord> {
  const transport = http(a.rpcUrl);
  const publicClient = clientOf(a);
  const deployment = await deployAccountConfig(
    { publicClient, walletClient: createWalletClient({ transport }), account: DEPLOYER },
    { owner: DEPLOYER },
  );
  return recordOf(deployment, await markChain(publicClient), contractCodeHash());
}

describe("whyNotKept", () => {
  it("keeps a deployment on the chain anvil saved and loaded again, and says why not on a new chain, after a code change, or for another deployer", async () => {
    const state = join(tempDir(), "state.json");
    const first = await anvil(state);
    const record = await deployOn(first);
    expect(await whyNotKept(clientOf(first), record, DEPLOYER, record.codeHash)).toBeUndefined();
    await first.stop();

    const again = await anvil(state);
    expect(await whyNotKept(clientOf(again), record, DEPLOYER, record.codeHash)).toBeUndefined();
    expect(await whyNotKept(clientOf(again), record, DEPLOYER, "0".repeat(64))).toBe(
      "the contract's code has changed since",
    );
    expect(await whyNotKept(clientOf(again), record, OTHER, record.codeHash)).toBe(
      `it is owned by ${DEPLOYER}, not by this deployer`,
    );

    // A fresh anvil deploys to the very same address (and, started within the same second, has the
    // same genesis block): only the mark the stack left in the state tells the chains apart.
    const fresh = await anvil();
    expect((await deployOn(fresh)).accountConfig).toBe(record.accountConfig);
    expect(await whyNotKept(clientOf(fresh), record, DEPLOYER, record.codeHash)).toBe("the chain is a new chain");
  });
});

describe("readRecord", () => {
  it("reads what local.json recorded; a missing, older or broken file records nothing", () => {
    const dir = tempDir();
    const file = join(dir, "local.json");
    expect(readRecord(file)).toBeUndefined();
    const record: DeploymentRecord = {
      chainId: 31337,
      chainMark: `0x${"11".repeat(32)}`,
      accountConfig: DEPLOYER,
      implementation: OTHER,
      views: OTHER,
      owner: DEPLOYER,
      deployedAtBlock: 3,
      codeHash: "ab".repeat(32),
    };
    writeFileSync(file, JSON.stringify({ rpcUrl: "http://127.0.0.1:1", ...record, edgeUrl: "http://127.0.0.1:2" }));
    expect(readRecord(file)).toMatchObject(record);
    // What runs before this change wrote: no chain mark, no code hash.
    writeFileSync(
      file,
      JSON.stringify({
        rpcUrl: "http://127.0.0.1:1",
        chainId: 31337,
        accountConfig: DEPLOYER,
        owner: DEPLOYER,
        deployedAtBlock: 3,
      }),
    );
    expect(readRecord(file)).toBeUndefined();
    writeFileSync(file, "{not json");
    expect(readRecord(file)).toBeUndefined();
  });
});

describe("clearLedgers", () => {
  it("removes the edge's Durable Objects and says whether there were any", () => {
    const dir = tempDir();
    expect(clearLedgers(dir)).toBe(false);
    mkdirSync(join(ledgersDir(dir), "v3/do"), { recursive: true });
    expect(clearLedgers(dir)).toBe(true);
    expect(clearLedgers(dir)).toBe(false);
  });
});
