// The enclave's one configuration object: read from the environment once at start, validated, typed.
// Nothing else in enclave/ reads process.env.
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { runLimitsSchema, type RunLimits } from "../shared/limits.ts";
import { chainsSetting } from "../shared/chains.ts";
import { defaultStalledAfterMs } from "./authz/listener.ts";

const hex32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be 0x followed by 64 hex digits");
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address");
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const schema = z.object({
  SIGIL_ENV: z.enum(["development", "test", "production"]).default("development"),
  SIGIL_ENCLAVE_HOST: z.string().min(1).default("127.0.0.1"),
  SIGIL_ENCLAVE_PORT: int(0, 65_535).default(8790),
  /**
   * The edges allowed to call the internal API through the attested channel: their Ed25519
   * public keys (base64url or hex), comma-separated. Part of the attested compose in production.
   */
  SIGIL_ALLOWED_EDGE_KEYS: z
    .string()
    .transform((v) =>
      v
        .split(",")
        .map((k) => k.trim())
        .filter(Boolean),
    )
    .pipe(
      z
        .array(
          z
            .string()
            .regex(
              /^([A-Za-z0-9_-]{43}|(0x)?[0-9a-fA-F]{64})$/,
              "must be 32-byte Ed25519 public keys, base64url or hex",
            ),
        )
        .min(1, "must list at least one edge key"),
    ),
  /** Refused session openings one peer address may send before they are answered 429: a burst, then a steady rate per second. */
  SIGIL_CHANNEL_OPENINGS_BURST: int(1, 100_000).default(64),
  SIGIL_CHANNEL_OPENINGS_PER_SECOND: z.coerce.number().positive().max(100_000).default(8),
  SIGIL_RPC_URL: z.url({ protocol: /^https?$/ }),
  /**
   * The chains scripts' sendTransaction sends to: JSON {"<chain id>": "<RPC URL>"}
   * (docs/design/transactions.md). Unset: the contract's own chain, at SIGIL_RPC_URL.
   */
  SIGIL_CHAINS: chainsSetting,
  SIGIL_CONTRACT_ADDRESS: address,
  SIGIL_LISTENER_POLL_MS: int(100, 600_000).optional(),
  /** No successful poll for this long and /health says the listener is stalled (default: 3 polls, at least 30 s). */
  SIGIL_LISTENER_STALLED_AFTER_MS: int(100, 3_600_000).optional(),
  SIGIL_LISTENER_MAX_RANGE: int(1, 100_000).default(2_000),
  /** Blocks re-read on every poll, so an event in a block replaced by a short reorg is still seen. */
  SIGIL_LISTENER_REORG_DEPTH: int(0, 64).default(3),
  SIGIL_INSTANCE_INDEX: int(0, 1_000_000).default(0),
  SIGIL_PAYERS_PER_INSTANCE: int(1, 64).default(4),
  SIGIL_RECEIPT_CONFIRMATIONS: int(1, 64).default(1),
  /** How long a run's receipt may wait for others to share its batch's signature while many runs are in flight (0: never). */
  SIGIL_RUN_RECEIPT_BATCH_MS: int(0, 100).default(5),
  /**
   * The ReceiptAnchor contract (contracts/ReceiptAnchor.sol) on the contract's chain, where this
   * instance anchors its receipts (enclave/receipts/anchors.ts); unset: receipts are not anchored.
   */
  SIGIL_RECEIPT_ANCHOR: address.optional(),
  /** An epoch of receipts is anchored this long after it opened… */
  SIGIL_RECEIPT_ANCHOR_INTERVAL_S: int(1, 86_400).default(60),
  /** Where the epochs' heads are written (default SIGIL_STATE_DIR/anchors): paths and anchoring survive a restart. */
  SIGIL_RECEIPT_ANCHOR_DIR: z.string().min(1).optional(),
  /** …or once it has this many batch heads. */
  SIGIL_RECEIPT_ANCHOR_MAX_HEADS: int(1, 1_000_000).default(65_536),
  /**
   * Batch heads of anchored epochs kept in memory to serve their paths: 32 bytes each (64 MB at the
   * default), and the inner nodes of the few trees paths were last asked of; the heads also in
   * SIGIL_RECEIPT_ANCHOR_DIR, read back at start.
   */
  SIGIL_RECEIPT_ANCHOR_KEEP_HEADS: int(1, 100_000_000).default(2_000_000),
  SIGIL_PAYER_MIN_BALANCE_WEI: z.coerce.bigint().min(0n).default(10_000_000_000_000_000n),
  SIGIL_ROOT_KEY_PROVIDER: z.enum(["dev", "dstack"]).default("dev"),
  /** Fixed dev root key (tests); without it the dev provider keeps one in SIGIL_STATE_DIR/dev/root.key. */
  SIGIL_DEV_ROOT_KEY: hex32.optional(),
  SIGIL_STATE_DIR: z
    .string()
    .min(1)
    .default(join(import.meta.dirname, "../.sigil")),
  DSTACK_SIMULATOR_ENDPOINT: z.string().min(1).optional(),
  /** Where quotes come from: dstack's guest agent, or the simulated TEE (development and test only). */
  SIGIL_ATTESTATION: z.enum(["dstack", "simulated"]).optional(),
  /** The app-compose the simulated TEE measures; deploy/app-compose.dev.json by default. */
  SIGIL_APP_COMPOSE_FILE: z.string().min(1).optional(),
  /** Fresh quotes (`/attestation?nonce=`) per client: a burst, then per second; and per second for all clients together. */
  SIGIL_NONCE_QUOTES_BURST: int(1, 10_000).default(10),
  SIGIL_NONCE_QUOTES_PER_SECOND: z.coerce.number().positive().max(10_000).default(2),
  SIGIL_NONCE_QUOTES_TOTAL_PER_SECOND: z.coerce.number().positive().max(10_000).default(20),
  SIGIL_IPFS_GATEWAY: z.url({ protocol: /^https?$/ }).default("https://ipfs.io"),
  /** How long fetching `ipfs_id` code may take, answer and body; past it the gateway counts as unavailable. */
  SIGIL_IPFS_TIMEOUT_MS: int(100, 900_000).default(30_000),
  /** Exact host:port pairs that scripts may fetch although they are not public addresses. */
  SIGIL_FETCH_ALLOW: z.string().default(""),
  /** Ports on loopback scripts may never reach (the edge's); the enclave's own port is always added. */
  SIGIL_FETCH_DENY_PORTS: z.string().default("8787"),
  SIGIL_SANDBOX_WORKERS: int(1, 256).default(Math.max(1, cpus().length)),
  SIGIL_SANDBOX_RUNS_PER_WORKER: int(1, 10_000).default(256),
  /**
   * A run's instance whose memory grew by more than this is dropped after the run instead of serving
   * the next: all of an instance's memory is cleared after every run (sandbox/image.ts), so a memory
   * one large run left large would cost every later run its clearing (about 30 µs a MiB).
   */
  SIGIL_SANDBOX_RECYCLE_MB: int(1, 4_096).default(4),
  /** A sandbox worker whose JavaScript heap passes this takes no new runs and is replaced once its runs end. */
  SIGIL_SANDBOX_WORKER_RECYCLE_MB: int(64, 65_536).default(512),
  /**
   * The heaps of all runs' QuickJS instances together past which new runs are refused (429
   * executor_busy) until runs end; half the machine's memory by default.
   */
  SIGIL_SANDBOX_MEMORY_MB: int(64, 4_194_304).default(Math.max(64, Math.floor(totalmem() / 2 / 1024 / 1024))),
  /** How far past its deadline a run's code may go before the pool ends it from outside its thread. */
  SIGIL_SANDBOX_WATCHDOG_GRACE_MS: int(10, 10_000).default(100),
  /** Name servers for scripts' fetches ("ip" or "ip:port", comma-separated); the system's when empty. */
  SIGIL_DNS_SERVERS: z.string().default(""),
  SIGIL_DNS_TIMEOUT_MS: int(100, 30_000).default(2_000),
  // The run limits (SIGIL_TIMEOUT_MS, SIGIL_MAX_CODE_BYTES, …) are the edge's too: shared/limits.ts reads them.
  SIGIL_LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
});

