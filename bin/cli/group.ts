// `sigil group add|list|update|remove`: groups bind wallets to the actions (scripts, by CID) that
// may use them. Actions are named by CID (registered with the account in the same transaction), by
// a registered action's 0x hash, or 0 for any action; wallets by address or id.
import {
  CliError,
  repeated,
  required,
  switches,
  text,
  UsageError,
  valued,
  wholeNumber,
  type Command,
  type Group,
} from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

const memberOptions = { ...valued("description"), ...repeated("wallet", "action") };

const memberUsage = `  --description TEXT
  --wallet ADDRESS_OR_ID   a wallet the group's actions may use (repeat for more)
  --action CID_OR_HASH     an action the group allows: a script's CID, a registered action's 0x
                           hash, or 0 for any action (repeat for more)`;

function walletsOf(values: Record<string, unknown>): string[] | undefined {
  const wallets = values.wallet as string[] | undefined;
  for (const w of wallets ?? []) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(w) && !/^\d{1,20}$/.test(w))
      throw new UsageError(`--wallet takes a wallet address or a decimal wallet id, not ${JSON.stringify(w)}`);
  }
  return wallets;
}

const actionsOf = (values: Record<string, unknown>) => values.action as string[] | undefined;

const add: Command = {
  name: "group add",
  summary: "create a group of wallets and the actions that may use them",
  usage: `--name NAME [--wallet ADDRESS_OR_ID]… [--action CID_OR_HASH]…

  Creates a group and prints its id. The CIDs it names are registered with the account in the
  same transaction.

${memberUsage}`,
  options: { ...valued("name"), ...memberOptions },
  async run({ values, ctx }) {
    const name = required(values, "name");
    const answer = await ctx.keyed().addGroup({
      group_name: name,
      group_description: text(values, "description") ?? "",
      pkp_ids_permitted: walletsOf(values) ?? [],
      cid_hashes_permitted: actionsOf(values) ?? [],
    });
    ctx.wrote(answer, [["group", answer.group_id]]);
  },
};

const list: Command = {
  name: "group list",
  summary: "the account's groups with their wallets and actions",
  usage: `

  Lists the account's groups: id, name, wallets ("any": every wallet of the account) and actions
  (by hash; "any": every action).`,
  async run({ ctx }) {
    ctx.list(await collect(ctx.keyed().all.listGroups()), "no groups", [
      ["ID", (g) => g.id],
      ["NAME", (g) => g.group_name],
      ["WALLETS", (g) => g.pkp_ids_permitted.map((w) => (w === ZERO_ADDRESS ? "any" : w)).join(",") || "-"],
      ["ACTIONS", (g) => g.cid_hashes_permitted.map((c) => (c === "0" ? "any" : c)).join(",") || "-"],
      ["DESCRIPTION", (g) => g.group_description],
    ]);
  },
};

const update: Command = {
  name: "group update",
  summary: "change a group's name, description, wallets or actions (the rest is kept)",
  usage: `ID [--name NAME] [--wallet ADDRESS_OR_ID]… [--action CID_OR_HASH]… [--clear-wallets] [--clear-actions]

  Changes what the flags name and keeps the rest (the group is read first): --wallet replaces the
  group's wallets with those given, --action its actions; --clear-wallets and --clear-actions
  empty them.

${memberUsage}`,
  options: { ...valued("name"), ...memberOptions, ...switches("clear-wallets", "clear-actions") },
  positionals: { min: 1, max: 1, names: "ID" },
  async run({ values, positionals, ctx }) {
    const id = String(wholeNumber("ID", positionals[0] as string));
    const given = ["name", "description", "wallet", "action", "clear-wallets", "clear-actions"].some(
      (k) => values[k] !== undefined,
    );
    if (!given)
      throw new UsageError(
        "nothing to change: give --name, --description, --wallet, --action, --clear-wallets or --clear-actions",
      );
    const client = ctx.keyed();
    const current = (await collect(client.all.listGroups())).find((g) => g.id === id);
    if (!current) throw new CliError("group_not_found", `the account has no group ${id}`);
    const wallets = values["clear-wallets"] ? [] : (walletsOf(values) ?? current.pkp_ids_permitted);
    const actions = values["clear-actions"] ? [] : (actionsOf(values) ?? current.cid_hashes_permitted);
    const answer = await client.updateGroup({
      group_id: id,
      name: text(values, "name") ?? current.group_name,
      description: text(values, "description") ?? current.group_description,
      pkp_ids_permitted: wallets,
      cid_hashes_permitted: actions,
    });
    ctx.wrote(answer, [["updated", `group ${id}`]]);
  },
};

const remove: Command = {
  name: "group remove",
  summary: "remove a group",
  usage: `ID

  Removes the group; its wallets and actions stay with the account.`,
  positionals: { min: 1, max: 1, names: "ID" },
  async run({ positionals, ctx }) {
    const id = String(wholeNumber("ID", positionals[0] as string));
    ctx.wrote(await ctx.keyed().removeGroup({ group_id: id }), [["removed", `group ${id}`]]);
  },
};

export const groupGroup: Group = {
  name: "group",
  summary: "groups: which actions may use which wallets",
  commands: [add, list, update, remove],
};
