// A sandbox worker thread: many runs interleaved while they wait on host I/O, each on a QuickJS
// WebAssembly instance of its own (instance.ts). CPU-bound scripts occupy this thread, never the
// service thread. Keys are requested from the service thread per operation (it authorizes them),
// unless it offered a wallet's key with the run (hostOps.ts OfferedKey); fetches are made here under
// the network guard.
//
// Each stretch of a run's code is announced on the slice board the pool watches (slices.ts). When the
// pool terminates a slice that outlived its deadline, the termination unwinds this thread to its
// event loop: the next thing the thread does — any message, any host reply, any timer of a run — is
// `reap()`, which ends that run (`kill`: answered `timeout`, its instance dropped unread) and tells
// the other runs how long they were held up. A run held up by another's long slice has its deadline
// moved on by that time, and that time is not billed to it: no run fails because of another's.
import { getHeapStatistics } from "node:v8";
import { parentPort, workerData } from "node:worker_threads";
import type { SandboxLimits } from "../config.ts";
import { createRunHost, net, type KeyMaterial, type KeyRequest } from "./hostOps.ts";
import { createInstance } from "./instance.ts";
import type { FetchPolicy, Resolver } from "./net/guardedFetch.ts";
import type { FromWorker, OfferedKeyBytes, OfferedKeyUse, ToWorker, WorkerInit } from "./protocol.ts";
import { CodedError, nextTurn, prepareRuntime, ScriptRun, type PreparedRuntime, type RunRequest } from "./runtime.ts";
import { SliceBoard } from "./slices.ts";

const port = parentPort;
if (!port) throw new Error("worker.ts must run in a worker thread");
const init = workerData as WorkerInit;
const limits: SandboxLimits = init.limits;
const fetchPolicy: FetchPolicy = {
  allowHosts: new Set(init.fetchPolicy.allowHosts),
  denyPorts: new Set(init.fetchPolicy.denyPorts),
  timeoutMs: init.fetchPolicy.timeoutMs,
  maxResponseBytes: init.fetchPolicy.maxResponseBytes,
  maxRedirects: init.fetchPolicy.maxRedirects,
};
/** Scripts' host names, resolved with c-ares (made at the first fetch, with the network stack: hostOps.ts). */
let resolver: Resolver | undefined;
const resolve: Resolver = async (hostname) => (resolver ??= (await net()).createResolver(init.dns))(hostname);
const board = new SliceBoard(init.sliceBoard);

/** Why a run's fetches in flight stop once it has ended. */
const RUN_ENDED = new Error("the run has ended");

/** A slice at least this long held up the other runs on this thread: they get the time back. */
const LONG_SLICE_MS = 20;
/**
 * Prepared runtimes kept for the next runs, at most: a worker with many runs in flight needs as many
 * instances, and making one (instance, runtime, image) costs about 5 ms, so they are kept while that
 * many runs come — and trimmed every half minute to one more than the most that were in flight meanwhile.
 */
const MAX_IDLE_INSTANCES = 64;
const TRIM_INTERVAL_MS = 30_000;

const pendingKeys = new Map<number, { resolve: (k: KeyMaterial) => void; reject: (e: Error) => void }>();
let nextKeyCall = 1;
const runs = new Map<number, ScriptRun>();
const idle: PreparedRuntime[] = [];
let retiring = false;
/** The most runs in flight since the last trim. */
let peakRuns = 0;
setInterval(() => {
  const keep = peakRuns + 1;
  // The oldest go: the most recently used are the warmest.
  if (idle.length > keep) for (const gone of idle.splice(0, idle.length - keep)) drop(gone);
  peakRuns = runs.size;
}, TRIM_INTERVAL_MS).unref();

const post = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

const pendingServices = new Map<number, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
let nextServiceCall = 0;

/** Asks the service thread for `op` on behalf of run `runId` (a transaction's nonce, its broadcast). */
function requestService(runId: number, op: string, args: unknown): Promise<unknown> {
  const callId = nextServiceCall++;
  return new Promise<unknown>((resolve, reject) => {
    pendingServices.set(callId, { resolve, reject });
    post({ type: "service", runId, callId, op, args });
  });
}

function requestKey(runId: number, request: KeyRequest): Promise<KeyMaterial> {
  const callId = nextKeyCall++;
  const answer = new Promise<KeyMaterial>((resolve, reject) => {
    pendingKeys.set(callId, { resolve, reject });
    post({ type: "key", runId, callId, request });
  });
  return answer;
}

/**
 * A run's offered keys: a request for one of them is answered here with a copy (the host zeroes it
 * after its one operation), and noted for the run's receipt; the keys themselves are zeroed when the
 * run ends. A request the offer does not cover (another wallet, an encryption key not offered, an
 * action's identity) goes to the service thread.
 */
