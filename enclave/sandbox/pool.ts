// The pool of sandbox worker threads (sandbox.md, Concurrency and isolation). Each run goes to the
// worker with the fewest runs in flight; when every worker is at its limit the caller gets 429
// `executor_busy` instead of an unbounded queue. A run that outlives its deadline by a grace period
// (its worker is stuck in a way the interrupt handler could not stop) gets the worker terminated
// and replaced; a worker that dies is replaced too.
import { Worker } from "node:worker_threads";
import { SigilError } from "../../shared/errors.ts";
import type { SandboxLimits } from "../config.ts";
import type { Logger } from "../log.ts";
import type { KeyMaterial, KeyRequest } from "./hostOps.ts";
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.ts";
import type { RunOutcome, RunRequest } from "./runtime.ts";

/** Answers a run's key requests (authorization happens there, on the service thread). */
export type KeyProvider = (request: KeyRequest) => Promise<KeyMaterial>;

export type SandboxPoolOptions = {
  workers: number;
  runsPerWorker: number;
  limits: SandboxLimits;
  fetchPolicy: WorkerInit["fetchPolicy"];
  log: Logger;
  /** Extra time past a run's deadline before its worker is considered stuck. */
  watchdogGraceMs?: number;
};

type Pending = { resolve: (o: RunOutcome) => void; reject: (e: Error) => void; keys: KeyProvider; watchdog: NodeJS.Timeout };
type Slot = { worker: Worker; ready: Promise<void>; runs: Map<number, Pending>; index: number; generation: number };

export class SandboxPool {
  readonly #o: SandboxPoolOptions;
  readonly #slots: Slot[] = [];
  #nextRunId = 1;
  #closed = false;
  /** Workers replaced after a crash or a stuck run (reported in /health). */
  restarts = 0;

  private constructor(options: SandboxPoolOptions) {
    this.#o = options;
  }

  static async start(options: SandboxPoolOptions): Promise<SandboxPool> {
    const pool = new SandboxPool(options);
    for (let i = 0; i < options.workers; i++) pool.#slots.push(pool.#spawn(i, 0));
    await Promise.all(pool.#slots.map((s) => s.ready));
    return pool;
  }

  get capacity(): number {
    return this.#o.workers * this.#o.runsPerWorker;
  }

  get active(): number {
    return this.#slots.reduce((n, s) => n + s.runs.size, 0);
  }

  /** Runs one script; rejects with 429 `executor_busy` when every worker is full. */
  run(request: RunRequest, keys: KeyProvider): Promise<RunOutcome> {
    if (this.#closed) return Promise.reject(new SigilError("enclave_unavailable", "the executor is shutting down", { retryAfterSeconds: 1 }));
    let slot: Slot | undefined;
    for (const s of this.#slots) if (s.runs.size < this.#o.runsPerWorker && (!slot || s.runs.size < slot.runs.size)) slot = s;
    if (!slot) {
      return Promise.reject(new SigilError("executor_busy", "every executor is busy; retry shortly", { retryAfterSeconds: 1 }));
    }
    const runId = this.#nextRunId++;
    const target = slot;
    return new Promise<RunOutcome>((resolve, reject) => {
      const watchdog = setTimeout(() => this.#stuck(target, runId), request.timeoutMs + (this.#o.watchdogGraceMs ?? 5_000));
      target.runs.set(runId, { resolve, reject, keys, watchdog });
      void target.ready.then(() => this.#post(target, { type: "run", runId, request }));
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((s) => s.worker.terminate()));
  }

  #spawn(index: number, generation: number): Slot {
    const init: WorkerInit = { limits: this.#o.limits, fetchPolicy: this.#o.fetchPolicy };
    // QuickJS recursion runs on the thread's native stack; 8 MiB leaves room for the 1 MiB script stack limit.
    const worker = new Worker(new URL("./worker.ts", import.meta.url), { workerData: init, resourceLimits: { stackSizeMb: 8 } });
    let markReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const slot: Slot = { worker, ready, runs: new Map(), index, generation };
    worker.on("message", (message: FromWorker) => {
      if (message.type === "ready") markReady();
      else this.#onMessage(slot, message);
    });
    worker.on("error", (err) => this.#o.log.error("sandbox worker failed", { worker: index, error: err.message }));
    worker.on("exit", (code) => this.#onExit(slot, code));
    return slot;
  }

  #post(slot: Slot, message: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (this.#slots[slot.index] === slot) slot.worker.postMessage(message, transfer);
  }

  #onMessage(slot: Slot, message: Exclude<FromWorker, { type: "ready" }>): void {
    const pending = slot.runs.get(message.runId);
    if (message.type === "done") {
      if (!pending) return;
      clearTimeout(pending.watchdog);
      slot.runs.delete(message.runId);
      if (message.outcome.hostFailure) this.#o.log.error("sandbox host failure during a run", { error: message.outcome.hostFailure });
      pending.resolve(message.outcome);
      return;
    }
    // A key request: authorized by the run's provider on this thread; the key moves (not copies) to the worker.
    const { callId } = message;
    if (!pending) {
      this.#post(slot, { type: "keyReply", callId, ok: false, code: "permission_denied", message: "the run has ended" });
      return;
    }
    pending.keys(message.request).then(
      (material) => {
        const privateKey = toTransferable(material.privateKey);
        const encryptionKey = material.encryptionKey ? toTransferable(material.encryptionKey) : undefined;
        this.#post(
          slot,
          { type: "keyReply", callId, ok: true, privateKey, ...(encryptionKey ? { encryptionKey } : {}) },
          encryptionKey ? [privateKey, encryptionKey] : [privateKey],
        );
      },
      (err: unknown) => {
        const coded = err as { code?: unknown; message?: unknown };
        const known = err instanceof SigilError || typeof coded.code === "string";
        if (!known) this.#o.log.error("key request failed", { error: err instanceof Error ? err.message : String(err) });
        this.#post(slot, {
          type: "keyReply",
          callId,
          ok: false,
          code: known ? String(coded.code) : "internal_error",
          message: known ? String(coded.message) : "the key could not be provided",
        });
      },
    );
  }

  #stuck(slot: Slot, runId: number): void {
    if (!slot.runs.has(runId) || this.#slots[slot.index] !== slot) return;
    this.#o.log.error("a run outlived its deadline; replacing its worker", { worker: slot.index, runs: slot.runs.size });
    const pending = slot.runs.get(runId);
    slot.runs.delete(runId);
    pending?.resolve({ logs: "", durationMs: 0, error: { code: "timeout", message: "the script ran past its time limit" } });
    // Replaced now, not on its exit event: until then new runs would be routed to a dying worker.
    this.#replace(slot);
    void slot.worker.terminate();
  }

  #onExit(slot: Slot, code: number): void {
    if (this.#slots[slot.index] !== slot || this.#closed) return;
    this.#o.log.warn("sandbox worker exited; starting a new one", { worker: slot.index, code });
    this.#replace(slot);
  }

  /** Fails the runs still on `slot` (its worker is gone or going) and puts a new worker in its place. */
  #replace(slot: Slot): void {
    for (const pending of slot.runs.values()) {
      clearTimeout(pending.watchdog);
      pending.reject(new SigilError("internal_error", "the executor restarted during the run; try again"));
    }
    slot.runs.clear();
    if (this.#closed) return;
    this.restarts++;
    this.#slots[slot.index] = this.#spawn(slot.index, slot.generation + 1);
  }
}

/** A copy of the key in its own ArrayBuffer (so it can be transferred), with the original zeroed. */
function toTransferable(bytes: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  bytes.fill(0);
  return copy.buffer;
}
