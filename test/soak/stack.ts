// The stack the soak runs against, every part real: anvil with AccountConfig, reached by the
// enclave and the edge only through a loopback TCP proxy the soak can stop (test/harness/tcpProxy.ts);
// the enclave as its own process, restartable with SIGKILL (test/harness/stack.ts); the local
// Stripe emulator, delivering its webhooks to the edge; the edge as the production bundle under
// workerd (test/bench/workerd.ts), billing on, with the ledger inspector beside it for the audit;
// and a loopback receiver for the accounts' own webhooks (receiver.ts). Scripts may fetch only the
// fetch target, whose /count tells how many times each run really ran.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startStripeEmulator, type StripeEmulator } from "../../emulators/stripe.ts";
import { startWorkerd, type SideWorker, type Workerd } from "../bench/workerd.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";
import type { TcpProxy } from "../harness/tcpProxy.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./receiver.ts";

/** What the Ledger's own audit() answers (workers/billing/ledger.ts, LedgerAudit). */
export type LedgerAudit = {
  settledCents: number;
  heldCents: number;
  freeCents: number;
  entriesSumCents: number;
  prunedCents: number;
  consistent: boolean;
};
/** One Ledger entry as `Ledger.usage` answers it. */
export type LedgerEntry = {
  id: number;
  createdAt: number;
  kind: "credit" | "charge" | "adjustment";
  op: string | null;
  cents: number;
  ref: string;
  keyHash: string | null;
  detail: { hold_expired?: true; payment_intent?: string; operation?: string; cid?: string };
};

/**
 * The ledger inspector, a Worker beside the edge bound to its Ledger objects: GET /audit?account=<master
 * hash hex> answers `Ledger.audit()`, GET /usage?account=…[&before=<entry id>] a page (100) of its
 * entries, newest first (`Ledger.usage`). Reads only; test-only (never part of the edge's bundle).
 */
const LEDGER_INSPECTOR: SideWorker = {
  objects: { LEDGER: "Ledger" },
  module: `export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const account = url.searchParams.get("account") ?? "";
    if (!/^[0-9a-f]{64}$/.test(account)) return new Response("account must be a master hash (64 hex)", { status: 400 });
    const ledger = env.LEDGER.get(env.LEDGER.idFromName(account));
    if (url.pathname === "/audit") return Response.json(await ledger.audit());
    if (url.pathname === "/usage") {
      const before = url.searchParams.get("before");
      return Response.json(await ledger.usage({ limit: 100, ...(before ? { before: Number(before) } : {}) }));
    }
    return new Response("not found", { status: 404 });
  },
};
`,
};

export type SoakStack = {
  /** The edge's API base, http://127.0.0.1:<port>/core/v1. */
  api: string;
  chain: TestStack;
  /** The proxy between the services and anvil. */
  rpc: TcpProxy;
  stripe: StripeEmulator;
  receiver: WebhookReceiver;
  /** The fetch target's origin: runs call its /count. */
  counterUrl: string;
  edge: Workerd;
  /** A Ledger's own audit(), and all its entries (oldest first), by the account's master hash (hex). */
  ledger: { audit(master: string): Promise<LedgerAudit>; entries(master: string): Promise<LedgerEntry[]> };
  stop(): Promise<void>;
};

/** Seconds between the soak chain's blocks unless told otherwise. */
export const DEFAULT_CHAIN_BLOCK_SECONDS = 1;

/**
 * `chainBlockSeconds`: anvil mines a block every this many seconds (the default 1, as the chains the
 * service runs on do; Base mines every 2 s), or a block per transaction when 0 — whose cost grows
 * with the chain's length in anvil 1.7.1 (bin/stack/anvil.ts), so that a long soak would measure
 * the chain's slowdown more than the service.
 */
export async function startSoakStack(
  options: { sandboxWorkers?: number; chainBlockSeconds?: number } = {},
): Promise<SoakStack> {
  const blockSeconds = options.chainBlockSeconds ?? DEFAULT_CHAIN_BLOCK_SECONDS;
  const chain = await startTestStack({
    chainProxy: true,
    ...(blockSeconds > 0 ? { chainBlockSeconds: blockSeconds } : {}),
    enclaveEnv: { SIGIL_SANDBOX_WORKERS: String(options.sandboxWorkers ?? 2) },
  });
  const stops: Array<() => Promise<void>> = [() => chain.stop()];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const stripe = await startStripeEmulator({ retryBaseMs: 200, maxAttempts: 8 });
    stops.push(() => stripe.stop());
    const receiver = await startWebhookReceiver();
    stops.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), "sigil-soak-"));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    const edge = await startWorkerd({
      dir,
      side: LEDGER_INSPECTOR,
      vars: {
        SIGIL_ENV: "test",
        SIGIL_ENCLAVE_URLS: chain.enclaveUrl,
        SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
        SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
        SIGIL_RPC_URL: chain.serviceRpcUrl,
        SIGIL_PUBLIC_RPC_URL: chain.serviceRpcUrl,
        SIGIL_CONTRACT_ADDRESS: chain.contract,
        SIGIL_BILLING: "on",
        STRIPE_API_BASE: stripe.url,
        STRIPE_SECRET_KEY: stripe.secretKey,
        STRIPE_PUBLISHABLE_KEY: stripe.publishableKey,
        STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
        // The accounts' webhooks are retried after 1 s, 3 s, 9 s…, so the end of a run sees them all.
        SIGIL_WEBHOOK_RETRY_BASE_MS: "1000",
        // All the soak's clients share one address and a few keys; the rate limits have their own
        // tests, and here they would only measure themselves.
        SIGIL_RATE_LIMIT_PER_KEY: "100000000",
        SIGIL_RATE_LIMIT_PER_IP: "100000000",
        SIGIL_RATE_LIMIT_OPEN_PER_IP: "100000000",
        SIGIL_OPEN_WRITES_PER_HOUR: "100000000",
        // Nor may one client hold only a share of admission's places: the soak's clients are one
        // client to the edge, and admission's limit is what the soak measures.
        SIGIL_EDGE_CLIENT_SHARE_PERCENT: "100",
      },
    });
    stops.push(() => edge.stop());
    stripe.setWebhookUrls([`${edge.url}/core/v1/billing/webhook`]);
    const inspector = edge.sideUrl as string;
    const inspect = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${inspector}${path}`);
      if (!res.ok) throw new Error(`ledger inspector ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    return {
      api: `${edge.url}/core/v1`,
      chain,
      rpc: chain.chainProxy as TcpProxy,
      stripe,
      receiver,
      counterUrl: chain.fetchTargetUrl,
      edge,
      ledger: {
        audit: (master) => inspect<LedgerAudit>(`/audit?account=${master}`),
        async entries(master) {
          const all: LedgerEntry[] = [];
          let before: number | undefined;
          for (;;) {
            const page = await inspect<{ entries: LedgerEntry[]; more: boolean }>(
              `/usage?account=${master}${before === undefined ? "" : `&before=${before}`}`,
            );
            all.push(...page.entries);
            if (!page.more || page.entries.length === 0) break;
            before = page.entries[page.entries.length - 1]!.id;
          }
          return all.reverse();
        },
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
