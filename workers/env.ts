// The worker's bindings and variables (wrangler.toml is their single description).
import type { Ledger } from "./billing/ledger.ts";
import type { RateLimiter } from "./ratelimit/limiter.ts";

export type Env = {
  /** One rate-limit window per bucket (an API key or a client IP). */
  RATE_LIMITER?: DurableObjectNamespace<RateLimiter>;
  /** One credit ledger per account, named by its master hash (billing.md). */
  LEDGER?: DurableObjectNamespace<Ledger>;
  /** `on` (default) or `off`: whether writes and runs are charged. */
  SIGIL_BILLING?: string;
  /** Requests per minute per API key, per client IP, and per IP on the open writes. */
  SIGIL_RATE_LIMIT_PER_KEY?: string;
  SIGIL_RATE_LIMIT_PER_IP?: string;
  SIGIL_RATE_LIMIT_OPEN_PER_IP?: string;
  /** `development`, `test` or `production`. */
  SIGIL_ENV?: string;
  /** Comma-separated enclave base URLs; the edge routes to a healthy one. */
  SIGIL_ENCLAVE_URLS?: string;
  /** Shared secret for the enclaves' internal API, until the attested channel replaces it. */
  SIGIL_ENCLAVE_SECRET?: string;
  /** JSON-RPC URL the edge reads AccountConfig through. */
  SIGIL_RPC_URL?: string;
  /** A public RPC URL clients may use (get_node_chain_config). */
  SIGIL_PUBLIC_RPC_URL?: string;
  SIGIL_CHAIN_ID?: string;
  SIGIL_CHAIN_NAME?: string;
  SIGIL_CONTRACT_ADDRESS?: string;
  SIGIL_VERSION?: string;
  /** Stripe (billing.md): secrets in production; the local emulator's keys under `npm start`. */
  STRIPE_SECRET_KEY?: string;
  STRIPE_PUBLISHABLE_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  /** Where the Stripe SDK sends its calls when not api.stripe.com: the local emulator's URL. */
  STRIPE_API_BASE?: string;
};
