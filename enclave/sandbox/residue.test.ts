// Nothing of one run survives into the next, whatever the script could do inside its memory (issue
// 26), proven by looking at the bytes: a run handles a secret of every kind — its params, a fetch
// body, its response, its logs, an error message, a wallet's key it asked for, a digest it signed —
// each a canary; once the runs have ended, the residue oracle (test/harness/residue.ts) reads every
// QuickJS instance's whole memory in this process, every page it has, and must find none of them in
// any form. The oracle is shown to see a canary while a run that holds it is still under way. Through
// the real pool with one worker, whose instances serve run after run.
import { randomBytes } from "node:crypto";
import { bytesToHex, recoverAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFetchTarget, type FetchTarget } from "../../emulators/fetchTarget.ts";
import { createLogger } from "../../shared/log.ts";
import { scanResidue, TENANT_SCRIPT as TENANT, tenantCanaries } from "../../test/harness/residue.ts";
import { readEnclaveConfig } from "../config.ts";
import { SandboxPool, type KeyProvider } from "./pool.ts";
import type { RunOutcome } from "./runtime.ts";

const config = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
  SIGIL_SANDBOX_WORKERS: "1",
});

/** A tenant of the pool: its secrets, a wallet key of its own, and a key provider that hands it out. */
function tenantSecrets(targetUrl: string) {
  // A plain array, not a Buffer: a Buffer's slice() is a view, and the host zeroes the copy it is handed.
  const key = Uint8Array.from(randomBytes(32));
  const secrets = tenantCanaries({ target: targetUrl, wallet: privateKeyToAccount(bytesToHex(key)).address, key });
  const keys: KeyProvider = async (r) => {
    if (r.kind === "wallet" && r.pkpId.toLowerCase() === secrets.params.wallet.toLowerCase())
      return { privateKey: key.slice() };
    throw new Error("this tenant has one wallet");
  };
  return { ...secrets, keys };
}

const answer = (outcome: RunOutcome): Record<string, unknown> => {
  if (outcome.error !== undefined || outcome.responseJson === undefined)
    throw new Error(`the run failed: ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.responseJson) as Record<string, unknown>;
};

let target: FetchTarget;
let pool: SandboxPool;

beforeAll(async () => {
  target = await startFetchTarget();
  pool = await SandboxPool.start({
    workers: 1,
    runsPerWorker: config.runsPerWorker,
    limits: config.limits,
    fetchPolicy: {
      allowHosts: [`127.0.0.1:${target.port}`],
      denyPorts: [],
      timeoutMs: 10_000,
      maxResponseBytes: config.limits.maxFetchBytes,
      maxRedirects: 1,
    },
    dns: config.dns,
    recycle: config.sandboxRecycle,
    log: createLogger("silent"),
  });
});

afterAll(async () => {
  await pool?.close();
  await target?.close();
});

const request = (code: string, params: unknown, requestId: string) => ({
  code,
  cid: "QmResidueTest",
  paramsJson: JSON.stringify(params),
  timeoutMs: 20_000,
  requestId,
  correlationId: null,
});

describe("no residue of a run in any instance's memory, through the pool with one worker (issue 26)", {
  timeout: 60_000,
}, () => {
  it("the oracle sees every kind of canary in its instance's memory while the run that holds them is under way", async () => {
    const { params, canaries, keys } = tenantSecrets(target.url);
    const holding = pool.run(request(TENANT, { ...params, hold: 1_500 }, "residue-live"), keys);
    // The run has fetched, signed and logged well before its hold ends.
    let during = scanResidue("self", canaries);
    for (let i = 0; i < 100 && new Set(during.hits.map((h) => h.canary)).size < Object.keys(canaries).length; i++) {
      await new Promise((r) => setTimeout(r, 50));
      during = scanResidue("self", canaries);
    }
    expect(during.memories).toBeGreaterThanOrEqual(1);
    expect(new Set(during.hits.map((h) => h.canary))).toEqual(new Set(Object.keys(canaries)));
    // The wide param is held as UTF-16, the key as hex text (getPrivateKey's answer).
    expect(during.hits.some((h) => h.canary === "wideParams" && h.form === "utf16")).toBe(true);
    expect(during.hits.some((h) => h.canary === "walletKey" && h.form === "hex")).toBe(true);
    expect(answer(await holding).answer).toBe(canaries.response);
    expect(scanResidue("self", canaries).hits).toEqual([]);
  });

  it("after runs that handled params, a fetch body, a response, logs, an error, a wallet's key and a signed digest, no canary of any kind is in any instance's memory, on any page", async () => {
    const tenant = tenantSecrets(target.url);
    const ok = answer(await pool.run(request(TENANT, tenant.params, "residue-tenant"), tenant.keys));
    // The run did handle every secret: its answer holds what only it could have made from them.
    expect(ok.answer).toBe(tenant.canaries.response);
    expect(ok.fetched).toBe(tenant.canaries.fetchBody);
    expect(await recoverAddress({ hash: tenant.params.digest as Hex, signature: ok.signature as Hex })).toBe(
      tenant.params.wallet,
    );
    const failed = await pool.run(
      request(TENANT, { ...tenant.params, fail: true }, "residue-tenant-fails"),
      tenant.keys,
    );
    expect(failed.error?.message).toContain(tenant.canaries.errorMessage as string);
    expect(failed.logs).toContain(tenant.canaries.logs as string);
    // Runs of other code on the same instances afterwards change nothing: still none.
    for (let i = 0; i < 5; i++)
      answer(
        await pool.run(
          request(`async function main() { return [1, 2, 3].join() }`, null, `residue-after-${i}`),
          tenant.keys,
        ),
      );
    const scan = scanResidue("self", tenant.canaries);
    expect(scan.memories).toBeGreaterThanOrEqual(1);
    expect(scan.hits).toEqual([]);
  });

  it("a run that asked for a wallet's key and kept 300 strings made from it, followed by a run that grows a SharedArrayBuffer past its allocation: the second gets no view and no key (the review's reproduction)", async () => {
    const tenant = tenantSecrets(target.url);
    answer(await pool.run(request(TENANT, tenant.params, "residue-victim"), tenant.keys));
    const attacker = await pool.run(
      request(
        `async function main() {
          let view;
          try {
            const sab = new SharedArrayBuffer(8, { maxByteLength: 1 << 24 });
            sab.grow(1 << 24);
            view = new Uint8Array(sab);
          } catch (e) {
            return { refused: String(e), shared: typeof SharedArrayBuffer, atomics: typeof Atomics };
          }
          let text = "";
          for (let i = 0; i < view.length; i++) if (view[i] >= 48 && view[i] < 123) text += String.fromCharCode(view[i]);
          return { length: view.length, sample: text };
        }`,
        null,
        "residue-attacker",
      ),
      tenant.keys,
    );
    const result = answer(attacker);
    expect(result).toEqual({
      refused: "ReferenceError: 'SharedArrayBuffer' is not defined",
      shared: "undefined",
      atomics: "undefined",
    });
    expect(scanResidue("self", tenant.canaries).hits).toEqual([]);
  });
});
