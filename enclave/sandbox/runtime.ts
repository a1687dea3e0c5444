// One script run in a fresh QuickJS runtime (docs/design/sandbox.md). Runs inside a sandbox worker thread, on a
// WebAssembly instance of its own (instance.ts) whose heap is capped at the run's memory limit. The
// wrapper owns every handle it creates and disposes all of them before the runtime, whatever way the
// run ends: a handle left alive makes QuickJS abort when its runtime is freed. The host drives the
// run: it executes pending jobs, fires timers, settles host calls, and stops the run at its deadline
// (interrupt handler) or when it breaks a limit. Every stretch of the run's code executes as a
// "slice" announced on the worker's slice board (slices.ts), so the pool can end a slice that
// outlives the deadline without a poll (a long built-in); such a run is ended from outside (`kill`)
// and its instance is dropped unread.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { MessageChannel } from "node:worker_threads";
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config.ts";
import { HostBridge, type RunBinding, type RunHost } from "./hostBridge.ts";
import type { SandboxInstance } from "./instance.ts";
import {
  CodedError,
  compileError,
  memoryError,
  RunStop,
  scriptError,
  timeoutError,
  type RunError,
  type ThrownInfo,
} from "./runErrors.ts";
import type { SliceBoard } from "./slices.ts";

export { CodedError };
export type { RunError, RunHost };

// The sandbox's own JavaScript (globals/): core.js and every chunk are evaluated once per instance,
// when its runtime is prepared, into the image each run starts from (image.ts); the globals each
// chunk defines are still installed at a script's first touch, from the chunk already parsed.
const chunkNames = [
  "host",
  "console",
  "timers",
  "text",
  "url",
  "crypto",
  "clone",
  "inspect",
  "actions",
  "fetch",
  "fixed",
] as const;
/**
 * QuickJS parses about 10 KB per millisecond here: comment lines and indentation are dropped before
 * evaluation (line breaks stay, so nothing else changes), which makes preparing an instance cheaper.
 */
