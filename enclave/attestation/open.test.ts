// Choosing the attestation source from the configuration: the simulated TEE measures the
// app-compose file it is given byte for byte (a placeholder only when the default dev file is
// missing), is refused in production even if a configuration slipped past config.ts, and comes
// with its mock collateral and dev evidences; dstack comes alone.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../shared/log.ts";
import { openAttestation, PLACEHOLDER_APP_COMPOSE, readAppCompose } from "./open.ts";

const log = createLogger("silent");
const dir = mkdtempSync(join(tmpdir(), "sigil-attestation-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("openAttestation", () => {
  it("opens the simulated TEE over the named app-compose file, exactly as written, with collateral and evidences", async () => {
    const file = join(dir, "compose.json");
    const text = '{ "name": "spaced",  "manifest_version": 2 }\n';
    writeFileSync(file, text);
    const opened = await openAttestation(
      { env: "test", attestation: { source: "simulated", appComposeFile: file } },
      log,
    );
    expect(opened.service.simulated).toBe(true);
    const info = await opened.service.info();
    expect(info.tcb_info.app_compose).toBe(text);
    expect(info.compose_hash).toBe(bytesToHex(sha256(utf8ToBytes(text))));
    expect(opened.simulated).toBeDefined();
    expect([...(opened.evidences?.files.keys() ?? [])]).toEqual([
      "acme-account.json",
      "cert-localhost.pem",
      "sha256sum.txt",
      "quote.json",
    ]);
  });

  it("refuses the simulated TEE when SIGIL_ENV=production", async () => {
    await expect(
      openAttestation({ env: "production", attestation: { source: "simulated", appComposeFile: undefined } }, log),
    ).rejects.toThrow(/refused when SIGIL_ENV=production/);
  });

  it("opens dstack without collateral or evidences", async () => {
    const opened = await openAttestation(
      { env: "production", attestation: { source: "dstack", endpoint: "http://127.0.0.1:9" } },
      log,
    );
    expect(opened.service.simulated).toBe(false);
    expect(opened.simulated).toBeUndefined();
    expect(opened.evidences).toBeUndefined();
  });
});

describe("readAppCompose", () => {
  it("refuses a named file that does not exist", () => {
    expect(() => readAppCompose(join(dir, "missing.json"), log)).toThrow(/cannot read the app-compose file/);
  });

  it("falls back to the labelled placeholder only when the default file is missing", () => {
    expect(readAppCompose(undefined, log, join(dir, "no-default.json"))).toBe(PLACEHOLDER_APP_COMPOSE);
    expect(PLACEHOLDER_APP_COMPOSE).toContain("placeholder");
  });
});
