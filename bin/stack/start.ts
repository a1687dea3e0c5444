// `npm start`: brings the local stack up, prints where everything is, and on Ctrl-C (SIGINT) or
// SIGTERM stops everything it started: the chain, the contract, one enclave (dev root key under
// .sigil/dev/, its payers registered and funded), the local Stripe emulator (unless Stripe keys
// are given), which delivers its webhooks to the edge, and the edge under wrangler dev, billing on.
//
// What it keeps across restarts, in the state folder, it keeps together: the chain (anvil's state
// file), the AccountConfig deployed on it (local.json), the credit ledgers (the edge's Durable
// Objects) and the Stripe emulator's customers. When the chain or the deployment is not the one
// the ledgers belong to, the ledgers are cleared and the output says so (deployment.ts).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address } from "viem";
import { deployAccountConfig, deployerAccount, type DeployClients } from "../../contracts/deploy.ts";
import { DEV_APP_COMPOSE_PATH } from "../../deploy/release.ts";
import { edgeIdentityFromSeed, newEdgeIdentitySeed, toBase64Url } from "../../shared/channel/channel.ts";
import { startStripeEmulator, type StripeEmulator } from "../../emulators/stripe.ts";
import { startAnvil, type Anvil } from "./anvil.ts";
import { readStackConfig, type StackConfig } from "./config.ts";
import {
  clearLedgers,
  contractCodeHash,
  keptOrNewReceiptAnchor,
  ledgersDir,
  markChain,
  readRecord,
  recordOf,
  whyNotKept,
  type DeploymentRecord,
} from "./deployment.ts";
import { reservePort, spawnEdge, type EdgeProcess } from "./edge.ts";
import { spawnEnclave, type EnclaveProcess } from "./enclave.ts";
import { registerLocalPayers } from "./payers.ts";
import { claimPorts } from "./ports.ts";

/**
 * How often anvil writes the chain to its state file besides its clean exit: a stack killed without
 * one (SIGKILL) loses at most the chain's last seconds, not its whole history.
 */
const CHAIN_SAVE_INTERVAL_SECONDS = 2;

let stoppingRequested = false;

