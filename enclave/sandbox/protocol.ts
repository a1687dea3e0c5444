// Messages between the service thread (pool.ts) and a sandbox worker (worker.ts).
import type { SandboxLimits } from "../config.ts";
import type { KeyRequest } from "./hostOps.ts";
import type { RunOutcome, RunRequest } from "./runtime.ts";

export type WorkerInit = {
  limits: SandboxLimits;
  fetchPolicy: { allowHosts: string[]; denyPorts: number[]; timeoutMs: number; maxResponseBytes: number; maxRedirects: number };
};

export type ToWorker =
  | { type: "run"; runId: number; request: RunRequest }
  | { type: "keyReply"; callId: number; ok: true; privateKey: ArrayBuffer; encryptionKey?: ArrayBuffer }
  | { type: "keyReply"; callId: number; ok: false; code: string; message: string };

export type FromWorker =
  | { type: "ready" }
  | { type: "key"; runId: number; callId: number; request: KeyRequest }
  | { type: "done"; runId: number; outcome: RunOutcome };
