// Check 7 of the verifier and the edge's production rule (docs/design/attestation.md): the app's governance
// contract (its address is the app id RTMR3 claims) must allow the compose hash it runs.
import type { Address, PublicClient } from "viem";

export const governanceAbi = [
  {
    type: "function",
    name: "allowedComposeHashes",
    stateMutability: "view",
    inputs: [{ name: "", type: "bytes32" }],
    outputs: [{ name: "", type: "bool" }],
  },
] as const;

/** Whether `0x<appId>` allows `composeHash` (both hex, 0x optional). Throws when the call fails. */
export async function governanceAllows(
  client: Pick<PublicClient, "readContract">,
  appId: string,
  composeHash: string,
): Promise<boolean> {
  return client.readContract({
    address: `0x${appId.replace(/^0x/, "")}` as Address,
    abi: governanceAbi,
    functionName: "allowedComposeHashes",
    args: [`0x${composeHash.replace(/^0x/, "")}`],
  });
}
