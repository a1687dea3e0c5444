// Public information (docs/design/api.md, Public information and Execution): no API key (`security: []`).
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { computeCid } from "../../shared/cid.ts";
import { EIP712_DOMAIN_NAME, EIP712_DOMAIN_VERSION } from "../../shared/eip712.ts";
import { SigilError } from "../../shared/errors.ts";
import { clientConfigOf, clientConfigSchema } from "../../shared/limits.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { readView } from "../chain/client.ts";
import { askEnclave } from "../enclave/client.ts";
import { noteInstance } from "../enclave/instances.ts";
import { scriptBodyLimit } from "../middleware/bodyLimit/index.ts";
import { jsonBody as body, jsonResponse as json, route } from "./openapi.ts";

// Every route here is under /core/v1, so the rate limit may answer any of them 429.

const version = route("GET /version", "Public", {
  operationId: "getVersion",
  summary: "The service's name and version",
  security: "open",
  ok: json(z.object({ name: z.string(), version: z.string() })),
  errors: [429],
});

const chainConfig = route("GET /get_node_chain_config", "Public", {
  summary: "The chain, the AccountConfig address and the EIP-712 domain clients sign in",
  security: "open",
  ok: json(
    z.object({
      chain_id: z.number(),
      chain_name: z.string(),
      contract_address: z.string().nullable(),
      rpc_url: z.string(),
      eip712_domain: z.object({ name: z.string(), version: z.string(), chainId: z.number() }),
    }),
  ),
  errors: [429],
});

const ipfsId = route("POST /get_sigil_action_ipfs_id", "Actions", {
  summary:
    "The CIDv0 of a script (ipfs add defaults, exact bytes); scripts up to max_code_bytes (UTF-8), as sigil_action takes them",
  security: "open",
  middleware: [scriptBodyLimit],
  request: { body: body(z.string().describe("the script's source, at most max_code_bytes (UTF-8)")) },
  ok: json(z.string(), "the CID, as a JSON string"),
  errors: [400, 408, 413, 429],
});

const clientConfig = route("GET /get_sigil_action_client_config", "Execution", {
  summary: "The effective limits of a script run",
  security: "open",
  ok: json(clientConfigSchema),
  errors: [429],
});

const enclaveHealth = z.object({
  index: z.number().describe("the enclave's place in SIGIL_ENCLAVE_URLS"),
  instance_id: z
    .string()
    .nullable()
    .describe("the instance it says it is (pin it for the attestation endpoints); null when it did not answer"),
  status: z
    .enum(["ok", "stalled", "degraded", "unreachable"])
    .describe("stalled: its chain listener has not polled for too long; degraded: it cannot reach the chain"),
  account_event_listener_lag_seconds: z.number().nullable(),
  last_block: z.string().nullable(),
  chain_head: z.string().nullable(),
});
const healthSchema = z.object({
  status: z
    .enum(["ok", "degraded", "unavailable"])
    .describe(
      "ok (200): every enclave that answers is healthy (unreachable ones are routed around); degraded (503): one that answers is not, e.g. its listener stalled; unavailable (503): none answers",
    ),
  account_event_listener_lag_seconds: z
    .number()
    .nullable()
    .describe("the worst (largest) lag of the enclaves that answer"),
  enclaves: z.array(enclaveHealth),
  chain: z.object({ chain_id: z.number(), contract_address: z.string().nullable() }),
});
const health = route("GET /health", "Public", {
  operationId: "getHealth",
  summary: "Whether the service can serve: every enclave's state and listener lag, the worst lag at the top",
  security: "open",
  ok: json(healthSchema, "serving"),
  errors: [429],
  // Not an error body: the same report, with the status that says it cannot serve (docs/design/api.md).
  answers: { 503: json(healthSchema, "not serving, or an enclave that answers is not healthy (a stalled listener)") },
});

/** What the edge reads of an enclave's internal health report (enclave/health.ts). */
type EnclaveReport = {
  status?: string;
  instance_id?: string;
  account_event_listener_lag_seconds?: number | null;
  listener?: { last_block?: string | null; chain_head?: string | null; stalled?: boolean };
};

