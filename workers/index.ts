// The edge worker: every client talks to this Hono app (docs/design/api.md). It validates, reads the chain,
// checks signatures and forwards key derivation, writes and executions to an enclave.
import { waitUntil } from "cloudflare:workers";
import { createApp } from "./app.ts";
import { keepBackgroundWorkWith } from "./chain/keyCache.ts";

// The key cache's polls and re-reads run past the answer of the request that started them; this
// keeps that request's invocation alive until they end (the Node tests of app.ts have no runtime for it).
keepBackgroundWorkWith(waitUntil);

export { Budgets } from "./budgets/store.ts";
export { Transactions } from "./transactions/store.ts";
export { Delegations } from "./delegations/store.ts";
export { Ledger } from "./billing/ledger.ts";
export { Idempotency } from "./idempotency/store.ts";
export { RateLimiter } from "./ratelimit/limiter.ts";
export { Webhooks } from "./webhooks/store.ts";
export default createApp();
