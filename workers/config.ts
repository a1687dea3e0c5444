// The edge's one configuration object, read from the worker's bindings and validated once per
// isolate (wrangler.toml and secrets describe them). Nothing else reads `env.X` directly.
import { z } from "zod";
import { runLimitsSchema, type RunLimits } from "../shared/limits.ts";
import { chainsSetting } from "../shared/chains.ts";
import type { Env } from "./env.ts";

/**
 * Requests one isolate serves at once by default (SIGIL_EDGE_MAX_IN_FLIGHT). An isolate runs on one
 * thread and shares it among every request it holds, so past what it serves promptly each new one
 * only makes all of them slower. A refused client waits its Retry-After (2 s, plus up to half of it)
 * before it is served at all, so a place is worth keeping while the queue it joins drains sooner:
 * 256 requests are about a second of this edge's CPU (a run costs it 4–5 ms, less for a read), and
 * many of them wait on the chain or the enclave without using any. With 128 the soak's retried
 * backlogs after an enclave restart were refused by the thousand while the edge had CPU to spare.
 */
export const DEFAULT_MAX_IN_FLIGHT = 256;

/**
 * The share of those places one client may hold at once by default, in percent
 * (SIGIL_EDGE_CLIENT_SHARE_PERCENT): a quarter, so that no one address or key can fill an isolate
 * alone (issue 26) while a client that sends many requests at once still has tens of them served.
 */
export const DEFAULT_CLIENT_SHARE_PERCENT = 25;

/**
 * How long a request's body may take to arrive by default, in ms (SIGIL_EDGE_BODY_TIMEOUT_MS),
 * counted from when the edge starts reading it (middleware/bodyLimit). A body is read whole before
 * its route runs and before its request takes a place in admission, so a slow one holds no place,
 * only its socket; this bounds how long it holds that. 10 s carries the largest body (6 MiB, a
 * script) at 5 Mbit/s and the default one (256 KiB) at 200 kbit/s.
 */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;

/**
 * How often an isolate's key cache reads the contract's events by default, in ms
 * (SIGIL_EDGE_KEY_POLL_MS; chain/keyCache.ts): a revoked key or a lowered spend limit takes effect at
 * the edge within this plus one poll's time after the block that carries it. Workers have no timers,
 * so a poll is started by a request that finds the last one older than this: an isolate polls at
 * most once per interval, and only while it serves metered requests. 2 s is one block of Base.
 */
export const DEFAULT_KEY_POLL_MS = 2_000;

/**
 * How long an isolate's first charge after a quiet moment waits for others before its commit, in ms
 * (SIGIL_LEASE_COMMIT_DELAY_MS; billing/lease.ts). A second, the longest the Ledger's pacing asks for
 * anyway: a commit costs the isolate's process about 2 ms of CPU when runs are few, so gathering a
 * second of them keeps billing's cost a run under 0.3 ms at any rate (docs/operations/benchmarks.md);
 * what it costs is that another isolate's reads show a run up to a second later (one's own isolate
 * commits before it reads), and a settled run's webhook waits as long.
 */
export const DEFAULT_COMMIT_DELAY_MS = 1_000;

/** Blocks per eth_getLogs when SIGIL_AUDIT_WINDOW_BLOCKS does not say (Base's public RPC and most providers take 10,000). */
export const DEFAULT_AUDIT_WINDOW_BLOCKS = 10_000;

/** The first webhook retry's delay by default (SIGIL_WEBHOOK_RETRY_BASE_MS), and the range it may be set in. */
export const DEFAULT_RETRY_BASE_MS = 10_000;
export const MIN_RETRY_BASE_MS = 10;
export const MAX_RETRY_BASE_MS = 3_600_000;

export type WebhookPolicy = {
  /** A local deployment: http and loopback/private receivers allowed (never in production). */
  local: boolean;
  /** The first retry's delay; the whole schedule scales with it (webhooks/policy.ts). */
  retryBaseMs: number;
};

/**
 * How webhooks behave on this deployment, from two of the edge's variables: whether it is a local one
 * (SIGIL_ENV development or test: plain http and loopback receivers allowed) and the base of the retry
 * schedule (10 s by default; tests make it small). The edge's config carries it; the Webhooks Durable
 * Object, which has the same bindings, reads it with this.
 */
