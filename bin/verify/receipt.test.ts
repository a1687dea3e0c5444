// `sigil verify-receipt`'s checks (receipt.ts) offline, against a real simulated quote: the SDK's
// checks plus the quote's own verification (dcap-qvl under the mock root, report_data, event log,
// RTMR3 claims naming the receipt's instance and compose hash); a simulated TEE refused without
// --allow-simulated; another instance's attestation, a changed field, and a missing root refused.
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { beforeAll, describe, expect, it } from "vitest";
import {
  jsonSha256,
  RECEIPT_VERSION,
  textSha256,
  type ReceiptKeyAttestation,
  type RunReceipt,
} from "../../shared/receipt.ts";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { SimulatedSource } from "../../enclave/attestation/simulated/simulatedSource.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { ReceiptSigner } from "../../enclave/receipts/receipts.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCollateral, verifyReceiptCommand, verifyReceiptFile } from "./receipt.ts";

const COMPOSE_YAML = `services:\n  enclave:\n    image: sigil@sha256:${"ab".repeat(32)}\n`;
const APP_COMPOSE = `${JSON.stringify({ manifest_version: 2, name: "sigil-unit", runner: "docker-compose", docker_compose_file: COMPOSE_YAML }, null, 2)}\n`;

async function instance(id: string) {
  const source = await SimulatedSource.create({ appCompose: APP_COMPOSE, instanceId: hexToBytes(id) });
  const info = await source.info();
  const signer = new ReceiptSigner({
    keyring: new Keyring(hexToBytes(TEST_ROOT_KEY.slice(2))),
    instanceId: info.instance_id,
    composeHash: info.compose_hash,
    quote: async (rd) => ({ ...(await source.getQuote(rd)), simulated: true as const }),
  });
  const collateral = readCollateral({
    root_ca_der: bytesToHex(source.rootCaDer),
    collateral: await source.collateral(),
  });
  return { source, signer, attestation: await signer.attestation(), collateral };
}

let one: Awaited<ReturnType<typeof instance>>;
let two: Awaited<ReturnType<typeof instance>>;
let answer: { response: unknown; logs: string; receipt: RunReceipt };

beforeAll(async () => {
  one = await instance("a1".repeat(20));
  two = await instance("b2".repeat(20));
  const response = { signed: true };
  const logs = "ran\n";
  const receipt = await one.signer.sign({
    version: RECEIPT_VERSION,
    request_id: "00000000-0000-4000-8000-000000000001",
    account: `0x${"11".repeat(32)}`,
    cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    params_sha256: jsonSha256(null),
    response_sha256: jsonSha256(response),
    logs_sha256: textSha256(logs),
    has_error: false,
    wallets: [],
    started_at: "2026-01-01T00:00:00.000Z",
    ended_at: "2026-01-01T00:00:00.200Z",
    duration_ms: 200,
    charged_cents: 1,
  });
  answer = { response, logs, receipt };
});

const failures = (lines: Array<{ check: string; status: string }>) =>
  lines.filter((l) => l.status === "fail").map((l) => l.check);

describe("sigil verify-receipt's checks", () => {
  it("pass for a run answer: the SDK's checks, then the quote under the mock root, report_data, event log and RTMR3's claims", async () => {
    const lines = await verifyReceiptFile(answer, {
      attestation: one.attestation,
      collateral: one.collateral,
      allowSimulated: true,
      params: { value: null },
    });
    expect(failures(lines)).toEqual([]);
    expect(lines.map((l) => l.check)).toEqual([
      "receipt.shape",
      "receipt.batch",
      "receipt.signature",
      "receipt.key",
      "receipt.report_data",
      "receipt.instance",
      "receipt.params",
      "receipt.response",
      "receipt.logs",
      "quote",
      "report_data",
      "event_log",
      "claims",
      "claims.receipt",
    ]);
    expect(lines.every((l) => l.simulated)).toBe(true);
  });

  it("refuse a simulated TEE without --allow-simulated, and a simulated quote with no mock root", async () => {
    expect(
      failures(await verifyReceiptFile(answer, { attestation: one.attestation, collateral: one.collateral })),
    ).toEqual(["quote"]);
    expect(
      failures(
        await verifyReceiptFile(answer, {
          attestation: one.attestation,
          collateral: { collateral: one.collateral.collateral },
          allowSimulated: true,
        }),
      ),
    ).toEqual(["quote"]);
    expect(failures(await verifyReceiptFile(answer, { attestation: one.attestation, allowSimulated: true }))).toEqual([
      "quote",
    ]);
    expect(failures(await verifyReceiptFile(answer, {}))).toEqual(["attestation"]);
  });

  it("fail against another instance's attestation, even one claiming this instance's key and id", async () => {
    const other = await verifyReceiptFile(answer, {
      attestation: two.attestation,
      collateral: two.collateral,
      allowSimulated: true,
    });
    expect(failures(other)).toEqual(["receipt.signature", "receipt.instance", "claims.receipt"]);
    // This instance's key and ids over the other's quote: the quote binds another key, and its RTMR3 names the other instance.
    const forged: ReceiptKeyAttestation = {
      ...one.attestation,
      quote: two.attestation.quote,
      event_log: two.attestation.event_log,
    };
    expect(
      failures(
        await verifyReceiptFile(answer, { attestation: forged, collateral: two.collateral, allowSimulated: true }),
      ),
    ).toEqual(["receipt.report_data", "report_data", "claims.receipt"]);
  });

  it("fail when a field of the receipt changed, or the response is not the answer's", async () => {
    const changed = { ...answer, receipt: { ...answer.receipt, charged_cents: 0 } };
    expect(
      failures(
        await verifyReceiptFile(changed, {
          attestation: one.attestation,
          collateral: one.collateral,
          allowSimulated: true,
        }),
      ),
    ).toEqual(["receipt.signature"]);
    const otherResponse = { ...answer, response: { signed: false } };
    expect(
      failures(
        await verifyReceiptFile(otherResponse, {
          attestation: one.attestation,
          collateral: one.collateral,
          allowSimulated: true,
        }),
      ),
    ).toEqual(["receipt.response"]);
  });

  it("a file it cannot read or that is not JSON is a usage error (exit 2) naming the option and the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "verify-receipt-"));
    const notJson = join(dir, "run.json");
    writeFileSync(notJson, "not json");
    const errors: string[] = [];
    const error = console.error;
    console.error = (line: string) => void errors.push(line);
    try {
      const json = join(dir, "ok.json");
      writeFileSync(json, "{}");
      expect(await verifyReceiptCommand([join(dir, "missing.json"), "--attestation", json])).toBe(2);
      expect(await verifyReceiptCommand([notJson, "--attestation", json])).toBe(2);
      expect(await verifyReceiptCommand([json, "--attestation", join(dir, "none.json")])).toBe(2);
    } finally {
      console.error = error;
      rmSync(dir, { recursive: true, force: true });
    }
    expect(errors[0]).toMatch(/missing\.json: cannot read it \(ENOENT\)/);
    expect(errors[1]).toMatch(/run\.json: is not JSON/);
    expect(errors[2]).toMatch(/--attestation .*none\.json: cannot read it \(ENOENT\)/);
  });
});
