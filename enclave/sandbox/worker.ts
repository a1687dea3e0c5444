// A sandbox worker thread: one QuickJS module, many runs interleaved while they wait on host I/O.
// CPU-bound scripts occupy this thread, never the service thread. Keys are requested from the
// service thread per operation (it authorizes them); fetches are made here under the network guard.
import { parentPort, workerData } from "node:worker_threads";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, type QuickJSSyncVariant } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config.ts";
import { createRunHost, type KeyMaterial, type KeyRequest } from "./hostOps.ts";
import { CodedError, prepareRuntime, runScript, type PreparedRuntime, type RunRequest } from "./runtime.ts";
import type { FetchPolicy } from "./net/guardedFetch.ts";
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.ts";

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

// The package is dual-format; under NodeNext its types resolve to the CommonJS namespace.
const module = await newQuickJSWASMModuleFromVariant(variant as unknown as QuickJSSyncVariant);
const pendingKeys = new Map<number, { resolve: (k: KeyMaterial) => void; reject: (e: Error) => void }>();
let nextKeyCall = 1;

const post = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

function requestKey(runId: number, request: KeyRequest): Promise<KeyMaterial> {
  const callId = nextKeyCall++;
  return new Promise((resolve, reject) => {
    pendingKeys.set(callId, { resolve, reject });
    post({ type: "key", runId, callId, request });
  });
}

/**
 * The runtime the next run will use, prepared when a run ends (or, with several in flight, when one
 * starts), so a run does not wait for its runtime and core.js.
 * When no run is in flight at all, the chunks behind Sigil.Actions are parsed into it too: idle
 * time is free, and a busy worker does not spend it on runs that may never touch Sigil.
 */
let next: PreparedRuntime | undefined;
let nextHasSigil = false;
let preparing = false;
let active = 0;

function prepareNext(): void {
  if (preparing || (next && (nextHasSigil || active > 0))) return;
  preparing = true;
  setImmediate(() => {
    preparing = false;
    try {
      if (!next) {
        next = prepareRuntime(module);
        nextHasSigil = false;
      } else if (active === 0 && !nextHasSigil) {
        next.preloadSigil();
        nextHasSigil = true;
      }
    } catch {
      // Out of memory, say: the next run prepares its own and reports what happens then.
      return;
    }
    if (active === 0 && !nextHasSigil) prepareNext();
  });
}

async function run(runId: number, request: RunRequest): Promise<void> {
  const prepared = next;
  next = undefined;
  active++;
  // Alone, this run would only be slowed by preparing its successor now (its host calls come back
  // to a busy thread): that waits until it is done. With others in flight the thread is busy anyway.
  if (active > 1) prepareNext();
  const host = createRunHost({
    cid: request.cid,
    deadline: Date.now() + request.timeoutMs,
    limits,
    fetchPolicy,
    requestKey: (r) => requestKey(runId, r),
  });
  let outcome;
  try {
    outcome = await runScript(module, request, limits, host, prepared);
  } finally {
    active--;
  }
  post({ type: "done", runId, outcome });
  prepareNext();
}

port.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "run":
      void run(message.runId, message.request).catch((err: unknown) => {
        post({ type: "done", runId: message.runId, outcome: { logs: "", durationMs: 0, error: { code: "script_error", message: "the script could not be run" }, hostFailure: String(err) } });
      });
      break;
    case "keyReply": {
      const pending = pendingKeys.get(message.callId);
      if (!pending) break;
      pendingKeys.delete(message.callId);
      if (message.ok) pending.resolve({ privateKey: new Uint8Array(message.privateKey), ...(message.encryptionKey ? { encryptionKey: new Uint8Array(message.encryptionKey) } : {}) });
      else pending.reject(new CodedError(message.code, message.message));
      break;
    }
  }
});

prepareNext();
post({ type: "ready" });
