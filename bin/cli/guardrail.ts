// `sigil guardrail set|show|remove|template`: what a wallet may sign (docs/design/guardrails.md). `set`
// takes the document as a JSON file, checked by the service (every problem named at its path) before
// it is written on chain; `show` prints it in words — what a reviewer reads — with its hash and the
// block that set it. Setting and removing need the account's master key. `template` needs no service:
// it lists the templates (shared/guardrails/templates.ts) or fills one from its options and prints
// the document, to save and `set`.
import type { SetWalletGuardrailInput } from "../../sdk/src/index.ts";
import { describeBudgetUse, describeGuardrail } from "../../shared/guardrails/describe.ts";
import { guardrailSchema } from "../../shared/guardrails/schema.ts";
import { fillTemplate, guardrailTemplates, paramsOf, templateNamed } from "../../shared/guardrails/templates.ts";
import { didYouMean, fields, readInput, text, UsageError, valued, type Command, type Group } from "./context.ts";

/** A usage key named as `key:0x<its hash>`: the key's own guardrail instead of a wallet's. */
const usageKeyOf = (positionals: string[]): string | undefined => {
  const w = positionals[0] as string;
  if (!w.startsWith("key:")) return undefined;
  const hash = w.slice(4);
  if (!/^0x[0-9a-fA-F]{64}$/.test(hash))
    throw new UsageError(
      `key:HASH names a usage key by its hash (0x + 64 hex; sigil key list), not ${JSON.stringify(hash)}`,
    );
  return hash;
};

const wallet = (positionals: string[]) => {
  const w = positionals[0] as string;
  if (!/^0x[0-9a-fA-F]{40}$/.test(w) && !/^\d{1,20}$/.test(w))
    throw new UsageError(`WALLET is a wallet address or a decimal wallet id, not ${JSON.stringify(w)}`);
  return w;
};

function documentOf(file: string): unknown {
  const text = readInput(file);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${(err as Error).message}`);
  }
}

const set: Command = {
  name: "guardrail set",
  summary: "set what a wallet may sign, from a JSON document",
  usage: `WALLET FILE

  Sets WALLET's guardrail to the JSON document in FILE ("-": standard input): deny by default,
  checked by the enclave before every signature a script asks the wallet for. WALLET may be
  key:HASH, a usage key's hash: the key's own guardrail, which every signature of its runs must
  pass too, with any wallet. The service checks
  the document first and names each problem at its path. The document's language is
  docs/design/guardrails.md. Needs the account's master key; a write (1 cent).`,
  positionals: { min: 2, max: 2, names: "WALLET FILE" },
  async run({ positionals, ctx }) {
    // The service checks the document (and names each problem): it is sent as read.
    const guardrail = documentOf(positionals[1] as string) as SetWalletGuardrailInput["guardrail"];
    const key = usageKeyOf(positionals);
    const answer = key
      ? await ctx.keyed().setUsageKeyGuardrail({ usage_api_key: key, guardrail })
      : await ctx.keyed().setWalletGuardrail({ wallet_address: wallet(positionals), guardrail });
    ctx.wrote(answer, [["guardrail", answer.guardrail_hash ?? "removed"]]);
  },
};

const show: Command = {
  name: "guardrail show",
  summary: "what a wallet may sign, in words",
  usage: `WALLET

  Prints WALLET's guardrail in words, a line per kind of thing it may sign (everything else is
  refused), with its hash and the block that set it, and what its budgets have used; --json prints
  the document. key:HASH shows a usage key's own guardrail.`,
  positionals: { min: 1, max: 1, names: "WALLET" },
  async run({ positionals, ctx }) {
    const key = usageKeyOf(positionals);
    if (key) {
      const own = await ctx.keyed().getUsageKeyGuardrail({ usage_api_key: key });
      ctx.print(own, () =>
        own.guardrail === null
          ? `usage key ${own.usage_key_hash} has no guardrail of its own: its runs meet only their wallets'`
          : [
              fields([
                ["usage key", own.usage_key_hash],
                ["guardrail", own.guardrail_hash ?? ""],
                ["set at block", own.set_at_block ?? ""],
              ]),
              "its runs may sign, with any wallet (and only what the wallet's own guardrail allows too):",
              ...describeGuardrail(guardrailSchema.parse(own.guardrail)).map((l) => `  ${l}`),
              ...(own.budgets.length ? ["used now:", ...own.budgets.map((b) => `  ${describeBudgetUse(b)}`)] : []),
            ].join("\n"),
      );
      return;
    }
    const w = wallet(positionals);
    if (!/^0x/.test(w)) throw new UsageError("guardrail show takes the wallet's address");
    const answer = await ctx.keyed().getWalletGuardrail({ wallet_address: w });
    const budgets = answer.guardrail?.budgets?.length
      ? (await ctx.keyed().getWalletBudgets({ wallet_address: w })).budgets
      : [];
    ctx.print({ ...answer, budgets }, () =>
      answer.guardrail === null
        ? `${answer.wallet_address} has no guardrail: it signs whatever the scripts its groups allow ask`
        : [
            fields([
              ["wallet", answer.wallet_address],
              ["guardrail", answer.guardrail_hash ?? ""],
              ["set at block", answer.set_at_block ?? ""],
            ]),
            "may sign:",
            ...describeGuardrail(guardrailSchema.parse(answer.guardrail)).map((l) => `  ${l}`),
            ...(budgets.length ? ["used now:", ...budgets.map((b) => `  ${describeBudgetUse(b)}`)] : []),
          ].join("\n"),
    );
  },
};

