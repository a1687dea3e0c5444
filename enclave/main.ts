// Starts the enclave executor: root key → keyring → attestation source → chain, payers, permission
// cache and listener, sandbox pool → HTTP server. `node enclave/main.ts` runs it from the
// environment (config.ts); `startEnclave` is what the local stack and the tests call.
import { getRequestListener } from "@hono/node-server";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { openAttestation } from "./attestation/open.ts";
import type { AttestationService } from "./attestation/service.ts";
import { PermissionCache, chainPermissionSource } from "./authz/cache.ts";
import { GuardrailStore } from "./authz/guardrails.ts";
import { ChainListener } from "./authz/listener.ts";
import { connectChain, usageKeyGuardrail, walletGuardrail, type ChainContext } from "./chain/client.ts";
import { guardrailDocumentAt } from "../shared/guardrails/onChain.ts";
import { readEnclaveConfig, THREAD_POOL_SIZE, type EnclaveConfig } from "./config.ts";
import { Keyring } from "./keys/derive.ts";
import { loadRootKey } from "./keys/rootKey.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import type { Enclave } from "./operations/context.ts";
import { PayerPool } from "./payers/pool.ts";
import { SandboxPool } from "./sandbox/pool.ts";
import { ReceiptSigner } from "./receipts/receipts.ts";
import { receiptAnchorAbi } from "../shared/receiptAnchor.ts";
import { Settlements } from "./receipts/settlements.ts";
import { channelListener, createChannel, dropSessionsOnSignal, type Channel } from "./channel/channel.ts";
import { internalHealth } from "./health.ts";
import { createDispatcher } from "./operations/index.ts";
import { ECDSA_BACKEND } from "./keys/ecdsa.ts";
import { createEnclaveApp } from "./server.ts";

export type RunningEnclave = {
  url: string;
  port: number;
  payers: `0x${string}`[];
  enclave: Enclave;
  listener: ChainListener;
  /** The active attestation source behind its cache: `attestation.getQuote(reportData)` binds any 64 bytes. */
  attestation: AttestationService;
  /** This boot's channel: its key and the sessions it holds. */
  channel: Channel;
  close(): Promise<void>;
};

/** The enclave's log sink: each line straight to stdout, whatever its level (the host collects stdout). */
const stdoutSink = (line: string) => process.stdout.write(`${line}\n`);

/** This instance's payers: its own slice of the payer keys (instance k owns [k·N, (k+1)·N)). */
function payerPool(config: EnclaveConfig, keyring: Keyring, chain: ChainContext, log: Logger): PayerPool {
  const first = config.instanceIndex * config.payersPerInstance;
  return new PayerPool({
    chain,
    rpcUrl: config.rpcUrl,
    keys: Array.from({ length: config.payersPerInstance }, (_, i) => keyring.payerKey(first + i)),
    confirmations: config.receiptConfirmations,
    minBalanceWei: config.payerMinBalanceWei,
    log,
  });
}

/** The sandbox's workers, with the fetch policy of `config` (whose deny list holds the enclave's own port). */
function startSandbox(config: EnclaveConfig, log: Logger): Promise<SandboxPool> {
  return SandboxPool.start({
    workers: config.sandboxWorkers,
    runsPerWorker: config.runsPerWorker,
    limits: config.limits,
    fetchPolicy: {
      allowHosts: [...config.fetchAllow],
      denyPorts: [...config.fetchDenyPorts],
      timeoutMs: config.limits.fetchTimeoutMs,
      maxResponseBytes: config.limits.maxFetchBytes,
      maxRedirects: 5,
    },
    dns: config.dns,
    recycle: config.sandboxRecycle,
    watchdogGraceMs: config.watchdogGraceMs,
    memoryBudgetBytes: config.sandboxMemoryBytes,
    log,
  });
}

