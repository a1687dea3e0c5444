// The test stack shared by the suites that need the real service parts: anvil with AccountConfig,
// a loopback IPFS gateway and fetch target, and the enclave as its own process (fixed dev root
// key), its payers registered and funded. Everything listens on 127.0.0.1 and free ports. With
// `chainProxy`, the enclave reaches anvil through a loopback TCP proxy (tcpProxy.ts) that a test
// can stop and start, and `serviceRpcUrl` is the proxy's URL for an edge to use too.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, getAddress, http, type Address } from "viem";
import { startAnvil } from "../../bin/stack/anvil.ts";
import { spawnEnclave, type EnclaveProcess } from "../../bin/stack/enclave.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { deployAccountConfig, deployContract } from "../../contracts/deploy.ts";
import { edgeIdentityFromSeed, toBase64Url } from "../../shared/channel/channel.ts";
import { TEST_EDGE_IDENTITY_SEED, TEST_ROOT_KEY } from "../enclave/constants.ts";
import { startFetchTarget } from "../../emulators/fetchTarget.ts";
import { startIpfsGateway } from "../../emulators/ipfsGateway.ts";
import { startTcpProxy, type TcpProxy } from "./tcpProxy.ts";

export type TestStack = {
  /** Anvil itself: for the test's own reads and writes. */
  rpcUrl: string;
  /** The chain as the services reach it: the proxy's URL with `chainProxy`, else anvil's. */
  serviceRpcUrl: string;
  /** The proxy between the services and anvil (`chainProxy` only). */
  chainProxy: TcpProxy | undefined;
  /** The enclaves' SIGIL_CHAINS (`extraChains` only): chain id → RPC URL, anvil's own at `serviceRpcUrl`. */
  chains: Record<string, string> | undefined;
  contract: Address;
  /** The ReceiptAnchor the enclaves anchor in (`anchorReceiptsEveryS` only). */
  receiptAnchor: Address | undefined;
  owner: Address;
  enclaveUrl: string;
  enclavePid: number;
  gatewayUrl: string;
  fetchTargetUrl: string;
  listenerPollMs: number;
  /**
   * Stops the enclave (SIGKILL: it dies as a crashed CVM would, with no shutdown) and, unless
   * `start: false`, starts it again on the same port with the same settings. Its channel key is new.
   */
  restartEnclave(options?: { start?: boolean }): Promise<void>;
  /** Starts the enclave again after `restartEnclave({ start: false })`. */
  startEnclave(): Promise<void>;
  /** Sends `signal` to the running enclave process. */
  signalEnclave(signal: NodeJS.Signals): void;
  /** What the enclave has printed, every process of it since the stack started, in order. */
  enclaveOutput(): string;
  /**
   * Starts another enclave process beside the stack's: the same settings and root key (so it derives
   * the same wallets), its own state folder, payer range (`SIGIL_INSTANCE_INDEX`, registered and
   * funded) and free port. `stop()` stops it with the rest.
   */
  spawnExtraEnclave(options?: { instanceIndex?: number }): Promise<ExtraEnclave>;
  stop(): Promise<void>;
};

/** An enclave process started by `spawnExtraEnclave`, restartable as the stack's own. */
export type ExtraEnclave = {
  url: string;
  readonly pid: number;
  instanceIndex: number;
  /** SIGKILL of its process group and, unless `start: false`, a new process on the same port. */
  restart(options?: { start?: boolean }): Promise<void>;
  /** Starts it again after `restart({ start: false })`. */
  start(): Promise<void>;
  /** What it has printed, every process of it, in order. */
  output(): string;
};

export type TestStackOptions = {
  listenerPollMs?: number;
  /** Mine a block every this many seconds instead of one per transaction (bin/stack/anvil.ts says when and why). */
  chainBlockSeconds?: number;
  echoEnclaveLogs?: boolean;
  /** Put a stoppable TCP proxy between anvil and the services (the enclave; an edge given `serviceRpcUrl`). */
  chainProxy?: boolean;
  /** Node options of the enclave's process. */
  enclaveExecArgv?: string[];
  /** Enclave settings over the stack's own (sandbox workers, log level, …). */
  enclaveEnv?: Record<string, string>;
  /**
   * Chains the enclaves send transactions to besides anvil's own, by id (their SIGIL_CHAINS is then
   * these and 31337 at `serviceRpcUrl`; `chains` says the whole of it).
   */
  extraChains?: Record<string, string>;
  /** Deploy a ReceiptAnchor and have the enclaves anchor their receipts in it every this many seconds. */
  anchorReceiptsEveryS?: number;
};