const remove: Command = {
  name: "guardrail remove",
  summary: "remove a wallet's guardrail",
  usage: `WALLET

  Removes WALLET's guardrail (or key:HASH's): the wallet then signs whatever the scripts its
  groups allow ask.
  Needs the account's master key; a write (1 cent).`,
  positionals: { min: 1, max: 1, names: "WALLET" },
  async run({ positionals, ctx }) {
    const key = usageKeyOf(positionals);
    const answer = key
      ? await ctx.keyed().setUsageKeyGuardrail({ usage_api_key: key, guardrail: null })
      : await ctx.keyed().setWalletGuardrail({ wallet_address: wallet(positionals), guardrail: null });
    ctx.wrote(answer, [["guardrail", "removed"]]);
  },
};

/** Each template with its parameters as options, for `template`'s list and its --help. */
function templateList(): string {
  return guardrailTemplates
    .map((t) => {
      const params = paramsOf(t).map((p) => {
        const value = p.example ?? (p.list ? "A,B" : "VALUE");
        return [`--${p.option} ${value}`, `${p.required ? "" : "(optional) "}${p.description}`];
      });
      const width = Math.max(...params.map(([o]) => (o as string).length));
      return [`${t.name}: ${t.summary}`, ...params.map(([o, d]) => `    ${(o as string).padEnd(width)}  ${d}`)].join(
        "\n",
      );
    })
    .join("\n\n");
}

/** Every parameter's option, once: parseArgs knows them all, and a command line is checked against its template's. */
const templateOptions = [...new Set(guardrailTemplates.flatMap((t) => paramsOf(t).map((p) => p.option)))];

const template: Command = {
  name: "guardrail template",
  summary: "the templates, or one filled in as a document to set",
  usage: `[NAME] [--PARAMETER VALUE …]

  Without NAME, lists the templates and their parameters. With NAME, prints the guardrail document
  it makes from the options given (a list comma-separated; a function signature's own commas are
  kept), to save and pass to \`sigil guardrail set WALLET FILE\`; what it allows, in words, goes to
  stderr. Needs no service.

  sigil guardrail template treasury --chains 1 --recipients 0x…,0x… --max-value-wei 1000 > g.json

${templateList()
  .split("\n")
  .map((l) => (l ? `  ${l}` : l))
  .join("\n")}`,
  options: valued(...templateOptions),
  positionals: { min: 0, max: 1, names: "NAME" },
  connects: false,
  async run({ positionals, values, ctx }) {
    const name = positionals[0];
    if (name === undefined) {
      ctx.print(
        guardrailTemplates.map((t) => ({ name: t.name, summary: t.summary, params: paramsOf(t) })),
        templateList,
      );
      return;
    }
    const t = templateNamed(name);
    if (!t) {
      const names = guardrailTemplates.map((x) => x.name);
      throw new UsageError(
        `no template named ${JSON.stringify(name)}${didYouMean(name, names)}: the templates are ${names.join(", ")}`,
      );
    }
    const params = paramsOf(t);
    const stray = templateOptions.filter((o) => text(values, o) !== undefined && !params.some((p) => p.option === o));
    if (stray.length)
      throw new UsageError(
        `--${stray[0]} is not a parameter of ${t.name} (its parameters: ${params.map((p) => `--${p.option}`).join(", ")})`,
      );
    const filled = fillTemplate(t, Object.fromEntries(params.map((p) => [p.name, text(values, p.option)])));
    if (filled.problems) {
      const problem = filled.problems[0];
      const option = params.find((p) => p.name === problem?.param);
      throw new UsageError(
        option
          ? `--${option.option} ${problem?.message}${problem?.message === "is required" ? `: ${option.description}` : ""}${filled.problems.length > 1 ? `; and ${filled.problems.length - 1} more` : ""}`
          : (problem?.message ?? "the template made no document"),
      );
    }
    ctx.note(["may sign:", ...describeGuardrail(filled.document).map((l) => `  ${l}`)].join("\n"));
    // The document itself, with --json or without: it is what `set` reads.
    process.stdout.write(`${JSON.stringify(filled.document, null, 2)}\n`);
  },
};

export const guardrailGroup: Group = {
  name: "guardrail",
  summary: "what each wallet may sign: set, show in words, remove, start from a template",
  commands: [set, show, remove, template],
};