/** libuv's thread pool size unless UV_THREADPOOL_SIZE says otherwise (libuv's own default is 4). */
export const THREAD_POOL_SIZE = 16;

/**
 * How the enclave's Node process is started, wherever it is (enclave/Dockerfile's ENTRYPOINT and
 * ENV, bin/stack/enclave.ts; a test keeps the two the same). Both keep its resident memory down
 * without a limit it could hit (bench:enclave, steady RSS at concurrency 32):
 * - `--max-semi-space-size=8`: the service thread's young generation at 8 MiB semi-spaces instead of
 *   V8's up to 16: its garbage is each request's, and a young generation that large is resident
 *   memory (4 MiB promotes more of the requests in flight, whose garbage then waits for the old
 *   generation's collection: no smaller in the end, and slower).
 * - MALLOC_ARENA_MAX=2: glibc makes a malloc arena per thread that allocates (the service thread,
 *   the sandbox workers, V8's and libuv's threads), each holding freed memory; two are enough.
 */
export const ENCLAVE_PROCESS = { nodeFlags: ["--max-semi-space-size=8"], env: { MALLOC_ARENA_MAX: "2" } } as const;

/** The limits every run is held to (docs/design/sandbox.md): the run limits both sides read (shared/limits.ts). */
export type SandboxLimits = RunLimits;

