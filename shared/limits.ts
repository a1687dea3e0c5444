// The limits every script run is held to (docs/design/sandbox.md, Limits), read from the same variables on
// both sides: the enclave enforces them, and the edge sizes a run's hold by them, refuses scripts
// over them and reports them to clients (get_sigil_action_client_config). An operator who changes
// one sets it on the edge and on every enclave alike.
import { z } from "zod";

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export type RunLimits = {
  /** A run's wall-clock limit when it asks for none, and the largest it may ask for. */
  timeoutMs: number;
  maxTimeoutMs: number;
  memoryLimitBytes: number;
  stackLimitBytes: number;
  /** The largest script, in UTF-8 bytes. */
  maxCodeBytes: number;
  maxJsParamsBytes: number;
  maxResponseBytes: number;
  maxLogBytes: number;
  maxFetchCount: number;
  fetchTimeoutMs: number;
  maxFetchBytes: number;
  maxWalletOperations: number;
  maxTimers: number;
};

/**
 * The run-limit variables with their defaults and bounds, parsed into `RunLimits`. Other variables
 * in the environment are ignored, so each side parses its whole environment with it.
 */
export const runLimitsSchema = z
  .object({
    SIGIL_TIMEOUT_MS: int(100, 900_000).default(60_000),
    SIGIL_MAX_TIMEOUT_MS: int(100, 900_000).default(900_000),
    SIGIL_MEMORY_LIMIT_MB: int(8, 1_024).default(64),
    SIGIL_STACK_LIMIT_KB: int(64, 2_048).default(1_024),
    SIGIL_MAX_CODE_BYTES: int(1, 64 << 20).default(4 << 20),
    SIGIL_MAX_JS_PARAMS_BYTES: int(1, 64 << 20).default(1 << 20),
    SIGIL_MAX_RESPONSE_BYTES: int(1, 64 << 20).default(1 << 20),
    SIGIL_MAX_LOG_BYTES: int(1, 64 << 20).default(256 << 10),
    SIGIL_MAX_FETCH_COUNT: int(0, 10_000).default(50),
    SIGIL_FETCH_TIMEOUT_MS: int(100, 900_000).default(30_000),
    SIGIL_MAX_FETCH_BYTES: int(1, 256 << 20).default(10 << 20),
    SIGIL_MAX_WALLET_OPERATIONS: int(0, 100_000).default(200),
    SIGIL_MAX_TIMERS: int(1, 100_000).default(1_000),
  })
  .refine((c) => c.SIGIL_TIMEOUT_MS <= c.SIGIL_MAX_TIMEOUT_MS, {
    message: "SIGIL_TIMEOUT_MS must not exceed SIGIL_MAX_TIMEOUT_MS",
    path: ["SIGIL_TIMEOUT_MS"],
  })
  .transform(
    (c): RunLimits => ({
      timeoutMs: c.SIGIL_TIMEOUT_MS,
      maxTimeoutMs: c.SIGIL_MAX_TIMEOUT_MS,
      memoryLimitBytes: c.SIGIL_MEMORY_LIMIT_MB << 20,
      stackLimitBytes: c.SIGIL_STACK_LIMIT_KB << 10,
      maxCodeBytes: c.SIGIL_MAX_CODE_BYTES,
      maxJsParamsBytes: c.SIGIL_MAX_JS_PARAMS_BYTES,
      maxResponseBytes: c.SIGIL_MAX_RESPONSE_BYTES,
      maxLogBytes: c.SIGIL_MAX_LOG_BYTES,
      maxFetchCount: c.SIGIL_MAX_FETCH_COUNT,
      fetchTimeoutMs: c.SIGIL_FETCH_TIMEOUT_MS,
      maxFetchBytes: c.SIGIL_MAX_FETCH_BYTES,
      maxWalletOperations: c.SIGIL_MAX_WALLET_OPERATIONS,
      maxTimers: c.SIGIL_MAX_TIMERS,
    }),
  );

/** What `get_sigil_action_client_config` answers: the limits a client can plan a run by. */
export const clientConfigSchema = z.object({
  timeout_ms: z.number(),
  max_timeout_ms: z.number(),
  memory_limit_mb: z.number(),
  max_code_bytes: z.number(),
  max_js_params_bytes: z.number(),
  max_response_bytes: z.number(),
  max_log_bytes: z.number(),
  max_fetch_count: z.number(),
  max_wallet_operations: z.number(),
});
export type ClientConfig = z.infer<typeof clientConfigSchema>;

/** The public view of `limits`: sizes and counts as a client sends them, memory in MiB. */
export function clientConfigOf(limits: RunLimits): ClientConfig {
  return {
    timeout_ms: limits.timeoutMs,
    max_timeout_ms: limits.maxTimeoutMs,
    memory_limit_mb: limits.memoryLimitBytes >> 20,
    max_code_bytes: limits.maxCodeBytes,
    max_js_params_bytes: limits.maxJsParamsBytes,
    max_response_bytes: limits.maxResponseBytes,
    max_log_bytes: limits.maxLogBytes,
    max_fetch_count: limits.maxFetchCount,
    max_wallet_operations: limits.maxWalletOperations,
  };
}
