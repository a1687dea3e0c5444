// The worker's bindings and variables (wrangler.toml is their single description).
import type { Ledger } from "./billing/ledger.ts";
import type { Idempotency } from "./idempotency/store.ts";
import type { RateLimiter } from "./ratelimit/limiter.ts";
import type { Webhooks } from "./webhooks/store.ts";

export type Env = {
  /** The static assets (wrangler.toml [assets], dist/assets/): Swagger UI's files. */
  ASSETS?: Fetcher;
  /** One rate-limit window per bucket (an API key, a client IP, the deployment's gas budget). */
  RATE_LIMITER?: DurableObjectNamespace<RateLimiter>;
  /** One credit ledger per account, named by its master hash (billing.md). */
  LEDGER?: DurableObjectNamespace<Ledger>;
  /** One store of Idempotency-Key records per account, named by its master hash (api.md). */
  IDEMPOTENCY?: DurableObjectNamespace<Idempotency>;
  /** One store of webhook endpoints, events and deliveries per account, named by its master hash (issue 14). */
  WEBHOOKS?: DurableObjectNamespace<Webhooks>;
  /** The first webhook retry's delay in ms (default 10000); the whole schedule scales with it. For tests. */
  SIGIL_WEBHOOK_RETRY_BASE_MS?: string;
  /** `on` (default) or `off`: whether writes and runs are charged. */
  SIGIL_BILLING?: string;
  /** Requests per minute per API key, per client IP, and per IP on the open writes. */
  SIGIL_RATE_LIMIT_PER_KEY?: string;
  SIGIL_RATE_LIMIT_PER_IP?: string;
  SIGIL_RATE_LIMIT_OPEN_PER_IP?: string;
  /** Open writes that spend the payers' gas (new_account) per hour, for the whole deployment. */
  SIGIL_OPEN_WRITES_PER_HOUR?: string;
  /** Requests one edge isolate serves at once before it answers 503 edge_busy (default 128; 0: no limit). */
  SIGIL_EDGE_MAX_IN_FLIGHT?: string;
  /** The share of those one client (address, or API key) may hold at once, in percent (default 25). */
  SIGIL_EDGE_CLIENT_SHARE_PERCENT?: string;
  /** How long a request body may take to arrive, in ms, before 408 body_timeout (default 10000). */
  SIGIL_EDGE_BODY_TIMEOUT_MS?: string;
  /** `development`, `test` or `production`. */
  SIGIL_ENV?: string;
  /** Comma-separated enclave base URLs; the edge routes to a healthy one. */
  SIGIL_ENCLAVE_URLS?: string;
  /** The edge's Ed25519 identity seed (hex, a Worker secret): it signs each channel session it opens. */
  SIGIL_EDGE_IDENTITY_KEY?: string;
  /** `true` accepts enclaves' simulated quotes (development and tests; refused in production). */
  SIGIL_ATTESTATION_ALLOW_SIMULATED?: string;
  /** `true` asks each enclave's governance contract too (always on in production). */
  SIGIL_CHECK_GOVERNANCE?: string;
  /** Comma-separated compose hashes (hex) the enclaves' RTMR3 may carry. */
  SIGIL_ALLOWED_COMPOSE_HASHES?: string;
  /** The PCCS the edge takes Intel's collateral from for real quotes. */
  SIGIL_PCCS_URL?: string;
  /** JSON-RPC URL the edge reads AccountConfig through. */
  SIGIL_RPC_URL?: string;
  /** A public RPC URL clients may use (get_node_chain_config). */
  SIGIL_PUBLIC_RPC_URL?: string;
  SIGIL_CHAIN_ID?: string;
  SIGIL_CHAIN_NAME?: string;
  SIGIL_CONTRACT_ADDRESS?: string;
  /** The block AccountConfig was deployed in: the audit log reads no older events (default 0). */
  SIGIL_CONTRACT_FROM_BLOCK?: string;
  /** Blocks per eth_getLogs of the audit log (default 10000; RPC providers cap a range). */
  SIGIL_AUDIT_WINDOW_BLOCKS?: string;
  SIGIL_VERSION?: string;
  /** Stripe (billing.md): secrets in production; the local emulator's keys under `npm start`. */
  STRIPE_SECRET_KEY?: string;
  STRIPE_PUBLISHABLE_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  /** Where the Stripe SDK sends its calls when not api.stripe.com: the local emulator's URL. */
  STRIPE_API_BASE?: string;
};
