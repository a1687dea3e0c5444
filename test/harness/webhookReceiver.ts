// A loopback webhook endpoint for the accounts of a test or of the soak (a local deployment
// accepts loopback URLs) with one path per account, each checking Sigil-Signature
// with the SDK's verifyWebhook and that endpoint's secret, as a receiver should, and keeping every
// delivery — a retry or re-send of an event already received is counted, not a new event.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyWebhook } from "../../sdk/src/index.ts";

export type ReceivedEvent = {
  endpoint: string;
  id: string;
  type: string;
  created: number;
  data: Record<string, unknown>;
  deliveries: number;
  firstAt: number;
};

export type WebhookReceiver = {
  /** The URL of the endpoint `name`. */
  url(name: string): string;
  /** The secret deliveries to `name` are signed with (known once the endpoint is created). */
  setSecret(name: string, secret: string): void;
  /** Every distinct event received, by endpoint. */
  events(name: string): ReceivedEvent[];
  /** Deliveries refused: no secret yet, or a signature that does not verify. */
  readonly refused: number;
  close(): Promise<void>;
};

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const secrets = new Map<string, string>();
  const received = new Map<string, Map<string, ReceivedEvent>>();
  let refused = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const name = /^\/hook\/([\w-]+)$/.exec(req.url ?? "")?.[1];
      const secret = name === undefined ? undefined : secrets.get(name);
      const body = Buffer.concat(chunks).toString("utf8");
      if (name === undefined || secret === undefined) {
        refused++;
        res.writeHead(503).end();
        return;
      }
      verifyWebhook(body, req.headers["sigil-signature"] as string | undefined, secret).then(
        (event) => {
          const byId = received.get(name) ?? new Map<string, ReceivedEvent>();
          received.set(name, byId);
          const known = byId.get(event.id);
          if (known) known.deliveries++;
          else
            byId.set(event.id, {
              endpoint: name,
              id: event.id,
              type: event.type,
              created: event.created,
              data: event.data as Record<string, unknown>,
              deliveries: 1,
              firstAt: Date.now(),
            });
          res.writeHead(200).end();
        },
        () => {
          refused++;
          res.writeHead(400).end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name) => `http://127.0.0.1:${port}/hook/${name}`,
    setSecret: (name, secret) => void secrets.set(name, secret),
    events: (name) => [...(received.get(name)?.values() ?? [])],
    get refused() {
      return refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
