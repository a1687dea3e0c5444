// `npm start`: brings the local stack up, prints where everything is, and on Ctrl-C (SIGINT) or
// SIGTERM stops everything it started. This first form runs the chain and the contract; the
// enclave, the edge and the emulators join it in later steps.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address } from "viem";
import { deployAccountConfig, deployerAccount } from "../../contracts/deploy.ts";
import { startAnvil, type Anvil } from "./anvil.ts";
import { readStackConfig } from "./config.ts";

/** Runs until a stop signal; resolves to the process exit code. */
export async function startLocalStack(): Promise<number> {
  let anvil: Anvil | undefined;
  let stopping = false;
  // Signal handlers and pending promises do not keep Node running; this does, until stop().
  const keepAlive = setInterval(() => {}, 1 << 30);
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(keepAlive);
    if (anvil) {
      log(`stopping anvil (pid ${anvil.pid})`);
      await anvil.stop();
    }
  };

  const stopped = new Promise<number>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.once(signal, () => {
        log(`${signal} received`);
        void stop().then(() => resolve(0));
      });
    }
  });

  try {
    const config = readStackConfig();
    let rpcUrl = config.rpcUrl;
    if (rpcUrl) {
      log(`using the chain at ${rpcUrl} (SIGIL_RPC_URL)`);
    } else {
      anvil = await startPreferredAnvil(config.anvilPort);
      rpcUrl = anvil.rpcUrl;
      log(`anvil (pid ${anvil.pid}) listening on ${rpcUrl}`);
    }

    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ transport });
    const walletClient = createWalletClient({ transport });
    const account = await deployerAccount(walletClient, config.deployerPrivateKey);
    const owner: Address = typeof account === "string" ? account : account.address;
    const deployment = await deployAccountConfig({ publicClient, walletClient, account }, { owner });

    mkdirSync(config.stateDir, { recursive: true });
    const stateFile = join(config.stateDir, "local.json");
    writeFileSync(
      stateFile,
      `${JSON.stringify({ rpcUrl, chainId: deployment.chainId, accountConfig: deployment.proxy, owner, deployedAtBlock: Number(deployment.blockNumber) }, null, 2)}\n`,
    );
    console.log(
      [
        "",
        "Sigil local stack is up",
        `  chain id         ${deployment.chainId}`,
        `  rpc url          ${rpcUrl}`,
        `  AccountConfig    ${deployment.proxy}`,
        `  implementation   ${deployment.implementation}`,
        `  owner            ${owner}`,
        `  (also written to ${stateFile})`,
        "",
        "Press Ctrl-C to stop.",
        "",
      ].join("\n"),
    );
  } catch (err) {
    console.error(`sigil start: ${err instanceof Error ? err.message : String(err)}`);
    await stop();
    return 1;
  }

  // Anvil dying on its own ends the stack too, loudly.
  const died = anvil ? anvilExit(anvil) : new Promise<number>(() => {});
  const code = await Promise.race([stopped, died]);
  await stop();
  return code;
}

/** Starts anvil on the preferred port, or on a free one if that port is taken. */
async function startPreferredAnvil(port: number): Promise<Anvil> {
  try {
    return await startAnvil({ port });
  } catch (err) {
    if (port === 0 || !/address already in use|in use/i.test(String(err))) throw err;
    log(`port ${port} is in use; letting anvil pick a free port (set SIGIL_ANVIL_PORT to choose one)`);
    return startAnvil({ port: 0 });
  }
}

async function anvilExit(anvil: Anvil): Promise<number> {
  await anvil.exited;
  if (!anvil.stopRequested) {
    console.error("sigil start: anvil exited unexpectedly; stopping");
    return 1;
  }
  return new Promise<number>(() => {}); // a requested stop resolves through the signal path
}

function log(message: string): void {
  console.log(`[sigil] ${message}`);
}
