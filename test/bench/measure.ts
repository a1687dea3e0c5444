// What both benchmarks measure with: POSTs over a keep-alive agent, from `concurrency` clients at
// once, until `runs` answers; p50/p99 latency and runs per second. Every answer must be a
// successful run, or the benchmark stops: a fast error is not a result.
import { Agent, request } from "node:http";

export type Measured = { p50_ms: number; p99_ms: number; rps: number };

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function closeAgent(): void {
  agent.destroy();
}

export function post(url: URL, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers } },
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

export async function measure(url: URL, headers: Record<string, string>, body: string, concurrency: number, runs: number): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const client = async () => {
    while (next < runs) {
      next++;
      const t = performance.now();
      const r = await post(url, headers, body);
      latencies.push(performance.now() - t);
      if (r.status !== 200 || (JSON.parse(r.text) as { has_error: boolean }).has_error) throw new Error(`${url.pathname}: ${r.status} ${r.text}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, client));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 100) / 100;
  return { p50_ms: pct(0.5), p99_ms: pct(0.99), rps: Math.round(runs / seconds) };
}