const apiPayers = route("GET /get_api_payers", "Public", {
  summary: "The addresses that submit the service's transactions (the contract's payer set), lowercase",
  security: "open",
  ok: json(z.array(z.string())),
  errors: [429, 503],
});

const adminApiPayer = route("GET /get_admin_api_payer", "Public", {
  summary: "The admin payer's address, lowercase (the zero address when none is set)",
  security: "open",
  ok: json(z.string(), "the address, as a JSON string"),
  errors: [429, 503],
});

export function publicRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(version, (c) => c.json({ name: "sigil", version: c.get("config").version }, 200));

  r.openapi(chainConfig, (c) => {
    const config = c.get("config");
    return c.json(
      {
        chain_id: config.chainId,
        chain_name: config.chainName,
        contract_address: config.contractAddress?.toLowerCase() ?? null,
        rpc_url: config.publicRpcUrl,
        eip712_domain: { name: EIP712_DOMAIN_NAME, version: EIP712_DOMAIN_VERSION, chainId: config.chainId },
      },
      200,
    );
  });

  r.openapi(ipfsId, async (c) => {
    const code = new TextEncoder().encode(c.req.valid("json"));
    const { maxCodeBytes } = c.get("config").limits;
    if (code.byteLength > maxCodeBytes)
      throw new SigilError("payload_too_large", `the script must be at most ${maxCodeBytes} bytes (UTF-8)`);
    return c.json(await computeCid(code), 200);
  });

  // The edge reads the same run limits as the enclaves (shared/limits.ts), so it answers alone.
  r.openapi(clientConfig, (c) => c.json(clientConfigOf(c.get("config").limits), 200));

  r.openapi(apiPayers, async (c) => {
    const payers = await readView(c.get("config"), "apiPayers", []);
    return c.json(
      payers.map((p) => p.toLowerCase()),
      200,
    );
  });

  r.openapi(adminApiPayer, async (c) => {
    const payer = await readView(c.get("config"), "adminApiPayer", []);
    return c.json(payer.toLowerCase(), 200);
  });

  r.openapi(health, async (c) => {
    const config = c.get("config");
    const ids = c.get("ids");
    // Each enclave's own report, through the channel: an enclave the edge cannot reach that way is
    // one it cannot route to either.
    const enclaves = await Promise.all(
      config.enclaveUrls.map(async (base, index): Promise<z.infer<typeof enclaveHealth>> => {
        try {
          const answer = await askEnclave(config, ids, base, { op: "health", input: {}, timeoutMs: 5_000 });
          if (!answer.ok) throw new Error(`answered ${answer.status}`);
          const report = answer.output as EnclaveReport;
          noteInstance(base, report.instance_id);
          return {
            index,
            instance_id: report.instance_id ?? null,
            status: report.listener?.stalled ? "stalled" : report.status === "ok" ? "ok" : "degraded",
            account_event_listener_lag_seconds: report.account_event_listener_lag_seconds ?? null,
            last_block: report.listener?.last_block ?? null,
            chain_head: report.listener?.chain_head ?? null,
          };
        } catch {
          return {
            index,
            instance_id: null,
            status: "unreachable",
            account_event_listener_lag_seconds: null,
            last_block: null,
            chain_head: null,
          };
        }
      }),
    );
    const answering = enclaves.filter((e) => e.status !== "unreachable");
    const lags = answering.map((e) => e.account_event_listener_lag_seconds).filter((l): l is number => l !== null);
    // Unreachable enclaves are routed around; one that answers but is unhealthy still gets requests.
    const status =
      answering.length === 0 ? "unavailable" : answering.every((e) => e.status === "ok") ? "ok" : "degraded";
    const body: z.infer<typeof healthSchema> = {
      status,
      // The worst: the minimum would hide a stalled instance behind a healthy one.
      account_event_listener_lag_seconds: lags.length > 0 ? Math.max(...lags) : null,
      enclaves,
      chain: { chain_id: config.chainId, contract_address: config.contractAddress?.toLowerCase() ?? null },
    };
    if (status !== "ok") c.header("Retry-After", "5");
    return status === "ok" ? c.json(body, 200) : c.json(body, 503);
  });

  return r;
}
