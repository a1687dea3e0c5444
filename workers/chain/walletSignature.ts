// A wallet's EIP-712 signature over Sigil's typed data (docs/design/api.md, Signature endpoints): every check
// in docs/design/api.md's order, each with its own code — sizes, primaryType, types, domain, chainId and the
// issuedAt window (shared/eip712.ts), then the signature itself, by ECDSA recovery, else ERC-1271
// on the node's chain (shared/walletSignature.ts). Used by the signature endpoints and by
// X-Wallet-Auth on the billing endpoints.
import type { Address } from "viem";
import { validateTypedData, type SigilPrimaryType } from "../../shared/eip712.ts";
import { SigilError } from "../../shared/errors.ts";
import { isWalletSignature } from "../../shared/walletSignature.ts";
import { chainClient, read } from "./client.ts";
import type { EdgeConfig } from "../config.ts";

export type SignedEnvelope = { typed_data: unknown; signature: string };

/** The wallet that signed `input` as `primaryType`; throws the first failed check's error. */
export async function verifyWalletSignature(
  config: EdgeConfig,
  primaryType: SigilPrimaryType,
  input: SignedEnvelope,
  expectedAddress?: Address,
): Promise<Address> {
  const checked = validateTypedData(input.typed_data, {
    primaryType,
    chainId: config.chainId,
    now: Math.floor(Date.now() / 1000),
    signature: input.signature,
    ...(expectedAddress === undefined ? {} : { expectedAddress }),
  });
  if (!checked.ok) throw checked.error;
  const { address, digest } = checked.value;
  const valid = await read(() =>
    isWalletSignature(chainClient(config), { address, digest, signature: input.signature }),
  );
  if (!valid)
    throw new SigilError(
      "invalid_signature",
      "the signature is not the wallet's: neither ECDSA recovery nor its ERC-1271 check accepts it",
    );
  return address;
}
