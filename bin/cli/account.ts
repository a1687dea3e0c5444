// `sigil account create|show`: a new managed account (its master key shown once, and kept in the
// profile with --save), and what the current key belongs to: whether its account exists and is
// managed, whether it is the master or a usage key, and the account's credit.
import {
  dollars,
  fields,
  given,
  LOCAL_STACK,
  readProfiles,
  required,
  switches,
  valued,
  writeProfile,
  type Command,
  type Group,
} from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

const create: Command = {
  name: "account create",
  summary: "create a managed account; prints its master key once (--save keeps it in the profile)",
  usage: `--name NAME [--description TEXT] [--email ADDRESS] [--save]

  Creates a managed account and prints its master API key (shown this once: keep it), its id and
  its master wallet. --save writes the key and the API URL into the profile (--profile, default
  "default"), so later commands need neither. --email is kept for the account's Stripe customer.`,
  options: { ...valued("name", "description", "email"), ...switches("save") },
  async run({ values, ctx }) {
    const name = required(values, "name");
    const { profileFile, profileName, baseUrl, from } = ctx.connection({ newProfile: values.save === true });
    // A profile file that cannot be written to is found before the account is made, not after.
    if (values.save) readProfiles(profileFile);
    const answer = await ctx.client().newAccount({
      account_name: name,
      ...given(values, { account_description: "description", email: "email" }),
    });
    // Printed first: whatever happens to the profile, the key has been shown.
    ctx.wrote(answer, [
      ["api key", `${answer.api_key}   (shown once: keep it)`],
      ["account", answer.account_id],
      ["master wallet", answer.wallet_address],
      ["master wallet (Solana)", answer.solana_address],
    ]);
    if (values.save) {
      // Made against the local stack: the profile follows its local.json, not today's port.
      const local = from.api.kind === "local";
      writeProfile(profileFile, profileName, { api: local ? LOCAL_STACK : baseUrl, key: answer.api_key });
      ctx.note(
        `saved the key and ${baseUrl} as profile "${profileName}" in ${profileFile}${local ? " (the local stack: the profile follows .sigil/local.json when it moves)" : ""}`,
      );
    }
  },
};

const show: Command = {
  name: "account show",
  summary: "the key's account: its name and id, how it is administered, what it holds, the kind of key, the credit",
  usage: `

  Shows the account of the API key: its name and id (the master hash runs' receipts name),
  whether it is managed or ChainSecured (administered by its admin wallet on chain; its master
  key may then only read), how many wallets, groups, usage keys and actions it has, whether the
  key is its master key or a usage key, and its credit. An unknown key fails (invalid_api_key).`,
  async run({ ctx }) {
    const client = ctx.keyed();
    const [account, balance] = await Promise.all([client.getAccount(), client.getBalance()]);
    const usage =
      account.key.kind === "usage"
        ? (await collect(client.all.listApiKeys())).find((k) => k.id.toLowerCase() === account.key.hash)
        : undefined;
    const { baseUrl, from } = ctx.connection();
    const data = {
      exists: true,
      account_id: account.account_id,
      account_name: account.account_name,
      account_description: account.account_description,
      managed: account.managed,
      admin: account.admin,
      key_kind: account.key.kind,
      key_hash: account.key.hash,
      ...(usage ? { key_name: usage.name } : {}),
      wallet_count: account.wallet_count,
      group_count: account.group_count,
      usage_key_count: account.usage_key_count,
      action_count: account.action_count,
      balance_cents: balance.balance_cents,
      balance_display: dollars(balance.balance_cents),
      api: baseUrl,
    };
    const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
    ctx.print(data, () =>
      fields([
        ["account", `${account.account_name} (${account.account_id})`],
        ["mode", account.managed ? "managed" : `ChainSecured (administered by ${account.admin} on chain)`],
        [
          "key",
          account.key.kind === "usage"
            ? `usage key "${usage?.name ?? ""}" (${account.key.hash})`
            : `master key (${account.key.hash})${account.managed ? "" : ", read-only since the conversion"}`,
        ],
        [
          "holds",
          [
            count(account.wallet_count, "wallet"),
            count(account.group_count, "group"),
            count(account.usage_key_count, "usage key"),
            count(account.action_count, "action"),
          ].join(", "),
        ],
        ["balance", dollars(balance.balance_cents)],
        ["api", `${baseUrl}   (from ${from.api.detail})`],
      ]),
    );
  },
};

export const accountGroup: Group = {
  name: "account",
  summary: "accounts: a new managed one, and what the current key belongs to",
  commands: [create, show],
};
