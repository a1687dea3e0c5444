// The stack the soak runs against, every part real: anvil with AccountConfig, reached by the
// enclave and the edge only through a loopback TCP proxy the soak can stop (test/harness/tcpProxy.ts);
// the enclave as its own process, restartable with SIGKILL (test/harness/stack.ts); the local
// Stripe emulator, delivering its webhooks to the edge; the edge as the production bundle under
// workerd (test/bench/workerd.ts), billing on, with the ledger inspector beside it for the audit;
// and a loopback receiver for the accounts' own webhooks (test/harness/webhookReceiver.ts). Scripts may fetch only the
// fetch target, whose /count tells how many times each run really ran.
//
// The edge can be killed (SIGKILL of workerd's process group: the isolate dies with its credit leases
// and its charges not yet committed) and started again: the same workerd configuration, so the same
// ports and the same Durable Objects' SQLite files. The Ledgers' lease tables are read from those files
// (read-only, SQLite's WAL lets a reader in beside workerd): which leases the killed edge held, and at
// the audit what is left of them until they expire (docs/design/billing.md, Leases).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { stopGroup } from "../../bin/stack/anvil.ts";
import { waitForEdge } from "../../bin/stack/edge.ts";
import { captureOutput } from "../../bin/stack/output.ts";
import { startStripeEmulator, type StripeEmulator } from "../../emulators/stripe.ts";
import { startWorkerd, type SideWorker } from "../bench/workerd.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";
import type { TcpProxy } from "../harness/tcpProxy.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../harness/webhookReceiver.ts";

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
  detail: {
    hold_expired?: true;
    settled_by_enclave?: true;
    payment_intent?: string;
    operation?: string;
    cid?: string;
  };
};

/** A credit lease as the Ledger keeps it (its `leases` table, ledgerSchema.ts). */
export type LeaseRow = { id: string; keyHash: string | null; cents: number; inFlight: number; expiresAt: number };
/** A run (or write) a lease's isolate told the Ledger was in flight (`lease_open`): charged in full should the lease expire. */
export type LeaseOpenRow = { ref: string; leaseId: string; cents: number; op: string | null };
/** A Ledger's leases and their runs in flight, read from its SQLite file. */
export type LedgerLeases = { leases: LeaseRow[]; open: LeaseOpenRow[] };

/** One SIGKILL of the edge: when, and the leases its isolate held then (every Ledger's, by the account's file). */
export type EdgeKill = { at: number; leases: LeaseRow[]; open: LeaseOpenRow[] };

/** The edge under workerd, killable and started again on the same ports with the same storage. */
export type SoakEdge = {
  url: string;
  /** The ledger inspector's URL (a Worker in the same workerd process). */
  sideUrl: string;
  /** The running workerd process. */
  readonly pid: number;
  /** What every workerd process of the edge printed, in order. */
  output(): string;
  /**
   * SIGKILL to workerd's process group (no shutdown: the isolate's leases, its commits not yet made,
   * the requests in flight are gone); resolves once it is gone, with the leases it held (read while
   * nothing runs).
   */
  kill(): Promise<EdgeKill>;
  /** Starts workerd again (after `kill`), on the same ports with the same Durable Objects' files; resolves once it answers. */
  start(): Promise<void>;
  /** Every kill so far. */
  readonly kills: EdgeKill[];
  stop(): Promise<void>;
};

