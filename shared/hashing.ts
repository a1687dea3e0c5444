// The three hashes Sigil's contract and both sides agree on (docs/design/keys-and-authz.md; docs/design/contract.md).
// Each is a uint256 on chain; here a bigint, with `toHash32` for the `0x` + 64-hex form of responses.
import { hexToBigInt, keccak256, numberToHex, stringToBytes, type Address, type Hex } from "viem";

/**
 * `uint256(keccak256(utf8(key)))` of an API key (master or usage) as the client sent it, after
 * trimming surrounding whitespace: the hash of the 44-character text, not of its decoded bytes.
 */
export function apiKeyHash(key: string): bigint {
  return hexToBigInt(keccak256(stringToBytes(key.trim())));
}

/** `uint256(keccak256(abi.encodePacked(wallet)))`: the lookup hash that maps an admin wallet to its account. */
export function walletLookupHash(wallet: Address): bigint {
  return hexToBigInt(keccak256(wallet.toLowerCase() as Hex));
}

/** `uint256(keccak256(utf8(cid)))`: an action's identity in groups and on chain. */
export function cidHash(cid: string): bigint {
  return hexToBigInt(keccak256(stringToBytes(cid)));
}

/** A uint256 hash as `0x` + 64 lowercase hex digits. */
export function toHash32(value: bigint): Hex {
  return numberToHex(value, { size: 32 });
}
