// The edge under workerd alone, for the edge and ledger benchmarks. `wrangler dev` (what `npm start` and the
// end-to-end tests use) puts its own local proxy in front of the Worker, which costs about 5 ms a
// request on these machines and has no counterpart in production; the benchmark measures the
// edge itself. So it bundles the Worker exactly as `wrangler deploy` would (`--dry-run`), writes a
// workerd configuration with the bindings of wrangler.toml (the Durable Objects, SQLite files in the
// caller's folder, and the variables) and serves it with the workerd binary wrangler itself runs, on
// 127.0.0.1. A benchmark may add a side Worker bound to the edge's Durable Object classes
// (bench:ledger drives the Ledger through one; the soak reads each Ledger's audit() through one).
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { unstable_readConfig } from "wrangler";
import { stopGroup } from "../../bin/stack/anvil.ts";
import { freePort, waitForEdge } from "../../bin/stack/edge.ts";
import { captureOutput } from "../../bin/stack/output.ts";

const root = join(import.meta.dirname, "../..");
const wranglerBin = join(root, "node_modules/wrangler/bin/wrangler.js");
/** The path of the workerd binary that wrangler runs (the `workerd` package's default export). */
const workerdBinary = (createRequire(import.meta.url)("workerd") as { default: string }).default;
const quiet = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_LOG: "warn",
  NO_COLOR: "1",
};

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wranglerBin, ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: quiet,
    });
    const output = captureOutput(child, () => {});
    child.once("exit", (code) =>
      code === 0
        ? resolve(output())
        : reject(new Error(`wrangler ${args[0]} exited ${code}:\n${output().slice(-3000)}`)),
    );
  });
}

/** A capnp text literal. */
const text = (s: string) => JSON.stringify(s);

/**
 * A second Worker in the same workerd process, for a benchmark to reach the edge's Durable Objects
 * without a route of the edge's own: `module` is its ES module's source; `objects` binds, under
 * each name, the edge's Durable Object class of that name (the same namespace the edge uses).
 */
export type SideWorker = { module: string; objects: Record<string, string> };

export type Workerd = {
  url: string;
  /** The side worker's URL, when there is one. */
  sideUrl?: string;
  /** The URLs of the edge's copies in the same process (`isolates`), the first being `url`. */
  urls: string[];
  /** The workerd process (its CPU time is in /proc/<pid>/stat). */
  pid: number;
  /** The loopback port of its inspector, when it was opened. */
  inspectorPort?: number;
  /** The bundle it serves, to serve again from another process without building it twice. */
  bundleDir: string;
  /** What workerd printed (the edge's log lines among it). */
  output(): string;
  stop(): Promise<void>;
};

export async function startWorkerd(options: {
  dir: string;
  vars: Record<string, string>;
  bundleDir?: string;
  side?: SideWorker;
  /**
   * How many copies of the edge to serve, each its own Worker (so its own isolate, with its own
   * memory: key cache, credit leases) on its own port, all bound to the first one's Durable
   * Objects: what several edge machines serving one account look like to its Ledger. Default 1.
   */
  isolates?: number;
  /** Opens workerd's inspector on this loopback port (`profileWorkerd` records a CPU profile through it). */
  inspectorPort?: number;
}): Promise<Workerd> {
  mkdirSync(options.dir, { recursive: true });
  const bundleDir = options.bundleDir ?? join(options.dir, "bundle");
  if (!options.bundleDir) {
    mkdirSync(bundleDir, { recursive: true });
    await run(["deploy", "--dry-run", "--outdir", bundleDir]);
  }
  const port = await freePort();
  const copies = Math.max(1, options.isolates ?? 1);
  const copyPorts: number[] = [];
  for (let i = 1; i < copies; i++) copyPorts.push(await freePort());
  const sidePort = options.side ? await freePort() : undefined;
  const wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") });
  // wrangler.toml's [vars] first, then the caller's: the same precedence as an env file.
  const vars = { ...(wrangler.vars as Record<string, string>), ...options.vars };
  const objects = wrangler.durable_objects.bindings;
  const bindings = [
    ...objects.map(
      (o: { name: string; class_name: string }) =>
        `(name = ${text(o.name)}, durableObjectNamespace = ${text(o.class_name)})`,
    ),
    ...Object.entries(vars).map(([name, value]) => `(name = ${text(name)}, text = ${text(value)})`),
  ];
  const objectsDir = join(options.dir, "objects");
  mkdirSync(objectsDir, { recursive: true });
  const side = options.side;
  if (side) writeFileSync(join(options.dir, "side.js"), side.module);
  const sideBindings = Object.entries(side?.objects ?? {}).map(
    ([name, className]) =>
      `(name = ${text(name)}, durableObjectNamespace = (className = ${text(className)}, serviceName = "edge"))`,
  );
  const copyBindings = [
    ...objects.map(
      (o: { name: string; class_name: string }) =>
        `(name = ${text(o.name)}, durableObjectNamespace = (className = ${text(o.class_name)}, serviceName = "edge"))`,
    ),
    ...Object.entries(vars).map(([name, value]) => `(name = ${text(name)}, text = ${text(value)})`),
  ];
  const module = text(relative(options.dir, join(bundleDir, "index.js")));
  const copyWorkers = copyPorts
    .map(
      (_, i) => `
const edge${i + 2} :Workerd.Worker = (
  modules = [(name = "index.js", esModule = embed ${module})],
  compatibilityDate = ${text(wrangler.compatibility_date ?? "")},
  bindings = [${copyBindings.join(", ")}],
  globalOutbound = "loopback",
);`,
    )
    .join("");
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "edge", worker = .edge),${copyPorts
      .map(
        (_, i) => `
    (name = "edge${i + 2}", worker = .edge${i + 2}),`,
      )
      .join("")}
    # The Worker reaches the local chain and enclave on loopback, which workerd's default
    # outbound network refuses.
    (name = "loopback", network = (allow = ["public", "private", "local"])),
    # The Durable Objects' SQLite files (workerd's in-memory storage has no SQL API, which the
    # Ledger, Idempotency and Webhooks objects use).
    (name = "objects", disk = (path = ${text(objectsDir)}, writable = true)),${
      side
        ? `
    (name = "side", worker = .side),`
        : ""
    }
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "edge")${copyPorts.map((p, i) => `, (name = "http${i + 2}", address = "127.0.0.1:${p}", http = (), service = "edge${i + 2}")`).join("")}${side ? `, (name = "side", address = "127.0.0.1:${sidePort}", http = (), service = "side")` : ""}],
);${
    side
      ? `
const side :Workerd.Worker = (
  modules = [(name = "side.js", esModule = embed "side.js")],
  compatibilityDate = ${text(wrangler.compatibility_date ?? "")},
  bindings = [${sideBindings.join(", ")}],
  globalOutbound = "loopback",
);`
      : ""
  }${copyWorkers}
