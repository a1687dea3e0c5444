// Opens the configured attestation source and what serves it: dstack's guest agent in production,
// the simulated TEE in development and tests (config.ts refuses it in production; refused here
// again, since nothing else stands between it and a production CVM). The simulated source measures
// the dev app-compose (deploy/app-compose.dev.json unless SIGIL_APP_COMPOSE_FILE names another),
// taken as the text it is, never re-serialized: the SHA-256 of that text is the compose hash. The
// simulated TEE's code is loaded only when it is chosen: a production enclave never runs it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { EnclaveConfig } from "../config.ts";
import type { Logger } from "../../shared/log.ts";
import { DstackSource } from "./dstackSource.ts";
import type { DevEvidences } from "./evidences.ts";
import { AttestationService } from "./service.ts";
import type { SimulatedSource } from "./simulated/simulatedSource.ts";

export const DEFAULT_APP_COMPOSE_FILE = join(import.meta.dirname, "../../deploy/app-compose.dev.json");

/**
 * Stands in for deploy/app-compose.dev.json until that file exists, so a checkout without it still
 * starts; it says what it is, and its compose hash is as real as any other text's.
 */
export const PLACEHOLDER_APP_COMPOSE = `${JSON.stringify(
  {
    manifest_version: 2,
    name: "sigil-dev",
    runner: "docker-compose",
    docker_compose_file:
      "# placeholder: deploy/app-compose.dev.json was not found when this simulated enclave started\nservices: {}\n",
    kms_enabled: false,
    gateway_enabled: false,
    public_logs: true,
    public_sysinfo: true,
    local_key_provider_enabled: true,
    no_instance_id: false,
  },
  null,
  2,
)}\n`;

export type OpenedAttestation = {
  service: AttestationService;
  simulated?: SimulatedSource;
  evidences?: DevEvidences;
};

export async function openAttestation(
  config: Pick<EnclaveConfig, "env" | "attestation"> & Partial<Pick<EnclaveConfig, "nonceQuotes">>,
  log: Logger,
): Promise<OpenedAttestation> {
  const a = config.attestation;
  const nonceQuotes = config.nonceQuotes ? { nonceQuotes: config.nonceQuotes } : {};
  if (a.source === "dstack") {
    const service = new AttestationService({ source: new DstackSource(a.endpoint), log, ...nonceQuotes });
    log.info("attestation source: dstack", { endpoint: a.endpoint ?? "socket" });
    return { service };
  }
  if (config.env === "production")
    throw new Error("the simulated attestation source is refused when SIGIL_ENV=production");
  const appCompose = readAppCompose(a.appComposeFile, log);
  const { SimulatedSource } = await import("./simulated/simulatedSource.ts");
  const { createDevEvidences } = await import("./evidences.ts");
  const simulated = await SimulatedSource.create({ appCompose });
  const service = new AttestationService({ source: simulated, log, ...nonceQuotes });
  const evidences = await createDevEvidences(simulated);
  log.warn(
    "SIMULATED TEE: attestation quotes are signed by a mock DCAP PKI, not Intel; they prove nothing about this machine",
    {
      composeHash: simulated.boot.composeHash,
      appId: simulated.boot.appId,
      instanceId: simulated.boot.instanceId,
    },
  );
  return { service, simulated, evidences };
}

/** The app-compose text; the placeholder only when the default file is missing (a named file must exist). */
export function readAppCompose(
  file: string | undefined,
  log: Logger,
  defaultFile: string = DEFAULT_APP_COMPOSE_FILE,
): string {
  try {
    return readFileSync(file ?? defaultFile, "utf8");
  } catch (err) {
    if (file !== undefined || (err as NodeJS.ErrnoException).code !== "ENOENT")
      throw new Error(`cannot read the app-compose file ${file ?? defaultFile}: ${(err as Error).message}`);
    log.warn("the dev app-compose file is missing: the simulated TEE measures a placeholder app-compose", {
      file: defaultFile,
    });
    return PLACEHOLDER_APP_COMPOSE;
  }
}
