// What every `sigil` command shares: its options, where the service's URL and the API key come
// from (flags, environment, profile file, the running stack's .sigil/local.json), the client made
// from them, output (aligned tables for people, one JSON document with --json) and errors (one line
// on stderr with code and request id; exit 1, or 2 for a usage error). Keys are never printed here:
// a command shows a key only where it creates one.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs, type ParseArgsOptionDescriptor } from "node:util";
import type { BaseError } from "viem";
import type { SigilClient } from "../../sdk/src/index.ts";

/** What a command uses once it runs (./service.ts): the SDK, viem's clients and errors. */
type Service = typeof import("./service.ts");
let loaded: Service | undefined;

/** Loads ./service.ts: runCommand does before a command runs, never for --help or a usage error. */
export async function loadService(): Promise<Service> {
  loaded ??= await import("./service.ts");
  return loaded;
}

/** ./service.ts, loaded by runCommand before any command runs. */
export function service(): Service {
  if (!loaded) throw new Error("./service.ts is not loaded: commands run through runCommand, which loads it");
  return loaded;
}

/** The URL used when nothing else names one: `npm start`'s edge on its default port. */
export const DEFAULT_API_URL = "http://127.0.0.1:8787";
export const DEFAULT_PROFILE = "default";

/** A command line the command cannot act on: printed with the command's usage, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A failure the CLI finds itself (no HTTP answer behind it), printed as `code: message`, exit 1. */
export class CliError extends Error {
  override name = "CliError";
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

// ---------------------------------------------------------------------------------------------
// Where the URL and the key come from

export type Env = Record<string, string | undefined>;

/**
 * `api` is a URL, or LOCAL_STACK: the local stack wherever it now listens (its local.json), so a
 * profile made against `npm start` follows the stack when it restarts on another port, and its key
 * never goes to whatever took the old port.
 */
export type Profile = { api?: string; key?: string };

/** A profile's `api` for the local stack (sigil profile set --api local; account create --save against it). */
export const LOCAL_STACK = "local";
export type ProfileFile = { profiles: Record<string, Profile> };

/** Where a value was found, for `sigil profile show` and error messages. */
export type Source = { kind: "flag" | "env" | "profile" | "local" | "default"; detail: string };

export type Connection = {
  baseUrl: string;
  apiKey: string | undefined;
  from: { api: Source; key: Source | undefined };
  profileName: string;
  profileFile: string;
};

/** `$SIGIL_PROFILE_FILE`, or ~/.config/sigil/profiles.json. */
export function profileFilePath(env: Env): string {
  return env.SIGIL_PROFILE_FILE || join(env.HOME || homedir(), ".config", "sigil", "profiles.json");
}

/** The profiles in `file`; none when it does not exist. A file that is not a profile file is an error, not an empty one. */
export function readProfiles(file: string): ProfileFile {
  if (!existsSync(file)) return { profiles: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new CliError("invalid_profile_file", `${file} is not JSON (${(err as Error).message.split("\n")[0]})`);
  }
  const profiles = (parsed as { profiles?: unknown } | null)?.profiles;
  if (typeof profiles !== "object" || profiles === null || Array.isArray(profiles)) {
    throw new CliError("invalid_profile_file", `${file} has no "profiles" object`);
  }
  for (const [name, p] of Object.entries(profiles)) {
    const ok =
      typeof p === "object" &&
      p !== null &&
      ["api", "key"].every(
        (f) => (p as Record<string, unknown>)[f] === undefined || typeof (p as Record<string, unknown>)[f] === "string",
      );
    if (!ok)
      throw new CliError(
        "invalid_profile_file",
        `${file}: profile "${name}" must be an object with string "api" and "key"`,
      );
  }
  return { profiles: profiles as Record<string, Profile> };
}

/**
 * Sets `changes` in profile `name` (others kept) and writes the file readable by its owner only
 * (0600, in a 0700 folder when the CLI makes it), through a temporary file so a crash never leaves
 * half a file.
 */
export function writeProfile(file: string, name: string, changes: Profile): Profile {
  const all = readProfiles(file);
  const profile: Profile = { ...all.profiles[name] };
  if (changes.api !== undefined) profile.api = changes.api;
  if (changes.key !== undefined) profile.key = changes.key;
  all.profiles[name] = profile;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
  return profile;
}

/** The running stack's edge URL from `<state dir>/local.json`: SIGIL_STATE_DIR, or the nearest .sigil/ from `cwd` upwards. */
export function localStackUrl(env: Env, cwd: string): { url: string; file: string } | undefined {
  const candidates: string[] = [];
  if (env.SIGIL_STATE_DIR) candidates.push(join(resolve(cwd, env.SIGIL_STATE_DIR), "local.json"));
  else
    for (let dir = resolve(cwd); ; dir = dirname(dir)) {
      candidates.push(join(dir, ".sigil", "local.json"));
      if (dirname(dir) === dir) break;
    }
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    try {
      const url = (JSON.parse(readFileSync(file, "utf8")) as { edgeUrl?: unknown }).edgeUrl;
      if (typeof url === "string" && /^https?:\/\//.test(url)) return { url, file };
    } catch {
      // a file being written, or not the stack's: as if absent
    }
    // The first local.json found is the stack's, whether or not its edge has started yet.
    return undefined;
  }
  return undefined;
}

/**
 * The service's URL and the API key, each from the first place that has one: the flags, the
 * environment (SIGIL_API_URL, SIGIL_API_KEY), the profile (--profile, SIGIL_PROFILE or "default",
 * in the profile file), then for the URL the running stack's local.json, then DEFAULT_API_URL.
 * A profile named on purpose must exist; the default one may be absent.
 */
export function resolveConnection(args: {
  flags: { api?: string | undefined; key?: string | undefined; profile?: string | undefined };
  env: Env;
  cwd: string;
  /** The command is about to write the profile (account create --save): a named one may be new. */
  newProfile?: boolean;
}): Connection {
  const { flags, env, cwd } = args;
  const profileFile = profileFilePath(env);
  const chosen = flags.profile ?? (env.SIGIL_PROFILE || undefined);
  const profileName = chosen ?? DEFAULT_PROFILE;
  const needProfile =
    (flags.api === undefined && !env.SIGIL_API_URL) || (flags.key === undefined && !env.SIGIL_API_KEY);
  let profile: Profile | undefined;
  if (needProfile || chosen !== undefined) {
    profile = readProfiles(profileFile).profiles[profileName];
    if (!profile && chosen !== undefined && !args.newProfile)
      throw new UsageError(`no profile "${profileName}" in ${profileFile} (sigil profile set --name ${profileName} …)`);
  }
  const inProfile: Source = { kind: "profile", detail: `profile "${profileName}" (${profileFile})` };

  let api: { value: string; from: Source };
  if (flags.api !== undefined) api = { value: flags.api, from: { kind: "flag", detail: "--api" } };
  else if (env.SIGIL_API_URL) api = { value: env.SIGIL_API_URL, from: { kind: "env", detail: "SIGIL_API_URL" } };
  else if (profile?.api === LOCAL_STACK) {
    const local = localStackUrl(env, cwd);
    if (!local)
      throw new UsageError(
        `profile "${profileName}" is for the local stack, and no .sigil/local.json is found from here (start it with npm start, or set SIGIL_STATE_DIR)`,
      );
    api = { value: local.url, from: { kind: "local", detail: `${inProfile.detail}: the local stack (${local.file})` } };
  } else if (profile?.api) api = { value: profile.api, from: inProfile };
  else {
    const local = localStackUrl(env, cwd);
    api = local
      ? { value: local.url, from: { kind: "local", detail: local.file } }
      : { value: DEFAULT_API_URL, from: { kind: "default", detail: "the default" } };
  }
  if (!/^https?:\/\/[^/]+/.test(api.value))
    throw new UsageError(`the API URL from ${api.from.detail} is not an http(s) URL: ${api.value}`);

  let key: { value: string; from: Source } | undefined;
  if (flags.key !== undefined) key = { value: flags.key, from: { kind: "flag", detail: "--key" } };
  else if (env.SIGIL_API_KEY) key = { value: env.SIGIL_API_KEY, from: { kind: "env", detail: "SIGIL_API_KEY" } };
  else if (profile?.key) key = { value: profile.key, from: inProfile };

  return {
    baseUrl: api.value.replace(/\/+$/, "").replace(/\/core\/v1$/, ""),
    apiKey: key?.value,
    from: { api: api.from, key: key?.from },
    profileName,
    profileFile,
  };
}

/** A key as it may be shown: its first four characters, never more. */
export function maskKey(key: string): string {
  return `${key.slice(0, 4)}… (${key.length} characters)`;
}

// ---------------------------------------------------------------------------------------------
// Output

/** Rows under a header, each column as wide as its widest cell, two spaces apart; no trailing blanks. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** Name–value lines, the values aligned; an empty value leaves its line out. */
export function fields(pairs: Array<[string, string | number | undefined]>): string {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== "") as Array<[string, string | number]>;
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n");
}