export function webhookPolicy(vars: {
  SIGIL_ENV?: string | undefined;
  SIGIL_WEBHOOK_RETRY_BASE_MS?: string | undefined;
}): WebhookPolicy {
  const base = Number(vars.SIGIL_WEBHOOK_RETRY_BASE_MS ?? DEFAULT_RETRY_BASE_MS);
  const env = vars.SIGIL_ENV ?? "development";
  return {
    local: env !== "production",
    retryBaseMs:
      Number.isInteger(base) && base >= MIN_RETRY_BASE_MS && base <= MAX_RETRY_BASE_MS ? base : DEFAULT_RETRY_BASE_MS,
  };
}

// Bindings that are not variables (Durable Objects) are left out of the check. The run limits
// (SIGIL_TIMEOUT_MS, SIGIL_MAX_CODE_BYTES, …) are read by runLimitsSchema, as on the enclaves.
const schema = z.object({
  /** `development`, `test` or `production`. */
  SIGIL_ENV: z.enum(["development", "test", "production"]).default("development"),
  SIGIL_VERSION: z.string().default("0.1.0"),
  /** Comma-separated enclave base URLs; the edge routes to a healthy one. */
  SIGIL_ENCLAVE_URLS: z.string().default(""),
  /** The edge's Ed25519 identity seed (hex, a Worker secret): it signs each channel session it opens. */
  SIGIL_EDGE_IDENTITY_KEY: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{64}$/, "must be 32 bytes of hex")
    .optional(),
  /** `true` accepts enclaves' simulated quotes (development and tests; refused in production). */
  SIGIL_ATTESTATION_ALLOW_SIMULATED: z.enum(["true", "false"]).default("false"),
  /** `true` asks each enclave's governance contract too (always on in production). */
  SIGIL_CHECK_GOVERNANCE: z.enum(["true", "false"]).optional(),
  /** Comma-separated compose hashes (hex) the enclaves' RTMR3 may carry. */
  SIGIL_ALLOWED_COMPOSE_HASHES: z.string().default(""),
  /** The PCCS the edge takes Intel's collateral from for real quotes. */
  SIGIL_PCCS_URL: z.url({ protocol: /^https?$/ }).default("https://pccs.phala.network/sgx/certification/v4/"),
  /** JSON-RPC URL the edge reads AccountConfig through. */
  SIGIL_RPC_URL: z.string().default(""),
  /** A public RPC URL clients may use (get_node_chain_config). */
  SIGIL_PUBLIC_RPC_URL: z.string().optional(),
  SIGIL_BUDGET_URL: z.string().url().optional(),
  /**
   * The chains the enclaves send transactions to (the enclaves' own SIGIL_CHAINS, the same JSON
   * {"<chain id>": "<RPC URL>"}): the Transactions objects follow each sent transaction there.
   * Unset: the contract's own chain (SIGIL_CHAIN_ID) at SIGIL_RPC_URL.
   */
  SIGIL_CHAINS: chainsSetting,
  /** How often (ms) an account's Transactions object reads the chain while one of its transactions is pending (default 2000). */
  SIGIL_TX_FOLLOW_MS: z.coerce.number().int().min(100).max(600_000).default(2_000),
  /** A pending transaction the chain lost and refuses sent again for this long (s) is dropped (default 300). */
  SIGIL_TX_DROP_AFTER_S: z.coerce.number().int().min(1).max(86_400).default(300),
  SIGIL_CHAIN_ID: z.coerce.number().int().positive().default(31337),
  SIGIL_CHAIN_NAME: z.string().default("anvil"),
  SIGIL_CONTRACT_ADDRESS: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/)
    .optional(),
  /** The block AccountConfig was deployed in: the audit log reads no older events (default 0). */
  SIGIL_CONTRACT_FROM_BLOCK: z
    .string()
    .regex(/^\d{1,16}$/, "must be a block number")
    .default("0"),
  /** Blocks per eth_getLogs of the audit log (default 10000; RPC providers cap a range). */
  SIGIL_AUDIT_WINDOW_BLOCKS: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULT_AUDIT_WINDOW_BLOCKS),
  /** Requests per minute per API key, per client IP, and per IP on the open writes. */
  SIGIL_RATE_LIMIT_PER_KEY: z.coerce.number().int().positive().default(600),
  SIGIL_RATE_LIMIT_PER_IP: z.coerce.number().int().positive().default(1200),
  SIGIL_RATE_LIMIT_OPEN_PER_IP: z.coerce.number().int().positive().default(30),
  /** Open writes that spend the payers' gas (new_account) per hour, for the whole deployment. */
  SIGIL_OPEN_WRITES_PER_HOUR: z.coerce.number().int().positive().default(500),
  /** Requests one edge isolate serves at once before it answers 503 edge_busy (default 128; 0: no limit). */
  SIGIL_EDGE_MAX_IN_FLIGHT: z.coerce.number().int().min(0).max(100_000).default(DEFAULT_MAX_IN_FLIGHT),
  /** The share of those one client (address, or API key) may hold at once, in percent (default 25). */
  SIGIL_EDGE_CLIENT_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(DEFAULT_CLIENT_SHARE_PERCENT),
  /** How long a request body may take to arrive, in ms, before 408 body_timeout (default 10000). */
  SIGIL_EDGE_BODY_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(DEFAULT_BODY_TIMEOUT_MS),
  /** How often the key cache reads the contract's events, in ms (default 2000; chain/keyCache.ts). */
  SIGIL_EDGE_KEY_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(DEFAULT_KEY_POLL_MS),
  SIGIL_LEASE_COMMIT_DELAY_MS: z.coerce.number().int().min(0).max(5_000).default(DEFAULT_COMMIT_DELAY_MS),
  /** `on` (default) or `off`: whether writes and runs are charged. */
  SIGIL_BILLING: z.enum(["on", "off"]).default("on"),
  /** Stripe (docs/design/billing.md): secrets in production; the local emulator's keys under `npm start`. */
  STRIPE_SECRET_KEY: z.string().default(""),
  STRIPE_PUBLISHABLE_KEY: z.string().default(""),
  STRIPE_WEBHOOK_SECRET: z.string().default(""),
  /** Where the Stripe SDK sends its calls when not api.stripe.com: the local emulator's URL. */
  STRIPE_API_BASE: z.url({ protocol: /^https?$/ }).optional(),
  /** The first webhook retry's delay in ms (default 10000); the whole schedule scales with it. For tests. */
  SIGIL_WEBHOOK_RETRY_BASE_MS: z.coerce
    .number()
    .int()
    .min(MIN_RETRY_BASE_MS)
    .max(MAX_RETRY_BASE_MS)
    .default(DEFAULT_RETRY_BASE_MS),
});

