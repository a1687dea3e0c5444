// `sigil key delegate|narrow|describe|revoke-delegation` (docs/design/delegation.md): delegated keys
// from the command line. `delegate` mints keys from the usage key the connection uses (the service's
// enclave makes them; its guardrail must allow delegation); `narrow` makes a narrower key from one,
// here, offline (SDK attenuateKey); `describe` says what a key allows; `revoke-delegation` revokes one
// by its block id. The same caveat flags for minting and narrowing.
import { readFileSync } from "node:fs";
import { attenuateKey, type Caveats, DelegationError, describeDelegatedKey } from "../../sdk/src/delegation.ts";
import {
  CliError,
  fields,
  groupIds,
  repeated,
  switches,
  UsageError,
  valued,
  wholeNumber,
  type Command,
} from "./context.ts";

const caveatOptions = {
  ...valued("expires-in", "expires-at", "max-uses", "budget-window", "budget-max-signatures", "budget-max-value-wei"),
  ...repeated("groups", "actions", "wallets"),
  ...switches("sealed"),
};

const caveatUsage = `  --expires-in SECONDS | --expires-at WHEN   when the key stops working (Unix seconds or an ISO date)
  --max-uses N                 runs it allows, in all
  --groups IDS                 runs only what these groups list, with their wallets
  --actions CIDS               runs only these actions
  --wallets ADDRESSES          signs only with these wallets
  --budget-window SECONDS --budget-max-signatures N --budget-max-value-wei WEI
                               what its runs may sign in each window (a signature count, a value, or both)
  --sealed                     nobody can narrow it further
      lists: comma-separated or the option repeated`;

/**
 * The delegated key a command is given: its argument, or — with none, or "-" — standard input, so that
 * the secret need not stand in the shell's history or the process list.
 */
function delegatedKeyArg(positionals: string[]): string {
  const given = positionals[0];
  const key = given === undefined || given === "-" ? readFileSync(0, "utf8").trim() : given;
  if (key === "") throw new UsageError("give the delegated key, as an argument or on standard input");
  return key;
}

const list = (values: Record<string, unknown>, name: string) =>
  (values[name] as string[] | undefined)
    ?.flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");

/** The caveats the flags say. */
function caveatsFrom(values: Record<string, unknown>): Caveats {
  const caveats: Caveats = {};
  if (values["expires-in"] !== undefined && values["expires-at"] !== undefined)
    throw new UsageError("give --expires-in or --expires-at, not both");
  if (values["expires-in"] !== undefined)
    caveats.expires_at =
      Math.floor(Date.now() / 1000) + wholeNumber("--expires-in", values["expires-in"] as string, { min: 1 });
  if (values["expires-at"] !== undefined) {
    const v = values["expires-at"] as string;
    const ms = /^\d+$/.test(v) ? Number(v) * 1000 : Date.parse(v);
    if (Number.isNaN(ms))
      throw new UsageError(`--expires-at takes Unix seconds or an ISO date, not ${JSON.stringify(v)}`);
    caveats.expires_at = Math.floor(ms / 1000);
  }
  if (values["max-uses"] !== undefined)
    caveats.max_uses = wholeNumber("--max-uses", values["max-uses"] as string, { min: 1 });
  const groups = groupIds("--groups", values.groups as string[] | undefined);
  if (groups) caveats.groups = groups;
  const actions = list(values, "actions");
  if (actions) caveats.actions = actions;
  const wallets = list(values, "wallets");
  if (wallets) {
    const bad = wallets.find((w) => !/^0x[0-9a-fA-F]{40}$/.test(w));
    if (bad) throw new UsageError(`--wallets takes addresses, not ${JSON.stringify(bad)}`);
    caveats.wallets = wallets.map((w) => w.toLowerCase());
  }
  const window = values["budget-window"] as string | undefined;
  const signatures = values["budget-max-signatures"] as string | undefined;
  const value = values["budget-max-value-wei"] as string | undefined;
  if (window !== undefined || signatures !== undefined || value !== undefined) {
    if (window === undefined) throw new UsageError("a budget needs --budget-window");
    if (signatures === undefined && value === undefined)
      throw new UsageError("a budget needs --budget-max-signatures, --budget-max-value-wei or both");
    if (value !== undefined && !/^(0|[1-9]\d*)$/.test(value))
      throw new UsageError(`--budget-max-value-wei takes a whole number of wei, not ${JSON.stringify(value)}`);
    caveats.budget = {
      window_seconds: wholeNumber("--budget-window", window, { min: 1 }),
      ...(signatures === undefined
        ? {}
        : { max_signatures: wholeNumber("--budget-max-signatures", signatures, { min: 1 }) }),
      ...(value === undefined ? {} : { max_value_wei: value }),
    };
  }
  if (values.sealed) caveats.delegate = false;
  return caveats;
}

