// How a script run's failures are told (docs/design/sandbox.md): the error the host gives the script for a host
// call it refuses (CodedError), the run error a run ends with (RunError, and RunStop, which carries one
// out of host code), and the run error for a value the script threw (scriptError). The checks that
// come first — whether the run broke a limit — are the run's own (runtime.ts, ScriptRun).
import { errorStatus, SigilError, type ErrorCode } from "../../shared/errors.ts";

/** How a run failed; `line` and `column` only for `compile_error` (where the parser stopped). */
export type RunError = { code: string; message: string; stack?: string; line?: number; column?: number };

/**
 * An error for the script: `scriptCode` is the code the script's error carries (`permission_denied`,
 * `limit_exceeded`, …, or none), `kind` the class it is thrown as. Its `code` is the service's code
 * nearest in meaning (the script code itself where it is one, `internal_error` for a key that does
 * not match its wallet, else `invalid_request`: the script asked for what cannot be done). Its
 * message is for the script, never an HTTP answer (`expose` false).
 */
export class CodedError extends SigilError {
  override readonly name = "CodedError";
  readonly scriptCode: string | null;
  readonly kind: "Error" | "TypeError" | "RangeError";
  /** What the script's error carries as `details` (JSON), beside its message. */
  readonly scriptDetails: unknown;
  constructor(
    scriptCode: string | null,
    message: string,
    kind: "Error" | "TypeError" | "RangeError" = "Error",
    scriptDetails?: unknown,
  ) {
    super(serviceCodeOf(scriptCode), message, { expose: false });
    this.scriptCode = scriptCode;
    this.kind = kind;
    this.scriptDetails = scriptDetails;
  }
}

function serviceCodeOf(scriptCode: string | null): ErrorCode {
  if (scriptCode === "wallet_key_mismatch") return "internal_error";
  return scriptCode !== null && Object.hasOwn(errorStatus, scriptCode) ? (scriptCode as ErrorCode) : "invalid_request";
}

/** Ends the run from host code, with the run error to report. */
export class RunStop extends Error {
  readonly runError: RunError;
  constructor(runError: RunError) {
    super(runError.message);
    this.runError = runError;
  }
}

/** The run error of a run stopped at its time limit. */
export const timeoutError = (timeoutMs: number): RunError => ({
  code: "timeout",
  message: `the script ran past its time limit of ${timeoutMs} ms`,
});

/** The run error of a run that broke its memory limit. */
export const memoryError = (memoryLimitBytes: number): RunError => ({
  code: "memory_limit",
  message: `the script exceeded its memory limit of ${memoryLimitBytes >> 20} MiB`,
});

/** What the core's `classify` tells of a value thrown inside the VM (read by the script's getters). */
export type ThrownInfo = {
  code: string | null;
  name: string;
  message: string;
  stack?: string;
  undescribable?: true;
};

/** Frames of a failed run's stack that reach the client. */
const MAX_STACK_FRAMES = 50;

/** The run error for a value the script threw, once the run is known to have broken no limit. */
export function scriptError(info: ThrownInfo): RunError {
  const message = info.code
    ? info.message
    : info.name && info.name !== "Uncaught"
      ? `${info.name}: ${info.message}`
      : info.message;
  // Only the script's own frames: the prelude's are noise to the author (and say nothing useful).
  // A runaway recursion has thousands: the innermost and the outermost tell where, with a count of the rest.
  const frames = info.stack
    ?.split("\n")
    .filter((line) => line.trim() !== "" && !line.includes("sigil:") && !line.includes("(native)"));
  const half = MAX_STACK_FRAMES / 2;
  const stack =
    frames && frames.length > MAX_STACK_FRAMES
      ? [
          ...frames.slice(0, half),
          `    … ${frames.length - MAX_STACK_FRAMES} frames left out …`,
          ...frames.slice(-half),
        ].join("\n")
      : frames?.join("\n");
  return { code: info.code ?? "script_error", message, ...(stack ? { stack } : {}) };
}

/**
 * The run error of code that does not compile (a SyntaxError QuickJS's parser raised, confirmed by
 * compiling the code alone: a SyntaxError the code throws as it runs, `JSON.parse("{")`, is the
 * script's own error). `line` and `column` are where the parser stopped, 1-based, from the error's
 * first frame (`at action.js:2:14`).
 */
export function compileError(error: RunError): RunError {
  const at = /^\s*at action\.js:(\d+):(\d+)/.exec(error.stack ?? "");
  return {
    code: "compile_error",
    message: error.message,
    ...(at ? { line: Number(at[1]), column: Number(at[2]) } : {}),
  };
}