/** Runs until a stop signal; resolves to the process exit code. */
export async function startLocalStack(): Promise<number> {
  let anvil: Anvil | undefined;
  let enclave: EnclaveProcess | undefined;
  let edge: EdgeProcess | undefined;
  let edgeReservation: { port: number; release(): Promise<void> } | undefined;
  let stripe: StripeEmulator | undefined;
  let stopping = false;
  // Signal handlers and pending promises do not keep Node running; this does, until stop().
  const keepAlive = setInterval(() => {}, 1 << 30);
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    stoppingRequested = true;
    clearInterval(keepAlive);
    await edgeReservation?.release();
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
    mkdirSync(config.stateDir, { recursive: true });
    // Every port is checked before anything starts, so a taken one stops nothing half-started.
    const ports = await claimPorts(
      {
        ...(config.rpcUrl ? {} : { anvil: config.ports.anvil }),
        enclave: config.ports.enclave,
        edge: config.ports.edge,
        ...(config.stripe ? {} : { stripe: config.ports.stripe }),
      },
      log,
    );
    let rpcUrl = config.rpcUrl;
    if (rpcUrl) {
      log(`using the chain at ${rpcUrl} (SIGIL_RPC_URL)`);
    } else {
      anvil = await startKeptAnvil(ports.anvil ?? 0, config.stateDir);
      rpcUrl = anvil.rpcUrl;
      log(`anvil (pid ${anvil.pid}) listening on ${rpcUrl}`);
    }

    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ transport });
    const walletClient = createWalletClient({ transport });
    const account = await deployerAccount(walletClient, config.deployerPrivateKey);
    const owner: Address = typeof account === "string" ? account : account.address;
    const stateFile = join(config.stateDir, "local.json");
    const kept = await keptOrNewDeployment(
      { publicClient, walletClient, account },
      { owner, stateDir: config.stateDir, stateFile },
    );
    const deployment: DeploymentRecord = {
      ...kept,
      receiptAnchor: await keptOrNewReceiptAnchor({ publicClient, walletClient, account }, kept.receiptAnchor),
    };
    // Recorded before the edge writes a ledger, so no ledger ever exists for an unrecorded deployment.
    writeFileSync(stateFile, `${JSON.stringify({ rpcUrl, ...deployment }, null, 2)}\n`);

    // Held from here until wrangler starts: the enclave must be told the port first, and a port only
    // found free could be taken in the seconds between (the enclave's and anvil's connections too).
    edgeReservation = ports.edge ? undefined : await reservePort();
    const edgePort = ports.edge || (edgeReservation?.port as number);
    const edgeKey = toBase64Url((await edgeIdentityFromSeed(edgeIdentitySeed(config.stateDir))).publicKey);
    enclave = await spawnEnclave(enclaveEnv(config, rpcUrl, deployment, ports.enclave, edgePort, edgeKey), {
      echo: (line) => {
        if (!line.startsWith("SIGIL_ENCLAVE_READY")) console.log(`[enclave] ${line}`);
      },
    });
    log(`enclave (pid ${enclave.pid}) listening on ${enclave.url}`);
    await registerLocalPayers({
      rpcUrl,
      publicClient,
      walletClient,
      owner: account,
      contract: deployment.accountConfig,
      payers: enclave.payers,
    });
    log(`registered and funded ${enclave.payers.length} enclave payers`);
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    const payments = await paymentsFor(config, ports.stripe ?? 0, edgeUrl);
    stripe = payments.emulator;
    await edgeReservation?.release();
    edge = await spawnEdge({
      port: edgePort,
      stateDir: config.stateDir,
      vars: edgeVars(config, rpcUrl, deployment, enclave.url, payments.vars),
      echo: (line) => console.log(`[edge] ${line}`),
    });
    log(`edge (pid ${edge.pid}) listening on ${edge.url}`);

    writeFileSync(
      stateFile,
      `${JSON.stringify({ rpcUrl, ...deployment, edgeUrl: edge.url, enclaveUrl: enclave.url, payers: enclave.payers, billing: config.billing, stripeApiBase: stripe?.url ?? null }, null, 2)}\n`,
    );
    console.log(
      banner({
        config,
        deployment,
        rpcUrl,
        owner,
        edgeUrl: edge.url,
        enclave,
        stripe,
        kept: anvil !== undefined,
        stateFile,
      }),
    );
  } catch (err) {
    console.error(`sigil start: ${err instanceof Error ? err.message : String(err)}`);
    await stop();
    return 1;
  }

  // Anvil, the enclave or the edge dying on its own ends the stack too, loudly.
  const parts: Supervised[] = [];
  if (anvil) parts.push({ name: "anvil", exited: anvil.exited });
  if (enclave) parts.push({ name: "the enclave", exited: enclave.exited });
  if (edge) parts.push({ name: "the edge", exited: edge.exited });
  const code = await supervise(parts, stopped, () => stoppingRequested);
  await stop();
  return code;
}

/** The local enclave's variables: its port, the one edge it takes requests from, the chain and its contract. */
function enclaveEnv(
  config: StackConfig,
  rpcUrl: string,
  deployment: DeploymentRecord,
  port: number,
  edgePort: number,
  edgeKey: string,
): Record<string, string> {
  return {
    SIGIL_ENV: "development",
    SIGIL_ENCLAVE_HOST: "127.0.0.1",
    SIGIL_ENCLAVE_PORT: String(port),
    // Only the local edge may call the internal API, through the attested channel.
    SIGIL_ALLOWED_EDGE_KEYS: edgeKey,
    SIGIL_RPC_URL: rpcUrl,
    SIGIL_CONTRACT_ADDRESS: deployment.accountConfig,
    ...(deployment.receiptAnchor ? { SIGIL_RECEIPT_ANCHOR: deployment.receiptAnchor } : {}),
    ...(config.receiptAnchorIntervalS
      ? { SIGIL_RECEIPT_ANCHOR_INTERVAL_S: String(config.receiptAnchorIntervalS) }
      : {}),
    SIGIL_STATE_DIR: config.stateDir,
    SIGIL_ROOT_KEY_PROVIDER: "dev",
    SIGIL_LOG_LEVEL: "warn",
    // Scripts may never reach the edge's own port.
    SIGIL_FETCH_DENY_PORTS: String(edgePort),
    ...(config.ipfsGateway ? { SIGIL_IPFS_GATEWAY: config.ipfsGateway } : {}),
  };
}

