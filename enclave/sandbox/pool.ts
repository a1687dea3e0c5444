// The pool of sandbox worker threads (docs/design/sandbox.md, Concurrency and isolation). Each run goes to the
// worker with the fewest runs in flight, preferring workers that are not held by a long slice of
// some run's code; when every worker is at its limit the caller gets 429 `executor_busy` instead of
// an unbounded queue.
//
// Deadlines are kept from outside the workers' threads: a watchdog on this thread reads every
// worker's slice board (slices.ts) and, when a slice of a run's code outlives the run's deadline by
// the grace period, ends that slice alone (terminator.ts) — the worker and its other runs go on, and
// the run is answered `timeout`, billed its whole grant. Only if that cannot be done (no inspector in
// this Node, or the termination did not land) is the whole worker replaced, as is a worker that dies.
import { randomUUID } from "node:crypto";
import { Worker } from "node:worker_threads";
import { isExposed, SigilError } from "../../shared/errors.ts";
import type { SandboxLimits } from "../config.ts";
import type { Logger } from "../../shared/log.ts";
import type { KeyMaterial, KeyRequest, KeyUse, OfferedKey } from "./hostOps.ts";
import type { DnsSettings } from "./net/guardedFetch.ts";
import type { FromWorker, OfferedKeyBytes, ToWorker, WorkerInit } from "./protocol.ts";
import { CodedError, type RunOutcome, type RunRequest } from "./runtime.ts";
import { SLICE_BOARD_BYTES, SliceWatch } from "./slices.ts";
import { Terminator } from "./terminator.ts";

/** Answers a run's key requests (authorization happens there, on the service thread). */
export type KeyProvider = (request: KeyRequest) => Promise<KeyMaterial>;

/** Answers a run's service requests (operations/send.ts), on the service thread: JSON in, JSON out. */
export type ServiceProvider = (op: string, args: unknown) => Promise<unknown>;

/**
 * Keys authorized for a run before its script asks (hostOps.ts OfferedKey), and what to call, before
 * the run's outcome is given, for each use the run made of them (the receipt's record).
 */
export type KeyOffer = { keys: OfferedKey[]; onUse: (pkpId: string, use: KeyUse | undefined) => void };

export type SandboxPoolOptions = {
  workers: number;
  runsPerWorker: number;
  limits: SandboxLimits;
  fetchPolicy: WorkerInit["fetchPolicy"];
  dns: DnsSettings;
  recycle: WorkerInit["recycle"];
  log: Logger;
  /** How far past its deadline a slice may go before it is ended from outside (default 100 ms). */
  watchdogGraceMs?: number;
  /**
   * The heaps of all the workers' QuickJS instances together past which new runs are refused (429
   * executor_busy) until runs end: each run may grow to its own limit, and many at once must not
   * take the machine's memory. Unbounded when absent.
   */
  memoryBudgetBytes?: number;
};

/** How often the watchdog reads the slice boards. */
const WATCH_INTERVAL_MS = 25;
/** A slice running this long makes its worker the last choice for new runs. */
const LONG_SLICE_MS = 50;
/** A termination that has not landed by then means the worker is stuck for good: it is replaced. */
const TERMINATION_TIMEOUT_MS = 3_000;
/** A run that has not answered this long after its deadline (and holds no slice) is given up. */
const BACKSTOP_MIN_MS = 30_000;

type Pending = {
  resolve: (o: RunOutcome) => void;
  reject: (e: Error) => void;
  keys: KeyProvider;
  services: ServiceProvider | undefined;
  onOfferedUse: KeyOffer["onUse"] | undefined;
  request: RunRequest;
  backstop: NodeJS.Timeout;
};
type Slot = {
  worker: Worker;
  name: string;
  ready: Promise<void>;
  runs: Map<number, Pending>;
  index: number;
  watch: SliceWatch;
  /** A termination sent and not yet seen to land: since when, and for which run. */
  killing: { since: number; runId: number } | undefined;
  /** Asked to be replaced (its heap grew too large): takes no new runs. */
  retiring: boolean;
  /** When it was last given a run (performance.now()). */
  lastRunAt: number;
  /** Runs and key replies not yet posted: sent together once this turn's work is done (#flush). */
  outbox: ToWorker[];
  outboxTransfer: ArrayBuffer[];
};

