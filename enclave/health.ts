// The enclave's health, in two reports (docs/design/api.md, Public information; docs/design/keys-and-authz.md,
// "Permission cache and chain listener"). The public one, `GET /health`, says what a load balancer or an outsider needs and
// nothing an attacker could use: serving or not, this instance's id, the listener's lag and blocks,
// whether it is stalled, the chain, the payer addresses (the operator registers them on chain from
// here). Everything else — payer balances, the listener's last error (RPC details), the sandbox,
// the cache, the channel, memory — is in the internal report, reached only through the attested
// channel (`GET /internal/v1/health`), which the edge's /health reads.
import type { ChainListener } from "./authz/listener.ts";
import type { Enclave } from "./operations/context.ts";

export type HealthParts = {
  enclave: Enclave;
  listener: ChainListener;
  /** This CVM's instance id (/info's). */
  instanceId: string;
  /** Channel sessions held now. */
  channelSessions: () => number;
};

export type PublicHealth = {
  status: "ok" | "degraded";
  instance_id: string;
  account_event_listener_lag_seconds: number | null;
  listener: { last_block: string | null; chain_head: string | null; stalled: boolean; stalled_after_seconds: number };
  chain: { chain_id: number; contract_address: string };
  payers: string[];
};

export type InternalHealth = Omit<PublicHealth, "listener" | "chain" | "payers"> & {
  listener: PublicHealth["listener"] & { last_error: string | null };
  chain: PublicHealth["chain"] & { reachable: boolean };
  payers: Array<{ address: string; balance_wei: string | null; low: boolean | null }>;
  sandbox: {
    workers: number;
    active_runs: number;
    capacity: number;
    /** Workers replaced after a crash or because a run's code could not be ended alone. */
    worker_restarts: number;
    /** Workers replaced because their heap passed its threshold (between runs). */
    worker_retirements: number;
    /** Slices of runs' code ended from outside at their deadline (the workers kept). */
    slice_terminations: number;
    /**
     * Wallet and action keys runs asked the service thread for (a round trip between threads each),
     * and uses of wallets' keys offered with a run instead (operations/sigilAction.ts).
     */
    keys_asked: number;
    offered_keys_used: number;
    /** The heaps of all runs' QuickJS instances, and the budget past which new runs are refused. */
    heap_mb: number;
    memory_budget_mb: number;
  };
  cache: { entries: number; hits: number; misses: number };
  channel: { sessions: number };
  /** Run receipts signed, and the batches they were signed in (one signature each). */
  receipts: { signed: number; batches: number };
  memory: { rss_mb: number; heap_used_mb: number; external_mb: number };
};

/**
 * The public report; `serving` is false (503) when the listener is stalled: the instance would
 * authorize from a cache that no longer hears revocations. Costs no chain call, so asking it
 * often costs the enclave nothing.
 */
export function publicHealth(parts: HealthParts): { serving: boolean; body: PublicHealth } {
  const { enclave, listener } = parts;
  const status = listener.status();
  return {
    serving: !status.stalled,
    body: {
      status: status.stalled ? "degraded" : "ok",
      instance_id: parts.instanceId,
      account_event_listener_lag_seconds: status.lagSeconds === null ? null : Math.round(status.lagSeconds * 10) / 10,
      listener: {
        last_block: status.lastBlock?.toString() ?? null,
        chain_head: status.chainHead?.toString() ?? null,
        stalled: status.stalled,
        stalled_after_seconds: listener.stalledAfterSeconds,
      },
      chain: { chain_id: enclave.chain.chain.id, contract_address: enclave.chain.contract.toLowerCase() },
      payers: enclave.payers.addresses.map((a) => a.toLowerCase()),
    },
  };
}

/** The whole report, for the edge: the public one plus the payers' balances (one chain call) and the internals. */
export async function internalHealth(parts: HealthParts): Promise<{ serving: boolean; body: InternalHealth }> {
  const { enclave, listener } = parts;
  const { serving, body } = publicHealth(parts);
  let payers: InternalHealth["payers"];
  let reachable = true;
  try {
    payers = (await enclave.payers.balances()).map((p) => ({
      address: p.address.toLowerCase(),
      balance_wei: p.balance_wei,
      low: p.low,
    }));
  } catch {
    reachable = false;
    payers = body.payers.map((address) => ({ address, balance_wei: null, low: null }));
  }
  const ok = serving && reachable;
  return {
    serving: ok,
    body: {
      ...body,
      status: ok ? "ok" : "degraded",
      listener: { ...body.listener, last_error: listener.status().lastError },
      chain: { ...body.chain, reachable },
      payers,
      sandbox: {
        workers: enclave.config.sandboxWorkers,
        active_runs: enclave.sandbox.active,
        capacity: enclave.sandbox.capacity,
        worker_restarts: enclave.sandbox.restarts,
        worker_retirements: enclave.sandbox.retirements,
        slice_terminations: enclave.sandbox.terminations,
        keys_asked: enclave.sandbox.keysAsked,
        offered_keys_used: enclave.sandbox.offeredKeysUsed,
        heap_mb: Math.round(enclave.sandbox.heapBytes / (1 << 20)),
        memory_budget_mb: Math.round(enclave.config.sandboxMemoryBytes / (1 << 20)),
      },
      cache: { entries: enclave.cache.size, hits: enclave.cache.hits, misses: enclave.cache.misses },
      channel: { sessions: parts.channelSessions() },
      receipts: { signed: enclave.receipts.stats.receipts, batches: enclave.receipts.stats.batches },
      memory: memoryReport(),
    },
  };
}

function memoryReport(): InternalHealth["memory"] {
  const m = process.memoryUsage();
  const mb = (n: number) => Math.round((n / 1_048_576) * 10) / 10;
  // rss covers the sandbox workers too (they are threads of this process); heap is this thread's.
  return { rss_mb: mb(m.rss), heap_used_mb: mb(m.heapUsed), external_mb: mb(m.external) };
}