/**
 * Where payments go: Stripe itself with the given keys, or the local emulator (started here, on
 * `port`), which delivers its webhooks to the edge at `edgeUrl`; and the edge's variables for it.
 */
async function paymentsFor(
  config: StackConfig,
  port: number,
  edgeUrl: string,
): Promise<{ emulator?: StripeEmulator; vars: Record<string, string> }> {
  if (config.stripe) {
    log("using Stripe with the given keys (its webhooks need a public URL; confirm_payment credits without them)");
    return {
      vars: {
        STRIPE_SECRET_KEY: config.stripe.secretKey,
        STRIPE_PUBLISHABLE_KEY: config.stripe.publishableKey,
        STRIPE_WEBHOOK_SECRET: config.stripe.webhookSecret,
      },
    };
  }
  const emulator = await startLocalStripe(
    port,
    `${edgeUrl}/core/v1/billing/webhook`,
    join(config.stateDir, "stripe-customers.json"),
  );
  log(`Stripe emulator listening on ${emulator.url}`);
  return {
    emulator,
    vars: {
      STRIPE_API_BASE: emulator.url,
      STRIPE_SECRET_KEY: emulator.secretKey,
      STRIPE_PUBLISHABLE_KEY: emulator.publishableKey,
      STRIPE_WEBHOOK_SECRET: emulator.webhookSecret,
    },
  };
}

/** The local edge's variables: the enclave, its identity, the chain and its contract, billing and payments. */
function edgeVars(
  config: StackConfig,
  rpcUrl: string,
  deployment: DeploymentRecord,
  enclaveUrl: string,
  stripeVars: Record<string, string>,
): Record<string, string> {
  return {
    SIGIL_ENV: "development",
    SIGIL_BILLING: config.billing ? "on" : "off",
    ...stripeVars,
    SIGIL_ENCLAVE_URLS: enclaveUrl,
    SIGIL_EDGE_IDENTITY_KEY: edgeIdentitySeed(config.stateDir),
    // The local enclave's quotes are simulated: the edge checks them against the mock root the
    // enclave serves, and its compose hash against the one deploy/app-compose.dev.json has.
    SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
    SIGIL_ALLOWED_COMPOSE_HASHES: createHash("sha256").update(readFileSync(DEV_APP_COMPOSE_PATH)).digest("hex"),
    SIGIL_RPC_URL: rpcUrl,
    SIGIL_PUBLIC_RPC_URL: rpcUrl,
    SIGIL_CHAIN_ID: String(deployment.chainId),
    SIGIL_CHAIN_NAME: deployment.chainId === 31337 ? "anvil" : `chain ${deployment.chainId}`,
    SIGIL_CONTRACT_ADDRESS: deployment.accountConfig,
    // The audit log reads no events older than the contract.
    SIGIL_CONTRACT_FROM_BLOCK: String(deployment.deployedAtBlock),
    ...(config.webhookRetryBaseMs === undefined
      ? {}
      : { SIGIL_WEBHOOK_RETRY_BASE_MS: String(config.webhookRetryBaseMs) }),
  };
}

/** What `npm start` prints once the stack is up: where everything is. */
function banner(s: {
  config: StackConfig;
  deployment: DeploymentRecord;
  rpcUrl: string;
  owner: Address;
  edgeUrl: string;
  enclave: EnclaveProcess;
  stripe: StripeEmulator | undefined;
  /** The chain is the stack's own (anvil), kept in the state folder. */
  kept: boolean;
  stateFile: string;
}): string {
  const { config, deployment, enclave, stripe } = s;
  return [
    "",
    "Sigil local stack is up — SIMULATED TEE: the enclave runs as a plain local process with a dev root key",
    `  API              ${s.edgeUrl}/core/v1   (Swagger UI: ${s.edgeUrl}/core/v1/swagger-ui)`,
    `  dashboard        ${s.edgeUrl}/dashboard`,
    `  chain id         ${deployment.chainId}`,
    `  rpc url          ${s.rpcUrl}`,
    `  AccountConfig    ${deployment.accountConfig}`,
    `  implementation   ${deployment.implementation}`,
    `  ReceiptAnchor    ${deployment.receiptAnchor ?? "none"}  (where the enclave anchors its run receipts)`,
    `  owner            ${s.owner}`,
    `  enclave          ${enclave.url}  (attestation: ${enclave.url}/attestation; internal API only through the attested channel)`,
    `  billing          ${config.billing ? "on: writes and runs cost credit (npm run -s sigil -- topup --key <key> --amount 500)" : "off (SIGIL_BILLING=off)"}`,
    stripe
      ? `  stripe api_base  ${stripe.url}  (local Stripe emulator; test card pm_card_visa)`
      : "  stripe           api.stripe.com (the given keys)",
    `  payers           ${enclave.payers.join(", ")}`,
    `  state            ${config.stateDir}  (${s.kept ? "the chain, " : ""}the ledgers${stripe ? ", the Stripe customers" : ""} and the dev keys, kept across restarts; remove it to start afresh)`,
    `  (also written to ${s.stateFile})`,
    "",
    "Press Ctrl-C to stop.",
    "",
  ].join("\n");
}