type OfferedKeys = ReturnType<typeof offeredKeys>;
function offeredKeys(offered: OfferedKeyBytes[] | undefined) {
  const keys = new Map<string, KeyMaterial>();
  for (const k of offered ?? []) {
    keys.set(k.pkpId, {
      privateKey: new Uint8Array(k.privateKey),
      ...(k.encryptionKey ? { encryptionKey: new Uint8Array(k.encryptionKey) } : {}),
    });
  }
  const uses: OfferedKeyUse[] = [];
  return {
    uses,
    take(request: KeyRequest): KeyMaterial | undefined {
      // Offers are of EVM keys: a Solana key is always asked of the service thread.
      if (request.kind !== "wallet" || request.solana || keys.size === 0) return undefined;
      const pkpId = request.pkpId.toLowerCase();
      const key = keys.get(pkpId);
      if (!key || (request.encryption && !key.encryptionKey)) return undefined;
      uses.push({ pkpId, ...(request.use ? { use: request.use } : {}) });
      return {
        privateKey: key.privateKey.slice(),
        ...(request.encryption && key.encryptionKey ? { encryptionKey: key.encryptionKey.slice() } : {}),
      };
    },
    zero(): void {
      for (const key of keys.values()) {
        key.privateKey.fill(0);
        key.encryptionKey?.fill(0);
      }
      keys.clear();
    },
  };
}

/** Gives every run but `except` the time a long slice held the thread. */
function holdUp(except: number, ms: number): void {
  if (ms < LONG_SLICE_MS) return;
  for (const [id, run] of runs) if (id !== except) run.addStolen(ms);
}

/** Ends the run whose slice the pool terminated, if one was. Safe to call at any time. */
function reap(): void {
  const killed = board.takeKilled();
  if (!killed) return;
  holdUp(killed.runId, killed.ranMs);
  runs.get(killed.runId)?.kill();
}

/** The bytes of this worker's instances (in use and idle), published for the pool's admission. */
let heapBytes = 0;
function countHeap(delta: number): void {
  heapBytes = Math.max(0, heapBytes + delta);
  board.setHeapBytes(heapBytes);
}

/**
 * A new instance with its runtime prepared and its image taken (about 5 ms here, more on a busy
 * machine). The runs in flight get that time back, as they do another run's long slice: the thread
 * was the sandbox's, not theirs.
 */
async function newRuntime(): Promise<PreparedRuntime> {
  const made = await createInstance(limits, countHeap);
  countHeap(made.heapBytes());
  // Step by step, each in a turn of the event loop of its own: a run that comes meanwhile (a message)
  // is taken between two steps. The runs in flight get each step's time back if it was long.
  const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
  let began = performance.now();
  const step = async () => {
    holdUp(0, performance.now() - began);
    await pause();
    began = performance.now();
  };
  try {
    return await prepareRuntime(made, limits, step);
  } catch (err) {
    countHeap(-made.heapBytes());
    throw err;
  } finally {
    holdUp(0, performance.now() - began);
  }
}

/**
 * A runtime that serves no run any more: its memory is zeroed (a run it served may have ended
 * half-way, never restored) and goes with its instance.
 */
function drop(prepared: PreparedRuntime): void {
  prepared.instance.wipe();
  countHeap(-prepared.instance.heapBytes());
}

/**
 * Runs waiting for a runtime, oldest first. Every runtime made or given back goes to the oldest: under
 * a burst (a restart's retried backlog, say) runtimes are made one at a time and runs start in the
 * order they came, the first within a runtime's making, instead of all of them making theirs side
 * by side and none starting before the last is made.
 */
const waiting: Array<{ resolve: (prepared: PreparedRuntime) => void; reject: (err: unknown) => void }> = [];

/**
 * Keeps a runtime (its image written back) for the oldest waiting run or later runs, unless its memory
 * grew past the recycle threshold: all of it is cleared after every run, so a memory a large run left
 * large would cost each later run its clearing.
 */
function giveBack(prepared: PreparedRuntime): void {
  if (prepared.instance.heapBytes() > prepared.instance.preparedBytes + init.recycle.instanceGrowthBytes) {
    drop(prepared);
    return;
  }
  const next = waiting.shift();
  if (next) next.resolve(prepared);
  else if (retiring || idle.length >= MAX_IDLE_INSTANCES) drop(prepared);
  else idle.push(prepared);
}

/** A runtime for a run that found none ready: the next one made or given back, after those of the runs waiting before it. */
function nextRuntime(): Promise<PreparedRuntime> {
  return new Promise((resolve, reject) => {
    waiting.push({ resolve, reject });
    keepReady();
  });
}

/**
 * Runtimes are made one at a time, each in turns of its own, while runs wait for one or fewer than
 * READY are kept beyond those in use: a run that comes finds one without waiting for an instance to
 * be made, unless more runs come at once than are ready.
 */
const READY = 2;
let making = false;
const wanted = () => waiting.length > 0 || (!retiring && idle.length < READY);
function keepReady(): void {
  if (making || !wanted()) return;
  making = true;
  setImmediate(() => {
    // The runs that took one may have given it back meanwhile.
    if (!wanted()) {
      making = false;
      return;
    }
    void newRuntime().then(
      (made) => {
        making = false;
        giveBack(made);
        keepReady();
      },
      (err: unknown) => {
        // Out of memory, say: the oldest waiting run reports it, and the next one waiting is tried
        // again; with none waiting, the next run to come tries.
        making = false;
        const oldest = waiting.shift();
        if (!oldest) return;
        oldest.reject(err);
        keepReady();
      },
    );
  });
}

