// @sigil/sdk/solana: a @solana/kit signer backed by a Sigil wallet's Solana key, the way
// toSigilAccount is a viem account — `signTransactionMessageWithSigners` and the rest of kit sign with
// it, and the key never leaves the enclave. Each signature is a run of the SDK's Solana signing action
// (SOLANA_SIGNER_CODE) with the wallet; the calling key must be allowed to run that action with it (a
// group with SOLANA_SIGNER_CID and the wallet: grantSolanaSigner, or `grant: true`). @solana/kit is a
// peer dependency of this entry only.
import {
  address as toAddress,
  getBase58Encoder,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  type Address as SolanaAddress,
  type MessagePartialSigner,
  type SignatureBytes,
  type SignatureDictionary,
  type TransactionPartialSigner,
} from "@solana/kit";
import { getAddress, type Address } from "viem";
import { signer, type SigningAction } from "./account.ts";
import type { CallOptions, SigilClient } from "./client.ts";
import { SigilError } from "./errors.ts";
import { SOLANA_SIGNER_CID } from "./generated/api.ts";
import { SOLANA_SIGNER_CODE } from "./solanaSigner.ts";

export { SOLANA_SIGNER_CID, SOLANA_SIGNER_CODE };

/** A kit signer of transactions and messages whose key is a Sigil wallet's Solana key. */
export type SigilSolanaSigner<TAddress extends string = string> = TransactionPartialSigner<TAddress> &
  MessagePartialSigner<TAddress> & {
    /** The Sigil wallet (its EVM address) whose Solana key signs. */
    readonly wallet: Address;
  };

const ACTION: SigningAction = {
  code: SOLANA_SIGNER_CODE,
  grant: (client, wallet, options) => grantSolanaSigner(client, { wallet }, options),
};

const hex = (bytes: Uint8Array) => `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;

/**
 * The Solana signer of the Sigil wallet `wallet`. Its address is `address` when given (a wallet's
 * `solana_address`, from create_wallet or list_wallets), else the action asks the enclave for it
 * (one run). `options` apply to every run; with `grant: true` the first signature refused for want of
 * a group makes it (grantSolanaSigner; the key needs group:create) and signs again.
 */
export async function toSigilSolanaSigner(args: {
  client: SigilClient;
  wallet: Address | string;
  address?: string;
  options?: CallOptions;
  grant?: boolean;
}): Promise<SigilSolanaSigner> {
  const wallet = getAddress(args.wallet);
  const sign = signer(args.client, wallet, args.options, args.grant === true, ACTION);
  const address: SolanaAddress = toAddress(args.address ?? ((await sign({ op: "address", wallet })) as string));
  const base58 = getBase58Encoder();
  const transactions = getTransactionDecoder();
  return Object.freeze({
    address,
    wallet,
    async signMessages(messages) {
      return Promise.all(
        messages.map(async (m): Promise<SignatureDictionary> => {
          const signature = (await sign({
            op: "signSolanaMessage",
            wallet,
            message: { raw: hex(m.content) },
          })) as string;
          return Object.freeze({ [address]: base58.encode(signature) as SignatureBytes });
        }),
      );
    },
    async signTransactions(list) {
      return Promise.all(
        list.map(async (transaction): Promise<SignatureDictionary> => {
          const signed = (await sign({
            op: "signSolanaTransaction",
            wallet,
            transaction: getBase64EncodedWireTransaction(transaction),
          })) as string;
          const signature = transactions.decode(base64Bytes(signed)).signatures[address];
          if (!signature)
            throw new SigilError({
              code: "run_failed",
              status: 200,
              message: `the signing action answered a transaction without ${address}'s signature`,
            });
          return Object.freeze({ [address]: signature });
        }),
      );
    },
  } satisfies SigilSolanaSigner);
}

/** Base64 to bytes, with what every runtime has (atob). */
function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * Lets the client's key sign with `wallet`'s Solana key through toSigilSolanaSigner: adds a group
 * with the Solana signing action's CID and the wallet (add_group; the key needs group:create).
 */
export async function grantSolanaSigner(
  client: SigilClient,
  args: { wallet: Address | string; groupName?: string; description?: string },
  options?: CallOptions,
) {
  return client.addGroup(
    {
      group_name: args.groupName ?? `sigil solana signer ${args.wallet.slice(0, 10)}`,
      group_description:
        args.description ?? "lets toSigilSolanaSigner sign with this wallet's Solana key (@sigil/sdk Solana action)",
      pkp_ids_permitted: [args.wallet],
      cid_hashes_permitted: [SOLANA_SIGNER_CID],
    },
    options,
  );
}
