// A small stand-in for the dstack guest agent's HTTP API (what DSTACK_SIMULATOR_ENDPOINT points
// the SDK at): `/GetKey` answers a key derived from this stand-in's own secret and the requested
// path, so the same path always gives the same key and different paths different keys, like the
// real KMS-backed agent. `/GetQuote` and `/Info` answer in the real agent's format (the quote as
// hex, `event_log` and `tcb_info` as JSON strings, report data shorter than 64 bytes zero-padded)
// from a simulated TEE (enclave/attestation/simulated): real-format quotes under the mock DCAP PKI.
// Only what the enclave calls is implemented; it listens on loopback only.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { SimulatedSource } from "../enclave/attestation/simulated/simulatedSource.ts";

export type GuestAgent = {
  endpoint: string;
  calls: Array<{ path: string; body: unknown }>;
  /** The simulated TEE behind /GetQuote and /Info (made on first use unless one was given). */
  attestation(): Promise<SimulatedSource>;
  close(): Promise<void>;
};

export type GuestAgentOptions = {
  /** The TEE /GetQuote and /Info answer from; default: one measuring `appCompose`. */
  attestation?: SimulatedSource;
  appCompose?: string;
};

export const STAND_IN_APP_COMPOSE = `${JSON.stringify({ manifest_version: 2, name: "sigil-stand-in", runner: "docker-compose", docker_compose_file: "services: {}\n" }, null, 2)}\n`;

export async function startGuestAgent(
  secret: Uint8Array = crypto.getRandomValues(new Uint8Array(32)),
  options: GuestAgentOptions = {},
): Promise<GuestAgent> {
  const calls: GuestAgent["calls"] = [];
  let tee: Promise<SimulatedSource> | undefined = options.attestation
    ? Promise.resolve(options.attestation)
    : undefined;
  const attestation = () =>
    (tee ??= SimulatedSource.create({ appCompose: options.appCompose ?? STAND_IN_APP_COMPOSE }));

  const answer = async (path: string, body: Record<string, unknown>): Promise<[number, unknown]> => {
    switch (path) {
      case "/GetKey": {
        const key = hkdf(
          sha256,
          secret,
          new TextEncoder().encode("dstack-stand-in"),
          new TextEncoder().encode(String(body.path ?? "")),
          32,
        );
        return [200, { key: Buffer.from(key).toString("hex"), signature_chain: [] }];
      }
      case "/Version":
        return [200, { version: "0.5.0-stand-in", rev: "test" }];
      case "/GetQuote": {
        const hex = String(body.report_data ?? "").replace(/^0x/, "");
        if (!/^([0-9a-fA-F]{2}){0,64}$/.test(hex))
          return [400, { error: "report_data must be hex of at most 64 bytes" }];
        const reportData = new Uint8Array(64);
        reportData.set(Buffer.from(hex, "hex"));
        const quote = await (await attestation()).getQuote(reportData);
        return [
          200,
          {
            quote: quote.quote,
            event_log: quote.event_log,
            report_data: Buffer.from(reportData).toString("hex"),
            vm_config: quote.vm_config,
          },
        ];
      }
      case "/Info": {
        const info = await (await attestation()).info();
        return [200, { ...info, app_cert: "", tcb_info: JSON.stringify(info.tcb_info) }];
      }
      default:
        return [404, { error: "not implemented by the stand-in" }];
    }
  };

  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stand-in");
      let body: Record<string, unknown> = Object.fromEntries(url.searchParams);
      try {
        if (raw) body = { ...body, ...(JSON.parse(raw) as Record<string, unknown>) };
      } catch {
        res.writeHead(400).end(JSON.stringify({ error: "invalid json" }));
        return;
      }
      calls.push({ path: url.pathname, body });
      answer(url.pathname, body).then(
        ([status, json]) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json)),
        (err: unknown) =>
          res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: String(err) })),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    attestation,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