export type EdgeConfig = {
  env: "development" | "test" | "production";
  version: string;
  enclaveUrls: string[];
  /** The attested channel to the enclaves (docs/design/attestation.md): the edge's identity and what it accepts. */
  channel: {
    /** The edge's Ed25519 seed (a Worker secret, hex); the enclaves list its public key. */
    identityKey: string | undefined;
    /** Accept an enclave's simulated quote, checked against the mock root it serves (development and tests only). */
    allowSimulated: boolean;
    /** Compose hashes (hex) an enclave's RTMR3 may carry; empty accepts any (not allowed in production). */
    allowedComposeHashes: string[];
    /** Where Intel's collateral for a real quote comes from. */
    pccsUrl: string;
    /** Ask the app's governance contract (0x<app id>) whether it allows the compose hash (always in production). */
    checkGovernance: boolean;
  };
  rpcUrl: string;
  publicRpcUrl: string;
  chainId: number;
  chainName: string;
  contractAddress: `0x${string}` | undefined;
  /**
   * The audit log's reads of the contract's events (GET /audit): the block it was deployed in (no
   * event is older; 0 reads from genesis) and the blocks per eth_getLogs (RPC providers cap a range).
   */
  events: { fromBlock: bigint; windowBlocks: number };
  /**
   * Requests per minute per key, per IP and per IP on the open writes; and the deployment's hourly
   * budget of open writes that spend the payers' gas (new_account), whoever sends them.
   */
  rateLimits: { perKey: number; perIp: number; openPerIp: number; openWritesPerHour: number };
  /** Requests this isolate serves at once; the next is refused with 503 edge_busy (middleware/admission). 0: no limit. */
  maxInFlight: number;
  /**
   * Of those, the most one client — its address, and apart from it its API key's hash — holds at
   * once; its next is refused with 503 edge_busy while others are served. 0 when maxInFlight is 0.
   */
  maxInFlightPerClient: number;
  /** How long a request's body may take to arrive (ms) before it is refused with 408 body_timeout (middleware/bodyLimit). */
  bodyTimeoutMs: number;
  /**
   * The edge's URL as the enclaves reach it, where they reserve in wallets' budgets
   * (SIGIL_BUDGET_URL; routes/budgets.ts). Absent: the origin each run's request came to.
   */
  budgetUrl?: string | undefined;
  /**
   * How often (ms) the isolate's key cache reads the contract's events (chain/keyCache.ts): the
   * bound, plus one poll's time, on how long a revoked key or a lowered spend limit still passes the
   * edge after its block.
   */
  keyPollMs: number;
  /**
   * How long (ms) the first charge after a quiet moment waits in an isolate's credit lease before its
   * commit, so that the charges made meanwhile go with it (billing/lease.ts): runs' answers never wait
   * for it; longer batches more and leaves more to the enclaves' settlements should the isolate die.
   */
  commitDelayMs: number;
  /**
   * Following sent transactions (docs/design/transactions.md): each chain's RPC URL by id, how often
   * a Transactions object reads them while anything is pending, and after how long a transaction
   * seen nowhere is dropped.
   */
  transactions: { chains: Map<number, string>; followMs: number; dropAfterMs: number };
  /** Metering through the Ledger (docs/design/billing.md); `off` only for self-hosted operators and some tests. */
  billing: boolean;
  /**
   * The limits of a run, the same variables the enclaves read (shared/limits.ts): the edge sizes a
   * run's hold by them, refuses scripts over them (get_sigil_action_ipfs_id) and reports them
   * (get_sigil_action_client_config).
   */
  limits: RunLimits;
  /** Stripe's keys (empty when not configured: the payment endpoints answer 503) and, for the emulator, its URL. */
  stripe: { secretKey: string; publishableKey: string; webhookSecret: string; apiBase: string | undefined };
  /** Users' webhooks (issue 14): whether local receivers (http, loopback) are allowed, and the retry schedule's base. */
  webhooks: WebhookPolicy;
};

