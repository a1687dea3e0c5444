// Structured JSON logs, one object per line on stdout. Callers pass facts, never keys or secrets:
// an API key appears at most as the first 6 hex digits of its hash (`keyRef`).
export type LogLevel = "debug" | "info" | "warn" | "error";
type Fields = Record<string, unknown>;

const rank = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export type Logger = {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  /** A logger whose every line also carries `fields` (request id, correlation id, operation). */
  child(fields: Fields): Logger;
};

export function createLogger(
  level: LogLevel | "silent",
  base: Fields = {},
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Fields) => {
    if (rank[lvl] < rank[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }, replacer));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

/** First 6 hex digits of a key hash: enough to tell keys apart in logs, useless to an attacker. */
export function keyRef(keyHash: bigint): string {
  return keyHash.toString(16).padStart(64, "0").slice(0, 6);
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
