// Check 7 (governance) of `sigil verify`, for real: a non-simulated deployment serving the real
// dstack fixture quote on 127.0.0.1, and a local anvil where the app's contract lives at
// 0x<app id the quote's RTMR3 claims> (anvil_setCode with the runtime code of
// test/fixtures/ComposeHashAllowList.sol, the part of DstackApp the verifier reads). Run through the
// CLI with --no-nonce (the recorded quote has fixed report data), --collateral and --now (the
// fixture's): nothing leaves 127.0.0.1.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, createTestClient, createWalletClient, http, type Abi, type Address, type Hex } from "viem";
import { foundry } from "viem/chains";
import { startAnvil, type Anvil } from "../stack/anvil.ts";
import { compileComposeHashAllowList } from "../../test/fixtures/composeHashAllowList.ts";
import {
  FIXTURE_COLLATERAL_FILE,
  FIXTURE_NOW,
  fixtureClaims,
  runVerifyCli,
  serveFixtureDeployment,
  type FixtureDeployment,
} from "../../test/fixtures/dstackDeployment.ts";

let anvil: Anvil;
let deployment: FixtureDeployment;
let contract: { abi: Abi; deployedBytecode: Hex };
const appAddress = `0x${fixtureClaims.appId}` as Address;
const fixtureHash = `0x${fixtureClaims.composeHash}` as Hex;
const otherHash = `0x${"11".repeat(32)}` as Hex;

const publicClient = () => createPublicClient({ chain: foundry, transport: http(anvil.rpcUrl) });

/** anvil_setCode: the contract's runtime code at the app id ("0x": no contract there). */
async function setCode(bytecode: Hex): Promise<void> {
  await createTestClient({ chain: foundry, mode: "anvil", transport: http(anvil.rpcUrl) }).setCode({
    address: appAddress,
    bytecode,
  });
}

async function setAllowed(hash: Hex, allowed: boolean): Promise<void> {
  const [account] = await createWalletClient({ chain: foundry, transport: http(anvil.rpcUrl) }).getAddresses();
  const wallet = createWalletClient({ chain: foundry, transport: http(anvil.rpcUrl), account: account as Address });
  const tx = await wallet.writeContract({
    address: appAddress,
    abi: contract.abi,
    functionName: allowed ? "addComposeHash" : "removeComposeHash",
    args: [hash],
  });
  await publicClient().waitForTransactionReceipt({ hash: tx, pollingInterval: 50 });
}

const cli = (extra: string[]) =>
  runVerifyCli([
    deployment.url,
    "--json",
    "--no-nonce",
    "--collateral",
    FIXTURE_COLLATERAL_FILE,
    "--now",
    String(FIXTURE_NOW),
    ...extra,
  ]);

beforeAll(async () => {
  contract = compileComposeHashAllowList();
  anvil = await startAnvil({ accounts: 1 });
  deployment = await serveFixtureDeployment();
  await setCode(contract.deployedBytecode);
}, 60_000);

afterAll(async () => {
  await deployment?.close();
  await anvil?.stop();
});

describe("sigil verify, check 7 (governance) on a real deployment", () => {
  it("passes when the app's contract at 0x<app id> allows the compose hash RTMR3 claims", async () => {
    await setAllowed(otherHash, false);
    await setAllowed(fixtureHash, true);
    const run = await cli(["--rpc-url", anvil.rpcUrl]);
    // Checks 1–3 hold for the fixture at its time: governance is asked about a verified claim.
    expect(run.checks.quote?.status).toBe("pass");
    expect(run.checks.claims?.status).toBe("pass");
    expect(run.checks.governance).toMatchObject({ status: "pass", simulated: false });
    expect(run.checks.governance?.detail).toContain(appAddress);
    expect(run.checks.governance?.detail).toContain(fixtureClaims.composeHash);
  });

  it("fails when the contract does not allow that compose hash (it allows another one)", async () => {
    await setAllowed(fixtureHash, false);
    await setAllowed(otherHash, true);
    const run = await cli(["--rpc-url", anvil.rpcUrl]);
    expect(run.checks.governance?.status).toBe("fail");
    expect(run.checks.governance?.detail).toMatch(/does not allow compose hash/);
    expect(run.code).toBe(1);
  });

  it("fails when there is no contract at the app id", async () => {
    await setCode("0x");
    try {
      const run = await cli(["--rpc-url", anvil.rpcUrl]);
      expect(run.checks.governance?.status).toBe("fail");
      expect(run.checks.governance?.detail).toMatch(/allowedComposeHashes on 0x[0-9a-f]{40} failed/);
    } finally {
      await setCode(contract.deployedBytecode);
    }
  });

  it("fails without --rpc-url, telling the user to pass one, even when the contract would allow the hash; the CLI exits 1", async () => {
    await setAllowed(fixtureHash, true);
    const run = await cli([]);
    expect(run.checks.quote?.status).toBe("pass");
    expect(run.checks.governance?.status).toBe("fail");
    expect(run.checks.governance?.detail).toMatch(/pass --rpc-url/);
    expect(run.checks.governance?.detail).toContain("Base in production");
    expect(run.checks.governance?.detail).toContain(appAddress);
    expect(run.code).toBe(1);
  });
});