const cache = new WeakMap<object, EdgeConfig>();

/** One client's places of `maxInFlight`: `percent` of them, rounded down, at least one; 0 (no limit) stays 0. */
export function clientShare(maxInFlight: number, percent: number): number {
  if (maxInFlight === 0) return 0;
  return Math.max(1, Math.floor((maxInFlight * percent) / 100));
}

/** The validated configuration; a misconfigured deployment fails loudly (500, logged), never half-works. */
export function edgeConfig(env: Env): EdgeConfig {
  const known = cache.get(env);
  if (known) return known;
  const result = schema.safeParse(env);
  const limits = runLimitsSchema.safeParse(env);
  if (!result.success || !limits.success) {
    const issues = [...(result.error?.issues ?? []), ...(limits.error?.issues ?? [])];
    throw new Error(`invalid edge configuration: ${issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  const c = result.data;
  if (c.SIGIL_ENV === "production" && c.SIGIL_ATTESTATION_ALLOW_SIMULATED === "true") {
    throw new Error(
      "invalid edge configuration: SIGIL_ATTESTATION_ALLOW_SIMULATED is refused when SIGIL_ENV=production",
    );
  }
  if (c.SIGIL_ENV === "production" && c.SIGIL_CHECK_GOVERNANCE === "false") {
    throw new Error("invalid edge configuration: SIGIL_CHECK_GOVERNANCE=false is refused when SIGIL_ENV=production");
  }
  if (c.SIGIL_ENV === "production" && c.SIGIL_ALLOWED_COMPOSE_HASHES.trim() === "") {
    throw new Error(
      "invalid edge configuration: SIGIL_ALLOWED_COMPOSE_HASHES must name the enclave's compose hash(es) when SIGIL_ENV=production",
    );
  }
  if (c.SIGIL_ENV === "production" && c.STRIPE_API_BASE !== undefined) {
    throw new Error(
      "invalid edge configuration: STRIPE_API_BASE (the local Stripe emulator) is refused when SIGIL_ENV=production",
    );
  }
  const config: EdgeConfig = {
    env: c.SIGIL_ENV,
    version: c.SIGIL_VERSION,
    enclaveUrls: c.SIGIL_ENCLAVE_URLS.split(",")
      .map((u) => u.trim().replace(/\/+$/, ""))
      .filter(Boolean),
    channel: {
      identityKey: c.SIGIL_EDGE_IDENTITY_KEY?.replace(/^0x/, "").toLowerCase(),
      allowSimulated: c.SIGIL_ATTESTATION_ALLOW_SIMULATED === "true",
      allowedComposeHashes: c.SIGIL_ALLOWED_COMPOSE_HASHES.split(",")
        .map((h) => h.trim().replace(/^0x/, "").toLowerCase())
        .filter(Boolean),
      pccsUrl: c.SIGIL_PCCS_URL,
      checkGovernance: c.SIGIL_ENV === "production" || c.SIGIL_CHECK_GOVERNANCE === "true",
    },
    rpcUrl: c.SIGIL_RPC_URL,
    publicRpcUrl: c.SIGIL_PUBLIC_RPC_URL ?? c.SIGIL_RPC_URL,
    budgetUrl: c.SIGIL_BUDGET_URL?.replace(/\/+$/, ""),
    chainId: c.SIGIL_CHAIN_ID,
    chainName: c.SIGIL_CHAIN_NAME,
    contractAddress: c.SIGIL_CONTRACT_ADDRESS as `0x${string}` | undefined,
    events: { fromBlock: BigInt(c.SIGIL_CONTRACT_FROM_BLOCK), windowBlocks: c.SIGIL_AUDIT_WINDOW_BLOCKS },
    rateLimits: {
      perKey: c.SIGIL_RATE_LIMIT_PER_KEY,
      perIp: c.SIGIL_RATE_LIMIT_PER_IP,
      openPerIp: c.SIGIL_RATE_LIMIT_OPEN_PER_IP,
      openWritesPerHour: c.SIGIL_OPEN_WRITES_PER_HOUR,
    },
    maxInFlight: c.SIGIL_EDGE_MAX_IN_FLIGHT,
    maxInFlightPerClient: clientShare(c.SIGIL_EDGE_MAX_IN_FLIGHT, c.SIGIL_EDGE_CLIENT_SHARE_PERCENT),
    bodyTimeoutMs: c.SIGIL_EDGE_BODY_TIMEOUT_MS,
    keyPollMs: c.SIGIL_EDGE_KEY_POLL_MS,
    commitDelayMs: c.SIGIL_LEASE_COMMIT_DELAY_MS,
    transactions: {
      chains: c.SIGIL_CHAINS ?? new Map(c.SIGIL_RPC_URL ? [[c.SIGIL_CHAIN_ID, c.SIGIL_RPC_URL]] : []),
      followMs: c.SIGIL_TX_FOLLOW_MS,
      dropAfterMs: c.SIGIL_TX_DROP_AFTER_S * 1000,
    },
    billing: c.SIGIL_BILLING === "on",
    limits: limits.data,
    stripe: {
      secretKey: c.STRIPE_SECRET_KEY,
      publishableKey: c.STRIPE_PUBLISHABLE_KEY,
      webhookSecret: c.STRIPE_WEBHOOK_SECRET,
      apiBase: c.STRIPE_API_BASE?.replace(/\/+$/, ""),
    },
    webhooks: webhookPolicy({
      SIGIL_ENV: c.SIGIL_ENV,
      SIGIL_WEBHOOK_RETRY_BASE_MS: String(c.SIGIL_WEBHOOK_RETRY_BASE_MS),
    }),
  };
  cache.set(env, config);
  return config;
}
