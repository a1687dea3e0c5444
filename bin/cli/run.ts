// `sigil cid FILE` names a script as the service does (the CIDv0 `ipfs add` gives its bytes),
// computed here without the network; `sigil run` runs a script (a file, or a CID the service fetches)
// with the key and prints what it returned, its logs and what it cost, after saying the most it can
// cost; `--allow` first makes a group let the account run it. A run whose script failed exits 1
// with the run's error code, like any other failure.
import { describeBudgetUse } from "../../shared/guardrails/describe.ts";
import { basename } from "node:path";
import type { Group, SigilActionOutput, SigilClient } from "../../sdk/src/index.ts";
import { collect } from "../../sdk/src/reads.ts";
import { cidArgument } from "./action.ts";
import {
  CliError,
  dollars,
  errorLine,
  fields,
  readBytes,
  readInput,
  service,
  switches,
  UsageError,
  valued,
  wholeNumber,
  wholeNumberOption,
  type Command,
  type Context,
} from "./context.ts";

type GroupItem = Group;
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

export const cidCommand: Command = {
  name: "cid",
  summary: "the CIDv0 of a script file, computed locally (no network)",
  usage: `FILE

  Prints the CIDv0 (Qm…) that \`ipfs add\` gives FILE's exact bytes ("-": standard input): the name
  groups and runs know the script by, as get_sigil_action_ipfs_id computes it.`,
  positionals: { min: 1, max: 1, names: "FILE" },
  connects: false,
  async run({ positionals, ctx }) {
    // The CID of the bytes as they are, undecoded (shared/cid.ts loads here, not for --help).
    const { computeCid } = await import("../../shared/cid.ts");
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

/** Every wallet address in `value` (the params main receives), lowercase, once each. */
export function walletsIn(value: unknown, found = new Set<string>()): string[] {
  if (typeof value === "string" && /^0x[0-9a-fA-F]{40}$/.test(value)) found.add(value.toLowerCase());
  else if (Array.isArray(value)) for (const v of value) walletsIn(v, found);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) walletsIn(v, found);
  return [...found];
}

type Allowance = { cid: string; wallets: string[]; groupId: string | undefined; name: string };

/**
 * Makes sure a group lets the key's account run `cid` with `wallets`, saying first what it will
 * change and what that costs: nothing when a group already lists both (or allows any action and
 * any wallet); else the action and the missing wallets added to --group, or a new group.
 */
async function allow(ctx: Context, client: SigilClient, a: Allowance, writeCents: number): Promise<void> {
  const { cidHash, toHash32 } = service();
  const hash = toHash32(cidHash(a.cid));
  const groups = await collect(client.all.listGroups());
  const lists = (g: GroupItem, w: string) =>
    g.pkp_ids_permitted.includes(w) || g.pkp_ids_permitted.includes(ZERO_ADDRESS);
  const allows = (g: GroupItem) =>
    (g.cid_hashes_permitted.includes(hash) || g.cid_hashes_permitted.includes("0")) &&
    a.wallets.every((w) => lists(g, w));
  const already = groups.find((g) => (a.groupId === undefined || g.id === a.groupId) && allows(g));
  if (already) {
    ctx.note(
      `allow: group ${already.id} "${already.group_name}" already lets this key's account run ${a.cid}${withWallets(a.wallets)}`,
    );
    return;
  }
  const cost = (writes: number) =>
    writeCents > 0 ? `, ${writes} write${writes === 1 ? "" : "s"}: ${dollars(writes * writeCents)}` : "";
  if (a.groupId === undefined) {
    ctx.note(`allow: a new group "${a.name}" with action ${a.cid}${withWallets(a.wallets)}${cost(1)}`);
    const made = await client.addGroup({
      group_name: a.name,
      group_description: "made by sigil run --allow",
      pkp_ids_permitted: a.wallets,
      cid_hashes_permitted: [a.cid],
    });
    ctx.note(`allow: group ${made.group_id} made (transaction ${made.transaction_hash})`);
    return;
  }
  const group = groups.find((g) => g.id === a.groupId);
  if (!group) throw new CliError("group_not_found", `the account has no group ${a.groupId} (sigil group list)`);
  const addAction = !(group.cid_hashes_permitted.includes(hash) || group.cid_hashes_permitted.includes("0"));
  const addWallets = a.wallets.filter((w) => !lists(group, w));
  ctx.note(
    `allow: group ${group.id} "${group.group_name}" gets${addAction ? ` action ${a.cid}` : ""}${addAction && addWallets.length ? " and" : ""}${addWallets.length ? ` wallet${addWallets.length === 1 ? "" : "s"} ${addWallets.join(", ")}` : ""}${cost(Number(addAction) + addWallets.length)}`,
  );
  if (addAction) await client.addActionToGroup({ group_id: group.id, action_ipfs_cid: a.cid });
  for (const w of addWallets) await client.addPkpToGroup({ group_id: group.id, pkp_id: w });
}

const withWallets = (wallets: string[]) =>
  wallets.length === 0 ? "" : ` with wallet${wallets.length === 1 ? "" : "s"} ${wallets.join(", ")}`;

export const runCommand: Command = {
  name: "run",
  summary: "run a script (a FILE, or --cid) and print its response, logs and cost",
  usage: `FILE [--params JSON] [--timeout SECONDS] [--allow [--group ID]]    or: sigil run --cid CID …

  Runs the script in FILE ("-": standard input), or the one the service fetches by --cid, with
  --params as what its main receives (a JSON object), and prints its response, logs, duration
  and cost. Before it runs, says the most the run can cost: its time limit (--timeout, else the
  service's default) at the per-second rate. A script that fails exits 1 with its error code
  (its logs printed first); one that does not compile is refused with its line and column, free.

  --allow        first let the key's account run this script with the wallets in --params: says
                 what it will change and what that costs, then adds a group (named after FILE) or,
                 with --group, the action and the missing wallets to that group; nothing when a
                 group already allows it. The key needs group:create (or the group's scopes)
  --group ID     the group --allow adds to
  --timeout SECONDS  the run's time limit: also the most it can cost
  --dry-run      sign nothing: each signature the script asks for is checked as in a run (the
                 wallet's group and guardrail) and listed with its decision; the script gets zeros.
                 Charged as a run`,
  options: {
    ...valued("params", "cid", "timeout", "group"),
    ...switches("allow", "dry-run"),
  },
  positionals: { min: 0, max: 1, names: "FILE" },
  async run({ values, positionals, ctx }) {
    const file = positionals[0];
    const cidOption = values.cid as string | undefined;
    if ((file === undefined) === (cidOption === undefined))
      throw new UsageError("give a FILE or --cid CID (one of them)");
    if (values.group !== undefined && !values.allow)
      throw new UsageError("--group is where --allow adds: give --allow too");
    const params = paramsOf(values.params as string | undefined);
    const timeoutSeconds = wholeNumberOption(values, "timeout", { min: 1 });
    const code = file !== undefined ? readInput(file) : undefined;
    const { computeCid } = await import("../../shared/cid.ts");
    const cid = code !== undefined ? await computeCid(code) : await cidArgument(cidOption as string);
    const client = ctx.keyed();
    const [limits, account] = await Promise.all([client.getSigilActionClientConfig(), client.getAccount()]);
    const { fees } = account;
    if (values.allow) {
      const groupId =
        values.group === undefined ? undefined : String(wholeNumber("--group", values.group as string, { min: 1 }));
      const name = file !== undefined && file !== "-" ? basename(file) : `run ${cid.slice(0, 12)}`;
      await allow(ctx, client, { cid, wallets: walletsIn(params), groupId, name }, fees.write_cents);
    }
    const timeoutMs = timeoutSeconds !== undefined ? timeoutSeconds * 1000 : limits.timeout_ms;
    if (fees.billing)
      ctx.note(
        `run: at most ${timeoutMs / 1000} s, so at most ${dollars(Math.ceil(timeoutMs / 1000) * fees.run_cents_per_second)} (${dollars(fees.run_cents_per_second)} a started second; --timeout sets it)`,
      );
    let requestId: string | undefined;
    const answer: SigilActionOutput = await client.sigilAction(
      {
        ...(code !== undefined ? { code } : { ipfs_id: cid }),
        ...(params !== undefined ? { js_params: params } : {}),
        ...(timeoutSeconds !== undefined ? { timeout_ms: timeoutMs } : {}),
        ...(values["dry-run"] ? { dry_run: true } : {}),
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
        answer.dry_run
          ? `dry run, nothing signed:\n${
              answer.dry_run.requests
                .map((q) =>
                  [
                    `  ${q.allowed ? "allowed" : "REFUSED"}  ${q.kind} by ${q.wallet}${q.rule ? ` (${q.rule})` : ""}${q.reason ? `: ${q.reason}` : ""}${q.observed ? ` (seen: ${q.observed})` : ""}`,
                    // A budgeted wallet's budgets after the signature, as if the run were real.
                    ...(q.budgets?.after ?? []).map((b) => `      then ${describeBudgetUse(b)}`),
                  ].join("\n"),
                )
                .join("\n") || "  (no signature asked for)"
            }\na real run as long would cost ${dollars(answer.dry_run.would_cost_cents)}`
          : undefined,
        fields([
          ["cid", answer.cid],
          ["duration", `${answer.duration_ms} ms`],
          ["charged", dollars(answer.charged_cents)],
          ["request", requestId],
        ]),
      ]
        .filter((part) => part !== undefined)
        .join("\n");
    });
    if (!answer.has_error) return 0;
    const failure = new (service().SigilError)({
      code: answer.error?.code ?? "run_failed",
      message: answer.error?.message ?? "the script failed",
      status: 200,
      requestId,
    });
    process.stderr.write(`sigil run: ${errorLine(failure)}\n`);
    return 1;
  },
};
