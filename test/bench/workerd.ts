// The edge under workerd alone, for the edge benchmark. `wrangler dev` (what `npm start` and the
// end-to-end tests use) puts its own local proxy in front of the Worker, which costs about 5 ms a
// request on these machines and has no counterpart in production; the benchmark measures the
// edge itself. So it bundles the Worker exactly as `wrangler deploy` would (`--dry-run`), writes a
// workerd configuration with the bindings of wrangler.toml (the RateLimiter Durable Object, the
// variables) and serves it with the workerd binary wrangler itself runs, on 127.0.0.1. The soak
// (test/soak/) serves it the same way, billing on, and asks for the ledger inspector: a second
// worker on a port of its own, bound to the edge's Ledger objects, that answers a Ledger's own
// audit() and its entries — what no public route tells, for the soak's end-of-run audit.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { stopGroup } from "../../bin/stack/anvil.ts";
import { freePort, waitForEdge } from "../../bin/stack/edge.ts";
import { captureOutput } from "../../bin/stack/output.ts";

const root = join(import.meta.dirname, "../..");
const wranglerBin = join(root, "node_modules/wrangler/bin/wrangler.js");
/** The path of the workerd binary that wrangler runs (the `workerd` package's default export). */
const workerdBinary = (createRequire(import.meta.url)("workerd") as { default: string }).default;
const quiet = { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "warn", NO_COLOR: "1" };

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wranglerBin, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: quiet });
    const output = captureOutput(child, () => {});
    child.once("exit", (code) => (code === 0 ? resolve(output()) : reject(new Error(`wrangler ${args[0]} exited ${code}:\n${output().slice(-3000)}`))));
  });
}

/** A capnp text literal. */
const text = (s: string) => JSON.stringify(s);

/**
 * The ledger inspector's code: GET /audit?account=<master hash hex> answers `Ledger.audit()`,
 * GET /usage?account=…[&before=<entry id>] a page (100) of its entries, newest first (`Ledger.usage`).
 * Reads only; test-only (it is never part of the edge's bundle).
 */
const INSPECTOR = `export default {
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
`;

export type Workerd = {
  url: string;
  /** The ledger inspector's origin (`ledgerInspector` only). */
  inspectorUrl?: string;
  /** What workerd printed (the edge's log lines among it). */
  output(): string;
  stop(): Promise<void>;
};

export async function startWorkerd(options: {
  dir: string;
  vars: Record<string, string>;
  ledgerInspector?: boolean;
  /**
   * Keep the Durable Objects on disk in this folder. Without it they are in memory, which has no
   * SQLite: enough for the benchmark (billing off), not for the Ledger, Idempotency and Webhooks objects.
   */
  durableObjectsDir?: string;
}): Promise<Workerd> {
  const bundleDir = join(options.dir, "bundle");
  mkdirSync(bundleDir, { recursive: true });
  await run(["deploy", "--dry-run", "--outdir", bundleDir]);
  const port = await freePort();
  const inspectorPort = options.ledgerInspector ? await freePort() : undefined;
  if (options.ledgerInspector) writeFileSync(join(options.dir, "inspector.js"), INSPECTOR);
  const wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") });
  // wrangler.toml's [vars] first, then the caller's: the same precedence as an env file.
  const vars = { ...(wrangler.vars as Record<string, string>), ...options.vars };
  const objects = wrangler.durable_objects.bindings;
  const bindings = [
    ...objects.map((o: { name: string; class_name: string }) => `(name = ${text(o.name)}, durableObjectNamespace = ${text(o.class_name)})`),
    ...Object.entries(vars).map(([name, value]) => `(name = ${text(name)}, text = ${text(value)})`),
  ];
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "edge", worker = .edge),
    # The Worker reaches the local chain and enclave on loopback, which workerd's default
    # outbound network refuses.
    (name = "loopback", network = (allow = ["public", "private", "local"])),${options.durableObjectsDir === undefined ? "" : `
    (name = "objects", disk = (path = ${text(options.durableObjectsDir)}, writable = true)),`}${inspectorPort === undefined ? "" : `
    (name = "inspector", worker = .inspector),`}
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "edge")${inspectorPort === undefined ? "" : `,
    (name = "inspector", address = "127.0.0.1:${inspectorPort}", http = (), service = "inspector")`}],
);${inspectorPort === undefined ? "" : `
const inspector :Workerd.Worker = (
  modules = [(name = "inspector.js", esModule = embed "inspector.js")],
  compatibilityDate = ${text(wrangler.compatibility_date ?? "")},
  bindings = [(name = "LEDGER", durableObjectNamespace = (className = "Ledger", serviceName = "edge"))],
);`}
const edge :Workerd.Worker = (
  modules = [(name = "index.js", esModule = embed "bundle/index.js")],
  compatibilityDate = ${text(wrangler.compatibility_date ?? "")},
  bindings = [${bindings.join(", ")}],
  durableObjectNamespaces = [${objects.map((o: { name: string; class_name: string }) => `(className = ${text(o.class_name)}, uniqueKey = ${text(`${wrangler.name}-${o.class_name}`)}, enableSql = true)`).join(", ")}],
  durableObjectStorage = ${options.durableObjectsDir === undefined ? "(inMemory = void)" : `(localDisk = "objects")`},
  globalOutbound = "loopback",
);
`;
  const configFile = join(options.dir, "edge.capnp");
  writeFileSync(configFile, config, { mode: 0o600 });
  const child = spawn(workerdBinary, ["serve", configFile, "--experimental"], { cwd: options.dir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const output = captureOutput(child, () => {});
  const url = `http://127.0.0.1:${port}`;
  await waitForEdge("workerd", child, url, output, 30_000);
  return { url, ...(inspectorPort === undefined ? {} : { inspectorUrl: `http://127.0.0.1:${inspectorPort}` }), output, stop: () => stopGroup(child) };
}
