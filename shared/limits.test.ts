// The run limits both sides read (limits.ts): their defaults, their bounds, and the public view of
// them that get_sigil_action_client_config answers.
import { describe, expect, it } from "vitest";
import { clientConfigOf, clientConfigSchema, runLimitsSchema } from "./limits.ts";

describe("runLimitsSchema", () => {
  it("gives every limit its default when no variable is set, and ignores other variables", () => {
    expect(runLimitsSchema.parse({ SIGIL_ENV: "test", SIGIL_RPC_URL: "http://127.0.0.1:8545" })).toEqual({
      timeoutMs: 60_000,
      maxTimeoutMs: 900_000,
      memoryLimitBytes: 64 << 20,
      stackLimitBytes: 1_024 << 10,
      maxCodeBytes: 4 << 20,
      maxJsParamsBytes: 1 << 20,
      maxResponseBytes: 1 << 20,
      maxLogBytes: 256 << 10,
      maxFetchCount: 50,
      fetchTimeoutMs: 30_000,
      maxFetchBytes: 10 << 20,
      maxWalletOperations: 200,
      maxTimers: 1_000,
    });
  });

  it("reads the variables as the environment spells them (strings), megabytes and kilobytes as bytes", () => {
    const limits = runLimitsSchema.parse({
      SIGIL_TIMEOUT_MS: "5000",
      SIGIL_MEMORY_LIMIT_MB: "32",
      SIGIL_STACK_LIMIT_KB: "256",
      SIGIL_MAX_CODE_BYTES: "1000",
    });
    expect(limits).toMatchObject({
      timeoutMs: 5_000,
      memoryLimitBytes: 32 << 20,
      stackLimitBytes: 256 << 10,
      maxCodeBytes: 1_000,
    });
  });

  it("refuses a limit out of its bounds, and a default timeout above the maximum, naming the variable", () => {
    const problem = (env: Record<string, string>) =>
      runLimitsSchema.safeParse(env).error?.issues.map((i) => i.path.join("."));
    expect(problem({ SIGIL_MAX_TIMEOUT_MS: "900001" })).toEqual(["SIGIL_MAX_TIMEOUT_MS"]);
    expect(problem({ SIGIL_MEMORY_LIMIT_MB: "4" })).toEqual(["SIGIL_MEMORY_LIMIT_MB"]);
    expect(problem({ SIGIL_MAX_CODE_BYTES: "many" })).toEqual(["SIGIL_MAX_CODE_BYTES"]);
    expect(problem({ SIGIL_TIMEOUT_MS: "2000", SIGIL_MAX_TIMEOUT_MS: "1000" })).toEqual(["SIGIL_TIMEOUT_MS"]);
  });
});

describe("clientConfigOf", () => {
  it("answers the limits a client plans a run by, memory in MiB, and nothing of the rest", () => {
    const body = clientConfigOf(runLimitsSchema.parse({ SIGIL_TIMEOUT_MS: "5000", SIGIL_MEMORY_LIMIT_MB: "32" }));
    expect(body).toEqual({
      timeout_ms: 5_000,
      max_timeout_ms: 900_000,
      memory_limit_mb: 32,
      max_code_bytes: 4 << 20,
      max_js_params_bytes: 1 << 20,
      max_response_bytes: 1 << 20,
      max_log_bytes: 256 << 10,
      max_fetch_count: 50,
      max_wallet_operations: 200,
    });
    expect(clientConfigSchema.strict().parse(body)).toEqual(body);
  });
});
