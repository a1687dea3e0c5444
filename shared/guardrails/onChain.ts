// Reading a guardrail document from the chain, for the enclave (authz/guardrails.ts) and the edge
// (routes/guardrails.ts) alike: AccountConfig keeps the document's hash and the block of the
// WalletGuardrailSet event that carries its bytes; the bytes are the event's whose keccak256 is the hash.
import { keccak256, toBytes, type Address, type Hex, type PublicClient } from "viem";
import { accountConfigAbi } from "../generated/accountConfigAbi.ts";

/** The document set for (master, wallet) in `block` whose bytes hash to `hash`, or undefined. */
export async function guardrailDocumentAt(
  client: PublicClient,
  contract: Address,
  at: { master: bigint; wallet: Address; block: bigint; hash: Hex },
): Promise<string | undefined> {
  const logs = await client.getContractEvents({
    address: contract,
    abi: accountConfigAbi,
    eventName: "WalletGuardrailSet",
    args: { master: at.master, wallet: at.wallet },
    fromBlock: at.block,
    toBlock: at.block,
    strict: true,
  });
  const hash = at.hash.toLowerCase();
  return logs.map((l) => l.args.document).findLast((d) => keccak256(toBytes(d)) === hash);
}