export class SandboxPool {
  readonly #o: SandboxPoolOptions;
  readonly #slots: Slot[] = [];
  readonly #terminator: Terminator | undefined;
  readonly #watchdog: NodeJS.Timeout;
  #nextRunId = 1;
  #closed = false;
  /** Workers replaced after a crash or a stuck slice (reported in /health). */
  restarts = 0;
  /** Workers replaced because their heap passed its threshold. */
  retirements = 0;
  /** Slices of runs' code ended from outside at their deadline. */
  terminations = 0;
  /** Keys runs asked this thread for (a round trip each), and uses of keys offered with a run (none). */
  keysAsked = 0;
  offeredKeysUsed = 0;

  private constructor(options: SandboxPoolOptions, terminator: Terminator | undefined) {
    this.#o = options;
    this.#terminator = terminator;
    this.#watchdog = setInterval(() => this.#watch(), WATCH_INTERVAL_MS);
    this.#watchdog.unref();
  }

  static async start(options: SandboxPoolOptions): Promise<SandboxPool> {
    const terminator = await Terminator.shared();
    if (!terminator)
      options.log.warn(
        "this Node has no inspector: a run stuck in a long built-in can only be ended by replacing its whole sandbox worker",
      );
    const pool = new SandboxPool(options, terminator);
    for (let i = 0; i < options.workers; i++) pool.#slots.push(pool.#spawn(i));
    await Promise.all(pool.#slots.map((s) => s.ready));
    return pool;
  }

  get capacity(): number {
    return this.#o.workers * this.#o.runsPerWorker;
  }

  get active(): number {
    return this.#slots.reduce((n, s) => n + s.runs.size, 0);
  }

  /** The bytes of all the workers' QuickJS instances, as the workers last published them. */
  get heapBytes(): number {
    return this.#slots.reduce((n, s) => n + s.watch.heapBytes(), 0);
  }

  /**
   * Runs one script; rejects with 429 `executor_busy` when every worker is full, or the sandbox's memory
   * is spent. The offered keys move to the worker (the caller's copies are zeroed), refused or not.
   */
  run(request: RunRequest, keys: KeyProvider, offer?: KeyOffer, services?: ServiceProvider): Promise<RunOutcome> {
    const offered = offer?.keys.map(
      ({ pkpId, material }): OfferedKeyBytes => ({
        pkpId,
        privateKey: toTransferable(material.privateKey),
        ...(material.encryptionKey ? { encryptionKey: toTransferable(material.encryptionKey) } : {}),
      }),
    );
    const slot = this.#admit();
    if (slot instanceof SigilError) {
      for (const k of offered ?? []) zeroKeys(k);
      return Promise.reject(slot);
    }
    const runId = this.#nextRunId++;
    return new Promise<RunOutcome>((resolve, reject) => {
      // Only a bug leaves a run unanswered while its worker is responsive: the slice watchdog ends
      // overdue code, and a run held up by others has its deadline moved on by at most their time.
      const backstopMs = request.timeoutMs + Math.max(BACKSTOP_MIN_MS, request.timeoutMs);
      const backstop = setTimeout(() => this.#giveUp(slot, runId), backstopMs);
      slot.runs.set(runId, { resolve, reject, keys, services, onOfferedUse: offer?.onUse, request, backstop });
      const transfer = (offered ?? []).flatMap((k) =>
        k.encryptionKey ? [k.privateKey, k.encryptionKey] : [k.privateKey],
      );
      void slot.ready.then(() =>
        this.#post(slot, { type: "run", runId, request, ...(offered?.length ? { offered } : {}) }, transfer),
      );
    });
  }

  /** The worker a new run goes to, or why none can take it now (429 / 503). */
  #admit(): Slot | SigilError {
    if (this.#closed)
      return new SigilError("enclave_unavailable", "the executor is shutting down", { retryAfterSeconds: 1 });
    const budget = this.#o.memoryBudgetBytes;
    if (budget !== undefined && this.heapBytes > budget) {
      return new SigilError("executor_busy", "the executors' memory is taken by the runs in flight; retry shortly", {
        retryAfterSeconds: 1,
      });
    }
    return (
      this.#choose() ??
      new SigilError("executor_busy", "every executor is busy; retry shortly", { retryAfterSeconds: 1 })
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watchdog);
    await Promise.all(this.#slots.map((s) => s.worker.terminate()));
  }

  /**
   * The least busy worker with room, one not held by a long slice if there is such; among equals, the
   * one given a run longest ago, whose next runtime has had the most time to be prepared.
   */
  #choose(): Slot | undefined {
    const now = Date.now();
    let best: Slot | undefined;
    let bestHeld = true;
    for (const s of this.#slots) {
      if (s.retiring || s.runs.size >= this.#o.runsPerWorker) continue;
      const current = s.watch.current();
      const held = s.killing !== undefined || (current !== undefined && now - current.startedAt > LONG_SLICE_MS);
      const better =
        !best ||
        (bestHeld && !held) ||
        (held === bestHeld &&
          (s.runs.size < best.runs.size || (s.runs.size === best.runs.size && s.lastRunAt < best.lastRunAt)));
      if (better) {
        best = s;
        bestHeld = held;
      }
    }
    if (best) best.lastRunAt = performance.now();
    return best;
  }

  #spawn(index: number): Slot {
    const sliceBoard = new SharedArrayBuffer(SLICE_BOARD_BYTES);
    const init: WorkerInit = {
      limits: this.#o.limits,
      fetchPolicy: this.#o.fetchPolicy,
      dns: this.#o.dns,
      sliceBoard,
      recycle: this.#o.recycle,
    };
    // QuickJS recursion runs on the thread's native stack; 8 MiB leaves room for the 1 MiB script stack limit.
    // A unique name: the terminator finds the worker's inspector session by it.
    const name = `sigil-sandbox-${index}-${randomUUID()}`;
    // The young generation is kept small (12 MiB instead of V8's up to 48): a worker's garbage is the
    // short-lived objects of each run, and a larger one only adds resident memory (bench:enclave).
    const worker = new Worker(new URL("./worker.ts", import.meta.url), {
      name,
      workerData: init,
      resourceLimits: { stackSizeMb: 8, maxYoungGenerationSizeMb: 12 },
    });
    let markReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const slot: Slot = {
      worker,
      name,
      ready,
      runs: new Map(),
      index,
      watch: new SliceWatch(sliceBoard),
      killing: undefined,
      retiring: false,
      lastRunAt: 0,
      outbox: [],
      outboxTransfer: [],
    };
    worker.on("message", (message: FromWorker) => {
      if (message.type === "ready") markReady();
      else if (message.type === "retire") this.#retire(slot);
      else this.#onMessage(slot, message);
    });
    worker.on("error", (err) => this.#o.log.error("sandbox worker failed", { worker: index, error: err.message }));
    worker.on("exit", (code) => this.#onExit(slot, code));
    return slot;
  }

  /**
   * Runs and key replies for a worker wait for the end of this turn of the event loop (setImmediate)
   * and go as one message: a message to a worker that sleeps wakes it, and that wake-up is most of
   * what a message costs this thread (bench:enclave --profile). Under load the runs that arrived in
   * one turn go together; alone, a run waits for nothing but the turn's end. Reaps and aborts go at
   * once, after what was waiting.
   */
  #post(slot: Slot, message: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (this.#slots[slot.index] !== slot) {
      for (const buffer of transfer) new Uint8Array(buffer).fill(0);
      return;
    }
    if (message.type === "run" || message.type === "keyReply") {
      slot.outbox.push(message);
      slot.outboxTransfer.push(...transfer);
      if (slot.outbox.length === 1) setImmediate(() => this.#flush(slot));
      return;
    }
    this.#flush(slot);
    slot.worker.postMessage(message, transfer);
  }

  #flush(slot: Slot): void {
    const messages = slot.outbox;
    if (messages.length === 0) return;
    const transfer = slot.outboxTransfer;
    slot.outbox = [];
    slot.outboxTransfer = [];
    // A worker replaced meanwhile gets nothing: its runs were failed with it (#onExit), and the keys
    // that were going to it are zeroed.
    if (this.#slots[slot.index] !== slot) {
      for (const buffer of transfer) new Uint8Array(buffer).fill(0);
      return;
    }
    slot.worker.postMessage(messages.length === 1 ? messages[0] : { type: "batch", messages }, transfer);
  }

  #onMessage(slot: Slot, message: Extract<FromWorker, { type: "done" | "key" | "service" }>): void {
    const pending = slot.runs.get(message.runId);
    if (message.type === "service") {
      this.#service(slot, pending, message);
      return;
    }
    if (message.type === "done") {
      if (!pending) return;
      clearTimeout(pending.backstop);
      slot.runs.delete(message.runId);
      if (message.outcome.hostFailure)
        this.#o.log.error("sandbox host failure during a run", { error: message.outcome.hostFailure });
      // Its killed slice was reaped: the worker is no longer held.
      if (slot.killing?.runId === message.runId) slot.killing = undefined;
      for (const u of message.offeredUses ?? []) {
        this.offeredKeysUsed++;
        pending.onOfferedUse?.(u.pkpId, u.use);
      }
      pending.resolve(message.outcome);
      if (slot.retiring && slot.runs.size === 0) this.#replace(slot);
      return;
    }
    // A key request: authorized by the run's provider on this thread; the key moves (not copies) to the worker.
    const { callId } = message;
    this.keysAsked++;
    if (!pending) {
      this.#post(slot, {
        type: "keyReply",
        callId,
        ok: false,
        code: "permission_denied",
        message: "the run has ended",
      });
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
        // A CodedError's code for the script is its scriptCode; the other errors whose message is
        // not for the client (channel, attestation, fetch) are unknown, though they carry a code.
        const coded: { code?: unknown; message?: unknown; details?: unknown } =
          err instanceof CodedError
            ? { code: err.scriptCode, message: err.message, details: err.scriptDetails }
            : err instanceof SigilError && !err.expose
              ? {}
              : (err as { code?: unknown; message?: unknown });
        const known = isExposed(err) || typeof coded.code === "string";
        if (!known)
          this.#o.log.error("key request failed", { error: err instanceof Error ? err.message : String(err) });
        this.#post(slot, {
          type: "keyReply",
          callId,
          ok: false,
          code: known ? String(coded.code) : "internal_error",
          message: known ? String(coded.message) : "the key could not be provided",
          ...(known && err instanceof CodedError && err.scriptDetails !== undefined
            ? { details: err.scriptDetails }
            : {}),
        });
      },
    );
  }

  /** A run's service request, answered by its provider; an error the script may not read is told as internal. */
  #service(slot: Slot, pending: Pending | undefined, message: Extract<FromWorker, { type: "service" }>): void {
    const { callId } = message;
    const refuse = (code: string | null, kind: "Error" | "TypeError" | "RangeError", text: string, details?: unknown) =>
      this.#post(slot, {
        type: "serviceReply",
        callId,
        ok: false,
        code,
        kind,
        message: text,
        ...(details === undefined ? {} : { details }),
      });
    if (!pending?.services) {
      refuse("permission_denied", "Error", pending ? "this run has no such service" : "the run has ended");
      return;
    }
    pending.services(message.op, message.args).then(
      (result) => this.#post(slot, { type: "serviceReply", callId, ok: true, result }),
      (err: unknown) => {
        if (err instanceof CodedError) {
          refuse(err.scriptCode, err.kind, err.message, err.scriptDetails);
          return;
        }
        if (isExposed(err)) {
          const e = err as SigilError;
          refuse(e.code, "Error", e.message);
          return;
        }
        this.#o.log.error("service request failed", {
          op: message.op,
          error: err instanceof Error ? err.message : String(err),
        });
        refuse("internal_error", "Error", `${message.op} could not be done`);
      },
    );
  }

  /** Ends every slice that outlived its run's deadline by the grace period. */
  #watch(): void {
    const now = Date.now();
    const grace = this.#o.watchdogGraceMs ?? 100;
    for (const slot of this.#slots) {
      if (slot.killing !== undefined) {
        if (!slot.watch.killing()) slot.killing = undefined;
        else if (now - slot.killing.since > TERMINATION_TIMEOUT_MS)
          this.#replaceStuck(slot, "its termination did not land");
        continue;
      }
      if (!this.#terminator?.attached(slot.name)) {
        const current = slot.watch.current();
        if (current && now > current.deadline + grace + 5_000) this.#replaceStuck(slot, "it cannot be ended alone");
        continue;
      }
      const claimed = slot.watch.claimOverdue(now, grace);
      if (!claimed) continue;
      slot.killing = { since: now, runId: claimed.runId };
      this.terminations++;
      this.#o.log.warn("a run's code outlived its deadline; ending it from outside its worker", {
        worker: slot.index,
        overdue_ms: now - claimed.deadline,
        ran_ms: now - claimed.startedAt,
      });
      void this.#terminator.terminate(slot.name).then((sent) => {
        if (sent) this.#post(slot, { type: "reap" });
        else {
          slot.watch.release();
          this.#replaceStuck(slot, "its termination could not be sent");
        }
      });
    }
  }

  /** A run unanswered long after its deadline: its worker is asked to end it, and replaced if it does not. */
  #giveUp(slot: Slot, runId: number): void {
    if (!slot.runs.has(runId) || this.#slots[slot.index] !== slot) return;
    this.#o.log.error("a run did not answer long after its deadline; ending it", { worker: slot.index });
    this.#post(slot, { type: "abort", runId });
    const pending = slot.runs.get(runId);
    if (!pending) return;
    pending.backstop = setTimeout(() => {
      if (slot.runs.has(runId)) this.#replaceStuck(slot, "it did not end a run it was asked to end");
    }, 5_000);
  }

  /**
   * Replaces a worker stuck in some run's code: the stuck run ends `timeout` (billed its grant), the
   * other runs on that worker fail with internal_error (they may be tried again).
   */
  #replaceStuck(slot: Slot, why: string): void {
    if (this.#slots[slot.index] !== slot) return;
    this.#o.log.error(`replacing a sandbox worker: ${why}`, { worker: slot.index, runs: slot.runs.size });
    const stuckRun = slot.killing?.runId ?? slot.watch.current()?.runId;
    for (const [runId, pending] of slot.runs) {
      clearTimeout(pending.backstop);
      if (stuckRun === runId) {
        pending.resolve({
          logs: "",
          durationMs: pending.request.timeoutMs,
          endedByWatchdog: true,
          error: { code: "timeout", message: "the script ran past its time limit and was stopped" },
        });
      } else {
        pending.reject(new SigilError("internal_error", "the executor restarted during the run; try again"));
      }
    }
    slot.runs.clear();
    // Replaced now, not on its exit event: until then new runs would be routed to a dying worker.
    this.#replace(slot);
    void slot.worker.terminate();
  }

  #retire(slot: Slot): void {
    if (slot.retiring || this.#slots[slot.index] !== slot) return;
    this.#o.log.info("a sandbox worker's heap passed its threshold; replacing it once its runs end", {
      worker: slot.index,
    });
    slot.retiring = true;
    if (slot.runs.size === 0) this.#replace(slot);
  }

  #onExit(slot: Slot, code: number): void {
    if (this.#slots[slot.index] !== slot || this.#closed) return;
    this.#o.log.warn("sandbox worker exited; starting a new one", { worker: slot.index, code });
    this.#replace(slot);
  }

  /** Fails the runs still on `slot` (its worker is gone or going) and puts a new worker in its place. */
  #replace(slot: Slot): void {
    for (const pending of slot.runs.values()) {
      clearTimeout(pending.backstop);
      pending.reject(new SigilError("internal_error", "the executor restarted during the run; try again"));
    }
    slot.runs.clear();
    if (slot.retiring) {
      void slot.worker.terminate();
      this.retirements++;
    } else {
      this.restarts++;
    }
    if (this.#closed) return;
    this.#slots[slot.index] = this.#spawn(slot.index);
  }
}

function zeroKeys(k: OfferedKeyBytes): void {
  new Uint8Array(k.privateKey).fill(0);
  if (k.encryptionKey) new Uint8Array(k.encryptionKey).fill(0);
}

/** A copy of the key in its own ArrayBuffer (so it can be transferred), with the original zeroed. */
function toTransferable(bytes: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  bytes.fill(0);
  return copy.buffer;
}
