// `sigil cid FILE` names a script as the service does (the CIDv0 `ipfs add` gives its bytes),
// computed here without the network; `sigil run` runs a script (a file, or a CID the service fetches)
// with the key and prints what it returned, its logs and what it cost. A run whose script failed
// exits 1 with the run's error code, like any other failure.
import { computeCid } from "../../shared/cid.ts";
import { SigilError, type SigilActionOutput } from "../../sdk/src/index.ts";
import { cidArgument } from "./action.ts";
import { errorLine, fields, readBytes, readInput, UsageError, type Command } from "./context.ts";

export const cidCommand: Command = {
  name: "cid",
  summary: "the CIDv0 of a script file, computed locally (no network)",
  usage: `FILE

  Prints the CIDv0 (Qm…) that \`ipfs add\` gives FILE's exact bytes ("-": standard input): the name
  groups and runs know the script by, as get_sigil_action_ipfs_id computes it.`,
  positionals: { min: 1, max: 1, names: "FILE" },
  connects: false,
  async run({ positionals, ctx }) {
    // The CID of the bytes as they are, undecoded.
    const cid = await computeCid(new Uint8Array(readBytes(positionals[0] as string)));
    ctx.print({ cid }, () => cid);
  },
};

function paramsOf(text: string | undefined): Record<string, unknown> | null | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError('--params takes JSON, e.g. \'{"wallet":"0x…"}\'');
  }
  if (value !== null && (typeof value !== "object" || Array.isArray(value)))
    throw new UsageError("--params must be a JSON object (or null): it is what main receives");
  return value as Record<string, unknown> | null;
}

const cents = (n: number) => `${n} cent${n === 1 ? "" : "s"}`;

export const runCommand: Command = {
  name: "run",
  summary: "run a script (a FILE, or --cid) and print its response, logs and cost",
  usage: `FILE [--params JSON]    or: sigil run --cid CID [--params JSON]

  Runs the script in FILE ("-": standard input), or the one the service fetches by --cid, with
  --params as what its main receives (a JSON object), and prints its response, logs, duration
  and cost. A script that fails exits 1 with its error code (its logs printed first).`,
  options: { params: { type: "string" }, cid: { type: "string" } },
  positionals: { min: 0, max: 1, names: "FILE" },
  async run({ values, positionals, ctx }) {
    const file = positionals[0];
    const cid = values.cid as string | undefined;
    if ((file === undefined) === (cid === undefined)) throw new UsageError("give a FILE or --cid CID (one of them)");
    const params = paramsOf(values.params as string | undefined);
    let requestId: string | undefined;
    const answer: SigilActionOutput = await ctx.keyed().sigilAction(
      {
        ...(file !== undefined ? { code: readInput(file) } : { ipfs_id: cidArgument(cid as string) }),
        ...(params !== undefined ? { js_params: params } : {}),
      },
      { onResponse: (info) => (requestId = info.requestId) },
    );
    ctx.print(answer, () => {
      const logs = answer.logs.trimEnd();
      return [
        answer.has_error
          ? undefined
          : fields([["response", answer.response === undefined ? "(none)" : JSON.stringify(answer.response)]]),
        logs
          ? `logs:\n${logs
              .split("\n")
              .map((l) => `  ${l}`)
              .join("\n")}`
          : undefined,
        fields([
          ["cid", answer.cid],
          ["duration", `${answer.duration_ms} ms`],
          ["charged", cents(answer.charged_cents)],
          ["request", requestId],
        ]),
      ]
        .filter((part) => part !== undefined)
        .join("\n");
    });
    if (!answer.has_error) return 0;
    const failure = new SigilError({
      code: answer.error?.code ?? "run_failed",
      message: answer.error?.message ?? "the script failed",
      status: 200,
      requestId,
    });
    process.stderr.write(`sigil run: ${errorLine(failure)}\n`);
    return 1;
  },
};
