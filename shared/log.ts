// Structured JSON logs for both sides, one object per line: `time`, `level`, `msg`, then the
// logger's fields (a child's: request id, correlation id, operation) and the call's. Callers pass
// facts, never keys or secrets: an API key appears at most as the first 6 hex digits of its hash
// (`keyRef`). As a second guard, a field whose name says it holds a secret (api_key,
// authorization, private_key, password, seed, …) is written as "[redacted]" at any depth.
// Runs in Node and in workerd: the default sink is `console`; the enclave passes one for stdout.
export type LogLevel = "debug" | "info" | "warn" | "error";
type Fields = Record<string, unknown>;

/** Where a finished line goes (without its newline). */
export type LogSink = (line: string, level: LogLevel) => void;

const rank = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export type Logger = {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  /** A logger whose every line also carries `fields` (request id, correlation id, operation). */
  child(fields: Fields): Logger;
};

/** Warnings and errors to `console.error` (stderr), the rest to `console.log`. */
export const consoleSink: LogSink = (line, level) => {
  if (level === "warn" || level === "error") console.error(line);
  else console.log(line);
};

export function createLogger(level: LogLevel | "silent", base: Fields = {}, write: LogSink = consoleSink): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Fields) => {
    if (rank[lvl] < rank[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }, replacer), lvl);
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

/**
 * Parts of a field name (lowercased, with `_`, `-` and other separators removed) that mark it as
 * holding a secret. `x-api-key`, `apiKey`, `STRIPE_SECRET_KEY`, `privateKey`, `root_key` all match;
 * `key` alone (a keyRef), `keyHash` and `request_id` do not.
 */
const SECRET_NAME_PARTS = [
  "apikey",
  "authorization",
  "bearer",
  "cookie",
  "secret",
  "privatekey",
  "rootkey",
  "encryptionkey",
  "identitykey",
  "password",
  "passphrase",
  "mnemonic",
  "seed",
  "accesstoken",
  "refreshtoken",
];

/** Whether a field named `name` is written as "[redacted]". */
export function isSecretName(name: string): boolean {
  const normalized = name.toLowerCase().replace(/[^a-z0-9]/g, "");
  return SECRET_NAME_PARTS.some((part) => normalized.includes(part));
}

/** Field names already judged: a line's names are the code's own, so this stays small (bounded all the same). */
const secretNames = new Map<string, boolean>();

function isSecretField(name: string): boolean {
  let secret = secretNames.get(name);
  if (secret === undefined) {
    secret = isSecretName(name);
    if (secretNames.size < 4096) secretNames.set(name, secret);
  }
  return secret;
}

function replacer(key: string, value: unknown): unknown {
  if (key !== "" && isSecretField(key)) return "[redacted]";
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
