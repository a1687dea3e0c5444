// A loopback IPFS gateway for tests: `POST /add` stores a body under its CIDv0 (as `ipfs add`
// would) and answers the CID; `GET /ipfs/<cid>` serves it. `POST /add?cid=<cid>` stores the body
// under a CID of the test's choosing, to model a gateway that serves the wrong bytes.
//
// A gateway that fails: `POST /misbehave?cid=<cid>&as=<how>` makes `GET /ipfs/<cid>` answer with
// that HTTP status (`as=503`), drop the connection without answering (`reset`), never answer
// (`hang`), or answer 200 with a body that never ends (`endless`: chunks, as fast as the client
// reads, up to ENDLESS_CAP_BYTES, then silence with the connection open). `GET /log?cid=<cid>`
// tells what the gateway saw of that CID: one entry per request, with the bytes it sent and
// whether the connection closed before the answer was complete (for `endless`: the client hung up).
import { createServer, type ServerResponse, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { computeCid } from "../shared/cid.ts";

/** How much of an endless body the gateway sends at most: far past any code size limit. */
export const ENDLESS_CAP_BYTES = 64 << 20;
const ENDLESS_CHUNK = Buffer.alloc(64 << 10, " ");

export type IpfsGateway = { url: string; close(): Promise<void> };

/** What `GET /log?cid=` answers: the gateway's record of each request for that CID. */
export type GatewayLog = { requests: Array<{ bytes_sent: number; closed_before_end: boolean }> };

type Misbehaviour = { status: number } | "reset" | "hang" | "endless";
type Served = { bytes_sent: number; closed_before_end: boolean };

function sendEndless(res: ServerResponse, served: Served): void {
  res.writeHead(200, { "content-type": "application/octet-stream" });
  const pump = () => {
    while (!res.destroyed && served.bytes_sent < ENDLESS_CAP_BYTES) {
      served.bytes_sent += ENDLESS_CHUNK.length;
      if (!res.write(ENDLESS_CHUNK)) {
        res.once("drain", pump);
        return;
      }
    }
  };
  pump();
}

export async function startIpfsGateway(): Promise<IpfsGateway> {
  const store = new Map<string, Buffer>();
  const misbehaviours = new Map<string, Misbehaviour>();
  const log = new Map<string, Served[]>();
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
      if (req.method === "POST" && url.pathname === "/misbehave") {
        const how = url.searchParams.get("as") ?? "";
        const cid = url.searchParams.get("cid") ?? "";
        misbehaviours.set(cid, /^\d{3}$/.test(how) ? { status: Number(how) } : (how as Misbehaviour));
        res.end();
        return;
      }
      if (req.method === "GET" && url.pathname === "/log") {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ requests: log.get(url.searchParams.get("cid") ?? "") ?? [] } satisfies GatewayLog));
        return;
      }
      const match = /^\/ipfs\/([A-Za-z0-9]+)$/.exec(url.pathname);
      if (req.method === "GET" && match) {
        const cid = match[1] as string;
        const served: Served = { bytes_sent: 0, closed_before_end: false };
        log.set(cid, [...(log.get(cid) ?? []), served]);
        res.on("close", () => {
          served.closed_before_end = !res.writableFinished;
        });
        const how = misbehaviours.get(cid);
        if (how === "reset") return void req.socket.destroy();
        if (how === "hang") return;
        if (how === "endless") return sendEndless(res, served);
        if (how !== undefined) return void res.writeHead(how.status).end("gateway failure");
        const content = store.get(cid);
        if (content) {
          res.setHeader("content-type", "application/octet-stream");
          served.bytes_sent = content.length;
          res.end(content);
          return;
        }
      }
      res.writeHead(404).end("not found");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // Hanging and endless answers keep their connections open; close them with the server.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