/** The contract's events, dropping the cached permissions of every account and key they touch. */
function chainListener(config: EnclaveConfig, chain: ChainContext, cache: PermissionCache, log: Logger): ChainListener {
  return new ChainListener({
    client: chain.client,
    contract: chain.contract,
    pollMs: config.listenerPollMs,
    stalledAfterMs: config.listenerStalledAfterMs,
    maxRange: config.listenerMaxRange,
    reorgDepth: config.listenerReorgDepth,
    onEvents: (named) => {
      cache.applyEvents(named);
      log.debug("cache entries dropped after chain events", {
        accounts: named.masters.size,
        narrowed: named.grantsChanged.size,
        widened: named.widened.size,
        keys: named.keys.size,
      });
    },
    log,
  });
}

export async function startEnclave(
  config: EnclaveConfig,
  log: Logger = createLogger(config.logLevel, { service: "enclave" }, stdoutSink),
): Promise<RunningEnclave> {
  const root = await loadRootKey(config.rootKey);
  log.info("root key loaded", { provider: config.rootKey.provider, source: root.source });
  const keyring = new Keyring(root.key);
  root.key.fill(0);

  const attestation = await openAttestation(config, log);
  attestation.service.start();

  const chain = await connectChain(config.rpcUrl, config.contractAddress, config.env === "production" ? 1_000 : 100);
  const payers = payerPool(config, keyring, chain, log);
  const cache = new PermissionCache(chainPermissionSource(chain));
  const guardrails = new GuardrailStore({
    locate: (master, subject) =>
      "wallet" in subject ? walletGuardrail(chain, master, subject.wallet) : usageKeyGuardrail(chain, subject.usageKey),
    document: (at) => guardrailDocumentAt(chain.client, chain.contract, at),
  });

  // Listen first: the sandbox must know the enclave's own port (scripts may never reach it), and
  // with port 0 that is known only now. Until the app is ready, requests get 503. The channel's
  // POST /channel/v1, which every request of the edge takes, goes straight to its listener; the
  // rest to the Hono app.
  let app: ReturnType<typeof createEnclaveApp> | undefined;
  let channelRequest: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const appListener = getRequestListener((request, env) =>
    app
      ? app.fetch(request, env)
      : Response.json(
          {
            error: { code: "enclave_unavailable", message: "the enclave is starting", request_id: crypto.randomUUID() },
          },
          { status: 503, headers: { "Retry-After": "1" } },
        ),
  );
  const server = createServer((req, res) => {
    if (channelRequest && req.method === "POST" && req.url === "/channel/v1") channelRequest(req, res);
    else void appListener(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const effective: EnclaveConfig = { ...config, port, fetchDenyPorts: new Set([...config.fetchDenyPorts, port]) };

  const sandbox = await startSandbox(effective, log);
  /** Operations the channel has opened and not yet answered. */
  let operationsInProgress = 0;
  // This instance's receipt key, and the quote that binds it, made when first asked for.
  const info = await attestation.service.info();
  const receipts = new ReceiptSigner({
    keyring,
    instanceId: info.instance_id,
    composeHash: info.compose_hash,
    quote: (reportData) => attestation.service.getQuote(reportData),
    // Runs whose receipts are coming: the operations in progress besides the one asking.
    batching: { waitMs: effective.runReceiptBatchMs, inFlight: () => operationsInProgress - 1 },
    ...(config.receiptAnchor
      ? {
          anchoring: {
            ...config.receiptAnchor,
            dir: join(config.receiptAnchor.dir, info.instance_id),
            chainId: chain.chain.id,
            send: (call) => payers.sendCall(call),
            hasCode: async () => {
              const code = await chain.client.getCode({ address: config.receiptAnchor?.contract as `0x${string}` });
              return code !== undefined && code !== "0x";
            },
            lastAnchored: async (signer) =>
              Number(
                await chain.client.readContract({
                  address: config.receiptAnchor?.contract as `0x${string}`,
                  abi: receiptAnchorAbi,
                  functionName: "lastEpoch",
                  args: [signer],
                }),
              ),
            storedRoot: async (signer, epoch) =>
              (
                await chain.client.readContract({
                  address: config.receiptAnchor?.contract as `0x${string}`,
                  abi: receiptAnchorAbi,
                  functionName: "anchors",
                  args: [signer, BigInt(epoch)],
                })
              )[0],
            log,
          },
        }
      : {}),
  });
  await receipts.anchors?.start();
  // Billed runs' charges, settled at their edge a few seconds after each run (should the edge not have).
  const settlements = new Settlements({ log, allowHttp: effective.env !== "production" });
  settlements.start();
  const enclave: Enclave = {
    config: effective,
    keyring,
    chain,
    cache,
    guardrails,
    payers,
    sandbox,
    receipts,
    settlements,
    log,
  };

  const listener = chainListener(config, chain, cache, log);
  listener.start();
  // This boot's channel key: made now, never stored; its quote is taken on the first GET /channel.
  const instanceId = info.instance_id;
  const channel = await createChannel({
    allowedEdgeKeys: config.allowedEdgeKeys,
    openings: config.channelOpenings,
    quote: (reportData) => attestation.service.getQuote(reportData),
    instanceId,
  });
  const health = { enclave, listener, instanceId, channelSessions: () => channel.recipient.sessions };
  app = createEnclaveApp({ ...health, attestation: { ...attestation, receipts }, channel });
  const publicApp = app;
  const dispatch = createDispatcher(enclave, {
    health: async () => (await internalHealth(health)).body,
    // The public attestation routes, answering as they would the client the edge names.
    attestation: async (query, client, headers) =>
      publicApp.fetch(new Request(`http://enclave/attestation${query}`, { headers }), { sigilClient: client }),
  });
  channelRequest = channelListener(
    channel,
    async (request, bytes) => {
      operationsInProgress++;
      try {
        return await dispatch(request, bytes);
      } finally {
        operationsInProgress--;
      }
    },
    log,
  );

  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  log.info("enclave listening", {
    url,
    chainId: chain.chain.id,
    contract: chain.contract,
    payers: payers.addresses,
    workers: config.sandboxWorkers,
    secp256k1: ECDSA_BACKEND,
  });

  return {
    url,
    port,
    payers: payers.addresses,
    enclave,
    listener,
    attestation: attestation.service,
    channel,
    async close() {
      attestation.service.stop();
      await listener.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // Every run answered has its charge sent before the instance goes, and its receipt anchored.
      await settlements.stop();
      // The last epoch's anchor sent, for at most 5 s: a stopping container has seconds, not retries' minutes.
      await receipts.anchors?.flush(5_000);
      await sandbox.close();
      keyring.destroy();
    },
  };
}

if (import.meta.main) {
  let config: EnclaveConfig;
  try {
    config = readEnclaveConfig();
  } catch (err) {
    process.stderr.write(`sigil enclave: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  // libuv sizes its thread pool when it is first used: WebCrypto and file work of every run share it
  // (scripts' DNS does not: guardedFetch resolves on c-ares). The image and the local stack set it in
  // the environment already; this covers a hand-started enclave.
  process.env.UV_THREADPOOL_SIZE ??= String(THREAD_POOL_SIZE);
  const log = createLogger(config.logLevel, { service: "enclave" }, stdoutSink);
  const running = await startEnclave(config, log).catch((err: unknown) => {
    log.error("enclave failed to start", { error: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
  dropSessionsOnSignal(config.env, running.channel.recipient, log);
  // Printed for the process that started us (the local stack): one line it can parse.
  process.stdout.write(`SIGIL_ENCLAVE_READY ${JSON.stringify({ url: running.url, payers: running.payers })}\n`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log.info("stopping", { signal });
      void running.close().then(() => process.exit(0));
    });
  }
}
