// A loopback IPFS gateway for tests: `POST /add` stores a body under its CIDv0 (as `ipfs add`
// would) and answers the CID; `GET /ipfs/<cid>` serves it. `POST /add?cid=<cid>` stores the body
// under a CID of the test's choosing, to model a gateway that serves the wrong bytes.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { computeCid } from "../../shared/cid.ts";

export type IpfsGateway = { url: string; close(): Promise<void> };

export async function startIpfsGateway(): Promise<IpfsGateway> {
  const store = new Map<string, Buffer>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://gateway");
      if (req.method === "POST" && url.pathname === "/add") {
        const body = Buffer.concat(chunks);
        void computeCid(body).then((cid) => {
          store.set(url.searchParams.get("cid") ?? cid, body);
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ cid }));
        });
        return;
      }
      const match = /^\/ipfs\/([A-Za-z0-9]+)$/.exec(url.pathname);
      const content = match ? store.get(match[1] as string) : undefined;
      if (req.method === "GET" && content) {
        res.setHeader("content-type", "application/octet-stream");
        res.end(content);
        return;
      }
      res.writeHead(404).end("not found");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