export const dollars = (cents: number) =>
  `${cents < 0 ? "-" : ""}$${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;

/** viem's short message, with the contract's custom error when the revert names one: "… reverted: AccountDoesNotExist(0x…)". */
function chainErrorMessage(err: BaseError, findRevert: Service["findRevert"]): string {
  const revert = findRevert(err);
  if (!revert || revert.name === "Unknown") return err.shortMessage;
  const arg = (a: unknown) =>
    typeof a === "bigint" ? (a > 2n ** 64n ? `0x${a.toString(16).padStart(64, "0")}` : a.toString()) : String(a);
  return `${err.shortMessage.replace(/\.$/, "")}: ${revert.name}(${revert.args.map(arg).join(", ")})`;
}

/** What a failure is, whatever threw it: a code, a message, and the service's request id and status when it answered. */
/** `invalid_request`'s details, `[{path, message}]`, as "path: message; …" (what was wrong, and where). */
function issuesOf(details: unknown): string {
  if (!Array.isArray(details)) return "";
  const issues = details
    .filter(
      (d): d is { path: string; message: string } => typeof d?.path === "string" && typeof d?.message === "string",
    )
    .slice(0, 5)
    .map((d) => `${d.path}: ${d.message}`);
  return issues.length === 0
    ? ""
    : ` — ${issues.join("; ")}${details.length > 5 ? `; and ${details.length - 5} more` : ""}`;
}

function failureOf(err: unknown): { code: string; message: string; requestId?: string; status?: number } {
  // Before the SDK and viem are loaded (a usage error), nothing can have thrown their errors.
  if (loaded && err instanceof loaded.SigilError)
    return {
      code: err.code,
      message: `${err.message}${err.code === "invalid_request" ? issuesOf(err.details) : ""}`,
      ...(err.requestId === undefined ? {} : { requestId: err.requestId }),
      ...(err.status > 0 ? { status: err.status } : {}),
    };
  if (err instanceof CliError) return { code: err.code, message: err.message };
  if (loaded && err instanceof loaded.BaseError)
    return { code: "chain_error", message: chainErrorMessage(err, loaded.findRevert) };
  return { code: "error", message: err instanceof Error ? err.message : String(err) };
}

/** The one line an error is shown as: the service's code, message and request id; never a stack trace. */
export function errorLine(err: unknown): string {
  const f = failureOf(err);
  return `${f.code}: ${f.message}${f.requestId ? ` (request ${f.requestId})` : ""}`.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * A failure as the API's error body shapes it (`{error: {code, message, request_id?, status?}}`):
 * what `--json` prints on stdout besides the line, so a script reads failures the way it reads answers.
 */
export function errorDocument(err: unknown): { error: Record<string, unknown> } {
  const { requestId, ...f } = failureOf(err);
  return { error: { ...f, ...(requestId === undefined ? {} : { request_id: requestId }) } };
}

/** ` (did you mean X?)` when `name` is one or two edits from one of `names` (or starts one), else nothing. */
export function didYouMean(name: string, names: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of names) {
    const d = candidate.startsWith(name) && name.length >= 2 ? 1 : editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best === undefined ? "" : ` (did you mean ${best}?)`;
}

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions from a to b. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[b.length] as number;
}

// ---------------------------------------------------------------------------------------------
// Commands

type Option = ParseArgsOptionDescriptor;
type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** The options of every command that talks to the service. */
export const connectionOptions = {
  api: { type: "string" },
  key: { type: "string" },
  profile: { type: "string" },
} as const satisfies Record<string, Option>;

const connectionUsage = `connection (first found wins): --api URL / --key KEY; SIGIL_API_URL / SIGIL_API_KEY;
  the profile (--profile NAME, SIGIL_PROFILE, else "default") in $SIGIL_PROFILE_FILE or
  ~/.config/sigil/profiles.json; then the URL of the running stack (.sigil/local.json, or
  $SIGIL_STATE_DIR/local.json), then ${DEFAULT_API_URL}.`;

export type Command = {
  /** As typed: "key add". */
  name: string;
  summary: string;
  /** The lines after `usage: sigil <name>`: its arguments, then what it does and its options. */
  usage: string;
  options?: Record<string, Option>;
  /** How many positional arguments it takes (default none). */
  positionals?: { min: number; max: number; names: string };
  /** Whether it talks to the service (takes --api, --key, --profile). Default true. */
  connects?: boolean;
  run(input: { values: Values; positionals: string[]; ctx: Context }): Promise<number | undefined>;
};

export type Group = { name: string; summary: string; commands: Command[] };

export function usageOf(command: Command): string {
  const connects = command.connects !== false;
  return `usage: sigil ${command.name} ${command.usage.trimStart()}

  --json      print the answer as one JSON document (for scripts)
  -h, --help  print this and exit${connects ? `\n\n${connectionUsage}` : ""}`;
}

export function groupUsage(group: Group): string {
  const width = Math.max(...group.commands.map((c) => c.name.length));
  return `usage: sigil ${group.name} <command> [options]   (sigil ${group.name} <command> --help for its options)

