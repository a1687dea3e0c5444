// A loopback web server that scripts' fetch tests reach (the enclave allow-lists exactly its
// host:port): plain answers, redirects to wherever a test asks, oversized and never-ending bodies,
// a counter of calls by token (`/count?token=T` counts one, `/counts` answers them all), with
// which a test sees how many times a script really ran, whatever its answers said, and `/sha256?text=T`,
// a body the script did not send (the sandbox's residue tests look for it in memory after the run).
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type FetchTarget = { url: string; port: number; close(): Promise<void> };

export async function startFetchTarget(): Promise<FetchTarget> {
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://target");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      switch (url.pathname) {
        case "/hello":
          res.setHeader("content-type", "text/plain");
          res.setHeader("x-sigil-test", "yes");
          res.end("hello from the target");
          return;
        case "/sha256":
          res.setHeader("content-type", "text/plain");
          res.end(
            createHash("sha256")
              .update(url.searchParams.get("text") ?? "")
              .digest("hex"),
          );
          return;
        case "/echo":
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString() }));
          return;
        case "/count": {
          const token = url.searchParams.get("token") ?? "";
          const n = (counts.get(token) ?? 0) + 1;
          counts.set(token, n);
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ token, count: n }));
          return;
        }
        case "/counts":
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify(Object.fromEntries(counts)));
          return;
        case "/redirect":
          res.writeHead(302, { location: url.searchParams.get("to") ?? "/hello" }).end();
          return;
        case "/big": {
          const size = Number(url.searchParams.get("bytes") ?? 11 * 1024 * 1024);
          res.setHeader("content-type", "application/octet-stream");
          const block = Buffer.alloc(64 * 1024, 97);
          let sent = 0;
          const write = () => {
            while (sent < size) {
              const n = Math.min(block.length, size - sent);
              sent += n;
              if (!res.write(block.subarray(0, n))) return void res.once("drain", write);
            }
            res.end();
          };
          write();
          return;
        }
        case "/hang":
          // Never answers: the client's timeout must end it.
          return;
        default:
          res.writeHead(404).end("not found");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
