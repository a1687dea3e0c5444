// The soak's stoppable proxy (test/harness/tcpProxy.ts): stopped, it refuses new connections and
// cuts the open ones; started again, it serves on the same port.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTcpProxy, type TcpProxy } from "../harness/tcpProxy.ts";

let server: Server;
let proxy: TcpProxy;

beforeAll(async () => {
  // "/slow" answers after 2 s; anything else at once.
  server = createServer((req, res) => {
    if (req.url === "/slow") setTimeout(() => res.end("slow"), 2_000);
    else res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy = await startTcpProxy({ port: (server.address() as AddressInfo).port });
});

afterAll(async () => {
  await proxy.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => "answered",
    (e: unknown) => String((e as { cause?: { code?: string } }).cause?.code ?? e),
  );

it("passes requests through, refuses new connections and cuts open ones while stopped, and serves again on the same port", async () => {
  expect(await (await fetch(`${proxy.url}/`)).text()).toBe("ok");
  const port = proxy.port;
  const open = fetch(`${proxy.url}/slow`, { headers: { connection: "close" } }).then((r) => r.text());
  await new Promise((resolve) => setTimeout(resolve, 200));
  await proxy.stop();
  expect(proxy.running).toBe(false);
  expect(proxy.stats.cut).toBeGreaterThanOrEqual(1);
  expect(await failure(open)).not.toBe("answered");
  expect(await failure(fetch(`${proxy.url}/`, { headers: { connection: "close" } }))).toBe("ECONNREFUSED");
  await proxy.start();
  expect(proxy.port).toBe(port);
  expect(await (await fetch(`${proxy.url}/`)).text()).toBe("ok");
});