function loadChunk(name: string): string {
  return readFileSync(new URL(`./globals/${name}.js`, import.meta.url), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter(
      (line) =>
        line !== "" &&
        !line.startsWith("//") &&
        !line.startsWith("/*") &&
        !line.startsWith("* ") &&
        line !== "*" &&
        line !== "*/",
    )
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
  /**
   * Only compile the code, run nothing: the outcome is `compile_error` or a null response. For a
   * caller who may not run the code, who is still told that it does not compile (sigilAction.ts).
   */
  compileOnly?: true;
  /** A dry run: nothing is signed, every signing use is decided and recorded (hostOps.ts RunContext.dryRun). */
  dryRun?: true;
};

export type RunOutcome = {
  /** The JSON text of `response` (present when the run succeeded). */
  responseJson?: string;
  logs: string;
  error?: RunError;
  /** The run's own time: wall-clock time minus what other runs' long slices held its thread. */
  durationMs: number;
  /** A host-side failure to log (never shown to the client). */
  hostFailure?: string;
  /** Set when the run's code was ended from outside its thread at its deadline: billed its whole grant. */
  endedByWatchdog?: true;
};

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

type Internal = {
  callMain: QuickJSHandle;
  fireTimer: QuickJSHandle;
  classify: QuickJSHandle;
  begin: QuickJSHandle;
  preload: QuickJSHandle;
};

/** The most a run's deadline moves on for the time other runs held its thread. */
const MAX_STOLEN_MS = 30_000;

/**
 * A runtime and context with the sandbox's core installed and every chunk of globals/ parsed, on an
 * instance of its own, whose memory image (image.ts) is taken right after: each run binds the host
 * entry points the core captured, runs, and `reset()` writes the image back, so the next run finds
 * the runtime exactly as it was made, without making it again. The runtime is never disposed: the
 * image holds it, with the handles made here (`owned`), alive; the instance is dropped whole when it
 * is not reused (its memory goes with it).
 */
export type PreparedRuntime = {
  readonly instance: SandboxInstance;
  readonly runtime: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  readonly internal: Internal;
  /** The handles made here, kept alive by the image. */
  readonly owned: readonly QuickJSHandle[];
  bind(binding: RunBinding): void;
  /** The run's interrupt check (QuickJS calls it as the run's code executes). */
  onInterrupt(check: () => boolean): void;
  /** Writes the image back: the runtime is as prepared again. Only between calls into the module. */
  reset(): void;
};

/**
 * Prepares a runtime on `instance` (core.js, then each chunk, then the image). `pause`, awaited
 * between those steps, lets a worker answer what comes meanwhile instead of holding its thread for
 * the whole preparation (about 5 ms here, tens on a busy machine).
 */
export async function prepareRuntime(
  instance: SandboxInstance,
  limits: Pick<SandboxLimits, "memoryLimitBytes" | "stackLimitBytes">,
  pause: () => Promise<void> = async () => {},
): Promise<PreparedRuntime> {
  const runtime = instance.module.newRuntime();
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
  let interrupt: (() => boolean) | undefined;
  try {
    // Host entry points the core captures; the script never sees them.
    const hostObject = own(ctx.newObject());
    ctx.setProp(
      hostObject,
      "call",
      own(ctx.newFunction("call", (op, args) => bound().call(ctx.getString(op), ctx.getString(args)))),
    );
    ctx.setProp(
      hostObject,
      "callAsync",
      own(ctx.newFunction("callAsync", (op, args) => bound().callAsync(ctx.getString(op), ctx.getString(args)))),
    );
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
    // Every chunk parsed now, once, into the image: no run pays for the globals it touches.
    for (const chunk of chunkNames) {
      await pause();
      const name = ctx.newString(chunk);
      ctx.unwrapResult(ctx.callFunction(internal.preload, ctx.undefined, name)).dispose();
      name.dispose();
    }
    // What QuickJS keeps per runtime goes into the image too: the limits, and the interrupt handler
    // (quickjs-emscripten enables it in C once, when the first one is set; it calls the run's check).
    runtime.setMemoryLimit(limits.memoryLimitBytes);
    runtime.setMaxStackSize(limits.stackLimitBytes);
    runtime.setInterruptHandler(() => interrupt?.() ?? false);
    // What quickjs-emscripten makes once and caches, made before the image so that none is first
    // made by a run (its cache would outlive the run's memory): the runtime's own "system" context,
    // which computeMemoryUsage makes at its first call, and the context's constant handles.
    runtime.computeMemoryUsage().dispose();
    void ctx.undefined;
    void ctx.null;
    void ctx.true;
    void ctx.false;
    void ctx.global;
    instance.capture();
    return {
      instance,
      runtime,
      ctx,
      internal,
      owned,
      bind(b) {
        binding = b;
      },
      onInterrupt(check) {
        interrupt = check;
      },
      reset() {
        binding = undefined;
        interrupt = undefined;
        instance.restore();
      },
    };
  } catch (err) {
    for (let i = owned.length - 1; i >= 0; i--) owned[i]?.dispose();
    ctx.dispose();
    runtime.dispose();
    throw err;
  }
}

/** The host's CSPRNG drawn 4 KiB at a time (a draw costs microseconds whatever its size): 16 bytes per run's Math.random seed. */
let seedPool = Buffer.alloc(0);
function nextSeed(): string {
  if (seedPool.length < 16) seedPool = randomBytes(4096);
  const seed = seedPool.subarray(0, 16).toString("hex");
  seedPool.fill(0, 0, 16);
  seedPool = seedPool.subarray(16);
  return seed;
}

/** How a run ended, before its logs and duration are added. */
type Ending = { responseJson?: string; error?: RunError; internalError?: unknown };

/**
 * Runs `f` in a turn of its own: a message event of a port of this thread. Every slice of a run's
 * code runs in such a turn, because that is where V8's TerminateExecution (slices.ts) leaves the
 * thread sound. Measured on Node 24: terminated inside a setImmediate or setTimeout callback, the
 * thread's async-hooks stack is left corrupted and the whole process aborts; terminated inside a
 * microtask checkpoint, every other microtask queued in it — other runs' continuations — is dropped;
 * terminated inside a message event, the thread goes on and what was queued before survives.
 */
const turns = new MessageChannel();
const turnQueue: Array<() => void> = [];
turns.port1.on("message", () => {
  const f = turnQueue.shift();
  // The port keeps the thread alive only while turns are due.
  if (turnQueue.length === 0) turns.port1.unref();
  f?.();
});
turns.port1.unref();

export function nextTurn(f: () => void): void {
  if (turnQueue.length === 0) turns.port1.ref();
  turnQueue.push(f);
  turns.port2.postMessage(0);
}

/** What ties a run to the worker that runs it. */
export type RunEnv = {
  /** The run's id on the worker's slice board. */
  runId: number;
  /** Where the run announces each slice of its code, for the pool to watch (none in unit tests). */
  board?: SliceBoard;
  /**
   * Called before the run touches its VM from the event loop: lets the worker end first any run
   * whose slice the pool terminated (its callbacks must never reach its instance again).
   */
  reap?: () => void;
  /** Called once when the run ends, whichever way (its fetches in flight stop). */
  onEnd?: () => void;
  /** Told how long each slice of the run's code took (a long one held up the other runs on the thread). */
  onSlice?: (ms: number) => void;
};

/** How a promise the run drives settled: its value (the caller owns the handle), or the run's error. */
type Settled = { value: QuickJSHandle } | { error: RunError };

/**
 * One script run on a prepared runtime: `start()` runs it; `kill()` ends it from outside.
 *
 * The run goes prepare → slice → host call → finish. It is prepared in its first step (#run, #begin:
 * the host bound, the run begun in the VM, its code evaluated, `main` called); then driven (#drive)
 * turn by turn, each stretch of its code a slice (#slice) and its host calls answered between them
 * (hostBridge.ts), until `main`'s promise settles or a limit stops it; it ends once (#done, or `kill`),
 * and its instance is the prepared runtime again for the next run, unless abandoned. Every step runs
 * from a macrotask (#step), and a throw in one ends the run (#failed).
 */
export class ScriptRun {
  readonly #prepared: PreparedRuntime;
  readonly #request: RunRequest;
  readonly #limits: SandboxLimits;
  readonly #env: RunEnv;
  readonly #started = performance.now();
  readonly #deadline: number;
  readonly #logs: LogBuffer;
  /** The host's entry points bound to this run: its host calls in flight and its timers. */
  readonly #bridge: HostBridge;
  #stolenMs = 0;
  /** The run is over: nothing may touch its VM any more. */
  #over = false;
  /** Its instance may be half-way through something: never disposed, never reused. */
  #abandoned = false;
  #resolve: ((outcome: RunOutcome) => void) | undefined;
  readonly #outcome: Promise<RunOutcome>;
  /** Wakes the run's drive loop (set while it waits). */
  #wake: (() => void) | undefined;
  /** The run passed its deadline (seen by its interrupt check, or between its slices). */
  #interrupted = false;
  /** The run broke its memory limit (an allocation its heap refused, or its live objects measured over it). */
  #memoryExceeded = false;
  /** When the run's memory was last measured, and its heap's size then (#memoryCheckDue). */
  #lastMemoryCheck = { at: 0, heap: 0 };

  constructor(prepared: PreparedRuntime, request: RunRequest, limits: SandboxLimits, host: RunHost, env: RunEnv) {
    this.#prepared = prepared;
    this.#request = request;
    this.#limits = limits;
    this.#env = env;
    this.#deadline = Date.now() + request.timeoutMs;
    this.#logs = new LogBuffer(limits.maxLogBytes);
    this.#outcome = new Promise((resolve) => (this.#resolve = resolve));
    this.#bridge = new HostBridge(prepared.ctx, prepared.instance, host, limits, {
      over: () => this.#overNow(),
      memoryInUse: () => this.#memoryInUse(),
      abandon: () => {
        this.#abandoned = true;
      },
      signal: () => this.#signal(),
      log: (line) => this.#logs.add(line),
    });
  }

  /** When the run must end: its deadline, moved on by the time other runs' long slices held its thread. */
  deadline(): number {
    return this.#deadline + this.#stolenMs;
  }

  /**
   * Another run held this run's thread for `ms` in one long slice: that time is neither the run's nor
   * billed. At most its own limit or 30 s in all (whichever is less): the edge waits for a run its
   * granted time and a minute, the pool gives up on one past its deadline and half a minute.
   */
  addStolen(ms: number): void {
    if (this.#over) return;
    this.#stolenMs = Math.min(this.#stolenMs + ms, Math.min(this.#request.timeoutMs, MAX_STOLEN_MS));
    this.#signal();
  }

  /** Whether the run's instance may serve another run (it ended cleanly, its runtime disposed). */
  get instanceReusable(): boolean {
    return this.#over && !this.#abandoned;
  }

  get instance(): SandboxInstance {
    return this.#prepared.instance;
  }

  /** How the run ended; settles once, whether the run ends by itself or is killed. */
  get outcome(): Promise<RunOutcome> {
    return this.#outcome;
  }

  /**
   * Runs the script. Whoever waits for the outcome must hold `outcome` before this is called: a
   * slice terminated from outside unwinds every frame on the stack, the caller's included.
   */
  start(inTurn = false): Promise<RunOutcome> {
    // `inTurn`: the caller is running in a turn of its own (a message event, not a microtask), where
    // the first slice may run at once; else the run starts in one (nextTurn).
    if (inTurn) this.#run();
    else nextTurn(() => this.#run());
    return this.#outcome;
  }

  /**
   * Ends the run from outside: its slice was terminated by the pool (or its worker gives up on it).
   * The VM is not touched again — it may be half-way through an allocation — and the run is answered
   * `timeout`, its whole grant used.
   */
  kill(): void {
    if (this.#over) return;
    this.#abandoned = true;
    this.#end({
      logs: this.#logs.text(),
      error: {
        code: "timeout",
        message: `the script ran past its time limit of ${this.#request.timeoutMs} ms and was stopped`,
      },
      durationMs: this.#request.timeoutMs,
      endedByWatchdog: true,
    });
  }

  #end(outcome: RunOutcome): void {
    if (!this.#resolve) return;
    this.#over = true;
    this.#bridge.clearTimers();
    this.#env.onEnd?.();
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#signal();
    resolve(outcome);
  }

  #signal(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  #finish(outcome: Ending): RunOutcome {
    return {
      ...(outcome.responseJson === undefined ? {} : { responseJson: outcome.responseJson }),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      ...(outcome.internalError === undefined
        ? {}
        : {
            hostFailure:
              outcome.internalError instanceof Error ? outcome.internalError.message : String(outcome.internalError),
          }),
      logs: this.#logs.text(),
      durationMs: Math.max(0, performance.now() - this.#started - this.#stolenMs),
    };
  }

  // ——— Prepare: the run's first step. ———

  /** The run, as steps that each run from a macrotask; it ends through #done (or `kill`). */
  #run(): void {
    const prepared = this.#prepared;
    const instance = prepared.instance;
    instance.resetRefused();
    // The instance's heap is capped at the run's limit (instance.ts); QuickJS's own limit (set when
    // the runtime was prepared) refuses single allocations too, and the run's live objects are
    // measured at every pause (#memoryInUse).
    prepared.onInterrupt(() => {
      if (Date.now() >= this.deadline()) this.#interrupted = true;
      // A script that caught its "out of memory" and goes on is stopped here.
      else if (instance.refused) this.#memoryExceeded = true;
      return this.#interrupted || this.#memoryExceeded;
    });
    this.#lastMemoryCheck = { at: Date.now(), heap: instance.heapBytes() };
    this.#step(() => this.#begin());
  }

  /** Binds the host's entry points to this run, begins it in the VM, and evaluates its code. */
  #begin(): void {
    // The thread may come here straight from a slice the pool terminated (a run started in a turn of
    // its own, nextTurn, after a termination whose reap message has not been read yet): that run is
    // ended first, or this run's first slice would take the board's word and the pool's kill with it.
    this.#env.reap?.();
    this.#prepared.bind(this.#bridge);
    const { ctx, internal } = this.#prepared;
    const request = this.#request;
    const requestJson = ctx.newString(
      JSON.stringify({ requestId: request.requestId, correlationId: request.correlationId, cid: request.cid }),
    );
    const randomSeed = ctx.newString(nextSeed());
    ctx.unwrapResult(ctx.callFunction(internal.begin, ctx.undefined, requestJson, randomSeed)).dispose();
    this.#evaluate();
  }

  /** The user's code: a script defining a global main, or a module exporting it. */
  #evaluate(): void {
    const ctx = this.#prepared.ctx;
    const request = this.#request;
    const isModule = /^\s*(export|import)\s/m.test(request.code);
    if (request.compileOnly) {
      const e = this.#compileFailure(isModule);
      this.#done(e ? { error: e } : { responseJson: "null" });
      return;
    }
    const evaluated = this.#slice(() =>
      ctx.evalCode(request.code, "action.js", isModule ? { type: "module" } : undefined),
    );
    if (evaluated.error) {
      const e = this.#describe(evaluated.error);
      evaluated.error.dispose();
      // A SyntaxError is the parser's when the code alone does not compile; else the script threw it.
      const compile =
        e.code === "script_error" && e.message.startsWith("SyntaxError: ") && this.#compileFailure(isModule);
      this.#done({ error: compile || e });
      return;
    }
    if (!isModule) {
      evaluated.value.dispose();
      this.#callMain(undefined);
      return;
    }
    // A module evaluates to its namespace, or to a promise for it (top-level await).
    const ns = evaluated.value;
    const state = ctx.getPromiseState(ns);
    if (state.type === "fulfilled" && state.notAPromise) {
      this.#callMain(ns); // the same handle, already owned
      return;
    }
    if (state.type === "rejected") {
      const e = this.#describe(state.error);
      state.error.dispose();
      this.#done({ error: e });
      return;
    }
    if (state.type === "fulfilled") state.value.dispose();
    this.#drive(ns, (settled) =>
      "error" in settled ? this.#done({ error: settled.error }) : this.#callMain(settled.value),
    );
  }

  /** The compile error of the run's code, compiled and not run; undefined when it compiles. */
  #compileFailure(isModule: boolean): RunError | undefined {
    const ctx = this.#prepared.ctx;
    const compiled = this.#slice(() =>
      ctx.evalCode(this.#request.code, "action.js", { ...(isModule ? { type: "module" } : {}), compileOnly: true }),
    );
    if (!compiled.error) {
      compiled.value.dispose();
      return undefined;
    }
    const e = this.#describe(compiled.error);
    compiled.error.dispose();
    return e.code === "script_error" ? compileError(e) : e;
  }

  /** Calls `main` with the run's params (and the module's namespace); its promise is driven to the answer. */
  #callMain(moduleNamespace: QuickJSHandle | undefined): void {
    const { ctx, internal } = this.#prepared;
    const params = ctx.newString(this.#request.paramsJson);
    const called = this.#slice(() =>
      ctx.callFunction(internal.callMain, ctx.undefined, moduleNamespace ? [params, moduleNamespace] : [params]),
    );
    if (called.error) {
      const e = this.#describe(called.error);
      called.error.dispose();
      this.#done({ error: e });
      return;
    }
    this.#drive(called.value, (settled) => this.#answer(settled));
  }

  /** `main` has been called: its promise settles into the run's response. */
  #answer(settled: Settled): void {
    if ("error" in settled) {
      this.#done({ error: settled.error });
      return;
    }
    const json = this.#prepared.ctx.getString(settled.value);
    settled.value.dispose();
    const limits = this.#limits;
    if (Buffer.byteLength(json) > limits.maxResponseBytes) {
      this.#done({
        error: { code: "limit_exceeded", message: `the response is larger than ${limits.maxResponseBytes} bytes` },
      });
      return;
    }
    this.#done({ responseJson: json });
  }

  // ——— Slice: a stretch of the run's code, and the limits checked around it. ———

  /** Whether this run is over (ended from outside); then nothing may touch its VM. */
  #overNow(): boolean {
    this.#env.reap?.();
    return this.#over;
  }

  /** Runs one synchronous stretch of the run's code, announced on the slice board (slices.ts). */
  #slice<T>(f: () => T): T {
    const env = this.#env;
    const board = env.board;
    if (!board) return f();
    const word = board.enter(env.runId, this.deadline());
    const began = performance.now();
    try {
      return f();
    } finally {
      // A terminated slice runs no finally: reaching here, the slice ended by itself. If the pool
      // claimed it meanwhile, its termination is on the way and must land here, not after.
      if (!board.leave(word)) {
        board.awaitKill(word);
        // Only if the termination never came: the run is ended all the same.
        // biome-ignore lint/correctness/noUnsafeFinally: this throw replaces whatever the slice returned, on purpose
        throw new RunStop({ code: "timeout", message: "the script ran past its time limit" });
      }
      if (this.#prepared.instance.refused) this.#memoryExceeded = true;
      env.onSlice?.(performance.now() - began);
    }
  }

  /** Measuring walks the run's heap: done when the heap grew or 25 ms passed since the last time. */
  #memoryCheckDue(): boolean {
    const now = Date.now();
    const bytes = this.#prepared.instance.heapBytes();
    if (bytes === this.#lastMemoryCheck.heap && now - this.#lastMemoryCheck.at < 25) return false;
    this.#lastMemoryCheck = { at: now, heap: bytes };
    return true;
  }

  /** What the run's live objects take in its heap, as QuickJS counts it. */
  #memoryInUse(): number {
    const { runtime, ctx } = this.#prepared;
    const usage = runtime.computeMemoryUsage();
    try {
      const size = ctx.getProp(usage, "memory_used_size");
      const n = ctx.getNumber(size);
      size.dispose();
      return n;
    } finally {
      usage.dispose();
    }
  }

  #timeoutError(): RunError {
    return timeoutError(this.#request.timeoutMs);
  }

  #memoryError(): RunError {
    return memoryError(this.#limits.memoryLimitBytes);
  }

  /** Turns a value thrown inside the VM into a run error; the script's getters run in a slice, under its limits. */
  #describe(errorHandle: QuickJSHandle): RunError {
    const { ctx, instance, internal } = this.#prepared;
    const limits = this.#limits;
    if (this.#memoryExceeded) return this.#memoryError();
    if (this.#interrupted) return this.#timeoutError();
    const r = this.#slice(() => ctx.callFunction(internal.classify, ctx.undefined, errorHandle));
    if (r.error) {
      r.error.dispose();
      if (this.#memoryExceeded || instance.refused) return this.#memoryError();
      return this.#interrupted ? this.#timeoutError() : { code: "script_error", message: "the script failed" };
    }
    const info = JSON.parse(ctx.getString(r.value)) as ThrownInfo;
    r.value.dispose();
    if (this.#memoryExceeded || instance.refused) return this.#memoryError();
    if (this.#interrupted) return this.#timeoutError();
    if (info.name === "InternalError" && info.message === "out of memory") return this.#memoryError();
    // Its getters threw while the host read it: out of memory, if that is where the run now is.
    if (info.undescribable && this.#memoryInUse() > limits.memoryLimitBytes * 0.75) return this.#memoryError();
    // With no memory left QuickJS cannot even build its error and throws null.
    if (
      info.name === "Uncaught" &&
      info.message === "null" &&
      (instance.refused || this.#memoryInUse() > limits.memoryLimitBytes * 0.75)
    )
      return this.#memoryError();
    if (info.name === "InternalError" && info.message === "interrupted") return this.#timeoutError();
    return scriptError(info);
  }

  // ——— Drive: turn by turn, until the promise settles (host calls are answered between turns). ———

  /**
   * Runs jobs, timers and host settlements until `promise` settles, then calls `then` with its state.
   * Between host replies it waits for the next one, a timer or the deadline; each wake-up is a turn
   * (nextTurn) in which the slices run.
   */
  #drive(promise: QuickJSHandle, then: (settled: Settled) => void): void {
    const go = () =>
      this.#step(() => {
        this.#wake = undefined;
        if (!this.#overNow() && Date.now() >= this.deadline()) {
          this.#interrupted = true;
          return then({ error: this.#timeoutError() });
        }
        const settled = this.#turn(promise);
        if (settled) return then(settled);
        const remaining = this.deadline() - Date.now();
        if (remaining <= 0) {
          this.#interrupted = true;
          return then({ error: this.#timeoutError() });
        }
        const t = setTimeout(() => nextTurn(go), remaining);
        this.#wake = () => {
          clearTimeout(t);
          nextTurn(go);
        };
      });
    go();
  }

  /** One turn: fires the timers due and runs the pending jobs until `promise` settles (or none is left to run). */
  #turn(promise: QuickJSHandle): Settled | undefined {
    const { runtime, ctx } = this.#prepared;
    const bridge = this.#bridge;
    for (;;) {
      if (this.#overNow()) return { error: this.#timeoutError() };
      if (bridge.stopWith) return { error: bridge.stopWith.runError };
      const timerError = this.#fireTimers();
      if (timerError) return { error: timerError };
      const jobs = this.#slice(() => runtime.executePendingJobs());
      if (jobs.error) {
        const e = this.#describe(jobs.error);
        jobs.error.dispose();
        return { error: e };
      }
      if (this.#memoryExceeded) return { error: this.#memoryError() };
      if (this.#interrupted) return { error: this.#timeoutError() };
      if (this.#memoryCheckDue() && this.#memoryInUse() > this.#limits.memoryLimitBytes) {
        this.#memoryExceeded = true;
        return { error: this.#memoryError() };
      }
      const state = ctx.getPromiseState(promise);
      if (state.type === "fulfilled") return { value: state.value };
      if (state.type === "rejected") {
        const e = this.#describe(state.error);
        state.error.dispose();
        return { error: e };
      }
      if (bridge.firedTimers.length > 0 || runtime.hasPendingJob()) continue;
      if (bridge.idle) {
        return {
          error: {
            code: "script_error",
            message: "main(params) never settled: it awaits something that can never happen",
          },
        };
      }
      return undefined;
    }
  }

  /** Fires the timers that came due, each in a slice; the error that ends the run, if one does. */
  #fireTimers(): RunError | undefined {
    const { ctx, internal } = this.#prepared;
    const firedTimers = this.#bridge.firedTimers;
    while (firedTimers.length > 0) {
      const id = firedTimers.shift() as number;
      const idHandle = ctx.newNumber(id);
      const r = this.#slice(() => ctx.callFunction(internal.fireTimer, ctx.undefined, idHandle));
      idHandle.dispose();
      if (r.error) {
        // A timer callback that throws is an uncaught error, as in a browser: log it, go on.
        const e = this.#describe(r.error);
        r.error.dispose();
        if (e.code === "timeout" || e.code === "memory_limit") return e;
        this.#logs.add(`Uncaught ${e.message}`);
      } else {
        r.value.dispose();
      }
    }
    return undefined;
  }

  // ——— Finish: each step's end, and the run's. ———

  /** Runs one step of the run (from a macrotask); a throw ends the run. */
  #step(f: () => void): void {
    if (this.#over) return;
    try {
      f();
    } catch (err) {
      this.#done(this.#failed(err));
    }
  }

  /** What a throw on the host's side of a step means for the run. */
  #failed(err: unknown): Ending {
    if (err instanceof RunStop) return { error: err.runError };
    // Host-side failure while setting up or driving the VM (for example out of memory while
    // creating a value): the run ends; the worker stays healthy. The instance is not reused.
    this.#abandoned = true;
    const message = err instanceof Error ? err.message : String(err);
    if (this.#memoryExceeded || this.#prepared.instance.refused) return { error: this.#memoryError() };
    if (this.#interrupted) return { error: this.#timeoutError() };
    if (/out of memory/i.test(message)) return { error: this.#memoryError() };
    return { error: { code: "script_error", message: "the script could not be run" }, internalError: err };
  }

  /**
   * Ends the run once: its outcome, its timers, and (unless abandoned) the runtime as it was
   * prepared again — the image written back, whatever the run left in it (no handle of the run is
   * touched after this: its memory is gone).
   */
  #done(ending: Ending): void {
    if (this.#over) return;
    const outcome = this.#finish(ending);
    this.#over = true;
    this.#bridge.clearTimers();
    this.#bridge.deferreds.clear();
    if (!this.#abandoned) this.#prepared.reset();
    this.#end(outcome);
  }
}

/** Runs one script on `prepared` (a runtime prepared on its own instance) and resolves to its outcome. */
export function runScript(
  prepared: PreparedRuntime,
  request: RunRequest,
  limits: SandboxLimits,
  host: RunHost,
  env: RunEnv = { runId: 0 },
): Promise<RunOutcome> {
  return new ScriptRun(prepared, request, limits, host, env).start();
}
