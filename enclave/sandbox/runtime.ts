// One script run in a fresh QuickJS runtime (sandbox.md). Runs inside a sandbox worker thread.
// The wrapper owns every handle it creates and disposes all of them before the runtime, whatever
// way the run ends: a handle left alive makes QuickJS abort the whole thread when its runtime is
// freed. The host drives the run: it executes pending jobs, fires timers, settles host calls, and
// stops the run at its deadline (interrupt handler) or when it breaks a limit.
import { readFileSync } from "node:fs";
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config.ts";

// The sandbox's own JavaScript (globals/): core.js runs before every script; each other chunk is
// evaluated only when a script first touches what it defines, which keeps a run's set-up cheap.
const chunkNames = ["host", "console", "timers", "text", "url", "crypto", "clone", "inspect", "actions", "fetch"] as const;
/**
 * QuickJS parses about 10 KB per millisecond here, and core.js is parsed on every run: comment lines
 * and indentation are dropped before evaluation (line breaks stay, so nothing else changes).
 */
function loadChunk(name: string): string {
  return readFileSync(new URL(`./globals/${name}.js`, import.meta.url), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("//") && !line.startsWith("/*") && !line.startsWith("* ") && line !== "*" && line !== "*/")
    .join("\n");
}
const coreSource = loadChunk("core");
const chunkSources = new Map<string, string>(chunkNames.map((name) => [name, loadChunk(name)]));

export type RunRequest = {
  code: string;
  cid: string;
  /** `js_params` as JSON text ("null" when absent). */
  paramsJson: string;
  timeoutMs: number;
  requestId: string;
  correlationId: string | null;
};

export type RunError = { code: string; message: string; stack?: string };

export type RunOutcome = {
  /** The JSON text of `response` (present when the run succeeded). */
  responseJson?: string;
  logs: string;
  error?: RunError;
  durationMs: number;
  /** A host-side failure to log (never shown to the client). */
  hostFailure?: string;
};

/** The host's side of a run's capabilities, given by the worker. Answers are JSON-ready values. */
export type RunHost = {
  /** Async operations (`Sigil.Actions.*`, `fetch`); a thrown CodedError reaches the script with its code. */
  callAsync(op: string, args: unknown): Promise<unknown>;
  /** Sync operations (hashes, URL parsing, randomness). */
  callSync(op: string, args: unknown): unknown;
};

/** An error for the script, with the code it carries (`permission_denied`, `limit_exceeded`, …). */
export class CodedError extends Error {
  readonly code: string | null;
  readonly kind: "Error" | "TypeError" | "RangeError";
  constructor(code: string | null, message: string, kind: "Error" | "TypeError" | "RangeError" = "Error") {
    super(message);
    this.code = code;
    this.kind = kind;
  }
}

