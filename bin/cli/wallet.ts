// `sigil wallet create|list`: the account's wallets (the API's PKPs), whose keys exist only inside
// the enclave. `wallet create --sign` makes one for a ChainSecured account: the service derives it
// for the signing admin wallet, which registers it on chain.
import { signedWrite, signerOptions, signerUsage } from "./chainSecured.ts";
import { given, service, switches, text, valued, wholeNumberOption, type Command, type Group } from "./context.ts";
import { collect } from "../../sdk/src/reads.ts";

const create: Command = {
  name: "wallet create",
  summary: "create a wallet; prints its EVM and Solana addresses and its id",
  usage: `[--name NAME] [--description TEXT] [--sign [--keystore FILE] [--rpc-url URL]]

  Creates a wallet for the key's account (the master key, or a usage key that may create
  wallets). With --sign, for a ChainSecured account: the service derives a wallet for the
  signer (create_wallet_with_signature) and the signer registers it on chain
  (registerWalletDerivation); no API key is needed.

  ${signerUsage}`,
  options: { ...valued("name", "description"), ...switches("sign"), ...signerOptions },
  async run({ values, ctx }) {
    if (!values.sign) {
      const answer = await ctx.keyed().createWallet(given(values, { name: "name", description: "description" }));
      ctx.wrote(answer, [
        ["wallet", answer.wallet_address],
        ["solana", answer.solana_address],
        ["id", answer.wallet_id],
      ]);
      return;
    }
    const { getAddress } = service();
    const { answer: wallet } = await signedWrite(ctx, values, {
      ask: async (o) => o.client.createWalletWithSignature(await o.sign("CreateWallet")),
      send: (contract, made) =>
        contract.registerWalletDerivation({
          wallet: getAddress(made.wallet_address),
          derivationPath: made.derivation_path as `0x${string}`,
          name: text(values, "name") ?? "",
          description: text(values, "description") ?? "",
        }),
    });
    ctx.wrote(wallet, [
      ["wallet", wallet.wallet_address],
      ["solana", wallet.solana_address],
      ["derivation path", wallet.derivation_path],
      ["account", wallet.account_id],
    ]);
  },
};

const list: Command = {
  name: "wallet list",
  summary: "the account's wallets, or those of one group",
  usage: `[--group ID]

  Lists the account's wallets (id 0 is the account's master wallet), or with --group those the
  group permits ("any" stands for every wallet of the account), each with its EVM address and
  its Solana address.`,
  options: valued("group"),
  async run({ values, ctx }) {
    const client = ctx.keyed();
    const group = wholeNumberOption(values, "group");
    const pages = group === undefined ? client.all.listWallets() : client.all.listWalletsInGroup({ group_id: group });
    ctx.list(await collect(pages), "no wallets", [
      ["ID", (w) => w.id],
      ["ADDRESS", (w) => w.wallet_address],
      ["SOLANA", (w) => w.solana_address ?? "-"],
      ["NAME", (w) => w.name],
      ["DESCRIPTION", (w) => w.description],
    ]);
  },
};

export const walletGroup: Group = {
  name: "wallet",
  summary: "wallets: keys derived inside the enclave, used by allowed scripts",
  commands: [create, list],
};
