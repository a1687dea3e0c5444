// Run limits of docs/design/sandbox.md ("Limits") that hold at their configured values: a `timeout_ms` above
// the maximum is capped to it, and the per-fetch timeout the sandbox applies is the configured one
// (30 s unless configured). The defaults are read from the enclave's configuration; the caps are
// observed on runs — on the shared enclave (defaults) and on an enclave of its own with small limits
// so that reaching them takes a second, not 15 minutes.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { readEnclaveConfig } from "../../enclave/config.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { ok, run, type RunResult } from "./client.ts";
import { callAt, startOwnEnclave } from "./ownEnclave.ts";

const SMALL_MAX_TIMEOUT_MS = 2_000;
const SMALL_FETCH_TIMEOUT_MS = 500;
const LOOP = `async function main() { for (;;) {} }`;

let apiKey: string;

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "limits" })).api_key;
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: ["0"],
  });
});

async function workerRestarts(base: string): Promise<number> {
  return (await internalHealthOf<{ sandbox: { worker_restarts: number } }>(base)).sandbox.worker_restarts;
}

describe("the defaults, as configured", () => {
  /** Only the variables the enclave requires: every limit at its default. */
  const REQUIRED = {
    SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
    SIGIL_RPC_URL: "http://127.0.0.1:8545",
    SIGIL_CONTRACT_ADDRESS: `0x${"ab".repeat(20)}`,
  };
  const defaults = readEnclaveConfig(REQUIRED).limits;

  it("a run's time limit is 60 s, at most 900 s, and an operator cannot raise the maximum past 900 s", () => {
    expect(defaults.timeoutMs).toBe(60_000);
    expect(defaults.maxTimeoutMs).toBe(900_000);
    expect(() => readEnclaveConfig({ ...REQUIRED, SIGIL_MAX_TIMEOUT_MS: "900001" })).toThrow(/SIGIL_MAX_TIMEOUT_MS/);
  });

  it("the per-fetch timeout is 30 s unless SIGIL_FETCH_TIMEOUT_MS sets it (the sandbox applying the configured value is observed below)", () => {
    expect(defaults.fetchTimeoutMs).toBe(30_000);
    expect(readEnclaveConfig({ ...REQUIRED, SIGIL_FETCH_TIMEOUT_MS: "500" }).limits.fetchTimeoutMs).toBe(500);
  });
});

describe("timeout_ms above the maximum, on the shared enclave (maximum 900 s)", () => {
  it("a timeout_ms of 2^40 ms is capped: a quick run completes normally and no worker is replaced", async () => {
    // Uncapped, the run's watchdog (timeout_ms + grace) would overflow Node's 2^31 − 1 ms timer
    // limit and fire at once, ending the run in `timeout` and replacing its worker.
    const base = inject("enclaveUrl");
    const before = await workerRestarts(base);
    const code = `async function main() { await new Promise((resolve) => setTimeout(resolve, 300)); return "done"; }`;
    const r = await run(apiKey, code, null, { timeout_ms: 2 ** 40 });
    expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
    expect(r.body.response).toBe("done");
    expect(await workerRestarts(base)).toBe(before);
  });
});

describe("on an enclave with a 2 s maximum time limit and a 500 ms per-fetch timeout", () => {
  let enclave: EnclaveProcess;

  beforeAll(async () => {
    enclave = await startOwnEnclave({
      instanceIndex: 14,
      env: {
        SIGIL_TIMEOUT_MS: String(SMALL_MAX_TIMEOUT_MS),
        SIGIL_MAX_TIMEOUT_MS: String(SMALL_MAX_TIMEOUT_MS),
        SIGIL_FETCH_TIMEOUT_MS: String(SMALL_FETCH_TIMEOUT_MS),
        SIGIL_FETCH_ALLOW: `127.0.0.1:${new URL(inject("fetchTargetUrl")).port}`,
      },
    });
  });

  afterAll(async () => {
    await enclave?.stop();
  });

  const execute = (code: string, extra: Record<string, unknown> = {}) =>
    callAt<RunResult>(enclave.url, "sigil_action", { api_key: apiKey, code, ...extra });

  it("a timeout_ms of 900 s asked for a looping script is capped to the 2 s maximum", async () => {
    const started = Date.now();
    const r = await execute(LOOP, { timeout_ms: 900_000 });
    expect(r.status).toBe(200);
    expect(r.body.error).toEqual({
      code: "timeout",
      message: `the script ran past its time limit of ${SMALL_MAX_TIMEOUT_MS} ms`,
    });
    expect(Date.now() - started).toBeLessThan(SMALL_MAX_TIMEOUT_MS + 3_000);
  });

  it("a timeout_ms under the maximum is kept", async () => {
    const r = await execute(LOOP, { timeout_ms: 700 });
    // Ended at its own 700 ms by the interrupt handler, or — on a machine too busy to run the thread
    // within the watchdog's grace — by the watchdog, which says so ("… and was stopped").
    expect(r.body.error).toEqual({
      code: "timeout",
      message: expect.stringMatching(/^the script ran past its time limit of 700 ms( and was stopped)?$/),
    });
  });

  it("a fetch that never answers fails after the configured 500 ms with a catchable TypeError, and the script goes on", async () => {
    const code = `async function main({ url }) {
      const started = Date.now();
      try { await fetch(url); return "answered"; }
      catch (e) { return { name: e.name, message: e.message, code: e.code ?? null, ms: Date.now() - started }; }
    }`;
    const r = await execute(code, { js_params: { url: `${inject("fetchTargetUrl")}/hang` } });
    expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
    const out = r.body.response as { name: string; message: string; code: string | null; ms: number };
    expect(out).toMatchObject({
      name: "TypeError",
      message: `fetch timed out after ${SMALL_FETCH_TIMEOUT_MS} ms.`,
      code: null,
    });
    expect(out.ms).toBeGreaterThanOrEqual(SMALL_FETCH_TIMEOUT_MS - 50);
    expect(out.ms).toBeLessThan(SMALL_MAX_TIMEOUT_MS);
  });
});
