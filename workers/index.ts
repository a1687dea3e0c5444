// The edge worker: every client talks to this Hono app (docs/design/api.md). It validates, reads the chain,
// checks signatures and forwards key derivation, writes and executions to an enclave.
import { createApp } from "./app.ts";

export { Budgets } from "./budgets/store.ts";
export { Ledger } from "./billing/ledger.ts";
export { Idempotency } from "./idempotency/store.ts";
export { RateLimiter } from "./ratelimit/limiter.ts";
export { Webhooks } from "./webhooks/store.ts";
export default createApp();