export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const listenerPollMs = options.listenerPollMs ?? 500;
  const anvil = await startAnvil({
    accounts: 10,
    ...(options.chainBlockSeconds === undefined ? {} : { blockTimeSeconds: options.chainBlockSeconds }),
  });
  const gateway = await startIpfsGateway();
  const target = await startFetchTarget();
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-test-stack-"));
  const stops: Array<() => Promise<void>> = [
    async () => rmSync(stateDir, { recursive: true, force: true }),
    () => anvil.stop(),
    () => gateway.close(),
    () => target.close(),
  ];
  let chainProxy: TcpProxy | undefined;
  const stop = async () => {
    for (const s of stops) await s().catch(() => undefined);
  };
  try {
    const transport = http(anvil.rpcUrl);
    const publicClient = createPublicClient({ transport, pollingInterval: 50 });
    const walletClient = createWalletClient({ transport });
    const [owner] = await walletClient.getAddresses();
    if (!owner) throw new Error("anvil has no accounts");
    const deployment = await deployAccountConfig({ publicClient, walletClient, account: owner }, { owner });
    const receiptAnchor =
      options.anchorReceiptsEveryS === undefined
        ? undefined
        : (await deployContract({ publicClient, walletClient, account: owner }, "ReceiptAnchor")).address;
    if (options.chainProxy) {
      const proxy = await startTcpProxy({ port: anvil.port });
      chainProxy = proxy;
      stops.unshift(() => proxy.close());
    }
    const serviceRpcUrl = chainProxy?.url ?? anvil.rpcUrl;
    const chains = options.extraChains ? { "31337": serviceRpcUrl, ...options.extraChains } : undefined;
    const enclaveEnv = {
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_PORT: "0",
      // The tests' stand-in edge and the edge under test sign with this identity.
      SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED)).publicKey),
      SIGIL_RPC_URL: serviceRpcUrl,
      SIGIL_CONTRACT_ADDRESS: deployment.proxy,
      SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
      SIGIL_STATE_DIR: stateDir,
      SIGIL_LISTENER_POLL_MS: String(listenerPollMs),
      SIGIL_IPFS_GATEWAY: gateway.url,
      SIGIL_FETCH_ALLOW: `127.0.0.1:${target.port}`,
      SIGIL_SANDBOX_WORKERS: "2",
      SIGIL_LOG_LEVEL: options.echoEnclaveLogs ? "debug" : "warn",
      ...(chains ? { SIGIL_CHAINS: JSON.stringify(chains) } : {}),
      ...(receiptAnchor
        ? {
            SIGIL_RECEIPT_ANCHOR: receiptAnchor,
            SIGIL_RECEIPT_ANCHOR_INTERVAL_S: String(options.anchorReceiptsEveryS),
          }
        : {}),
      ...options.enclaveEnv,
    };
    const echo = {
      ...(options.echoEnclaveLogs ? { echo: (line: string) => console.log(`[enclave] ${line}`) } : {}),
      ...(options.enclaveExecArgv ? { execArgv: options.enclaveExecArgv } : {}),
    };
    let enclave = await spawnEnclave(enclaveEnv, echo);
    /** What the enclave's earlier processes printed. */
    let pastOutput = "";
    let running = true;
    stops.unshift(() => (running ? enclave.stop() : Promise.resolve()));
    const port = new URL(enclave.url).port;
    const startEnclave = async () => {
      enclave = await spawnEnclave({ ...enclaveEnv, SIGIL_ENCLAVE_PORT: port }, echo);
      running = true;
    };
    const restartEnclave = async ({ start = true }: { start?: boolean } = {}) => {
      try {
        process.kill(-enclave.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await enclave.exited;
      pastOutput += enclave.output();
      running = false;
      if (start) await startEnclave();
    };
    await registerLocalPayers({
      rpcUrl: anvil.rpcUrl,
      publicClient,
      walletClient,
      owner,
      contract: deployment.proxy,
      payers: enclave.payers,
    });
    let extras = 0;
    const spawnExtraEnclave = async ({ instanceIndex }: { instanceIndex?: number } = {}): Promise<ExtraEnclave> => {
      const index = instanceIndex ?? ++extras;
      const dir = mkdtempSync(join(tmpdir(), "sigil-test-enclave-"));
      const env = { ...enclaveEnv, SIGIL_STATE_DIR: dir, SIGIL_ENCLAVE_PORT: "0", SIGIL_INSTANCE_INDEX: String(index) };
      const opts = {
        ...(options.echoEnclaveLogs ? { echo: (line: string) => console.log(`[enclave ${index}] ${line}`) } : {}),
        ...(options.enclaveExecArgv ? { execArgv: options.enclaveExecArgv } : {}),
      };
      let proc: EnclaveProcess;
      try {
        proc = await spawnEnclave(env, opts);
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      let up = true;
      let past = "";
      stops.unshift(async () => {
        if (up) await proc.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      await registerLocalPayers({
        rpcUrl: anvil.rpcUrl,
        publicClient,
        walletClient,
        owner,
        contract: deployment.proxy,
        payers: proc.payers,
      });
      const extraPort = new URL(proc.url).port;
      const start = async () => {
        proc = await spawnEnclave({ ...env, SIGIL_ENCLAVE_PORT: extraPort }, opts);
        up = true;
      };
      return {
        url: proc.url,
        get pid() {
          return proc.pid;
        },
        instanceIndex: index,
        restart: async ({ start: again = true }: { start?: boolean } = {}) => {
          try {
            process.kill(-proc.pid, "SIGKILL");
          } catch {
            // already gone
          }
          await proc.exited;
          past += proc.output();
          up = false;
          if (again) await start();
        },
        start,
        output: () => (up ? past + proc.output() : past),
      };
    };
    return {
      rpcUrl: anvil.rpcUrl,
      serviceRpcUrl,
      chainProxy,
      chains,
      contract: getAddress(deployment.proxy),
      receiptAnchor,
      owner: getAddress(owner),
      enclaveUrl: enclave.url,
      get enclavePid() {
        return enclave.pid;
      },
      gatewayUrl: gateway.url,
      fetchTargetUrl: target.url,
      listenerPollMs,
      restartEnclave,
      startEnclave,
      signalEnclave: (signal) => process.kill(enclave.pid, signal),
      enclaveOutput: () => (running ? pastOutput + enclave.output() : pastOutput),
      spawnExtraEnclave,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