class LogBuffer {
  #parts: string[] = [];
  #bytes = 0;
  #dropped = false;
  readonly #max: number;
  constructor(max: number) {
    this.#max = max;
  }
  add(line: string): void {
    if (this.#dropped) return;
    const size = Buffer.byteLength(line) + 1;
    if (this.#bytes + size > this.#max) {
      this.#dropped = true;
      this.#parts.push(`[sigil] log limit of ${this.#max} bytes reached; further output was dropped`);
      return;
    }
    this.#bytes += size;
    this.#parts.push(line);
  }
  text(): string {
    return this.#parts.length === 0 ? "" : `${this.#parts.join("\n")}\n`;
  }
}

type Internal = { callMain: QuickJSHandle; fireTimer: QuickJSHandle; classify: QuickJSHandle; begin: QuickJSHandle; preload: QuickJSHandle };

/** Frames of a failed run's stack that reach the client. */
const MAX_STACK_FRAMES = 50;

/** Ends the run from host code, with the run error to report. */
class RunStop extends Error {
  readonly runError: RunError;
  constructor(runError: RunError) {
    super(runError.message);
    this.runError = runError;
  }
}

/**
 * The module's WebAssembly heap, which every runtime of the module allocates from, with a budget
 * for the code running now: while a slice of a run executes (synchronously, so nothing else runs on
 * this thread), the heap may not grow past the slice's start by more than the run's memory limit.
 * A refused growth makes QuickJS's malloc fail, so the allocation throws "out of memory" inside the
 * script at once — before its interrupt poll, which a loop doing megabytes of work per iteration
 * reaches only every few thousand iterations — and the run ends in memory_limit.
 */
type HeapGuard = {
  bytes(): number;
  /** Refuse growth past `endBytes` until `unlimit()`; reports whether growth was refused since. */
  limit(endBytes: number): void;
  unlimit(): void;
  refused: boolean;
};

const guards = new WeakMap<QuickJSWASMModule, HeapGuard>();

function heapGuard(module: QuickJSWASMModule): HeapGuard {
  const known = guards.get(module);
  if (known) return known;
  const memory = module.getWasmMemory();
  const grow = memory.grow.bind(memory);
  let end: number | undefined;
  const guard: HeapGuard = {
    bytes: () => memory.buffer.byteLength,
    limit(endBytes) {
      end = endBytes;
      guard.refused = false;
    },
    unlimit() {
      end = undefined;
    },
    refused: false,
  };
  // Emscripten grows the heap through this method; a throw makes its sbrk fail and malloc return NULL.
  memory.grow = (deltaPages: number) => {
    if (end !== undefined && memory.buffer.byteLength + deltaPages * 65_536 > end) {
      guard.refused = true;
      throw new RangeError("the run's memory budget is spent");
    }
    return grow(deltaPages);
  };
  guards.set(module, guard);
  return guard;
}

/** What the host entry points of a prepared runtime do once a run is bound to it. */
type RunBinding = {
  call(op: string, argsJson: string): QuickJSHandle;
  callAsync(op: string, argsJson: string): QuickJSHandle;
  log(line: string): void;
};

/**
 * A fresh runtime and context with the sandbox's core installed — and, when asked, the chunks of
 * Sigil.Actions parsed — made ahead of the run that will use it: between runs, off that run's path
 * (creating them and parsing core.js is most of a short run's set-up). The host entry points the
 * core captured answer for the run bound to it later. Each is used by exactly one run, which
 * disposes it.
 */
export type PreparedRuntime = {
  readonly runtime: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  readonly internal: Internal;
  /** Every handle made here, disposed by the run that uses it. */
  readonly owned: QuickJSHandle[];
  bind(binding: RunBinding): void;
  /** Parses the chunks behind Sigil.Actions now (the worker does it when it has nothing else to do). */
  preloadSigil(): void;
};

export function prepareRuntime(module: QuickJSWASMModule): PreparedRuntime {
  const runtime = module.newRuntime();
  const ctx = runtime.newContext();
  const owned: QuickJSHandle[] = [];
  const own = <T extends QuickJSHandle>(h: T): T => {
    owned.push(h);
    return h;
  };
  let binding: RunBinding | undefined;
  const bound = (): RunBinding => {
    if (!binding) throw new Error("no run is bound to this runtime");
    return binding;
  };
  try {
    // Host entry points the core captures; the script never sees them.
    const hostObject = own(ctx.newObject());
    ctx.setProp(hostObject, "call", own(ctx.newFunction("call", (op, args) => bound().call(ctx.getString(op), ctx.getString(args)))));
    ctx.setProp(hostObject, "callAsync", own(ctx.newFunction("callAsync", (op, args) => bound().callAsync(ctx.getString(op), ctx.getString(args)))));
    ctx.setProp(hostObject, "log", own(ctx.newFunction("log", (_level, line) => bound().log(ctx.getString(line)))));
    ctx.setProp(
      hostObject,
      "load",
      own(
        ctx.newFunction("load", (nameHandle) => {
          const name = ctx.getString(nameHandle);
          const source = chunkSources.get(name);
          if (source === undefined) return ctx.newError(`no sandbox chunk named ${name}`);
          // strip: no debug info for the sandbox's own code (its frames are filtered out anyway); parses faster.
          return ctx.evalCode(source, `sigil:${name}.js`, { strip: true });
        }),
      ),
    );
    const core = own(ctx.unwrapResult(ctx.evalCode(coreSource, "sigil:core.js", { strip: true })));
    const internalObject = own(ctx.unwrapResult(ctx.callFunction(core, ctx.undefined, ctx.global, hostObject)));
    const internal: Internal = {
      callMain: own(ctx.getProp(internalObject, "callMain")),
      fireTimer: own(ctx.getProp(internalObject, "fireTimer")),
      classify: own(ctx.getProp(internalObject, "classify")),
      begin: own(ctx.getProp(internalObject, "begin")),
      preload: own(ctx.getProp(internalObject, "preload")),
    };
    return {
      runtime,
      ctx,
      internal,
      owned,
      bind(b) {
        binding = b;
      },
      preloadSigil() {
        const r = ctx.callFunction(internal.preload, ctx.undefined);
        if (r.error) r.error.dispose();
        else r.value.dispose();
      },
    };
  } catch (err) {
    for (let i = owned.length - 1; i >= 0; i--) owned[i]?.dispose();
    ctx.dispose();
    runtime.dispose();
    throw err;
  }
}

export async function runScript(
  module: QuickJSWASMModule,
  request: RunRequest,
  limits: SandboxLimits,
  host: RunHost,
  prepared: PreparedRuntime = prepareRuntime(module),
): Promise<RunOutcome> {
  const started = performance.now();
  const deadline = Date.now() + request.timeoutMs;
  const logs = new LogBuffer(limits.maxLogBytes);
  const { runtime, ctx } = prepared;
  const heap = heapGuard(module);
  let interrupted = false;
  let memoryExceeded = false;
  // QuickJS's own limit only refuses single allocations in this build (it cannot measure its
  // blocks: "malloc_usable_size unavailable"), so the run's memory is also watched here: growth of
  // the shared heap while this run's code executes is this run's and is refused past its limit
  // (HeapGuard), and the run's live objects are measured at every pause (memoryInUse).
  runtime.setMemoryLimit(limits.memoryLimitBytes);
  runtime.setMaxStackSize(limits.stackLimitBytes);
  runtime.setInterruptHandler(() => {
    if (Date.now() >= deadline) interrupted = true;
    // A script that caught its "out of memory" and goes on is stopped here.
    else if (heap.refused) memoryExceeded = true;
    return interrupted || memoryExceeded;
  });
  /** Runs one synchronous slice of the run's code under the heap budget (see HeapGuard). */
  const slice = <T>(f: () => T): T => {
    heap.limit(heap.bytes() + limits.memoryLimitBytes);
    try {
      return f();
    } finally {
      heap.unlimit();
      if (heap.refused) memoryExceeded = true;
    }
  };
  // Measuring walks the run's heap: done when the shared heap grew or 25 ms passed since the last time.
  let lastMemoryCheck = { at: Date.now(), heap: heap.bytes() };
  const memoryCheckDue = (): boolean => {
    const now = Date.now();
    const bytes = heap.bytes();
    if (bytes === lastMemoryCheck.heap && now - lastMemoryCheck.at < 25) return false;
    lastMemoryCheck = { at: now, heap: bytes };
    return true;
  };
  const memoryInUse = (): number => {
    const usage = runtime.computeMemoryUsage();
    try {
      const size = ctx.getProp(usage, "memory_used_size");
      const n = ctx.getNumber(size);
      size.dispose();
      return n;
    } finally {
      usage.dispose();
    }
  };
  const owned: QuickJSHandle[] = prepared.owned;
  const own = <T extends QuickJSHandle>(h: T): T => {
    owned.push(h);
    return h;
  };
  const deferreds = new Set<QuickJSDeferredPromise>();
  const timers = new Map<number, NodeJS.Timeout>();
  const firedTimers: number[] = [];
  let nextTimerId = 1;
  let wake: (() => void) | undefined;
  const signal = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  let finished = false;
  /** Set when a host call must end the whole run (not just fail in the script). */
  let stopWith: RunStop | undefined;

  const timeoutError = (): RunError => ({ code: "timeout", message: `the script ran past its time limit of ${request.timeoutMs} ms` });
  const memoryError = (): RunError => ({ code: "memory_limit", message: `the script exceeded its memory limit of ${limits.memoryLimitBytes >> 20} MiB` });

  /** Turns a value thrown inside the VM into a run error (the classify function is the prelude's). */
  const describe = (errorHandle: QuickJSHandle, internal: Internal | undefined): RunError => {
    if (memoryExceeded) return memoryError();
    if (interrupted) return timeoutError();
    let info: { code: string | null; name: string; message: string; stack?: string };
    if (internal) {
      const r = ctx.callFunction(internal.classify, ctx.undefined, errorHandle);
      if (r.error) {
        r.error.dispose();
        return interrupted ? timeoutError() : { code: "script_error", message: "the script failed" };
      }
      info = JSON.parse(ctx.getString(r.value)) as typeof info;
      r.value.dispose();
    } else {
      const dumped = ctx.dump(errorHandle) as { name?: string; message?: string; stack?: string } | string;
      info = typeof dumped === "object" && dumped !== null
        ? { code: null, name: dumped.name ?? "Error", message: dumped.message ?? "", ...(dumped.stack ? { stack: dumped.stack } : {}) }
        : { code: null, name: "Error", message: String(dumped) };
    }
    if (info.name === "InternalError" && info.message === "out of memory") return memoryError();
    // With no memory left QuickJS cannot even build its error and throws null.
    if (info.name === "Uncaught" && info.message === "null" && memoryInUse() > limits.memoryLimitBytes * 0.75) return memoryError();
    if (info.name === "InternalError" && info.message === "interrupted") return timeoutError();
    const message = info.code ? info.message : info.name && info.name !== "Uncaught" ? `${info.name}: ${info.message}` : info.message;
    // Only the script's own frames: the prelude's are noise to the author (and say nothing useful).
    // A runaway recursion has thousands: the innermost and the outermost tell where, with a count of the rest.
    const frames = info.stack?.split("\n").filter((line) => line.trim() !== "" && !line.includes("sigil:") && !line.includes("(native)"));
    const half = MAX_STACK_FRAMES / 2;
    const stack =
      frames && frames.length > MAX_STACK_FRAMES
        ? [...frames.slice(0, half), `    … ${frames.length - MAX_STACK_FRAMES} frames left out …`, ...frames.slice(-half)].join("\n")
        : frames?.join("\n");
    return { code: info.code ?? "script_error", message, ...(stack ? { stack } : {}) };
  };

  const result = (hostResult: { ok: true; value: unknown } | { ok: false; code: string | null; message: string; name: string }) =>
    JSON.stringify(hostResult, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

  const hostFailure = (err: unknown) => {
    if (err instanceof RunStop) throw err;
    if (err instanceof CodedError) return { ok: false as const, code: err.code, message: err.message, name: err.kind };
    return { ok: false as const, code: null, message: "the host operation failed", name: "Error" };
  };

  try {
    const settle = (deferred: QuickJSDeferredPromise, reply: Parameters<typeof result>[0]) => {
      if (finished || !deferred.alive) return;
      const h = ctx.newString(result(reply));
      deferred.resolve(h);
      h.dispose();
      deferred.dispose();
      deferreds.delete(deferred);
      signal();
    };

    const hostSync = (op: string, args: unknown): unknown => {
      switch (op) {
        case "setTimeout": {
          if (timers.size >= limits.maxTimers) {
            throw new CodedError("limit_exceeded", `a run may have at most ${limits.maxTimers} pending timers`);
          }
          const id = nextTimerId++;
          const ms = Math.min(Number((args as { ms: number }).ms) || 0, request.timeoutMs);
          const t = setTimeout(() => {
            timers.delete(id);
            firedTimers.push(id);
            signal();
          }, ms);
          timers.set(id, t);
          return id;
        }
        case "clearTimeout": {
          const id = Number((args as { id: number }).id);
          clearTimeout(timers.get(id));
          timers.delete(id);
          return null;
        }
        default:
          return host.callSync(op, args);
      }
    };

    prepared.bind({
      call(op, argsJson) {
        let reply;
        try {
          reply = { ok: true as const, value: hostSync(op, JSON.parse(argsJson) as unknown) };
        } catch (err) {
          reply = hostFailure(err);
        }
        return ctx.newString(result(reply));
      },
      callAsync(op, argsJson) {
        const args = JSON.parse(argsJson) as unknown;
        const deferred = ctx.newPromise();
        deferreds.add(deferred);
        void host.callAsync(op, args).then(
          (value) => settle(deferred, { ok: true, value }),
          (err: unknown) => {
            try {
              settle(deferred, hostFailure(err));
            } catch (stop) {
              stopWith = stop as RunStop;
              signal();
            }
          },
        );
        return deferred.handle;
      },
      log(line) {
        logs.add(line);
      },
    });

    const internal = prepared.internal;
    const requestJson = own(ctx.newString(JSON.stringify({ requestId: request.requestId, correlationId: request.correlationId, cid: request.cid })));
    ctx.unwrapResult(ctx.callFunction(internal.begin, ctx.undefined, requestJson)).dispose();

    /** Runs jobs, timers and host settlements until `promise` settles; returns its state. */
    const drive = async (promise: QuickJSHandle): Promise<{ value: QuickJSHandle } | { error: RunError }> => {
      for (;;) {
        if (stopWith) return { error: stopWith.runError };
        while (firedTimers.length > 0) {
          const id = firedTimers.shift() as number;
          const idHandle = ctx.newNumber(id);
          const r = slice(() => ctx.callFunction(internal.fireTimer, ctx.undefined, idHandle));
          idHandle.dispose();
          if (r.error) {
            // A timer callback that throws is an uncaught error, as in a browser: log it, go on.
            const e = describe(r.error, internal);
            r.error.dispose();
            if (e.code === "timeout" || e.code === "memory_limit") return { error: e };
            logs.add(`Uncaught ${e.message}`);
          } else {
            r.value.dispose();
          }
        }
        const jobs = slice(() => runtime.executePendingJobs());
        if (jobs.error) {
          const e = describe(jobs.error, internal);
          jobs.error.dispose();
          return { error: e };
        }
        if (memoryExceeded) return { error: memoryError() };
        if (interrupted) return { error: timeoutError() };
        if (memoryCheckDue() && memoryInUse() > limits.memoryLimitBytes) {
          memoryExceeded = true;
          return { error: memoryError() };
        }
        const state = ctx.getPromiseState(promise);
        if (state.type === "fulfilled") return { value: state.value };
        if (state.type === "rejected") {
          const e = describe(state.error, internal);
          state.error.dispose();
          return { error: e };
        }
        if (firedTimers.length > 0 || runtime.hasPendingJob()) continue;
        if (deferreds.size === 0 && timers.size === 0) {
          return { error: { code: "script_error", message: "main(params) never settled: it awaits something that can never happen" } };
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) return { error: timeoutError() };
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, remaining);
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        if (Date.now() >= deadline) {
          interrupted = true;
          return { error: timeoutError() };
        }
      }
    };

    // The user's code: a script defining a global main, or a module exporting it.
    const isModule = /^\s*(export|import)\s/m.test(request.code);
    const evaluated = slice(() => ctx.evalCode(request.code, "action.js", isModule ? { type: "module" } : undefined));
    if (evaluated.error) {
      const e = describe(evaluated.error, internal);
      evaluated.error.dispose();
      return finish({ error: e });
    }
    let moduleNamespace: QuickJSHandle | undefined;
    if (isModule) {
      // A module evaluates to its namespace, or to a promise for it (top-level await).
      const ns = own(evaluated.value);
      const state = ctx.getPromiseState(ns);
      if (state.type === "fulfilled" && state.notAPromise) {
        moduleNamespace = ns; // the same handle, already owned
      } else if (state.type === "rejected") {
        const e = describe(state.error, internal);
        state.error.dispose();
        return finish({ error: e });
      } else {
        if (state.type === "fulfilled") state.value.dispose();
        const settled = await drive(ns);
        if ("error" in settled) return finish({ error: settled.error });
        moduleNamespace = own(settled.value);
      }
    } else {
      evaluated.value.dispose();
    }

    const params = own(ctx.newString(request.paramsJson));
    const called = slice(() => ctx.callFunction(internal.callMain, ctx.undefined, moduleNamespace ? [params, moduleNamespace] : [params]));
    if (called.error) {
      const e = describe(called.error, internal);
      called.error.dispose();
      return finish({ error: e });
    }
    const mainPromise = own(called.value);
    const settled = await drive(mainPromise);
    if ("error" in settled) return finish({ error: settled.error });
    const json = ctx.getString(settled.value);
    settled.value.dispose();
    if (Buffer.byteLength(json) > limits.maxResponseBytes) {
      return finish({ error: { code: "limit_exceeded", message: `the response is larger than ${limits.maxResponseBytes} bytes` } });
    }
    return finish({ responseJson: json });
  } catch (err) {
    if (err instanceof RunStop) return finish({ error: err.runError });
    // Host-side failure while setting up or driving the VM (for example out of memory while
    // creating a value): the run ends; the worker stays healthy.
    const message = err instanceof Error ? err.message : String(err);
    if (memoryExceeded) return finish({ error: memoryError() });
    if (interrupted) return finish({ error: timeoutError() });
    if (/out of memory/i.test(message)) return finish({ error: memoryError() });
    return finish({ error: { code: "script_error", message: "the script could not be run" }, internalError: err });
  } finally {
    finished = true;
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
    for (const d of deferreds) if (d.alive) d.dispose();
    deferreds.clear();
    for (let i = owned.length - 1; i >= 0; i--) {
      const h = owned[i] as QuickJSHandle;
      if (h.alive) h.dispose();
    }
    ctx.dispose();
    runtime.dispose();
  }

  function finish(outcome: { responseJson?: string; error?: RunError; internalError?: unknown }): RunOutcome {
    return {
      ...(outcome.responseJson === undefined ? {} : { responseJson: outcome.responseJson }),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      ...(outcome.internalError === undefined ? {} : { hostFailure: outcome.internalError instanceof Error ? outcome.internalError.message : String(outcome.internalError) }),
      logs: logs.text(),
      durationMs: performance.now() - started,
    };
  }
}