/**
 * The ledger inspector, a Worker beside the edge bound to its Ledger objects: GET /audit?account=<master
 * hash hex> answers `Ledger.audit()`, GET /usage?account=…[&before=<entry id>] a page (100) of its
 * entries, newest first (`Ledger.usage`), GET /id?account=… the object's id (its SQLite file's name). Reads
 * only; test-only (never part of the edge's bundle).
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
    // The object's id: its SQLite file's name (the leases are read from it).
    if (url.pathname === "/id") return Response.json({ id: env.LEDGER.idFromName(account).toString() });
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
  edge: SoakEdge;
  /**
   * A Ledger's own audit(), all its entries (oldest first), and its leases with their runs in flight
   * (read from its SQLite file), by the account's master hash (hex).
   */
  ledger: {
    audit(master: string): Promise<LedgerAudit>;
    entries(master: string): Promise<LedgerEntry[]>;
    leases(master: string): Promise<LedgerLeases>;
  };
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
    const first = await startWorkerd({
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
    const edge = killableEdge(dir, first);
    stops.push(() => edge.stop());
    stripe.setWebhookUrls([`${edge.url}/core/v1/billing/webhook`]);
    const inspector = edge.sideUrl;
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
        async leases(master) {
          const { id } = await inspect<{ id: string }>(`/id?account=${master}`);
          const file = join(ledgerFolder(dir), `${id}.sqlite`);
          return existsSync(file) ? readLeases(file) : { leases: [], open: [] };
        },
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The path of the workerd binary wrangler runs (as test/bench/workerd.ts starts it). */
const workerdBinary = (createRequire(import.meta.url)("workerd") as { default: string }).default;

/** The folder of the Ledger objects' SQLite files under workerd's storage in `dir` (test/bench/workerd.ts). */
function ledgerFolder(dir: string): string {
  const objects = join(dir, "objects");
  const name = readdirSync(objects).find((n) => n.endsWith("-Ledger"));
  if (!name) throw new Error(`no Ledger storage under ${objects}`);
  return join(objects, name);
}

/** A Ledger's leases and their runs in flight, from its SQLite file (read-only; a Ledger not yet leased from has none). */
export function readLeases(file: string): LedgerLeases {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const tables = new Set(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => String(r.name)),
    );
    if (!tables.has("leases")) return { leases: [], open: [] };
    const leases = db
      .prepare("SELECT id, key_hash, cents, in_flight, expires_at FROM leases")
      .all()
      .map((r) => ({
        id: String(r.id),
        keyHash: r.key_hash === null ? null : String(r.key_hash),
        cents: Number(r.cents),
        inFlight: Number(r.in_flight),
        expiresAt: Number(r.expires_at),
      }));
    const open = db
      .prepare("SELECT ref, lease_id, cents, op FROM lease_open")
      .all()
      .map((r) => ({
        ref: String(r.ref),
        leaseId: String(r.lease_id),
        cents: Number(r.cents),
        op: r.op === null ? null : String(r.op),
      }));
    return { leases, open };
  } finally {
    db.close();
  }
}

/**
 * The edge `first` (started by startWorkerd in `dir`), made killable: `kill` SIGKILLs its process
 * group, `start` serves the same configuration again — the same ports (the edge's and the ledger
 * inspector's), the same Durable Objects' files.
 */
function killableEdge(dir: string, first: Awaited<ReturnType<typeof startWorkerd>>): SoakEdge {
  let pid = first.pid;
  /** A process started here (after a kill), or none: the first one is startWorkerd's. */
  let child: ChildProcess | undefined;
  let alive = true;
  const outputs: Array<() => string> = [first.output];
  const kills: EdgeKill[] = [];
  const sideUrl = first.sideUrl as string;
  const gone = async (p: number) => {
    for (let i = 0; i < 200; i++) {
      try {
        process.kill(p, 0);
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`workerd ${p} still there 5 s after SIGKILL`);
  };
  return {
    url: first.url,
    sideUrl,
    get pid() {
      return pid;
    },
    kills,
    output: () =>
      outputs.map((o, i) => (i === 0 ? o() : `--- the edge killed (SIGKILL) and started again\n${o()}`)).join(""),
    async kill() {
      if (!alive) throw new Error("the edge is not running");
      const at = Date.now();
      alive = false;
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // the group is gone already
      }
      await gone(pid);
      // Nothing writes the Ledgers' files now: the leases the killed isolate held, every account's
      // (not those an earlier kill left, which live on until they expire).
      const earlier = new Set(kills.flatMap((k) => k.leases.map((l) => l.id)));
      const leases: LeaseRow[] = [];
      const open: LeaseOpenRow[] = [];
      const folder = ledgerFolder(dir);
      for (const name of readdirSync(folder)) {
        if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
        const read = readLeases(join(folder, name));
        const mine = read.leases.filter((l) => !earlier.has(l.id) && l.expiresAt > at);
        const ids = new Set(mine.map((l) => l.id));
        leases.push(...mine);
        open.push(...read.open.filter((o) => ids.has(o.leaseId)));
      }
      const kill = { at, leases, open };
      kills.push(kill);
      return kill;
    },
    async start() {
      if (alive) throw new Error("the edge is running");
      const next = spawn(workerdBinary, ["serve", join(dir, "edge.capnp"), "--experimental"], {
        cwd: dir,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
      if (next.pid === undefined) throw new Error("workerd did not start");
      const output = captureOutput(next, () => {});
      outputs.push(output);
      child = next;
      pid = next.pid;
      alive = true;
      await waitForEdge("workerd", next, first.url, output, 30_000);
      // The inspector, in the same process, on its own port.
      for (let i = 0; ; i++) {
        try {
          await (await fetch(`${sideUrl}/`, { signal: AbortSignal.timeout(1_000) })).text();
          break;
        } catch {
          // not listening yet
        }
        if (i > 100) throw new Error("the ledger inspector did not answer after the edge's restart");
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      if (!alive) return;
      alive = false;
      if (child) await stopGroup(child);
      else await first.stop();
    },
  };
}
