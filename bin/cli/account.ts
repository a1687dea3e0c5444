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
import { keyOwner } from "../../sdk/src/reads.ts";

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
  summary: "the key's account: whether it exists and is managed, the kind of key, the credit",
  usage: `

  Shows the account of the API key: whether it exists, whether it is managed (or ChainSecured,
  when its master key may only read), whether the key is its master key or a usage key, and its
  credit. An unknown key fails (invalid_api_key).`,
  async run({ ctx }) {
    const client = ctx.keyed();
    const { account: state, hash, usage } = await keyOwner(client, ctx.connection().apiKey as string);
    const balance = await client.getBalance();
    const { baseUrl, from } = ctx.connection();
    const data = {
      exists: state.exists,
      managed: state.managed,
      key_kind: usage ? "usage" : "master",
      key_hash: hash,
      ...(usage ? { key_name: usage.name } : {}),
      balance_cents: balance.balance_cents,
      balance_display: balance.balance_display,
      api: baseUrl,
    };
    ctx.print(data, () =>
      fields([
        ["account", state.managed ? "managed" : "ChainSecured (administered by its wallet on chain)"],
        [
          "key",
          usage
            ? `usage key "${usage.name}" (${hash})`
            : `master key (${hash})${state.managed ? "" : ", read-only since the conversion"}`,
        ],
        ["balance", `${dollars(balance.balance_cents)} (${balance.balance_cents} cents)`],
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
