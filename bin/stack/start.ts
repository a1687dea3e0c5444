// `npm start`: brings the local stack up, prints where everything is, and on Ctrl-C (SIGINT) or
// SIGTERM stops everything it started: the chain, the contract, one enclave (dev root key under
// .sigil/dev/, its payers registered and funded), the local Stripe emulator (unless Stripe keys
// are given), which delivers its webhooks to the edge, and the edge under wrangler dev, billing on.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address } from "viem";
import { deployAccountConfig, deployerAccount } from "../../contracts/deploy.ts";
import { DEV_APP_COMPOSE_PATH } from "../../deploy/release.ts";
import { edgeIdentityFromSeed, newEdgeIdentitySeed, toBase64Url } from "../../shared/channel/channel.ts";
import { startStripeEmulator, type StripeEmulator } from "../../test/emulators/stripe.ts";
import { startAnvil, type Anvil } from "./anvil.ts";
import { freePort, spawnEdge, type EdgeProcess } from "./edge.ts";
import { spawnEnclave, type EnclaveProcess } from "./enclave.ts";
import { registerLocalPayers } from "./payers.ts";
import { readStackConfig } from "./config.ts";

let stoppingRequested = false;

/** Runs until a stop signal; resolves to the process exit code. */
export async function startLocalStack(): Promise<number> {
  let anvil: Anvil | undefined;
  let enclave: EnclaveProcess | undefined;
  let edge: EdgeProcess | undefined;
  let stripe: StripeEmulator | undefined;
  let stopping = false;
  // Signal handlers and pending promises do not keep Node running; this does, until stop().
  const keepAlive = setInterval(() => {}, 1 << 30);
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    stoppingRequested = true;
    clearInterval(keepAlive);
    if (edge) {
      log(`stopping the edge (pid ${edge.pid})`);
      await edge.stop();
    }
    if (stripe) {
      log("stopping the Stripe emulator");
      await stripe.stop();
    }
    if (enclave) {
      log(`stopping the enclave (pid ${enclave.pid})`);
      await enclave.stop();
    }
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
    const edgePort = config.edgePort === 0 ? await freePort() : config.edgePort;
    enclave = await spawnEnclave({
      SIGIL_ENV: "development",
      SIGIL_ENCLAVE_HOST: "127.0.0.1",
      SIGIL_ENCLAVE_PORT: String(config.enclavePort),
      // Only the local edge may call the internal API, through the attested channel.
      SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(edgeIdentitySeed(config.stateDir))).publicKey),
      SIGIL_RPC_URL: rpcUrl,
      SIGIL_CONTRACT_ADDRESS: deployment.proxy,
      SIGIL_STATE_DIR: config.stateDir,
      SIGIL_ROOT_KEY_PROVIDER: "dev",
      SIGIL_LOG_LEVEL: "warn",
      // Scripts may never reach the edge's own port.
      SIGIL_FETCH_DENY_PORTS: String(edgePort),
    }, { echo: (line) => {
      if (!line.startsWith("SIGIL_ENCLAVE_READY")) console.log(`[enclave] ${line}`);
    } });
    log(`enclave (pid ${enclave.pid}) listening on ${enclave.url}`);
    await registerLocalPayers({ rpcUrl, publicClient, walletClient, owner: account, contract: deployment.proxy, payers: enclave.payers });
    log(`registered and funded ${enclave.payers.length} enclave payers`);
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    let stripeVars: Record<string, string>;
    if (config.stripe) {
      log("using Stripe with the given keys (its webhooks need a public URL; confirm_payment credits without them)");
      stripeVars = { STRIPE_SECRET_KEY: config.stripe.secretKey, STRIPE_PUBLISHABLE_KEY: config.stripe.publishableKey, STRIPE_WEBHOOK_SECRET: config.stripe.webhookSecret };
    } else {
      stripe = await startPreferredStripe(config.stripePort, `${edgeUrl}/core/v1/billing/webhook`);
      log(`Stripe emulator listening on ${stripe.url}`);
      stripeVars = { STRIPE_API_BASE: stripe.url, STRIPE_SECRET_KEY: stripe.secretKey, STRIPE_PUBLISHABLE_KEY: stripe.publishableKey, STRIPE_WEBHOOK_SECRET: stripe.webhookSecret };
    }
    edge = await spawnEdge({
      port: edgePort,
      stateDir: config.stateDir,
      vars: {
        SIGIL_ENV: "development",
        SIGIL_BILLING: config.billing ? "on" : "off",
        ...stripeVars,
        SIGIL_ENCLAVE_URLS: enclave.url,
        SIGIL_EDGE_IDENTITY_KEY: edgeIdentitySeed(config.stateDir),
        // The local enclave's quotes are simulated: the edge checks them against the mock root the
        // enclave serves, and its compose hash against the one deploy/app-compose.dev.json has.
        SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
        SIGIL_ALLOWED_COMPOSE_HASHES: createHash("sha256").update(readFileSync(DEV_APP_COMPOSE_PATH)).digest("hex"),
        SIGIL_RPC_URL: rpcUrl,
        SIGIL_PUBLIC_RPC_URL: rpcUrl,
        SIGIL_CHAIN_ID: String(deployment.chainId),
        SIGIL_CHAIN_NAME: deployment.chainId === 31337 ? "anvil" : `chain ${deployment.chainId}`,
        SIGIL_CONTRACT_ADDRESS: deployment.proxy,
      },
      echo: (line) => console.log(`[edge] ${line}`),
    });
    log(`edge (pid ${edge.pid}) listening on ${edge.url}`);

    const stateFile = join(config.stateDir, "local.json");
    writeFileSync(
      stateFile,
      `${JSON.stringify({ rpcUrl, chainId: deployment.chainId, accountConfig: deployment.proxy, owner, deployedAtBlock: Number(deployment.blockNumber), edgeUrl: edge.url, enclaveUrl: enclave.url, payers: enclave.payers, billing: config.billing, stripeApiBase: stripe?.url ?? null }, null, 2)}\n`,
    );
    console.log(
      [
        "",
        "Sigil local stack is up — SIMULATED TEE: the enclave runs as a plain local process with a dev root key",
        `  API              ${edge.url}/core/v1   (Swagger UI: ${edge.url}/core/v1/swagger-ui)`,
        `  chain id         ${deployment.chainId}`,
        `  rpc url          ${rpcUrl}`,
        `  AccountConfig    ${deployment.proxy}`,
        `  implementation   ${deployment.implementation}`,
        `  owner            ${owner}`,
        `  enclave          ${enclave.url}  (attestation: ${enclave.url}/attestation; internal API only through the attested channel)`,
        `  billing          ${config.billing ? "on: writes and runs cost credit (npm run -s sigil -- topup --key <key> --amount 500)" : "off (SIGIL_BILLING=off)"}`,
        stripe ? `  stripe api_base  ${stripe.url}  (local Stripe emulator; test card pm_card_visa)` : "  stripe           api.stripe.com (the given keys)",
        `  payers           ${enclave.payers.join(", ")}`,
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

  // Anvil or the enclave dying on its own ends the stack too, loudly.
  const died = anvil ? anvilExit(anvil) : new Promise<number>(() => {});
  const enclaveDied = enclave ? enclaveExit(enclave) : new Promise<number>(() => {});
  const edgeDied = edge ? processExit("the edge", edge.exited) : new Promise<number>(() => {});
  const code = await Promise.race([stopped, died, enclaveDied, edgeDied]);
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

/** The local Stripe on the preferred port, or on a free one if that port is taken. */
async function startPreferredStripe(port: number, webhookUrl: string): Promise<StripeEmulator> {
  const start = (p: number) =>
    startStripeEmulator({
      port: p,
      webhookUrls: [webhookUrl],
      // Its webhook deliveries and failures, not every API call.
      log: (line) => {
        if (/webhook|error/.test(line)) console.log(`[stripe] ${line.replace(/^stripe-emulator: /, "")}`);
      },
    });
  try {
    return await start(port);
  } catch (err) {
    if (port === 0 || !/EADDRINUSE|in use/i.test(String(err))) throw err;
    log(`port ${port} is in use; letting the Stripe emulator pick a free port (set SIGIL_STRIPE_PORT to choose one)`);
    return start(0);
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

function enclaveExit(enclave: EnclaveProcess): Promise<number> {
  return processExit("the enclave", enclave.exited);
}

async function processExit(what: string, exited: Promise<number | null>): Promise<number> {
  const code = await exited;
  if (!stoppingRequested) {
    console.error(`sigil start: ${what} exited unexpectedly (${code}); stopping`);
    return 1;
  }
  return new Promise<number>(() => {});
}

/**
 * The local edge's channel identity (an Ed25519 seed), generated once into .sigil/dev/ (git-ignored)
 * and never printed: the enclave allows its public key, the edge signs each channel session it opens with it.
 */
function edgeIdentitySeed(stateDir: string): string {
  const file = join(stateDir, "dev/edge-identity.key");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(join(stateDir, "dev"), { recursive: true, mode: 0o700 });
  const seed = newEdgeIdentitySeed();
  writeFileSync(file, `${seed}\n`, { mode: 0o600 });
  return seed;
}

function log(message: string): void {
  console.log(`[sigil] ${message}`);
}