const delegate: Command = {
  name: "key delegate",
  summary: "mint delegated keys from this usage key: each a subset of it, no chain write",
  usage: `[caveats] [--count N]

  Mints N keys (default 1, at most 10 000) from the usage key the connection uses (--key, its
  profile): each allows at most what that key allows and what the caveats say. The usage key's own
  guardrail must have a delegation section (set_usage_key_guardrail). Prints the keys (shown this once:
  keep them) with their ids, which revoke-delegation takes.

${caveatUsage}
  --count N                    how many keys`,
  options: { ...caveatOptions, ...valued("count") },
  async run({ values, ctx }) {
    const count = values.count === undefined ? 1 : wholeNumber("--count", values.count as string, { min: 1 });
    const answer = await ctx.keyed().delegateKey({ caveats: caveatsFrom(values), count });
    ctx.print(answer, () =>
      [
        fields([
          ["root", answer.root],
          [
            "expires",
            answer.expires_at === null ? "when the usage key does" : new Date(answer.expires_at * 1000).toISOString(),
          ],
        ]),
        ...answer.keys.map((key, i) => `${answer.ids[i]}  ${key}`),
        "(the keys are shown once: keep them)",
      ].join("\n"),
    );
  },
};

const narrow: Command = {
  name: "key narrow",
  summary: "a narrower key from a delegated key, made here: no call, no chain write",
  usage: `[DELEGATED_KEY | -] [caveats]

  Adds a block of caveats to DELEGATED_KEY (or the key on standard input, kept out of your shell's
  history) and prints the new key: it allows at most what DELEGATED_KEY allows and what the caveats
  say. A caveat wider than the key is refused.

${caveatUsage}`,
  options: caveatOptions,
  positionals: { min: 0, max: 1, names: "DELEGATED_KEY" },
  async run({ values, positionals, ctx }) {
    let key: string;
    try {
      key = attenuateKey(delegatedKeyArg(positionals), caveatsFrom(values));
    } catch (err) {
      if (err instanceof DelegationError) throw new CliError("invalid_request", err.message);
      throw err;
    }
    const { ids } = describeDelegatedKey(key);
    ctx.print({ key, id: ids.at(-1) }, () => `${ids.at(-1)}  ${key}`);
  },
};

const describe: Command = {
  name: "key describe",
  summary: "what a delegated key allows, read from it",
  usage: `[DELEGATED_KEY | -]

  Reads the key's blocks (the argument, or standard input) together: its root usage key, expiry, groups, actions, wallets, uses and
  budgets, and the id of each block. Nothing is asked of the service.`,
  positionals: { min: 0, max: 1, names: "DELEGATED_KEY" },
  async run({ positionals, ctx }) {
    let d: ReturnType<typeof describeDelegatedKey>;
    try {
      d = describeDelegatedKey(delegatedKeyArg(positionals));
    } catch (err) {
      if (err instanceof DelegationError) throw new CliError("invalid_request", err.message);
      throw err;
    }
    const all = (v: string[] | null) => (v === null ? "any of the root's" : v.length === 0 ? "none" : v.join(", "));
    ctx.print(d, () =>
      fields([
        ["root", d.root],
        ["blocks", d.ids.join(" → ")],
        ["expires", d.expires_at === null ? "when the root does" : new Date(d.expires_at * 1000).toISOString()],
        ["groups", all(d.groups)],
        ["actions", all(d.actions)],
        ["wallets", all(d.wallets)],
        ["uses", d.uses.length ? String(Math.min(...d.uses.map((u) => u.max_uses))) : "no limit"],
        [
          "budgets",
          d.budgets.length
            ? d.budgets
                .map(
                  (b) =>
                    `${[b.max_signatures && `${b.max_signatures} signatures`, b.max_value_wei && `${b.max_value_wei} wei`].filter(Boolean).join(", ")} per ${b.window_seconds} s`,
                )
                .join("; ")
            : "none",
        ],
        ["narrowable", d.delegable ? "yes" : "no"],
      ]),
    );
  },
};

const revoke: Command = {
  name: "key revoke-delegation",
  summary: "revoke a delegated key: it and every key narrowed from it stop working",
  usage: `ID | DELEGATED_KEY | -

  Revokes the key from the next request. With the account's master key, by its ID (delegate and
  narrow print it); with the usage key that minted it, or a delegated key it was narrowed from, by
  the key itself (the argument, or standard input with "-").`,
  positionals: { min: 1, max: 1, names: "ID | DELEGATED_KEY | -" },
  async run({ positionals, ctx }) {
    const given = positionals[0] as string;
    const byId = /^[0-9a-f]{32}$/.test(given);
    const key = byId ? undefined : delegatedKeyArg(positionals);
    if (key !== undefined && !key.startsWith("sgd_"))
      throw new UsageError(
        "give the key's ID (32 lowercase hex digits, as delegate prints it) or the delegated key (sgd_…)",
      );
    const answer = await ctx.keyed().revokeDelegation(byId ? { id: given } : { key: key as string });
    ctx.print(answer, () =>
      fields([
        ["revoked", answer.id],
        ["before", answer.already_revoked ? "already revoked" : "it was in force"],
      ]),
    );
  },
};

export const delegationCommands: Command[] = [delegate, narrow, describe, revoke];
