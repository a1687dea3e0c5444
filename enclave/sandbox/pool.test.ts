// The sandbox pool (sandbox.md, Concurrency and isolation) with real worker threads: a full pool
// refuses with 429 `executor_busy` instead of queueing, a worker that dies is replaced and the pool
// keeps serving, and close() ends the workers. Node's Worker is wrapped (not replaced) only so the
// test can hold the threads the pool starts and terminate one behind its back.
import type { Worker as NodeWorker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SigilError } from "../../shared/errors.ts";
import { readEnclaveConfig } from "../config.ts";
import { createLogger } from "../log.ts";
import { SandboxPool, type KeyProvider } from "./pool.ts";
import type { RunOutcome, RunRequest } from "./runtime.ts";

const started = vi.hoisted(() => [] as NodeWorker[]);
vi.mock("node:worker_threads", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:worker_threads")>();
  class RecordedWorker extends original.Worker {
    constructor(...args: ConstructorParameters<typeof original.Worker>) {
      super(...args);
      started.push(this);
    }
  }
  return { ...original, Worker: RecordedWorker, default: { ...original, Worker: RecordedWorker } };
});

const config = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: "0x" + "11".repeat(20),
  SIGIL_SANDBOX_WORKERS: "1",
  SIGIL_SANDBOX_RUNS_PER_WORKER: "2",
});

const noKeys: KeyProvider = async () => {
  throw new SigilError("permission_denied", "this test hands out no keys");
};

function request(code: string, timeoutMs = 5_000): RunRequest {
  return { code, cid: "QmSandboxPoolTest", paramsJson: "null", timeoutMs, requestId: "pool-test", correlationId: null };
}

/** A script that waits `ms` on a timer (holding its slot without using the CPU), then answers. */
const waits = (ms: number, answer: string) => request(`async function main() { await new Promise((r) => setTimeout(r, ${ms})); return ${JSON.stringify(answer)} }`);
const quick = (answer: string) => request(`async function main() { return ${JSON.stringify(answer)} }`);

function answer(outcome: RunOutcome): unknown {
  if (outcome.error !== undefined || outcome.responseJson === undefined) throw new Error(`the run failed: ${JSON.stringify(outcome)}`);
  return JSON.parse(outcome.responseJson) as unknown;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (err: unknown) => err,
  );
}

let pool: SandboxPool | undefined;

async function startPool(): Promise<SandboxPool> {
  started.length = 0;
  pool = await SandboxPool.start({
    workers: config.sandboxWorkers,
    runsPerWorker: config.runsPerWorker,
    limits: config.limits,
    fetchPolicy: { allowHosts: [], denyPorts: [], timeoutMs: 1_000, maxResponseBytes: 1_000, maxRedirects: 1 },
    log: createLogger("silent"),
    watchdogGraceMs: 2_000,
  });
  return pool;
}

afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe("SandboxPool", { timeout: 30_000 }, () => {
  it("with 1 worker × 2 runs in flight, a third run is refused at once with 429 executor_busy and retryAfterSeconds; after the two finish a new run succeeds", async () => {
    const p = await startPool();
    expect(p.capacity).toBe(2);
    const first = p.run(waits(500, "first"), noKeys);
    const second = p.run(waits(500, "second"), noKeys);
    expect(p.active).toBe(2);

    const t0 = performance.now();
    const err = await rejection(p.run(quick("third"), noKeys));
    // Refused, not queued behind the two waiting runs.
    expect(performance.now() - t0).toBeLessThan(250);
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "executor_busy", status: 429 });
    expect((err as SigilError).retryAfterSeconds).toBeGreaterThan(0);

    expect(answer(await first)).toBe("first");
    expect(answer(await second)).toBe("second");
    expect(p.active).toBe(0);
    expect(answer(await p.run(quick("after"), noKeys))).toBe("after");
    expect(p.restarts).toBe(0);
  });

  it("a worker terminated behind the pool's back is replaced: its in-flight run fails with internal_error, restarts counts it, and new runs succeed on the new worker", async () => {
    const p = await startPool();
    expect(started).toHaveLength(1);
    const victim = started[0] as NodeWorker;
    expect(answer(await p.run(quick("before"), noKeys))).toBe("before");

    const inFlight = p.run(waits(2_000, "never"), noKeys);
    await new Promise((r) => setTimeout(r, 100));
    await victim.terminate();

    const err = await rejection(inFlight);
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "internal_error" });
    expect(p.restarts).toBe(1);
    expect(started).toHaveLength(2);
    expect(p.active).toBe(0);

    // The replacement takes the whole capacity again: two runs at once, both answered.
    const [a, b] = await Promise.all([p.run(waits(100, "a"), noKeys), p.run(waits(100, "b"), noKeys)]);
    expect([answer(a), answer(b)]).toEqual(["a", "b"]);
    expect(p.restarts).toBe(1);
  });

  it("close() ends the workers without replacing them and refuses later runs with enclave_unavailable", async () => {
    const p = await startPool();
    const worker = started[0] as NodeWorker;
    const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
    expect(answer(await p.run(quick("up"), noKeys))).toBe("up");

    await p.close();
    await expect(exited).resolves.toBeTypeOf("number");
    // Give a (wrong) replacement the time it would take to start.
    await new Promise((r) => setTimeout(r, 200));
    expect(p.restarts).toBe(0);
    expect(started).toHaveLength(1);

    const err = await rejection(p.run(quick("late"), noKeys));
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "enclave_unavailable" });
  });
});