/** A process the stack started, watched while it runs. */
export type Supervised = { name: string; exited: Promise<unknown> };

/**
 * The stack's exit status, once it is decided: 0 when a stop signal came (`stopped`), 1 — said on
 * stderr, naming the process — when one of `parts` exited on its own first. A part that exits because
 * the stack is stopping (`stopping()`) is no failure. The caller then stops every part.
 */
export function supervise(parts: Supervised[], stopped: Promise<number>, stopping: () => boolean): Promise<number> {
  const died = parts.map(
    ({ name, exited }) =>
      new Promise<number>((resolve) => {
        void exited.then((code) => {
          if (stopping()) return;
          console.error(
            `sigil start: ${name} exited unexpectedly${code === undefined ? "" : ` (${String(code)})`}; stopping`,
          );
          resolve(1);
        });
      }),
  );
  return Promise.race([stopped, ...died]);
}

/** Anvil with the chain kept in the state folder: the last run's chain when there is one. */
async function startKeptAnvil(port: number, stateDir: string): Promise<Anvil> {
  const dir = join(stateDir, "anvil");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "state.json");
  const kept = existsSync(path);
  try {
    const started = await startAnvil({ port, state: { path, intervalSeconds: CHAIN_SAVE_INTERVAL_SECONDS } });
    log(kept ? `anvil loaded the chain of the last run from ${path}` : `anvil keeps the chain in ${path}`);
    return started;
  } catch (err) {
    if (!kept) throw err;
    throw new Error(
      `anvil could not load the chain kept in ${path}; to start afresh, remove it together with the ledgers that go with it (rm -r ${dir} ${ledgersDir(stateDir)}):\n${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * The deployment local.json recorded when the chain still holds it (deployment.ts says when);
 * otherwise a new one, and the ledgers of the old one cleared, since their accounts are not on
 * this chain.
 */
export async function keptOrNewDeployment(
  clients: DeployClients,
  args: { owner: Address; stateDir: string; stateFile: string },
): Promise<DeploymentRecord> {
  const { publicClient } = clients;
  const { owner, stateDir, stateFile } = args;
  const codeHash = contractCodeHash();
  const recorded = readRecord(stateFile);
  const why = recorded ? await whyNotKept(publicClient, recorded, owner, codeHash) : "none was recorded";
  if (recorded && why === undefined) {
    log(
      `keeping the AccountConfig of an earlier run at ${recorded.accountConfig} (the chain still has it, with its accounts)`,
    );
    return recorded;
  }
  const deployment = recordOf(await deployAccountConfig(clients, { owner }), await markChain(publicClient), codeHash);
  log(
    `deployed AccountConfig at ${deployment.accountConfig}${recorded ? ` (not the earlier run's ${recorded.accountConfig}: ${why})` : ""}`,
  );
  if (clearLedgers(stateDir)) {
    log(
      `cleared the credit ledgers of the earlier run (${ledgersDir(stateDir)}): their accounts are not on this chain's AccountConfig, so their credit must not reappear on accounts of the same name here`,
    );
  }
  return deployment;
}

/** The local Stripe, its customers kept in `customersFile` beside the ledgers that name them. */
function startLocalStripe(port: number, webhookUrl: string, customersFile: string): Promise<StripeEmulator> {
  return startStripeEmulator({
    port,
    webhookUrls: [webhookUrl],
    customersFile,
    // Its webhook deliveries and failures, not every API call.
    log: (line) => {
      if (/webhook|error/.test(line)) console.log(`[stripe] ${line.replace(/^stripe-emulator: /, "")}`);
    },
  });
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
