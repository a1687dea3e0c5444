// `sigil wallet create|list`: the account's wallets (the API's PKPs), whose keys exist only inside
// the enclave. `wallet create --sign` makes one for a ChainSecured account: the service derives it
// for the signing admin wallet, which registers it on chain.
import { getAddress } from "viem";
import type { ListWalletsOutput } from "../../sdk/src/index.ts";
import { signerOptions, signerUsage, walletOwner } from "./chainSecured.ts";
import { fields, table, wholeNumber, type Command, type Group } from "./context.ts";

const create: Command = {
  name: "wallet create",
  summary: "create a wallet; prints its address and id",
  usage: `[--name NAME] [--description TEXT] [--sign [--keystore FILE] [--rpc-url URL]]

  Creates a wallet for the key's account (the master key, or a usage key that may create
  wallets). With --sign, for a ChainSecured account: the service derives a wallet for the
  signer (create_wallet_with_signature) and the signer registers it on chain
  (registerWalletDerivation); no API key is needed.

  ${signerUsage}`,
  options: { name: { type: "string" }, description: { type: "string" }, sign: { type: "boolean" }, ...signerOptions },
  async run({ values, ctx }) {
    const name = values.name as string | undefined;
    const description = values.description as string | undefined;
    if (!values.sign) {
      const answer = await ctx.keyed().createWallet({
        ...(name !== undefined ? { name } : {}),
        ...(description !== undefined ? { description } : {}),
      });
      ctx.print(answer, () =>
        fields([
          ["wallet", answer.wallet_address],
          ["id", answer.wallet_id],
          ["transaction", answer.transaction_hash],
        ]),
      );
      return;
    }
    const owner = await walletOwner(ctx, values);
    const contract = await owner.contract();
    const wallet = await owner.client.createWalletWithSignature(await owner.sign("CreateWallet"));
    const registered = await contract.registerWalletDerivation({
      wallet: getAddress(wallet.wallet_address),
      derivationPath: wallet.derivation_path as `0x${string}`,
      name: name ?? "",
      description: description ?? "",
    });
    ctx.print({ ...wallet, transaction_hash: registered.transactionHash }, () =>
      fields([
        ["wallet", wallet.wallet_address],
        ["derivation path", wallet.derivation_path],
        ["account", wallet.account_id],
        ["transaction", registered.transactionHash],
      ]),
    );
  },
};

const list: Command = {
  name: "wallet list",
  summary: "the account's wallets, or those of one group",
  usage: `[--group ID]

  Lists the account's wallets (id 0 is the account's master wallet), or with --group those the
  group permits ("any" stands for every wallet of the account).`,
  options: { group: { type: "string" } },
  async run({ values, ctx }) {
    const client = ctx.keyed();
    const wallets: ListWalletsOutput = [];
    const group = values.group as string | undefined;
    const pages =
      group === undefined
        ? client.all.listWallets()
        : client.all.listWalletsInGroup({ group_id: wholeNumber("--group", group) });
    for await (const w of pages) wallets.push(w);
    ctx.print(wallets, () =>
      wallets.length === 0
        ? "no wallets"
        : table(
            ["ID", "ADDRESS", "NAME", "DESCRIPTION"],
            wallets.map((w) => [w.id, w.wallet_address, w.name, w.description]),
          ),
    );
  },
};

export const walletGroup: Group = {
  name: "wallet",
  summary: "wallets: keys derived inside the enclave, used by allowed scripts",
  commands: [create, list],
};
