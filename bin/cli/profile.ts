// `sigil profile set|show`: named pairs of API URL and key in one file readable by its owner only
// ($SIGIL_PROFILE_FILE or ~/.config/sigil/profiles.json, mode 0600), so that commands need neither
// --api nor --key. `show` never prints a key in full.
import {
  DEFAULT_PROFILE,
  fields,
  maskKey,
  profileFilePath,
  readInput,
  readProfiles,
  LOCAL_STACK,
  resolveConnection,
  text,
  UsageError,
  valued,
  writeProfile,
  type Command,
  type Group,
} from "./context.ts";

const nameOf = (values: Record<string, unknown>, env: Record<string, string | undefined>) =>
  text(values, "name") ?? (env.SIGIL_PROFILE || DEFAULT_PROFILE);

const set: Command = {
  name: "profile set",
  summary: "save an API URL and/or key in a profile",
  usage: `[--name NAME] [--api URL|local] [--key KEY]

  --api local: the local stack wherever it listens (its .sigil/local.json), not a fixed port.
  Saves the API URL and/or the key in profile NAME (default: $SIGIL_PROFILE or "default"), keeping
  what is not given, in $SIGIL_PROFILE_FILE or ~/.config/sigil/profiles.json (mode 0600).
  --key - reads the key from standard input, which keeps it out of the shell's history.`,
  options: valued("name", "api", "key"),
  connects: false,
  async run({ values, ctx }) {
    const api = text(values, "api");
    let key = text(values, "key");
    if (api === undefined && key === undefined) throw new UsageError("give --api, --key or both");
    if (api !== undefined && api !== LOCAL_STACK && !/^https?:\/\/[^/]+/.test(api))
      throw new UsageError(`--api takes an http(s) URL or "local" (the local stack), not ${JSON.stringify(api)}`);
    if (key === "-") key = readInput("-").trim();
    if (key !== undefined && key.trim() === "") throw new UsageError("--key is empty");
    const file = profileFilePath(ctx.env);
    const name = nameOf(values, ctx.env);
    const saved = writeProfile(file, name, {
      ...(api !== undefined ? { api } : {}),
      ...(key !== undefined ? { key: key.trim() } : {}),
    });
    const shown = { file, name, api: saved.api ?? null, key: saved.key ? maskKey(saved.key) : null };
    ctx.print(
      shown,
      () => `saved profile "${name}" in ${file}: api ${shown.api ?? "(none)"}, key ${shown.key ?? "(none)"}`,
    );
  },
};

const show: Command = {
  name: "profile show",
  summary: "a profile (its key masked), and where each command would take the URL and key from now",
  usage: `[--name NAME]

  Shows profile NAME (default: $SIGIL_PROFILE or "default") from the profile file, with the key
  masked, the other profiles' names, and the URL and key a command would use now, with where each
  comes from (flags, environment, profile, .sigil/local.json).`,
  options: valued("name"),
  connects: false,
  async run({ values, ctx }) {
    const file = profileFilePath(ctx.env);
    const name = nameOf(values, ctx.env);
    const all = readProfiles(file);
    const profile = all.profiles[name];
    // With a profile that does not exist, what commands would use without it.
    const now = resolveConnection({
      flags: { profile: profile ? name : undefined },
      env: { ...ctx.env, ...(profile ? {} : { SIGIL_PROFILE: undefined }) },
      cwd: ctx.cwd,
    });
    const data = {
      file,
      name,
      exists: profile !== undefined,
      api: profile?.api ?? null,
      key: profile?.key ? maskKey(profile.key) : null,
      profiles: Object.keys(all.profiles),
      effective: {
        api: now.baseUrl,
        api_from: now.from.api.detail,
        key: now.apiKey ? maskKey(now.apiKey) : null,
        key_from: now.from.key?.detail ?? null,
      },
    };
    ctx.print(data, () =>
      fields([
        ["file", file],
        ["profile", profile ? name : `${name} (not in the file)`],
        ["api", profile?.api ?? "-"],
        ["key", profile?.key ? maskKey(profile.key) : "-"],
        ["profiles", data.profiles.join(", ") || "-"],
        ["now: api", `${now.baseUrl}   (from ${now.from.api.detail})`],
        ["now: key", now.apiKey ? `${maskKey(now.apiKey)}   (from ${now.from.key?.detail})` : "none found"],
      ]),
    );
  },
};

export const profileGroup: Group = {
  name: "profile",
  summary: "profiles: the API URL and key saved under a name, so commands need neither flag",
  commands: [set, show],
};