async function run(runId: number, request: RunRequest, offer: OfferedKeys, ownTurn: boolean): Promise<void> {
  // Without awaiting, this is still the message event that brought the run: a turn of its own,
  // where its first slice may run at once (runtime.ts, nextTurn) — and a short run ends before the
  // next message is read, leaving its runtime to the next run (a few instances stay warm, instead of
  // one per message in the queue). A run that finds none waits its turn for one (nextRuntime) and starts
  // in a turn of its own.
  const kept = idle.pop();
  const inTurn = kept !== undefined && ownTurn;
  const prepared = kept ?? (await nextRuntime());
  keepReady();
  // Made at the run's first fetch: most runs never fetch, and abort() costs an event per run.
  let abort: AbortController | undefined;
  let script: ScriptRun | undefined;
  const host = createRunHost({
    cid: request.cid,
    deadline: () => script?.deadline() ?? Date.now() + request.timeoutMs,
    limits,
    fetchPolicy,
    resolve,
    signal: () => (abort ??= new AbortController()).signal,
    ...(request.dryRun ? { dryRun: true } : {}),
    requestKey: (r) => {
      // A dry run is offered no keys; and whatever it holds, a use that signs always asks the service thread.
      const key = request.dryRun && r.use ? undefined : offer.take(r);
      return key ? Promise.resolve(key) : requestKey(runId, r);
    },
    requestService: (op, args) => requestService(runId, op, args),
  });
  script = new ScriptRun(prepared, request, limits, host, {
    runId,
    board,
    reap,
    onEnd: () => abort?.abort(RUN_ENDED),
    onSlice: (ms) => holdUp(runId, ms),
  });
  runs.set(runId, script);
  peakRuns = Math.max(peakRuns, runs.size);
  // Registered before the run's code starts: a terminated slice unwinds this function's frame too,
  // and the answer must still go out when the run is killed.
  const ended = script;
  void ended.outcome.then((outcome) => {
    runs.delete(runId);
    offer.zero();
    if (ended.instanceReusable) giveBack(prepared);
    else drop(prepared);
    // Before the answer: a worker that retires is given no run after this one.
    checkHeap();
    post({ type: "done", runId, outcome, ...(offer.uses.length ? { offeredUses: offer.uses } : {}) });
    keepReady();
  });
  void ended.start(inTurn);
}

/**
 * A worker whose own JavaScript heap has grown past the threshold (host-side buffers of past runs,
 * fragmentation) takes no new runs and asks to be replaced once those in flight end.
 */
function checkHeap(): void {
  if (retiring) return;
  if (getHeapStatistics().used_heap_size > init.recycle.workerHeapBytes) {
    retiring = true;
    for (const gone of idle.splice(0)) drop(gone);
    post({ type: "retire" });
  }
}

function handle(message: ToWorker, ownTurn: boolean): void {
  switch (message.type) {
    case "run": {
      const offer = offeredKeys(message.offered);
      void run(message.runId, message.request, offer, ownTurn).catch((err: unknown) => {
        offer.zero();
        post({
          type: "done",
          runId: message.runId,
          outcome: {
            logs: "",
            durationMs: 0,
            error: { code: "script_error", message: "the script could not be run" },
            hostFailure: String(err),
          },
        });
      });
      break;
    }
    case "batch": {
      // One message event is one turn: only one run's first slice may take it, and the last thing
      // done in it, so that a termination of that slice leaves nothing of the batch undone. The
      // other runs are each handled in a turn of their own (nextTurn), queued before it, as if each
      // had come in a message of its own (its first slice reaps first a run the pool ended meanwhile:
      // runtime.ts): a short one ends in its turn and leaves its runtime to the next.
      const first = message.messages.find((m) => m.type === "run");
      for (const m of message.messages) {
        if (m === first) continue;
        if (m.type === "run") nextTurn(() => handle(m, true));
        else handle(m, false);
      }
      if (first) handle(first, true);
      break;
    }
    case "reap":
      break;
    case "abort":
      // The pool gave up on a run that neither answered nor held the thread: end it, drop its instance.
      runs.get(message.runId)?.kill();
      break;
    case "keyReply": {
      const pending = pendingKeys.get(message.callId);
      if (!pending) break;
      pendingKeys.delete(message.callId);
      if (message.ok)
        pending.resolve({
          privateKey: new Uint8Array(message.privateKey),
          ...(message.encryptionKey ? { encryptionKey: new Uint8Array(message.encryptionKey) } : {}),
        });
      else pending.reject(new CodedError(message.code, message.message, "Error", message.details));
      break;
    }
    case "serviceReply": {
      const pending = pendingServices.get(message.callId);
      if (!pending) break;
      pendingServices.delete(message.callId);
      if (message.ok) pending.resolve(message.result);
      else pending.reject(new CodedError(message.code, message.message, message.kind, message.details));
      break;
    }
  }
}

port.on("message", (message: ToWorker) => {
  reap();
  handle(message, true);
});

keepReady();
post({ type: "ready" });
