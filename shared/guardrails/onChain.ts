// Reading a guardrail document from the chain, for the enclave (authz/guardrails.ts) and the edge
// (routes/guardrails.ts) alike: AccountConfig keeps the document's hash and the block of the
// WalletGuardrailSet (a usage key's: UsageKeyGuardrailSet) event that carries its bytes; the bytes are the event's whose keccak256 is the hash.
import { keccak256, toBytes, type Address, type Hex, type PublicClient } from "viem";
import { accountConfigAbi } from "../generated/accountConfigAbi.ts";

/** Whose guardrail: a wallet's, or a usage key's own (its hash). */
export type GuardrailSubject = { wallet: Address } | { usageKey: bigint };

/** The document set for (master, subject) in `block` whose bytes hash to `hash`, or undefined. */
export async function guardrailDocumentAt(
  client: PublicClient,
  contract: Address,
  at: { master: bigint; block: bigint; hash: Hex } & GuardrailSubject,
): Promise<string | undefined> {
  const range = { address: contract, abi: accountConfigAbi, fromBlock: at.block, toBlock: at.block, strict: true };
  const documents =
    "wallet" in at
      ? (
          await client.getContractEvents({
            ...range,
            eventName: "WalletGuardrailSet",
            args: { master: at.master, wallet: at.wallet },
          })
        ).map((l) => l.args.document)
      : (
          await client.getContractEvents({
            ...range,
            eventName: "UsageKeyGuardrailSet",
            args: { master: at.master, usageKeyHash: at.usageKey },
          })
        ).map((l) => l.args.document);
  const hash = at.hash.toLowerCase();
  return documents.findLast((d): d is string => d !== undefined && keccak256(toBytes(d)) === hash);
}
