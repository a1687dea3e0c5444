// One stack for the enclave suites: anvil with AccountConfig, a loopback IPFS gateway and fetch
// target, and the enclave as its own process (dev root key fixed for the run), its payers
// registered and funded. Test files reach it over HTTP, as the edge will.
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import type { TestProject } from "vitest/node";
import { deployAccountConfig } from "../../contracts/deploy.ts";
import { startAnvil } from "../../bin/stack/anvil.ts";
import { spawnEnclave } from "../../bin/stack/enclave.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { startFetchTarget } from "../emulators/fetchTarget.ts";
import { startIpfsGateway } from "../emulators/ipfsGateway.ts";
import { TEST_ENCLAVE_SECRET, TEST_ROOT_KEY } from "./constants.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

declare module "vitest" {
  export interface ProvidedContext {
    rpcUrl: string;
    contract: `0x${string}`;
    owner: `0x${string}`;
    enclaveUrl: string;
    enclavePid: number;
    gatewayUrl: string;
    fetchTargetUrl: string;
    listenerPollMs: number;
  }
}

export const LISTENER_POLL_MS = 500;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const anvil = await startAnvil({ accounts: 10 });
  const gateway = await startIpfsGateway();
  const target = await startFetchTarget();
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-enclave-test-"));
  const stops: Array<() => Promise<void>> = [async () => rmSync(stateDir, { recursive: true, force: true }), () => anvil.stop(), () => gateway.close(), () => target.close()];
  try {
    const transport = http(anvil.rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 50 });
    const walletClient = createWalletClient({ transport });
    const [owner] = await walletClient.getAddresses();
    if (!owner) throw new Error("anvil has no accounts");
    const deployment = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });

    const enclave = await spawnEnclave({
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_ENCLAVE_SECRET: TEST_ENCLAVE_SECRET,
      SIGIL_RPC_URL: anvil.rpcUrl,
      SIGIL_CONTRACT_ADDRESS: deployment.proxy,
      SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
      SIGIL_STATE_DIR: stateDir,
      SIGIL_LISTENER_POLL_MS: String(LISTENER_POLL_MS),
      SIGIL_IPFS_GATEWAY: gateway.url,
      SIGIL_FETCH_ALLOW: `127.0.0.1:${target.port}`,
      SIGIL_SANDBOX_WORKERS: "2",
      SIGIL_LOG_LEVEL: process.env.SIGIL_TEST_ENCLAVE_LOGS ? "debug" : "warn",
    }, process.env.SIGIL_TEST_ENCLAVE_LOGS ? { echo: (line) => console.log(`[enclave] ${line}`) } : {});
    stops.unshift(() => enclave.stop());
    await registerLocalPayers({ rpcUrl: anvil.rpcUrl, publicClient, walletClient, owner, contract: deployment.proxy, payers: enclave.payers });

    project.provide("rpcUrl", anvil.rpcUrl);
    project.provide("contract", getAddress(deployment.proxy));
    project.provide("owner", getAddress(owner));
    project.provide("enclaveUrl", enclave.url);
    project.provide("enclavePid", enclave.pid);
    project.provide("gatewayUrl", gateway.url);
    project.provide("fetchTargetUrl", target.url);
    project.provide("listenerPollMs", LISTENER_POLL_MS);
  } catch (err) {
    for (const stop of stops) await stop().catch(() => undefined);
    throw err;
  }
  return async () => {
    for (const stop of stops) await stop().catch(() => undefined);
  };
}