const edge :Workerd.Worker = (
  modules = [(name = "index.js", esModule = embed ${text(relative(options.dir, join(bundleDir, "index.js")))})],
  compatibilityDate = ${text(wrangler.compatibility_date ?? "")},
  bindings = [${bindings.join(", ")}],
  durableObjectNamespaces = [${objects.map((o: { name: string; class_name: string }) => `(className = ${text(o.class_name)}, uniqueKey = ${text(`${wrangler.name}-${o.class_name}`)}, enableSql = true)`).join(", ")}],
  durableObjectStorage = (localDisk = "objects"),
  globalOutbound = "loopback",
);
`;
  const configFile = join(options.dir, "edge.capnp");
  writeFileSync(configFile, config, { mode: 0o600 });
  // SIGIL_BENCH_INSPECTOR=<port>: workerd's inspector on that loopback port (a CPU profile of the edge).
  const inspector = options.inspectorPort ?? process.env.SIGIL_BENCH_INSPECTOR;
  const child = spawn(
    workerdBinary,
    ["serve", configFile, "--experimental", ...(inspector ? [`--inspector-addr=127.0.0.1:${inspector}`] : [])],
    {
      cwd: options.dir,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const output = captureOutput(child, () => {});
  const url = `http://127.0.0.1:${port}`;
  await waitForEdge("workerd", child, url, output, 30_000);
  for (const p of copyPorts) await waitForEdge("workerd", child, `http://127.0.0.1:${p}`, output, 30_000);
  return {
    url,
    urls: [url, ...copyPorts.map((p) => `http://127.0.0.1:${p}`)],
    ...(sidePort ? { sideUrl: `http://127.0.0.1:${sidePort}` } : {}),
    pid: child.pid!,
    ...(inspector ? { inspectorPort: Number(inspector) } : {}),
    bundleDir,
    output,
    stop: () => stopGroup(child),
  };
}

/** A V8 CPU profile, as the inspector's `Profiler.stop` answers it (test/bench/profile.ts reads it). */
export type InspectorProfile = Parameters<typeof import("./profile.ts").summarizeProfile>[0];

/**
 * Records a CPU profile of the Worker `service` of the workerd process whose inspector is on `port`
 * while `work` runs (the Worker's Durable Objects run in its isolate, so their JavaScript is in it
 * too), sampling every `intervalUs`.
 */
export async function profileWorkerd<T>(
  port: number,
  service: string,
  work: () => Promise<T>,
  intervalUs = 200,
): Promise<{ result: T; profile: InspectorProfile }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    id: string;
    title?: string;
    webSocketDebuggerUrl: string;
  }>;
  const target = targets.find((t) => t.id === service || t.title === service) ?? targets[0];
  if (!target) throw new Error(`workerd inspector on ${port} lists no Worker`);
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`inspector ${target.webSocketDebuggerUrl} refused`)), {
      once: true,
    });
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.addEventListener("message", (e) => {
    const msg = JSON.parse(String(e.data)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
  });
  const send = (method: string, params: unknown = {}) =>
    new Promise<unknown>((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: intervalUs });
    await send("Profiler.start");
    const result = await work();
    const { profile } = (await send("Profiler.stop")) as { profile: InspectorProfile };
    return { result, profile };
  } finally {
    ws.close();
  }
}
