// The sandbox pool (docs/design/sandbox.md, Concurrency and isolation) with real worker threads: a full pool
// refuses with 429 `executor_busy` instead of queueing, a worker that dies is replaced and the pool
// keeps serving, and close() ends the workers. Node's Worker is wrapped (not replaced) only so the
// test can hold the threads the pool starts and terminate one behind its back.
import type { Worker as NodeWorker } from "node:worker_threads";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startFetchTarget, type FetchTarget } from "../../emulators/fetchTarget.ts";
import { SigilError } from "../../shared/errors.ts";
import { readEnclaveConfig } from "../config.ts";
import { createLogger, type Logger } from "../../shared/log.ts";
import { bytesToHex, hashMessage, recoverAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { KeyUse } from "./hostOps.ts";
import { createInstance } from "./instance.ts";
import { SandboxPool, type KeyProvider } from "./pool.ts";
import { prepareRuntime, type RunOutcome, type RunRequest } from "./runtime.ts";

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
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
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
const waits = (ms: number, answer: string) =>
  request(`async function main() { await new Promise((r) => setTimeout(r, ${ms})); return ${JSON.stringify(answer)} }`);
const quick = (answer: string) => request(`async function main() { return ${JSON.stringify(answer)} }`);

function answer(outcome: RunOutcome): unknown {
  if (outcome.error !== undefined || outcome.responseJson === undefined)
    throw new Error(`the run failed: ${JSON.stringify(outcome)}`);
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

/** The memory of one prepared instance, as the pool's workers make them. */
async function preparedInstanceBytes(): Promise<number> {
  const instance = await createInstance(config.limits);
  await prepareRuntime(instance, config.limits);
  return instance.preparedBytes;
}

async function startPool(
  options: {
    runsPerWorker?: number;
    allowHosts?: string[];
    workerHeapBytes?: number;
    memoryBudgetBytes?: number;
    log?: Logger;
  } = {},
): Promise<SandboxPool> {
  started.length = 0;
  pool = await SandboxPool.start({
    workers: config.sandboxWorkers,
    runsPerWorker: options.runsPerWorker ?? config.runsPerWorker,
    limits: config.limits,
    fetchPolicy: {
      allowHosts: options.allowHosts ?? [],
      denyPorts: [],
      timeoutMs: 30_000,
      maxResponseBytes: config.limits.maxFetchBytes,
      maxRedirects: 1,
    },
    dns: config.dns,
    recycle: {
      ...config.sandboxRecycle,
      ...(options.workerHeapBytes === undefined ? {} : { workerHeapBytes: options.workerHeapBytes }),
    },
    log: options.log ?? createLogger("silent"),
    watchdogGraceMs: config.watchdogGraceMs,
    ...(options.memoryBudgetBytes === undefined ? {} : { memoryBudgetBytes: options.memoryBudgetBytes }),
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

// The limits as the outside review broke them (issue 11, points 1 and 2), held from outside the
// run: every case on one worker, so a neighbour shares the thread with the offender.
describe("SandboxPool: a run's limits hold whatever its code calls, and its neighbours do not pay for it", {
  timeout: 60_000,
}, () => {
  let target: FetchTarget;
  beforeAll(async () => {
    target = await startFetchTarget();
  });
  afterAll(async () => {
    await target.close();
  });

  /** 300 scans of a 16 MiB string: each one call of a built-in, none of them polling the interrupt handler. */
  const INDEXOF_LOOP = `async function main() {
    const s = "a".repeat(1 << 24);
    let n = 0;
    for (let i = 0; i < 300; i++) n += s.indexOf("b");
    return n;
  }`;

  it("an indexOf loop past its 2 s deadline is ended from outside at the deadline: timeout, billed its whole grant, its worker kept, and a neighbour on the same worker succeeds", async () => {
    const p = await startPool({ runsPerWorker: 8 });
    const t0 = performance.now();
    const offender = p.run(request(INDEXOF_LOOP, 2_000), noKeys);
    // Started while the offender holds the thread: its 1.5 s budget does not count that time.
    await new Promise((r) => setTimeout(r, 300));
    const neighbour = p.run(
      request(`async function main() { await new Promise((r) => setTimeout(r, 200)); return "neighbour" }`, 1_500),
      noKeys,
    );

    const ended = await offender;
    const wallMs = performance.now() - t0;
    expect(ended.error?.code).toBe("timeout");
    expect(ended.endedByWatchdog).toBe(true);
    expect(ended.durationMs).toBe(2_000);
    // Long before the 5 s fallback that used to replace the worker (the 300 scans take far longer).
    expect(wallMs).toBeLessThan(4_500);
    expect(answer(await neighbour)).toBe("neighbour");
    expect(answer(await p.run(quick("after"), noKeys))).toBe("after");
    expect(p.terminations).toBe(1);
    expect(p.restarts).toBe(0);
    expect(started).toHaveLength(1);
  });

  it("a thrown object whose getters allocate without end or loop in a built-in ends in memory_limit or timeout, never beyond the run's limits, and the worker goes on", async () => {
    const p = await startPool({ runsPerWorker: 4 });
    const memoryGetter = await p.run(
      request(`async function main() {
        throw { get name() { const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length); }, message: "m" };
      }`),
      noKeys,
    );
    expect(memoryGetter.error?.code).toBe("memory_limit");
    const slowGetter = await p.run(
      request(
        `async function main() {
        throw { get message() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return String(n); } };
      }`,
        1_500,
      ),
      noKeys,
    );
    expect(slowGetter.error?.code).toBe("timeout");
    expect(answer(await p.run(quick("after"), noKeys))).toBe("after");
    expect(p.restarts).toBe(0);
  });

  it("50 parallel 10 MiB fetches cannot put more than the run's memory limit into it, six such runs leave the worker serving, and no instance outgrows its limit", async () => {
    const p = await startPool({ runsPerWorker: 8, allowHosts: [`127.0.0.1:${target.port}`] });
    const greedy = request(
      `async function main() {
      const settled = await Promise.allSettled(Array.from({ length: 50 }, () => fetch(${JSON.stringify(`${target.url}/big?bytes=${10 << 20}`)}).then((r) => r.arrayBuffer())));
      let bytes = 0, refused = 0;
      for (const s of settled) {
        if (s.status === "fulfilled") bytes += s.value.byteLength;
        else if (s.reason.code === "limit_exceeded") refused++;
      }
      return { bytes, refused };
    }`,
      30_000,
    );
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => p.run(greedy, noKeys)));
    for (const outcome of outcomes) {
      if (outcome.error) {
        expect(outcome.error.code).toBe("memory_limit");
      } else {
        const { bytes, refused } = answer(outcome) as { bytes: number; refused: number };
        expect(bytes).toBeLessThanOrEqual(config.limits.memoryLimitBytes);
        expect(refused).toBeGreaterThan(0);
      }
    }
    // The worker that ran all six is the one that answers now, at once.
    expect(answer(await p.run(quick("innocent"), noKeys))).toBe("innocent");
    expect(p.restarts).toBe(0);
    expect(started).toHaveLength(1);
  });
});

describe("SandboxPool: a burst of runs on a worker with too few runtimes ready", { timeout: 60_000 }, () => {
  it("starts them in the order they came as runtimes are made one at a time: the first is answered before the last one's runtime is made", async () => {
    const p = await startPool({ runsPerWorker: 32 });
    expect(answer(await p.run(quick("warm"), noKeys))).toBe("warm");
    // Two runs hold the runtimes kept ready; twenty more come at once and find none.
    const holders = [p.run(waits(3_000, "a"), noKeys), p.run(waits(3_000, "b"), noKeys)];
    const burst = Array.from({ length: 20 }, (_, i) => p.run(quick(`run ${i}`), noKeys));
    const order: number[] = [];
    burst.forEach(
      (run, i) =>
        void run.then(
          () => order.push(i),
          () => order.push(-1),
        ),
    );
    await Promise.race(burst);
    // Each instance counts its memory from its making: had every waiting run made its own side by side,
    // all twenty would exist before the first of them could start.
    const instancesAtFirstAnswer = p.heapBytes / (await preparedInstanceBytes());
    expect(instancesAtFirstAnswer).toBeLessThanOrEqual(8);
    expect((await Promise.all(burst)).map(answer)).toEqual(burst.map((_, i) => `run ${i}`));
    expect(order).toEqual(burst.map((_, i) => i));
    expect((await Promise.all(holders)).map(answer)).toEqual(["a", "b"]);
  });
});

describe("SandboxPool: workers whose heap grew are recycled between runs", { timeout: 60_000 }, () => {
  it("refuses new runs with 429 executor_busy while the runs in flight hold the sandbox's memory budget, and takes them again once they end", async () => {
    // One worker: its prepared instances (a few MiB) and, once the hoarder has grown, 40 MiB more.
    const p = await startPool({ runsPerWorker: 8, memoryBudgetBytes: 32 << 20 });
    expect(answer(await p.run(quick("before"), noKeys))).toBe("before");
    const hoarder = p.run(
      request(
        `async function main() { const keep = []; for (let i = 0; i < 40; i++) keep.push("x".repeat(1 << 20) + i); await new Promise((r) => setTimeout(r, 1500)); return keep.length }`,
      ),
      noKeys,
    );
    for (let i = 0; p.heapBytes <= 32 << 20; i++) {
      if (i > 200) throw new Error(`the hoarder's heap never showed: ${p.heapBytes} bytes`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const refused = await rejection(p.run(quick("while full"), noKeys));
    expect(refused).toBeInstanceOf(SigilError);
    expect(refused).toMatchObject({ code: "executor_busy", status: 429 });
    expect(answer(await hoarder)).toBe(40);
    // Its grown instance is dropped, not kept: the budget is free again.
    expect(p.heapBytes).toBeLessThanOrEqual(32 << 20);
    expect(answer(await p.run(quick("after"), noKeys))).toBe("after");
  });

  it("a worker past its heap threshold finishes the runs it holds, takes no new ones, and is replaced; no run fails", async () => {
    // A threshold every worker passes: each retires after its first run.
    const p = await startPool({ runsPerWorker: 4, workerHeapBytes: 1 });
    const first = [p.run(waits(300, "a"), noKeys), p.run(waits(300, "b"), noKeys)];
    expect((await Promise.all(first)).map(answer)).toEqual(["a", "b"]);
    for (let i = 0; i < 3; i++) expect(answer(await p.run(quick(`after ${i}`), noKeys))).toBe(`after ${i}`);
    expect(p.retirements).toBeGreaterThanOrEqual(3);
    // Retired, not crashed: the restarts count stays for workers that failed.
    expect(p.restarts).toBe(0);
    expect(started.length).toBe(p.retirements + 1);
  });

  it("a run that grew its heap leaves the next run on the same worker its whole memory limit", async () => {
    const p = await startPool({ runsPerWorker: 1 });
    const grows = request(
      `async function main() { const keep = []; for (let i = 0; i < 40; i++) keep.push("x".repeat(1 << 20) + i); return keep.length }`,
    );
    for (let i = 0; i < 5; i++) expect(answer(await p.run(grows, noKeys))).toBe(40);
    // 56 MiB of strings: fits a 64 MiB limit only if nothing of the runs before is left in its way.
    const big = request(
      `async function main() { const keep = []; for (let i = 0; i < 56; i++) keep.push("y".repeat(1 << 20) + i); return keep.length }`,
    );
    expect(answer(await p.run(big, noKeys))).toBe(56);
    expect(p.restarts).toBe(0);
  });
});

// What a terminated slice must leave alone (review of issue 11): the host copies a fetch's reply
// into the VM outside any slice, so no script code may run there; and a slice is ended only in a
// turn of its own, so the other runs' queued continuations survive it.
describe("SandboxPool: nothing of a script runs outside its watched slices, and a terminated slice takes nothing else down", {
  timeout: 120_000,
}, () => {
  let target: FetchTarget;
  beforeAll(async () => {
    target = await startFetchTarget();
  });
  afterAll(async () => {
    await target.close();
  });

  it("a `then` getter the script puts on Array.prototype is not run by the host when it hands a fetch's reply over", async () => {
    const p = await startPool({ runsPerWorker: 4, allowHosts: [`127.0.0.1:${target.port}`] });
    // The trap is set once the request is with the host: only the host's handing over of the reply
    // could reach it (the script resolves no array). Run there, outside any slice, its scans would
    // hold the worker past every deadline; the watchdog would not see them.
    const trap = request(
      `async function main() {
        let trapped = 0;
        const pending = fetch(${JSON.stringify(`${target.url}/hello`)});
        Object.defineProperty(Array.prototype, "then", {
          get() { trapped++; const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return undefined; },
          configurable: true,
        });
        const r = await pending;
        delete Array.prototype.then;
        return { text: await r.text(), trapped };
      }`,
      3_000,
    );
    expect(answer(await p.run(trap, noKeys))).toEqual({ text: "hello from the target", trapped: 0 });
    expect(p.restarts).toBe(0);
  });

  /**
   * Runs `first`, then 50 ms later a neighbour on the same worker whose one 900 ms slice (well inside
   * its own limit) holds the thread; checks the neighbour answered and gives `first`'s outcome.
   */
  async function beside900msSlice(p: SandboxPool, first: ReturnType<typeof request>) {
    const held = p.run(first, noKeys);
    await new Promise((r) => setTimeout(r, 50));
    const loop = p.run(
      request(
        `async function main() { const end = Date.now() + 900; while (Date.now() < end); return "looped" }`,
        5_000,
      ),
      noKeys,
    );
    const [outcome, loopOutcome] = await Promise.all([held, loop]);
    expect(answer(loopOutcome)).toBe("looped");
    return outcome;
  }

  it("a run held up by a neighbour's long slice gets that time back: it succeeds past its wall-clock deadline, and its duration leaves the held time out", async () => {
    const p = await startPool({ runsPerWorker: 8 });
    // Started first, with 700 ms: its 300 ms timer comes due while the loop below holds the thread
    // (300 ms, not nearer the limit: on a busy machine the run's own time, which counts, is longer).
    const heldOutcome = await beside900msSlice(
      p,
      request(`async function main() { await new Promise((r) => setTimeout(r, 300)); return "held" }`, 700),
    );
    // Its answer came ~950 ms after it started, past its 700 ms: the held time did not count.
    expect(answer(heldOutcome)).toBe("held");
    expect(heldOutcome.durationMs).toBeLessThan(700);
    expect(p.restarts).toBe(0);
  });

  it("a timer longer than the run's limit never fires, even when a neighbour's long slice moves the run's deadline on: the run ends in timeout", async () => {
    const p = await startPool({ runsPerWorker: 8 });
    // Its 60 s timer must not come due before its deadline, however far that moves.
    const waitingOutcome = await beside900msSlice(
      p,
      request(`async function main() { await new Promise((r) => setTimeout(r, 60000)); return "never" }`, 700),
    );
    expect(waitingOutcome.error?.code).toBe("timeout");
    expect(p.restarts).toBe(0);
  });

  it("a long built-in ended from outside in a batch of runs is answered by the watchdog, not given up on, and the runs batched after it are answered", async () => {
    const errors: string[] = [];
    const p = await startPool({ runsPerWorker: 64, log: createLogger("error", {}, (line) => errors.push(line)) });
    const scans = request(
      'async function main() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return n }',
      1000,
    );
    for (let round = 0; round < 3; round++) {
      // Sent in one turn of the pool's thread: they go to the worker as one message, the first run
      // in that message's turn, the others each in a turn of its own, the scans before two more.
      const [before, ended, ...after] = await Promise.all(
        [quick("before"), scans, quick("after 1"), quick("after 2")].map((r) => p.run(r, noKeys)),
      );
      expect(answer(before!)).toBe("before");
      expect(ended!.error?.code).toBe("timeout");
      expect(after.map(answer)).toEqual(["after 1", "after 2"]);
    }
    expect(
      errors.filter((line) => /did not answer long after its deadline|replacing a sandbox worker/.test(line)),
    ).toEqual([]);
    expect(p.terminations).toBeGreaterThanOrEqual(3);
    expect(p.restarts).toBe(0);
  });

  it("an offender ended right after a long slice leaves every neighbour waiting on its worker answered", async () => {
    const p = await startPool({ runsPerWorker: 64 });
    // A timer callback of 30 ms (a long slice: the waiting neighbours are woken to be told so), then
    // in the same turn a job of scans that outlives the deadline and is ended from outside.
    const offender = request(
      `async function main() {
        setTimeout(() => {
          let x = 0; const t = Date.now(); while (Date.now() - t < 30) x++;
          Promise.resolve().then(() => { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); });
        }, 5);
        await new Promise(() => {});
      }`,
      700,
    );
    const neighbour = (n: number) =>
      request(`async function main() { await new Promise((r) => setTimeout(r, 1500)); return ${n} }`);
    for (let round = 0; round < 2; round++) {
      const neighbours = Array.from({ length: 8 }, (_, n) => p.run(neighbour(n), noKeys));
      await new Promise((r) => setTimeout(r, 50));
      const ended = await p.run(offender, noKeys);
      expect(ended.error?.code).toBe("timeout");
      expect((await Promise.all(neighbours)).map(answer)).toEqual(Array.from({ length: 8 }, (_, n) => n));
    }
    expect(p.terminations).toBeGreaterThanOrEqual(2);
    expect(p.restarts).toBe(0);
  });
});

describe("SandboxPool: nothing a run sets is visible to the next run on the same worker (each starts from its runtime's image)", {
  timeout: 60_000,
}, () => {
  /**
   * What a run can see of the world it starts in: every own property of the global object and of
   * the built-ins' constructors and prototypes (their names, and the kind and text of each value),
   * and what a few of them do. Two runs on fresh runtimes see the same fingerprint.
   */
  const FINGERPRINT = `
    const describe = (o) => Object.getOwnPropertyNames(o).sort().map((k) => {
      const d = Object.getOwnPropertyDescriptor(o, k);
      const v = "value" in d ? d.value : d.get;
      const text = typeof v === "function" ? Function.prototype.toString.call(v).slice(0, 80) : typeof v === "object" && v !== null ? "object" : String(v);
      return k + ":" + typeof v + ":" + text + ":" + d.writable + d.enumerable + d.configurable;
    }).join("|");
    const world = () => ({
      global: describe(globalThis),
      builtins: [Object, Array, Function, Promise, JSON, Math, String, Number, Symbol, Date, RegExp, Map, Set, Error, Reflect]
        .map((c) => describe(c) + "#" + (c.prototype ? describe(c.prototype) : "")).join("\\n"),
      behaviour: [[3, 1, 2].map((x) => x * 2).join(), JSON.stringify({ a: [1] }), ({}).polluted, typeof leaked, typeof helper,
        String(Symbol.for("sigil-test").description), new Date(0).toISOString(), [..."ab"].length],
    });`;
  const observer = request(`${FINGERPRINT}
    async function main() {
      const first = world();
      // Anything the run before left behind would have fired by now.
      await new Promise((r) => setTimeout(r, 150));
      return { ...first, late: typeof globalThis.late, settled: typeof globalThis.settled, random: Math.random() };
    }`);
  const polluter = request(`
    globalThis.leaked = "the previous run's secret";
    function helper() { return "left behind"; }
    Object.prototype.polluted = "yes";
    Array.prototype.map = function () { return ["hijacked"]; };
    JSON.stringify = () => "forged";
    Date.prototype.toISOString = () => "forged";
    Math.random = () => 0.5;
    Promise.prototype.then = function () { return this; };
    String.prototype.slice = () => "forged";
    Object.defineProperty(globalThis, "console", { value: { log() {} }, writable: false, configurable: false });
    Object.freeze(Object.prototype);
    Symbol.for("sigil-test");
    async function main() {
      setTimeout(() => { globalThis.late = true; }, 50);
      new Promise((resolve) => setTimeout(resolve, 60)).then(() => { globalThis.settled = true; });
      new Promise(() => {});
      queueMicrotask(() => { globalThis.micro = true; });
      return "polluted";
    }`);

  it("globals, prototypes, frozen built-ins, timers and promises a run leaves are gone for the next run on the worker; Math.random is seeded afresh", async () => {
    const p = await startPool({ runsPerWorker: 1 });
    const baseline = answer(await p.run(observer, noKeys)) as Record<string, unknown>;
    expect(baseline.behaviour).toEqual([
      "6,2,4",
      '{"a":[1]}',
      null,
      "undefined",
      "undefined",
      "sigil-test",
      "1970-01-01T00:00:00.000Z",
      2,
    ]);
    for (let round = 0; round < 3; round++) {
      expect(answer(await p.run(polluter, noKeys))).toBe("polluted");
      const after = answer(await p.run(observer, noKeys)) as Record<string, unknown>;
      expect(after.global).toBe(baseline.global);
      expect(after.builtins).toBe(baseline.builtins);
      expect(after.behaviour).toEqual(baseline.behaviour);
      expect([after.late, after.settled]).toEqual(["undefined", "undefined"]);
      // A generator seeded for each run: not the polluter's constant, not the baseline's number.
      expect(after.random).not.toBe(0.5);
      expect(after.random).not.toBe(baseline.random);
    }
    // One worker, one run at a time: every run above was on the same worker, and no worker was replaced.
    expect(started).toHaveLength(1);
    expect(p.restarts).toBe(0);
  });

  it("a run that failed (thrown error, memory limit, timeout) leaves nothing either", async () => {
    const p = await startPool({ runsPerWorker: 1 });
    const baseline = answer(await p.run(observer, noKeys)) as Record<string, unknown>;
    const failing = [
      `globalThis.leaked = 1; Object.prototype.polluted = 1; async function main() { throw new Error("after polluting") }`,
      `globalThis.leaked = 1; async function main() { const a = []; for (;;) a.push("x".repeat(1 << 16)); }`,
      `globalThis.leaked = 1; Array.prototype.map = () => []; async function main() { for (;;); }`,
    ];
    for (const code of failing) {
      const outcome = await p.run(request(code, 1_000), noKeys);
      expect(outcome.error?.code).toMatch(/script_error|memory_limit|timeout/);
      const after = answer(await p.run(observer, noKeys)) as Record<string, unknown>;
      expect([after.global, after.builtins, after.behaviour]).toEqual([
        baseline.global,
        baseline.builtins,
        baseline.behaviour,
      ]);
    }
  });
});

describe("SandboxPool: keys offered with a run", { timeout: 60_000 }, () => {
  // Two wallets' keys (fixed test scalars): the first is offered, the second only the provider has.
  const offeredKey = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
  const askedKey = Uint8Array.from({ length: 32 }, (_, i) => 64 - i);
  const offeredWallet = privateKeyToAccount(bytesToHex(offeredKey)).address;
  const askedWallet = privateKeyToAccount(bytesToHex(askedKey)).address;
  const signs = (wallets: string[], extra = "") =>
    request(`async function main() {
      const out = [];
      for (const pkpId of ${JSON.stringify(wallets)}) out.push(await Sigil.Actions.signMessage({ pkpId, message: "hi" }));
      ${extra}
      return out;
    }`);

  it("a request for an offered wallet is answered in the worker (the provider is not asked), each use is reported for the receipt, and other wallets still go to the provider", async () => {
    const p = await startPool();
    const asked: string[] = [];
    const keys: KeyProvider = async (r) => {
      asked.push(r.kind === "wallet" ? `${r.pkpId.toLowerCase()}${r.encryption ? "+enc" : ""}` : r.kind);
      if (r.kind === "wallet" && r.pkpId.toLowerCase() === askedWallet.toLowerCase())
        return { privateKey: askedKey.slice() };
      if (r.kind === "wallet" && r.encryption)
        return { privateKey: offeredKey.slice(), encryptionKey: new Uint8Array(32).fill(7) };
      throw new SigilError("permission_denied", "not this one");
    };
    const used: Array<{ pkpId: string; digest: string | undefined }> = [];
    const offer = () => ({
      keys: [{ pkpId: offeredWallet.toLowerCase(), material: { privateKey: offeredKey.slice() } }],
      onUse: (pkpId: string, use: KeyUse | undefined) =>
        used.push({ pkpId, digest: use && "digest" in use ? use.digest : undefined }),
    });

    // Offered twice in one run, the asked-for wallet once; then an encryption key the offer lacks.
    const material = offer();
    const signed = answer(
      await p.run(
        signs(
          [offeredWallet, askedWallet, offeredWallet],
          `out.push(await Sigil.Actions.encrypt({ pkpId: ${JSON.stringify(offeredWallet)}, plaintext: "x" }));`,
        ),
        keys,
        material,
      ),
    ) as string[];
    expect(material.keys[0]?.material.privateKey.every((b) => b === 0)).toBe(true); // the caller's copy was zeroed
    const digest = hashMessage("hi");
    for (const [i, wallet] of [offeredWallet, askedWallet, offeredWallet].entries()) {
      expect(await recoverAddress({ hash: digest, signature: signed[i] as `0x${string}` })).toBe(wallet);
    }
    expect(asked).toEqual([askedWallet.toLowerCase(), `${offeredWallet.toLowerCase()}+enc`]);
    expect(used).toEqual([
      { pkpId: offeredWallet.toLowerCase(), digest },
      { pkpId: offeredWallet.toLowerCase(), digest },
    ]);

    // A run that does not use its offer reports nothing, and a refused run zeroes what it was offered.
    used.length = 0;
    expect(answer(await p.run(quick("no keys"), noKeys, offer()))).toBe("no keys");
    expect(used).toEqual([]);
    await p.close();
    const refused = offer();
    expect(await rejection(p.run(quick("late"), noKeys, refused))).toMatchObject({ code: "enclave_unavailable" });
    expect(refused.keys[0]?.material.privateKey.every((b) => b === 0)).toBe(true);
  });
});