${group.summary}

${group.commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join("\n")}`;
}

/** What a command's run gets besides its arguments: the connection, the client, output, the environment. */
export class Context {
  readonly command: string;
  readonly json: boolean;
  readonly env: Env;
  readonly cwd: string;
  private readonly flags: { api?: string | undefined; key?: string | undefined; profile?: string | undefined };
  private connectionCache: Connection | undefined;
  private clientCache: SigilClient | undefined;

  constructor(args: { command: string; flags: Context["flags"]; json: boolean; env: Env; cwd: string }) {
    this.command = args.command;
    this.flags = args.flags;
    this.json = args.json;
    this.env = args.env;
    this.cwd = args.cwd;
  }

  /** Where the URL and key come from; `newProfile` for a command that will write the profile, which may not exist yet. */
  connection(options: { newProfile?: boolean } = {}): Connection {
    this.connectionCache ??= resolveConnection({ flags: this.flags, env: this.env, cwd: this.cwd, ...options });
    return this.connectionCache;
  }

  /** A client with the key when one was found (calls that need none work without it). */
  client(): SigilClient {
    const c = this.connection();
    // Every run's receipt is verified (the SDK's default); SIGIL_ALLOWED_COMPOSE_HASHES (comma-separated)
    // is what a real deployment's instances may run, SIGIL_VERIFY_RECEIPTS=false turns it off.
    const allowed = this.env.SIGIL_ALLOWED_COMPOSE_HASHES?.split(",")
      .map((h) => h.trim())
      .filter((h) => h !== "");
    this.clientCache ??= service().createSigilClient({
      baseUrl: c.baseUrl,
      apiKey: c.apiKey,
      verifyReceipts:
        this.env.SIGIL_VERIFY_RECEIPTS === "false" ? false : allowed?.length ? { allowedComposeHashes: allowed } : {},
    });
    return this.clientCache;
  }

  /** The client, for a command that needs a key: a usage error when none was found. */
  keyed(): SigilClient {
    if (!this.connection().apiKey) {
      throw new UsageError(
        "no API key: give --key, set SIGIL_API_KEY, or save one in a profile (sigil profile set --key …, or sigil account create --save)",
      );
    }
    return this.client();
  }

  /** Prints the answer: `data` as JSON with --json, otherwise the human form. */
  print(data: unknown, human: () => string): void {
    process.stdout.write(
      this.json
        ? `${JSON.stringify(data, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`
        : `${human()}\n`,
    );
  }

  /** Prints a list: `items` as JSON with --json, otherwise a table of `columns` (each its header and its cell), or `none`. */
  list<T>(items: T[], none: string, columns: Array<[header: string, cell: (item: NoInfer<T>) => string]>): void {
    this.print(items, () =>
      items.length === 0
        ? none
        : table(
            columns.map(([header]) => header),
            items.map((item) => columns.map(([, cell]) => cell(item))),
          ),
    );
  }

  /** Prints what a write did: `data` as JSON with --json, otherwise `pairs` and the transaction that made it. */
  wrote<D extends { transaction_hash: string }>(data: D, pairs: Array<[string, string | number | undefined]>): void {
    this.print(data, () => fields([...pairs, ["transaction", data.transaction_hash]]));
  }

  /** A note for the person at the terminal (stderr, so stdout stays the answer); none with --json. */
  note(line: string): void {
    if (!this.json) process.stderr.write(`${line}\n`);
  }
}

/** Runs `command` with `args`: --help first (and nothing else), then its options, then its run; the exit code. */
export async function runCommand(
  command: Command,
  args: string[],
  env: Env = process.env,
  cwd = process.cwd(),
): Promise<number> {
  const dashDash = args.indexOf("--");
  const before = dashDash === -1 ? args : args.slice(0, dashDash);
  if (before.includes("--help") || before.includes("-h")) {
    process.stdout.write(`${usageOf(command)}\n`);
    return 0;
  }
  const connects = command.connects !== false;
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      options: {
        ...(connects ? connectionOptions : {}),
        ...command.options,
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      allowNegative: true,
      strict: true,
    }) as { values: Values; positionals: string[] });
    const { min, max, names } = command.positionals ?? { min: 0, max: 0, names: "" };
    if (positionals.length < min) throw new UsageError(`missing ${names}`);
    if (positionals.length > max)
      throw new UsageError(
        `unexpected argument${positionals.length - max > 1 ? "s" : ""}: ${positionals.slice(max).join(" ")}`,
      );
  } catch (err) {
    return usageFailure(command, err);
  }
  await loadService();
  const ctx = new Context({
    command: command.name,
    flags: {
      api: values.api as string | undefined,
      key: values.key as string | undefined,
      profile: values.profile as string | undefined,
    },
    json: values.json === true,
    env,
    cwd,
  });
  try {
    return (await command.run({ values, positionals, ctx })) ?? 0;
  } catch (err) {
    if (err instanceof UsageError) return usageFailure(command, err);
    process.stderr.write(`sigil ${command.name}: ${errorLine(err)}\n`);
    // With --json the failure is also the answer, as one JSON document on stdout.
    if (values.json === true) process.stdout.write(`${JSON.stringify(errorDocument(err), null, 2)}\n`);
    return 1;
  }
}

function usageFailure(command: Command, err: unknown): number {
  // parseArgs' own messages end with advice about `--` that does not apply here.
  const message = (err instanceof Error ? err.message : String(err)).replace(
    /\. To specify a positional argument.*$/s,
    "",
  );
  process.stderr.write(`sigil ${command.name}: ${message.replace(/\s*\n\s*/g, " ")} (sigil ${command.name} --help)\n`);
  return 2;
}

/** Runs `sigil <group> <command> …`: the group's usage for --help or no command; the exit code. */
export async function runGroup(group: Group, args: string[], env?: Env, cwd?: string): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    process.stderr.write(`${groupUsage(group)}\n`);
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${groupUsage(group)}\n`);
    return 0;
  }
  const command = group.commands.find((c) => c.name === `${group.name} ${name}`);
  if (!command) {
    const names = group.commands.map((c) => c.name.slice(group.name.length + 1));
    process.stderr.write(
      `sigil ${group.name}: unknown command: ${name}${didYouMean(name, names)} (sigil ${group.name} --help)\n`,
    );
    return 2;
  }
  return runCommand(command, rest, env, cwd);
}

