// A small stand-in for the dstack guest agent's HTTP API (what DSTACK_SIMULATOR_ENDPOINT points
// the SDK at): `/GetKey` answers a key derived from this stand-in's own secret and the requested
// path, so the same path always gives the same key and different paths different keys, like the
// real KMS-backed agent. Only what the enclave calls is implemented; it listens on loopback only.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";

export type GuestAgent = { endpoint: string; calls: Array<{ path: string; body: unknown }>; close(): Promise<void> };

export async function startGuestAgent(secret: Uint8Array = crypto.getRandomValues(new Uint8Array(32))): Promise<GuestAgent> {
  const calls: GuestAgent["calls"] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      let body: Record<string, unknown> = {};
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      } catch {
        res.writeHead(400).end(JSON.stringify({ error: "invalid json" }));
        return;
      }
      calls.push({ path: req.url ?? "", body });
      res.setHeader("content-type", "application/json");
      if (req.url === "/GetKey") {
        const key = hkdf(sha256, secret, new TextEncoder().encode("dstack-stand-in"), new TextEncoder().encode(String(body.path ?? "")), 32);
        res.end(JSON.stringify({ key: Buffer.from(key).toString("hex"), signature_chain: [] }));
      } else if (req.url === "/Version") {
        res.end(JSON.stringify({ version: "0.5.0-stand-in", rev: "test" }));
      } else {
        res.writeHead(404).end(JSON.stringify({ error: "not implemented by the stand-in" }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