export type EnclaveConfig = {
  env: "development" | "test" | "production";
  host: string;
  port: number;
  /** Ed25519 public keys of the edges allowed through the channel. */
  allowedEdgeKeys: Uint8Array[];
  /** Channel session openings per peer address (refused ones with an unknown edge key cost none). */
  channelOpenings: { capacity: number; perSecond: number };
  rpcUrl: string;
  /** The chains sendTransaction sends to, by id; undefined: the contract's own chain only. */
  chains: Map<number, string> | undefined;
  contractAddress: `0x${string}`;
  listenerPollMs: number;
  listenerStalledAfterMs: number;
  listenerMaxRange: number;
  listenerReorgDepth: number;
  instanceIndex: number;
  payersPerInstance: number;
  receiptConfirmations: number;
  /** How long a run's receipt waits for others to share its batch (only while other runs are in flight). */
  runReceiptBatchMs: number;
  /** Where and how often receipts are anchored (receipts/anchors.ts); undefined: they are not. */
  receiptAnchor:
    | { contract: `0x${string}`; intervalMs: number; maxHeads: number; keepHeads: number; dir: string }
    | undefined;
  payerMinBalanceWei: bigint;
  rootKey:
    | { provider: "dev"; fixedKey: `0x${string}` | undefined; stateDir: string }
    | { provider: "dstack"; endpoint: string | undefined };
  attestation:
    | { source: "dstack"; endpoint: string | undefined }
    | { source: "simulated"; appComposeFile: string | undefined };
  /** Nonce quotes: each client's budget, and everyone's (the quote device's). */
  nonceQuotes: { perClient: { capacity: number; perSecond: number }; total: { capacity: number; perSecond: number } };
  ipfsGateway: string;
  /** The whole fetch of `ipfs_id` code, answer and body. */
  ipfsTimeoutMs: number;
  fetchAllow: ReadonlySet<string>;
  fetchDenyPorts: ReadonlySet<number>;
  sandboxWorkers: number;
  runsPerWorker: number;
  sandboxRecycle: { instanceGrowthBytes: number; workerHeapBytes: number };
  watchdogGraceMs: number;
  sandboxMemoryBytes: number;
  dns: { servers: string[]; timeoutMs: number; tries: number };
  limits: SandboxLimits;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
};

