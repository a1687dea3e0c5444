// Messages between the service thread (pool.ts) and a sandbox worker (worker.ts).
import type { SandboxLimits } from "../config.ts";
import type { KeyRequest, KeyUse } from "./hostOps.ts";
import type { DnsSettings } from "./net/guardedFetch.ts";
import type { RunOutcome, RunRequest } from "./runtime.ts";

export type WorkerInit = {
  limits: SandboxLimits;
  fetchPolicy: {
    allowHosts: string[];
    denyPorts: number[];
    timeoutMs: number;
    maxResponseBytes: number;
    maxRedirects: number;
  };
  /** How scripts' host names are resolved (c-ares, off the libuv thread pool). */
  dns: DnsSettings;
  /** The worker's slice board (slices.ts), which the pool watches. */
  sliceBoard: SharedArrayBuffer;
  recycle: {
    /** An instance whose heap grew by more than this during its runs is dropped, not reused. */
    instanceGrowthBytes: number;
    /** A worker whose JavaScript heap passes this retires once its runs end. */
    workerHeapBytes: number;
  };
};

export type OfferedKeyBytes = { pkpId: string; privateKey: ArrayBuffer; encryptionKey?: ArrayBuffer };
export type OfferedKeyUse = { pkpId: string; use?: KeyUse };

export type ToWorker =
  /** `offered`: wallets' keys authorized for this run before it asked (hostOps.ts OfferedKey), transferred. */
  | { type: "run"; runId: number; request: RunRequest; offered?: OfferedKeyBytes[] }
  /** A slice of this worker was terminated: wake up and end its run. */
  | { type: "reap" }
  /** Give up on a run that neither answered nor holds the thread. */
  | { type: "abort"; runId: number }
  | { type: "keyReply"; callId: number; ok: true; privateKey: ArrayBuffer; encryptionKey?: ArrayBuffer }
  | { type: "keyReply"; callId: number; ok: false; code: string; message: string; details?: unknown }
  /** A service the run asked of the service thread (sending a transaction): its result (JSON), or its error. */
  | { type: "serviceReply"; callId: number; ok: true; result: unknown }
  | {
      type: "serviceReply";
      callId: number;
      ok: false;
      code: string | null;
      kind: "Error" | "TypeError" | "RangeError";
      message: string;
      details?: unknown;
    }
  /** Runs and key replies the pool had for this worker in one turn of its event loop, in order. */
  | { type: "batch"; messages: ToWorker[] };

export type FromWorker =
  | { type: "ready" }
  | { type: "key"; runId: number; callId: number; request: KeyRequest }
  /** A run asks the service thread for `op` (operations/send.ts), with JSON `args`. */
  | { type: "service"; runId: number; callId: number; op: string; args: unknown }
  /** `offeredUses`: what the run did with offered keys, in order, for its receipt. */
  | { type: "done"; runId: number; outcome: RunOutcome; offeredUses?: OfferedKeyUse[] }
  /** The worker's heap passed its threshold: route no new runs to it, replace it once it is empty. */
  | { type: "retire" };