// ---------------------------------------------------------------------------------------------
// Arguments shared by several commands

/** Options that take a value (`--name NAME`), by name. */
export const valued = (...names: string[]) => optionsOf(names, { type: "string" });
/** Options that take a value and may be given again for more (`--wallet A --wallet B`), by name. */
export const repeated = (...names: string[]) => optionsOf(names, { type: "string", multiple: true });
/** Options that take none (`--sign`; `--no-sign` turns one off), by name. */
export const switches = (...names: string[]) => optionsOf(names, { type: "boolean" });

function optionsOf(names: string[], option: Option): Record<string, Option> {
  return Object.fromEntries(names.map((name) => [name, option]));
}

/** The value of the option `name` that takes one, when it was given. */
export const text = (values: Record<string, unknown>, name: string) => values[name] as string | undefined;

/** The value of the option `name`, which the command cannot do without: a usage error when it is missing or empty. */
export function required(values: Record<string, unknown>, name: string): string {
  const value = text(values, name);
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

/** The options that take a value given among `names` (a request's field → its option), as those fields: `given(values, { key_hash: "key-hash" })`. */
export function given<F extends string>(
  values: Record<string, unknown>,
  names: Record<F, string>,
): Partial<Record<F, string>> {
  const fields: Partial<Record<F, string>> = {};
  for (const [field, name] of Object.entries(names) as Array<[F, string]>) {
    const value = text(values, name);
    if (value !== undefined) fields[field] = value;
  }
  return fields;
}

/** The whole number option `name` gives (see wholeNumber), when it was given. */
export function wholeNumberOption(
  values: Record<string, unknown>,
  name: string,
  limits: { min?: number } = {},
): number | undefined {
  const value = text(values, name);
  return value === undefined ? undefined : wholeNumber(`--${name}`, value, limits);
}

/** A whole number of an option (cents, seconds, ids); a usage error names the option otherwise. */
export function wholeNumber(flag: string, value: string, { min = 0 }: { min?: number } = {}): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
    throw new UsageError(
      `${flag} takes a whole number${min > 0 ? ` of at least ${min}` : ""}, not ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
}

/** Group ids from a repeatable option whose values may also be comma-separated ("1,2"); "" is none. */
export function groupIds(flag: string, values: string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  const ids = values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
  for (const id of ids)
    if (!/^\d{1,20}$/.test(id))
      throw new UsageError(`${flag} takes group ids (decimal, 0 = every group), not ${JSON.stringify(id)}`);
  return ids;
}

/** The bytes of a file the user named (`-`: standard input); a CliError names it when it cannot be read. */
export function readBytes(path: string): Buffer {
  try {
    return readFileSync(path === "-" ? 0 : path);
  } catch (err) {
    throw new CliError(
      "file_unreadable",
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** The text of a file the user named (`-`: standard input), as UTF-8. */
export function readInput(path: string): string {
  return readBytes(path).toString("utf8");
}
