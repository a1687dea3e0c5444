// A sandbox worker thread: one QuickJS module, many runs interleaved while they wait on host I/O.
// CPU-bound scripts occupy this thread, never the service thread. Keys are requested from the
// service thread per operation (it authorizes them); fetches are made here under the network guard.
import { parentPort, workerData } from "node:worker_threads";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, type QuickJSSyncVariant } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config.ts";
import { createRunHost, type KeyMaterial, type KeyRequest } from "./hostOps.ts";
import { CodedError, runScript, type RunRequest } from "./runtime.ts";
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

async function run(runId: number, request: RunRequest): Promise<void> {
  const host = createRunHost({
    cid: request.cid,
    deadline: Date.now() + request.timeoutMs,
    limits,
    fetchPolicy,
    requestKey: (r) => requestKey(runId, r),
  });
  const outcome = await runScript(module, request, limits, host);
  post({ type: "done", runId, outcome });
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

post({ type: "ready" });
