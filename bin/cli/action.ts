// `sigil action add|list|remove`: actions are scripts registered with the account by their IPFS CID
// (the CIDv0 `ipfs add` gives their bytes), with a name and a description; groups then allow them.
import { existsSync } from "node:fs";
import { basename } from "node:path";
import {
  CliError,
  readInput,
  service,
  text,
  UsageError,
  valued,
  wholeNumberOption,
  type Command,
  type Group,
} from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

/** The canonical CIDv0 of a CID the user typed; a usage error when it cannot name a script. */
export async function cidArgument(value: string): Promise<string> {
  // shared/cid.ts loads here, when a command reads a CID, not for its --help.
  const { canonicalCid } = await import("../../shared/cid.ts");
  try {
    return canonicalCid(value);
  } catch (err) {
    throw new UsageError(`${JSON.stringify(value)}: ${(err as Error).message}`);
  }
}

const looksLikeCid = (value: string) => /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,})$/.test(value);

const add: Command = {
  name: "action add",
  summary: "register a script (a FILE, or its CID) with the account",
  usage: `FILE_OR_CID [--name NAME] [--description TEXT]

  Registers an action with the account: FILE's CID as the service computes it
  (get_sigil_action_ipfs_id; "-" reads standard input), or a CID given as is. --name defaults
  to the file's name.`,
  options: valued("name", "description"),
  positionals: { min: 1, max: 1, names: "FILE_OR_CID" },
  async run({ values, positionals, ctx }) {
    const arg = positionals[0] as string;
    const client = ctx.keyed();
    let cid: string;
    let name = text(values, "name");
    if (arg === "-" || existsSync(arg)) {
      cid = await client.getSigilActionIpfsId(readInput(arg));
      name ??= arg === "-" ? "" : basename(arg);
    } else if (looksLikeCid(arg)) {
      cid = await cidArgument(arg);
    } else {
      throw new CliError("file_unreadable", `${arg} is neither a file nor a CID`);
    }
    const answer = await client.addAction({
      action_ipfs_cid: cid,
      name: name ?? "",
      description: text(values, "description") ?? "",
    });
    ctx.wrote({ ...answer, action_ipfs_cid: cid }, [
      ["action", cid],
      ["hash", answer.hashed_cid],
    ]);
  },
};

const list: Command = {
  name: "action list",
  summary: "the account's actions, or those of one group",
  usage: `[--group ID]

  Lists the account's actions (hash, CID when registered by CID, name, description), or with
  --group those the group allows ("any": every action).`,
  options: valued("group"),
  async run({ values, ctx }) {
    const client = ctx.keyed();
    const group = wholeNumberOption(values, "group");
    const actions = await collect(client.all.listActions(group === undefined ? {} : { group_id: group }));
    ctx.list(actions, "no actions", [
      ["HASH", (a) => (a.hashed_cid === "0" ? "any" : a.hashed_cid)],
      ["CID", (a) => a.action_ipfs_cid ?? "-"],
      ["NAME", (a) => a.name],
      ["DESCRIPTION", (a) => a.description],
    ]);
  },
};

const remove: Command = {
  name: "action remove",
  summary: "remove an action from the account (and from its groups)",
  usage: `CID_OR_HASH

  Removes the action named by its CID or its 0x hash.`,
  positionals: { min: 1, max: 1, names: "CID_OR_HASH" },
  async run({ positionals, ctx }) {
    const arg = positionals[0] as string;
    const { cidHash, toHash32 } = service();
    const hash = /^0x[0-9a-fA-F]{64}$/.test(arg) ? arg.toLowerCase() : toHash32(cidHash(await cidArgument(arg)));
    ctx.wrote(await ctx.keyed().deleteAction({ hashed_cid: hash }), [["removed", hash]]);
  },
};

export const actionGroup: Group = {
  name: "action",
  summary: "actions: scripts registered with the account by CID",
  commands: [add, list, remove],
};
