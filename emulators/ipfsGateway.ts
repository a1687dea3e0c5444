// A loopback IPFS gateway for tests, routed with Hono (served by @hono/node-server): `POST /add`
// stores a body under its CIDv0 (as `ipfs add` would) and answers the CID; `GET /ipfs/<cid>` serves
// it. `POST /add?cid=<cid>` stores the body under a CID of the test's choosing, to model a gateway
// that serves the wrong bytes.
//
// A gateway that fails: `POST /misbehave?cid=<cid>&as=<how>` makes `GET /ipfs/<cid>` answer with
// that HTTP status (`as=503`), drop the connection without answering (`reset`), never answer
// (`hang`), or answer 200 with a body that never ends (`endless`: chunks, as fast as the client
// reads, up to ENDLESS_CAP_BYTES, then silence with the connection open). `GET /log?cid=<cid>`
// tells what the gateway saw of that CID: one entry per request, with the bytes it sent and
// whether the connection closed before the answer was complete (for `endless`: the client hung up).
import type { Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer, type HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
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

  const app = new Hono<{ Bindings: HttpBindings }>();
  app.post("/add", async (c) => {
    const body = Buffer.from(await c.req.arrayBuffer());
    const cid = await computeCid(body);
    store.set(c.req.query("cid") ?? cid, body);
    return c.json({ cid });
  });
  app.post("/misbehave", (c) => {
    const how = c.req.query("as") ?? "";
    misbehaviours.set(c.req.query("cid") ?? "", /^\d{3}$/.test(how) ? { status: Number(how) } : (how as Misbehaviour));
    return c.body(null, 200);
  });
  app.get("/log", (c) => c.json({ requests: log.get(c.req.query("cid") ?? "") ?? [] } satisfies GatewayLog));
  // Answered on Node's own response: the misbehaviours are about the connection (a reset, a request
  // never answered, a body that never ends), and the log records whether the client hung up first.
  app.get("/ipfs/:cid{[A-Za-z0-9]+}", (c) => {
    const cid = c.req.param("cid");
    const res = c.env.outgoing;
    const served: Served = { bytes_sent: 0, closed_before_end: false };
    log.set(cid, [...(log.get(cid) ?? []), served]);
    res.on("close", () => {
      served.closed_before_end = !res.writableFinished;
    });
    const how = misbehaviours.get(cid);
    if (how === "reset") c.env.incoming.socket.destroy();
    else if (how === "hang") {
      // left open until the client gives up or the gateway closes
    } else if (how === "endless") sendEndless(res, served);
    else if (how !== undefined) res.writeHead(how.status).end("gateway failure");
    else {
      const content = store.get(cid);
      if (!content) res.writeHead(404).end("not found");
      else {
        res.setHeader("content-type", "application/octet-stream");
        served.bytes_sent = content.length;
        res.end(content);
      }
    }
    return RESPONSE_ALREADY_SENT;
  });
  app.notFound((c) => c.text("not found", 404));

  const server = createAdaptorServer({ fetch: app.fetch, hostname: "127.0.0.1" }) as Server;
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
