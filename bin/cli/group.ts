// `sigil group add|list|update|remove`: groups bind wallets to the actions (scripts, by CID) that
// may use them. Actions are named by CID (registered with the account in the same transaction), by
// a registered action's 0x hash, or 0 for any action; wallets by address or id.
import type { ListGroupsOutput, SigilClient } from "../../sdk/src/index.ts";
import { CliError, fields, table, UsageError, wholeNumber, type Command, type Group } from "./context.ts";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

const memberOptions = {
  description: { type: "string" },
  wallet: { type: "string", multiple: true },
  action: { type: "string", multiple: true },
} as const;

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
  options: { name: { type: "string" }, ...memberOptions },
  async run({ values, ctx }) {
    const name = values.name as string | undefined;
    if (!name) throw new UsageError("--name is required");
    const answer = await ctx.keyed().addGroup({
      group_name: name,
      group_description: (values.description as string | undefined) ?? "",
      pkp_ids_permitted: walletsOf(values) ?? [],
      cid_hashes_permitted: actionsOf(values) ?? [],
    });
    ctx.print(answer, () =>
      fields([
        ["group", answer.group_id],
        ["transaction", answer.transaction_hash],
      ]),
    );
  },
};

async function allGroups(client: SigilClient): Promise<ListGroupsOutput> {
  const groups: ListGroupsOutput = [];
  for await (const g of client.all.listGroups()) groups.push(g);
  return groups;
}

const list: Command = {
  name: "group list",
  summary: "the account's groups with their wallets and actions",
  usage: `

  Lists the account's groups: id, name, wallets ("any": every wallet of the account) and actions
  (by hash; "any": every action).`,
  async run({ ctx }) {
    const groups = await allGroups(ctx.keyed());
    ctx.print(groups, () =>
      groups.length === 0
        ? "no groups"
        : table(
            ["ID", "NAME", "WALLETS", "ACTIONS", "DESCRIPTION"],
            groups.map((g) => [
              g.id,
              g.group_name,
              g.pkp_ids_permitted.map((w) => (w === ZERO_ADDRESS ? "any" : w)).join(",") || "-",
              g.cid_hashes_permitted.map((c) => (c === "0" ? "any" : c)).join(",") || "-",
              g.group_description,
            ]),
          ),
    );
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
  options: {
    name: { type: "string" },
    ...memberOptions,
    "clear-wallets": { type: "boolean" },
    "clear-actions": { type: "boolean" },
  },
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
    const current = (await allGroups(client)).find((g) => g.id === id);
    if (!current) throw new CliError("group_not_found", `the account has no group ${id}`);
    const wallets = values["clear-wallets"] ? [] : (walletsOf(values) ?? current.pkp_ids_permitted);
    const actions = values["clear-actions"] ? [] : (actionsOf(values) ?? current.cid_hashes_permitted);
    const answer = await client.updateGroup({
      group_id: id,
      name: (values.name as string | undefined) ?? current.group_name,
      description: (values.description as string | undefined) ?? current.group_description,
      pkp_ids_permitted: wallets,
      cid_hashes_permitted: actions,
    });
    ctx.print(answer, () =>
      fields([
        ["updated", `group ${id}`],
        ["transaction", answer.transaction_hash],
      ]),
    );
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
    const answer = await ctx.keyed().removeGroup({ group_id: id });
    ctx.print(answer, () =>
      fields([
        ["removed", `group ${id}`],
        ["transaction", answer.transaction_hash],
      ]),
    );
  },
};

export const groupGroup: Group = {
  name: "group",
  summary: "groups: which actions may use which wallets",
  commands: [add, list, update, remove],
};
