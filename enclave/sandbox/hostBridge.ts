// The host's side of one script run's calls (docs/design/sandbox.md): the entry points the core of a prepared
// runtime captured (runtime.ts, RunBinding), bound to the run. A sync call is answered at once (the
// run's timers are kept here); an async one hands the script a promise that the host's answer settles
// later, copied into the VM. No script code runs here: the run's code runs only in its slices
// (runtime.ts, ScriptRun), and the run's drive loop fires the timers that came due and runs the jobs
// a settled promise queued.
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config.ts";
import type { SandboxInstance } from "./instance.ts";
import { CodedError, memoryError, RunStop } from "./runErrors.ts";

/** Node's largest timer delay (a longer one fires at once, with a warning). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Host replies at least this large are checked against the run's free memory before they are copied in. */
const LARGE_REPLY_BYTES = 64 << 10;

/** The host's side of a run's capabilities, given by the worker. Answers are JSON-ready values. */
export type RunHost = {
  /** Async operations (`Sigil.Actions.*`, `fetch`); a thrown CodedError reaches the script with its code. */
  callAsync(op: string, args: unknown): Promise<unknown>;
  /** Sync operations (hashes, URL parsing, randomness). */
  callSync(op: string, args: unknown): unknown;
};

/** What the host entry points of a prepared runtime do once a run is bound to it. */
export type RunBinding = {
  call(op: string, argsJson: string): QuickJSHandle;
  callAsync(op: string, argsJson: string): QuickJSHandle;
  log(line: string): void;
};

/** What the bridge needs of the run it serves (runtime.ts, ScriptRun). */
export type BridgedRun = {
  /** Whether the run is over (ended from outside); then nothing may touch its VM. */
  over(): boolean;
  /** What the run's live objects take in its heap, as QuickJS counts it. */
  memoryInUse(): number;
  /** The run's instance may be half-way through something: never disposed, never reused. */
  abandon(): void;
  /** Wakes the run's drive loop. */
  signal(): void;
  log(line: string): void;
};

