// Whether `signature` over `digest` is the wallet `address`'s (docs/design/api.md, signature endpoints): ECDSA
// recovery first, then ERC-1271 `isValidSignature` through eth_call on the node's chain, so both
// EOAs and contract wallets can administer accounts. Runs in Workers and in Node.
//
// Not viem's verifyHash, on purpose: it answers `false` for every failed eth_call, an unreachable
// node included (its ERC-6492 path turns each CallExecutionError, which `call` wraps all errors in,
// into "not verified"), so a chain outage would refuse a contract wallet's valid signature as 401
// invalid_signature instead of 503 chain_unavailable. Here only the wallet's own answer is a "no".
import { isHex, recoverAddress, type Address, type Hex, type PublicClient } from "viem";

const ERC1271_MAGIC = "0x1626ba7e";
const erc1271Abi = [
  {
    type: "function",
    name: "isValidSignature",
    stateMutability: "view",
    inputs: [
      { name: "hash", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [{ name: "magicValue", type: "bytes4" }],
  },
] as const;

export async function isWalletSignature(
  client: Pick<PublicClient, "readContract" | "getCode">,
  args: { address: Address; digest: Hex; signature: string },
): Promise<boolean> {
  const { address, digest, signature } = args;
  if (!isHex(signature)) return false;
  try {
    const recovered = await recoverAddress({ hash: digest, signature });
    if (recovered.toLowerCase() === address.toLowerCase()) return true;
  } catch {
    // Not a 65-byte ECDSA signature: it may still be a contract wallet's.
  }
  const code = await client.getCode({ address });
  if (!code || code === "0x") return false;
  try {
    const magic = await client.readContract({
      address,
      abi: erc1271Abi,
      functionName: "isValidSignature",
      args: [digest, signature],
    });
    return magic.toLowerCase() === ERC1271_MAGIC;
  } catch {
    // A reverting or non-conforming wallet did not approve the signature. (An unreachable chain
    // surfaces from getCode above.)
    return false;
  }
}
