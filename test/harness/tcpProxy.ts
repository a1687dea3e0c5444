// A loopback TCP proxy in front of one server, which a test can stop and start again on the same
// port: the soak puts it between the chain (anvil) and everything that reads or writes it, so the
// chain's RPC can be taken away for a while without touching anvil itself.
//
// Stopping refuses: the listening socket closes (a new connection gets ECONNREFUSED at once) and
// every open connection is destroyed (the request on it fails mid-way, as when the node behind
// it dies or restarts). Refusing rather than holding connections open is what a crashed or
// restarting RPC node looks like, and it makes every caller meet the outage at once, including
// a payer waiting on a receipt; holding would mostly test the callers' own timeouts, most of which
// are longer than a 10 s outage.
import { createServer as createHttpServer } from "node:http";
import { createServer, connect, type Server, type Socket } from "node:net";

export type TcpProxy = {
  /** http://127.0.0.1:<port>, the proxy's address (for an HTTP server behind it, the URL to use). */
  url: string;
  port: number;
  /** Whether it accepts connections now. */
  readonly running: boolean;
  /** Connections accepted so far, and those cut by stop(). */
  readonly stats: { accepted: number; cut: number };
  /** Stops listening and destroys every open connection (both ends). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  /** stop() for good. */
  close(): Promise<void>;
};

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const host = target.host ?? "127.0.0.1";
  /** Each open connection: the client's socket and the one to the target. */
  const open = new Set<[Socket, Socket]>();
  const stats = { accepted: 0, cut: 0 };
  let server: Server | undefined;
  let port = 0;

  const accept = (client: Socket) => {
    stats.accepted++;
    const upstream = connect({ host, port: target.port });
    const pair: [Socket, Socket] = [client, upstream];
    open.add(pair);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(pair);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  };

  const listen = async () => {
    const s = createServer(accept);
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => {
        s.off("error", reject);
        resolve();
      });
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };

  const stop = async () => {
    const s = server;
    if (!s) return;
    server = undefined;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    stats.cut += open.size;
    for (const [client, upstream] of open) {
      client.destroy();
      upstream.destroy();
    }
    open.clear();
    await closed;
  };

  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get running() {
      return server !== undefined;
    },
    stats,
    stop,
    start: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}

/** A loopback HTTP server through which a test that cannot call a proxy itself (one in workerd) stops and starts it. */
export type ProxyControl = { url: string; close(): Promise<void> };

/** `POST {url}/stop` and `POST {url}/start` stop and start `proxy`, answering 200 once done; `GET {url}/` says whether it runs. */
export async function startProxyControl(proxy: TcpProxy): Promise<ProxyControl> {
  const server = createHttpServer((req, res) => {
    const answer = (status: number) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ running: proxy.running }));
    };
    const action = req.method === "POST" ? { "/stop": proxy.stop, "/start": proxy.start }[req.url ?? ""] : undefined;
    if (req.method === "GET" && req.url === "/") return answer(200);
    if (!action) return answer(404);
    action().then(
      () => answer(200),
      () => answer(500),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