type HostResult =
  | { ok: true; value: unknown }
  | { ok: false; code: string | null; message: string; name: string; details?: unknown };

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A host call's answer as the JSON text the core reads. */
const result = (hostResult: HostResult) =>
  JSON.stringify(hostResult, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

/** A host call that failed, as the script sees it; a RunStop goes on ending the run. */
const hostFailure = (err: unknown) => {
  if (err instanceof RunStop) throw err;
  if (err instanceof CodedError)
    return {
      ok: false as const,
      code: err.scriptCode,
      message: err.message,
      name: err.kind,
      ...(err.scriptDetails === undefined ? {} : { details: err.scriptDetails }),
    };
  return { ok: false as const, code: null, message: "the host operation failed", name: "Error" };
};

/** The host's entry points, bound to one run (`PreparedRuntime.bind`), with its host calls in flight and its timers. */
export class HostBridge implements RunBinding {
  /** The run's async host calls in flight: their promises in the VM, settled when the host answers. */
  readonly deferreds = new Set<QuickJSDeferredPromise>();
  /** The run's pending timers, by id. */
  readonly timers = new Map<number, NodeJS.Timeout>();
  /** The ids of the timers that came due, in order, for the run's next turn to fire. */
  readonly firedTimers: number[] = [];
  #nextTimerId = 1;
  #stopWith: RunStop | undefined;
  readonly #ctx: QuickJSContext;
  readonly #instance: SandboxInstance;
  readonly #host: RunHost;
  readonly #limits: SandboxLimits;
  readonly #run: BridgedRun;

  constructor(ctx: QuickJSContext, instance: SandboxInstance, host: RunHost, limits: SandboxLimits, run: BridgedRun) {
    this.#ctx = ctx;
    this.#instance = instance;
    this.#host = host;
    this.#limits = limits;
    this.#run = run;
  }

  /** Set when a host call must end the whole run (not just fail in the script). */
  get stopWith(): RunStop | undefined {
    return this.#stopWith;
  }

  /** No async host call in flight and no timer pending. */
  get idle(): boolean {
    return this.deferreds.size === 0 && this.timers.size === 0;
  }

  /** Stops the run's pending timers (the run is over). */
  clearTimers(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  call(op: string, argsJson: string): QuickJSHandle {
    let reply;
    try {
      reply = { ok: true as const, value: this.#sync(op, JSON.parse(argsJson) as unknown) };
    } catch (err) {
      reply = hostFailure(err);
    }
    return this.#ctx.newString(result(reply));
  }

  callAsync(op: string, argsJson: string): QuickJSHandle {
    const args = JSON.parse(argsJson) as unknown;
    const deferred = this.#ctx.newPromise();
    this.deferreds.add(deferred);
    void this.#host.callAsync(op, args).then(
      (value) => this.#settleOrStop(deferred, { ok: true, value }),
      // hostOps never throws a RunStop (it is the run's own): a failure is the script's to catch.
      (err: unknown) => this.#settleOrStop(deferred, hostFailure(err)),
    );
    return deferred.handle;
  }

  log(line: string): void {
    this.#run.log(line);
  }

  #sync(op: string, args: unknown): unknown {
    switch (op) {
      case "setTimeout": {
        const limits = this.#limits;
        if (this.timers.size >= limits.maxTimers) {
          throw new CodedError("limit_exceeded", `a run may have at most ${limits.maxTimers} pending timers`);
        }
        const id = this.#nextTimerId++;
        // Not capped at the run's limit: a run's deadline moves on by the time others held its thread,
        // and a timer capped at the limit then came due before it (a 60 s timer fired at 0.7 s).
        // The timers are cleared when the run ends; the cap is only Node's largest delay.
        const ms = Math.min(Number((args as { ms: number }).ms) || 0, MAX_TIMER_MS);
        const t = setTimeout(() => {
          this.timers.delete(id);
          this.firedTimers.push(id);
          this.#run.signal();
        }, ms);
        this.timers.set(id, t);
        return id;
      }
      case "clearTimeout": {
        const id = Number((args as { id: number }).id);
        clearTimeout(this.timers.get(id));
        this.timers.delete(id);
        return null;
      }
      default:
        return this.#host.callSync(op, args);
    }
  }

  /** Settles a host call's promise; what stops the run instead is kept for its drive loop (`stopWith`). */
  #settleOrStop(deferred: QuickJSDeferredPromise, reply: HostResult): void {
    try {
      this.#settle(deferred, reply);
    } catch (stop) {
      this.#stopWith = stop instanceof RunStop ? stop : new RunStop(memoryError(this.#limits.memoryLimitBytes));
      if (!(stop instanceof RunStop)) this.#run.abandon();
      this.#run.signal();
    }
  }

  /**
   * Copies a host reply into the VM. It counts against the run's memory like the run's own
   * objects: a large reply that cannot fit ends the run in memory_limit before it is copied, and
   * a copy the capped heap refused leaves the instance unusable (the copy's malloc failed).
   */
  #settle(deferred: QuickJSDeferredPromise, reply: HostResult): void {
    if (!deferred.alive || this.#run.over()) return;
    const ctx = this.#ctx;
    const limits = this.#limits;
    // A fetch's body travels as bytes of its own (host.js joins it back), not inside the JSON.
    const value = reply.ok && isRecord(reply.value) ? reply.value : undefined;
    const body = value?.body instanceof Uint8Array ? value.body : undefined;
    const text = result(body ? { ok: true, value: { ...value, body: null } } : reply);
    const bytes = text.length + (body?.byteLength ?? 0);
    if (
      bytes >= LARGE_REPLY_BYTES &&
      Buffer.byteLength(text) * 2 + (body?.byteLength ?? 0) + this.#run.memoryInUse() > limits.memoryLimitBytes
    ) {
      throw new RunStop(memoryError(limits.memoryLimitBytes));
    }
    // No script code may run here (this is no slice): a string reply is a primitive, and a reply
    // with bytes is an object without a prototype whose properties are defined, not assigned —
    // no setter the script put on Array or Object.prototype runs, and resolving the promise with
    // it finds no `then` to call.
    const h = body ? ctx.newObject(ctx.null) : ctx.newString(text);
    if (body) {
      const json = ctx.newString(text);
      // guardedFetch's body owns its whole buffer: copied once, into the VM. A view of part of
      // a buffer (none is made today) would carry its neighbours' bytes, so it is cut first.
      const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
      const buffer = ctx.newArrayBuffer(
        (whole ? body.buffer : body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)) as ArrayBuffer,
      );
      ctx.defineProp(h, "json", { value: json, enumerable: true });
      ctx.defineProp(h, "body", { value: buffer, enumerable: true });
      json.dispose();
      buffer.dispose();
    }
    if (this.#instance.refused) {
      this.#run.abandon();
      throw new RunStop(memoryError(limits.memoryLimitBytes));
    }
    deferred.resolve(h);
    h.dispose();
    deferred.dispose();
    this.deferreds.delete(deferred);
    this.#run.signal();
  }
}
