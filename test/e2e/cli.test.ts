// The commands a user runs by hand: `node contracts/deploy.ts` against any RPC URL, and `sigil`'s usage.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { createPublicClient, decodeFunctionData, getAddress, http, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../../bin/stack/anvil.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";

const root = join(import.meta.dirname, "../..");
const IMPLEMENTATION_SLOT: Hex = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
const implementationOf = (word: Hex | undefined): Address => getAddress(`0x${word!.slice(-40)}`);
const exec = promisify(execFile);

/** Runs a script with the project's Node; resolves with its exit code and output, never rejects. */
async function run(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await exec(process.execPath, args, { cwd: root, env: { ...process.env, ...env } });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

let chain: Anvil;
beforeAll(async () => {
  chain = await startAnvil();
});
afterAll(async () => {
  await chain.stop();
});

describe("node contracts/deploy.ts", () => {
  it("deploys views, implementation and proxy to the given RPC URL, owned by --owner", async () => {
    const owner: Address = "0x00000000000000000000000000000000000000A1";
    const { code, out } = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--owner", owner]);
    expect(code, out).toBe(0);
    expect(out).toContain("chain id        31337");
    const proxy = getAddress(/AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(out)![1]!);
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    expect(await client.readContract({ address: proxy, abi: accountConfigAbi, functionName: "owner" })).toBe(
      getAddress(owner),
    );
    expect(await client.readContract({ address: proxy, abi: accountConfigAbi, functionName: "version" })).toBe("2");
  });

  it("--upgrade moves a proxy its sender owns to a new implementation, keeping its state", async () => {
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    const deployed = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl]);
    const proxy = getAddress(/AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(deployed.out)![1]!);
    const before = implementationOf(await client.getStorageAt({ address: proxy, slot: IMPLEMENTATION_SLOT }));
    const owner = await client.readContract({ address: proxy, abi: accountConfigAbi, functionName: "owner" });

    const { code, out } = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--upgrade", proxy]);
    expect(code, out).toBe(0);
    const implementation = getAddress(/implementation\s+(0x[0-9a-fA-F]{40})/.exec(out)![1]!);
    expect(out).toMatch(/upgraded .* from version 2 to 2 in 0x[0-9a-f]{64}/);
    expect(implementation).not.toBe(before);
    expect(implementationOf(await client.getStorageAt({ address: proxy, slot: IMPLEMENTATION_SLOT }))).toBe(
      implementation,
    );
    expect(await client.readContract({ address: proxy, abi: accountConfigAbi, functionName: "owner" })).toBe(owner);
  });

  it("--upgrade of a proxy someone else owns sends nothing and prints the owner's call", async () => {
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    const owner: Address = "0x00000000000000000000000000000000000000A2";
    const deployed = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--owner", owner]);
    const proxy = getAddress(/AccountConfig\s+(0x[0-9a-fA-F]{40})/.exec(deployed.out)![1]!);
    const before = await client.getStorageAt({ address: proxy, slot: IMPLEMENTATION_SLOT });

    const { code, out } = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--upgrade", proxy]);
    expect(code, out).toBe(0);
    const implementation = getAddress(/implementation\s+(0x[0-9a-fA-F]{40})/.exec(out)![1]!);
    expect(out).toContain(`not sent: the proxy's owner ${getAddress(owner)} must send to ${proxy} the data`);
    const data = /\n(0x[0-9a-f]+)\n/.exec(out)![1] as `0x${string}`;
    expect(decodeFunctionData({ abi: accountConfigAbi, data })).toEqual({
      functionName: "upgradeToAndCall",
      args: [implementation, "0x"],
    });
    expect(await client.getStorageAt({ address: proxy, slot: IMPLEMENTATION_SLOT })).toBe(before);

    const bad = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--upgrade", "0x123"]);
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("--upgrade is not an address: 0x123");
  });

  it("deploys from SIGIL_DEPLOYER_PRIVATE_KEY when it is set", async () => {
    // anvil's well-known dev account 1, derived here rather than written down as a key.
    const { mnemonicToAccount } = await import("viem/accounts");
    const dev = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 1 });
    const key = `0x${Buffer.from(dev.getHdKey().privateKey!).toString("hex")}`;
    const { code, out } = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl], {
      SIGIL_DEPLOYER_PRIVATE_KEY: key,
    });
    expect(code, out).toBe(0);
    expect(out).toContain(`owner           ${dev.address}`);
  });

  it("refuses a missing RPC URL, a bad --owner and a malformed key, without echoing the key", async () => {
    const noUrl = await run(["contracts/deploy.ts"], { SIGIL_RPC_URL: "" });
    expect(noUrl.code).toBe(1);
    expect(noUrl.out).toContain("usage: node contracts/deploy.ts --rpc-url URL");

    const badOwner = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl, "--owner", "0x123"]);
    expect(badOwner.code).toBe(1);
    expect(badOwner.out).toContain("--owner is not an address: 0x123");

    const secret = "0xnot-a-real-key-but-do-not-print-it";
    const badKey = await run(["contracts/deploy.ts", "--rpc-url", chain.rpcUrl], {
      SIGIL_DEPLOYER_PRIVATE_KEY: secret,
    });
    expect(badKey.code).toBe(1);
    expect(badKey.out).toContain("SIGIL_DEPLOYER_PRIVATE_KEY must be 0x followed by 64 hex digits");
    expect(badKey.out).not.toContain(secret);
    expect(badKey.out).not.toMatch(/\n\s+at /); // no stack trace
  });
});

describe("node bin/sigil.ts", () => {
  it("prints its usage with no command, and exits 2 naming an unknown one", async () => {
    const help = await run(["bin/sigil.ts"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/start +run the local stack/);
    const unknown = await run(["bin/sigil.ts", "launch"]);
    expect(unknown.code).toBe(2);
    expect(unknown.out).toContain("unknown command: launch");
  });
});
