// `sigil guardrail set|show|remove`: what a wallet may sign (docs/design/guardrails.md). `set` takes
// the document as a JSON file, checked by the service (every problem named at its path) before it is
// written on chain; `show` prints it in words — what a reviewer reads — with its hash and the block
// that set it. Setting and removing need the account's master key.
import type { SetWalletGuardrailInput } from "../../sdk/src/index.ts";
import { describeGuardrail } from "../../shared/guardrails/describe.ts";
import { guardrailSchema } from "../../shared/guardrails/schema.ts";
import { fields, readInput, UsageError, type Command, type Group } from "./context.ts";

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
  checked by the enclave before every signature a script asks the wallet for. The service checks
  the document first and names each problem at its path. The document's language is
  docs/design/guardrails.md. Needs the account's master key; a write (1 cent).`,
  positionals: { min: 2, max: 2, names: "WALLET FILE" },
  async run({ positionals, ctx }) {
    const answer = await ctx.keyed().setWalletGuardrail({
      wallet_address: wallet(positionals),
      // The service checks the document (and names each problem): it is sent as read.
      guardrail: documentOf(positionals[1] as string) as SetWalletGuardrailInput["guardrail"],
    });
    ctx.wrote(answer, [["guardrail", answer.guardrail_hash ?? "removed"]]);
  },
};

const show: Command = {
  name: "guardrail show",
  summary: "what a wallet may sign, in words",
  usage: `WALLET

  Prints WALLET's guardrail in words, a line per kind of thing it may sign (everything else is
  refused), with its hash and the block that set it; --json prints the document.`,
  positionals: { min: 1, max: 1, names: "WALLET" },
  async run({ positionals, ctx }) {
    const w = wallet(positionals);
    if (!/^0x/.test(w)) throw new UsageError("guardrail show takes the wallet's address");
    const answer = await ctx.keyed().getWalletGuardrail({ wallet_address: w });
    ctx.print(answer, () =>
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
          ].join("\n"),
    );
  },
};

const remove: Command = {
  name: "guardrail remove",
  summary: "remove a wallet's guardrail",
  usage: `WALLET

  Removes WALLET's guardrail: the wallet then signs whatever the scripts its groups allow ask.
  Needs the account's master key; a write (1 cent).`,
  positionals: { min: 1, max: 1, names: "WALLET" },
  async run({ positionals, ctx }) {
    const answer = await ctx.keyed().setWalletGuardrail({ wallet_address: wallet(positionals), guardrail: null });
    ctx.wrote(answer, [["guardrail", "removed"]]);
  },
};

export const guardrailGroup: Group = {
  name: "guardrail",
  summary: "what each wallet may sign: set, show in words, remove",
  commands: [set, show, remove],
};
