// What both benchmarks measure with: runs sent to a target (a POST over a keep-alive agent, or a
// request sealed through the attested channel) from `concurrency` clients at once, until `runs`
// answers; p50/p99 latency and runs per second; or one client taking turns between targets.
// Every answer must be a successful run, or the benchmark stops.
import { Agent, request } from "node:http";
import type { ChannelClient } from "../../shared/channel/client.ts";
import { median, watchProcesses, type ProcessCost } from "./proc.ts";

/**
 * One measurement: latency percentiles, runs per second, and for each watched process the CPU time
 * per run (ms) and resident memory over the window (MiB).
 */
export type Measured = {
  p50_ms: number;
  p99_ms: number;
  rps: number;
  cpu_ms_per_run?: Record<string, number>;
  rss_mib?: Record<string, { peak: number; steady: number }>;
};

// Up to 256 requests at once (bench:ledger goes to 128 clients).
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export function closeAgent(): void {
  agent.destroy();
}

export function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * A `fetch` for the benchmarks' channel client over the keep-alive agent above: undici's fetch
 * costs the client ~0.4 ms a request on these machines, which would be counted as the enclave's.
 * It answers what the channel client reads of a Response (status, ok, text, json).
 */
export const agentFetch: typeof fetch = (input, init) =>
  new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const body = typeof init?.body === "string" ? init.body : undefined;
    const headers = {
      ...(init?.headers as Record<string, string> | undefined),
      ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
    };
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: init?.method ?? "GET",
        agent,
        headers,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            text: async () => text,
            json: async () => JSON.parse(text) as unknown,
          } as Response);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });

/** Something to send one run to: `send` answers its status and body (parsed). */
export type Target = { name: string; send(): Promise<{ status: number; body: unknown }> };

/** A plain POST (the edge's public API). */
export function httpTarget(url: URL, headers: Record<string, string>, body: string): Target {
  return {
    name: url.pathname,
    async send() {
      const r = await post(url, headers, body);
      return { status: r.status, body: JSON.parse(r.text) as unknown };
    },
  };
}

/** An operation sealed to the enclave's channel key, as the edge sends it (each with its own seal, nonce and request id). */
export function channelTarget(client: ChannelClient, base: string, op: string, input: unknown): Target {
  return {
    name: `channel ${op}`,
    async send() {
      const answer = await client.call(base, { op, ids: { request_id: crypto.randomUUID() }, input });
      return answer.ok
        ? { status: 200, body: answer.output }
        : { status: answer.status, body: { error: answer.error } };
    },
  };
}

/** A successful run's answer, or the benchmark stops: a fast error is not a result. */
function check(target: Target, r: { status: number; body: unknown }): void {
  if (r.status !== 200 || (r.body as { has_error: boolean }).has_error)
    throw new Error(`${target.name}: ${r.status} ${JSON.stringify(r.body)}`);
}

function percentile(sorted: number[], p: number): number {
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 100) / 100;
}

/**
 * One client sending to each target in turn, `runs` times each: the targets share every moment of
 * the machine's load, so the difference of their latencies is what one adds over the other.
 */
export async function measureInTurn(targets: Target[], runs: number): Promise<Measured[]> {
  const latencies = targets.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) {
    for (const [k, t] of targets.entries()) {
      const started = performance.now();
      const r = await t.send();
      latencies[k]!.push(performance.now() - started);
      check(t, r);
    }
  }
  return latencies.map((l) => {
    const seconds = l.reduce((a, b) => a + b, 0) / 1000;
    l.sort((a, b) => a - b);
    // The rate one client would reach on this path alone: its runs over the time they took.
    return { p50_ms: percentile(l, 0.5), p99_ms: percentile(l, 0.99), rps: Math.round(runs / seconds) };
  });
}

/** What a window cost the watched processes, per run. */
function perRun(costs: Record<string, ProcessCost>, runs: number): Pick<Measured, "cpu_ms_per_run" | "rss_mib"> {
  const cpu: Record<string, number> = {};
  const rss: Record<string, { peak: number; steady: number }> = {};
  for (const [name, c] of Object.entries(costs)) {
    cpu[name] = Math.round((c.cpu_ms / runs) * 1000) / 1000;
    rss[name] = { peak: c.peak_rss_mib, steady: c.steady_rss_mib };
  }
  return { cpu_ms_per_run: cpu, rss_mib: rss };
}

/**
 * `runs` runs from `concurrency` clients at once; with `pids`, the CPU time and memory of those
 * processes over the same window (the benchmark's own process may be one: process.pid).
 */
export async function measure(
  target: Target,
  concurrency: number,
  runs: number,
  pids?: Record<string, number>,
): Promise<Measured> {
  const watch = pids ? watchProcesses(pids) : undefined;
  const latencies: number[] = [];
  let next = 0;
  const client = async () => {
    while (next < runs) {
      next++;
      const t = performance.now();
      const r = await target.send();
      latencies.push(performance.now() - t);
      check(target, r);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, client));
  const seconds = (performance.now() - started) / 1000;
  const costs = watch?.stop();
  latencies.sort((a, b) => a - b);
  return {
    p50_ms: percentile(latencies, 0.5),
    p99_ms: percentile(latencies, 0.99),
    rps: Math.round(runs / seconds),
    ...(costs ? perRun(costs, runs) : {}),
  };
}

/**
 * The median of `repeats` measurements, figure by figure (each figure's own median: on a shared
 * machine one slow window should move none of them).
 */
export function medianOf(all: Measured[]): Measured {
  const pick = (f: (m: Measured) => number | undefined) =>
    median(all.map(f).filter((v): v is number => v !== undefined));
  const first = all[0] as Measured;
  const out: Measured = { p50_ms: pick((m) => m.p50_ms), p99_ms: pick((m) => m.p99_ms), rps: pick((m) => m.rps) };
  if (first.cpu_ms_per_run)
    out.cpu_ms_per_run = Object.fromEntries(
      Object.keys(first.cpu_ms_per_run).map((n) => [n, pick((m) => m.cpu_ms_per_run?.[n])]),
    );
  if (first.rss_mib) {
    out.rss_mib = Object.fromEntries(
      Object.keys(first.rss_mib).map((n) => [
        n,
        { peak: Math.max(...all.map((m) => m.rss_mib?.[n]?.peak ?? 0)), steady: pick((m) => m.rss_mib?.[n]?.steady) },
      ]),
    );
  }
  return out;
}

/** `measure` `repeats` times in a row, and the median of each figure (medianOf), with every single one. */
export async function measureRepeated(
  target: Target,
  concurrency: number,
  runs: number,
  pids: Record<string, number>,
  repeats = 3,
): Promise<Measured & { each: Measured[] }> {
  const each: Measured[] = [];
  for (let i = 0; i < repeats; i++) each.push(await measure(target, concurrency, runs, pids));
  return { ...medianOf(each), each };
}