/** Parses the environment; the error names each bad variable and never echoes a value. */
export function readEnclaveConfig(env: Record<string, string | undefined> = process.env): EnclaveConfig {
  const result = schema.safeParse(env);
  const limits = runLimitsSchema.safeParse(env);
  if (!result.success || !limits.success) {
    const issues = [...(result.error?.issues ?? []), ...(limits.error?.issues ?? [])];
    const problems = issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid enclave configuration: ${problems}`);
  }
  const c = result.data;
  if (c.SIGIL_ENV === "production" && c.SIGIL_ROOT_KEY_PROVIDER === "dev") {
    throw new Error("invalid enclave configuration: the dev root key provider is refused when SIGIL_ENV=production");
  }
  const attestation = c.SIGIL_ATTESTATION ?? (c.SIGIL_ENV === "production" ? "dstack" : "simulated");
  if (c.SIGIL_ENV === "production" && attestation === "simulated") {
    throw new Error("invalid enclave configuration: SIGIL_ATTESTATION=simulated is refused when SIGIL_ENV=production");
  }
  const fetchAllow = new Set<string>();
  for (const entry of c.SIGIL_FETCH_ALLOW.split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/.test(entry)) {
      throw new Error(`invalid enclave configuration: SIGIL_FETCH_ALLOW entry "${entry}" is not host:port`);
    }
    fetchAllow.add(entry);
  }
  const denyPorts = new Set<number>();
  for (const entry of c.SIGIL_FETCH_DENY_PORTS.split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const port = Number(entry);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new Error(`invalid enclave configuration: SIGIL_FETCH_DENY_PORTS entry "${entry}" is not a port`);
    }
    denyPorts.add(port);
  }
  if (c.SIGIL_ENCLAVE_PORT !== 0) denyPorts.add(c.SIGIL_ENCLAVE_PORT);
  const dnsServers = c.SIGIL_DNS_SERVERS.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const server of dnsServers) {
    if (!/^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-fA-F:.]+\](:\d{1,5})?|[0-9a-fA-F:]+)$/.test(server)) {
      throw new Error(
        `invalid enclave configuration: SIGIL_DNS_SERVERS entry "${server}" is not an IP address (with an optional port)`,
      );
    }
  }
  const pollMs = c.SIGIL_LISTENER_POLL_MS ?? (c.SIGIL_ENV === "production" ? 10_000 : 1_000);
  return {
    env: c.SIGIL_ENV,
    host: c.SIGIL_ENCLAVE_HOST,
    port: c.SIGIL_ENCLAVE_PORT,
    allowedEdgeKeys: c.SIGIL_ALLOWED_EDGE_KEYS.map(edgeKeyBytes),
    channelOpenings: { capacity: c.SIGIL_CHANNEL_OPENINGS_BURST, perSecond: c.SIGIL_CHANNEL_OPENINGS_PER_SECOND },
    rpcUrl: c.SIGIL_RPC_URL,
    chains: c.SIGIL_CHAINS,
    contractAddress: c.SIGIL_CONTRACT_ADDRESS as `0x${string}`,
    listenerPollMs: pollMs,
    listenerStalledAfterMs: c.SIGIL_LISTENER_STALLED_AFTER_MS ?? defaultStalledAfterMs(pollMs),
    listenerMaxRange: c.SIGIL_LISTENER_MAX_RANGE,
    listenerReorgDepth: c.SIGIL_LISTENER_REORG_DEPTH,
    instanceIndex: c.SIGIL_INSTANCE_INDEX,
    payersPerInstance: c.SIGIL_PAYERS_PER_INSTANCE,
    receiptConfirmations: c.SIGIL_RECEIPT_CONFIRMATIONS,
    runReceiptBatchMs: c.SIGIL_RUN_RECEIPT_BATCH_MS,
    receiptAnchor: c.SIGIL_RECEIPT_ANCHOR
      ? {
          contract: c.SIGIL_RECEIPT_ANCHOR.toLowerCase() as `0x${string}`,
          intervalMs: c.SIGIL_RECEIPT_ANCHOR_INTERVAL_S * 1000,
          maxHeads: c.SIGIL_RECEIPT_ANCHOR_MAX_HEADS,
          keepHeads: c.SIGIL_RECEIPT_ANCHOR_KEEP_HEADS,
          // Each instance's under its id: its receipt key's epochs and no other's.
          dir: c.SIGIL_RECEIPT_ANCHOR_DIR ?? join(c.SIGIL_STATE_DIR, "anchors"),
        }
      : undefined,
    payerMinBalanceWei: c.SIGIL_PAYER_MIN_BALANCE_WEI,
    rootKey:
      c.SIGIL_ROOT_KEY_PROVIDER === "dev"
        ? { provider: "dev", fixedKey: c.SIGIL_DEV_ROOT_KEY as `0x${string}` | undefined, stateDir: c.SIGIL_STATE_DIR }
        : { provider: "dstack", endpoint: c.DSTACK_SIMULATOR_ENDPOINT },
    attestation:
      attestation === "dstack"
        ? { source: "dstack", endpoint: c.DSTACK_SIMULATOR_ENDPOINT }
        : { source: "simulated", appComposeFile: c.SIGIL_APP_COMPOSE_FILE },
    nonceQuotes: {
      perClient: { capacity: c.SIGIL_NONCE_QUOTES_BURST, perSecond: c.SIGIL_NONCE_QUOTES_PER_SECOND },
      // Two seconds' worth at once: a few verifiers arriving together are all served.
      total: {
        capacity: Math.max(c.SIGIL_NONCE_QUOTES_BURST, Math.ceil(2 * c.SIGIL_NONCE_QUOTES_TOTAL_PER_SECOND)),
        perSecond: c.SIGIL_NONCE_QUOTES_TOTAL_PER_SECOND,
      },
    },
    ipfsGateway: c.SIGIL_IPFS_GATEWAY.replace(/\/+$/, ""),
    ipfsTimeoutMs: c.SIGIL_IPFS_TIMEOUT_MS,
    fetchAllow,
    fetchDenyPorts: denyPorts,
    sandboxWorkers: c.SIGIL_SANDBOX_WORKERS,
    runsPerWorker: c.SIGIL_SANDBOX_RUNS_PER_WORKER,
    sandboxRecycle: {
      instanceGrowthBytes: c.SIGIL_SANDBOX_RECYCLE_MB * 1024 * 1024,
      workerHeapBytes: c.SIGIL_SANDBOX_WORKER_RECYCLE_MB * 1024 * 1024,
    },
    watchdogGraceMs: c.SIGIL_SANDBOX_WATCHDOG_GRACE_MS,
    sandboxMemoryBytes: c.SIGIL_SANDBOX_MEMORY_MB * 1024 * 1024,
    dns: { servers: dnsServers, timeoutMs: c.SIGIL_DNS_TIMEOUT_MS, tries: 2 },
    limits: limits.data,
    logLevel: c.SIGIL_LOG_LEVEL,
  };
}

/** An Ed25519 public key as configured: 64 hex digits (0x optional) or 43 base64url characters. */
function edgeKeyBytes(text: string): Uint8Array {
  const hex = text.replace(/^0x/, "");
  if (/^[0-9a-fA-F]{64}$/.test(hex)) return Uint8Array.from(Buffer.from(hex, "hex"));
  return Uint8Array.from(Buffer.from(text, "base64url"));
}
