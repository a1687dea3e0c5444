// What `sigil` commands use once they run, beyond reading their command line: the SDK's client and
// flows, viem's chain clients and errors, the contract's errors, the hashes (viem's keccak). context.ts loads this module before a
// command runs (loadService), never for --help or a usage error, which so answer at once: these imports
// are most of the command's start-up. Named imports, so the packed CLI's bundle keeps only these.
export { BaseError, createPublicClient, createWalletClient, defineChain, getAddress, http } from "viem";
export { privateKeyToAccount } from "viem/accounts";
export {
  accountConfig,
  createSigilClient,
  SigilError,
  SigilTransactionTimeoutError,
  sendSigilTransaction,
  signSigilTypedData,
  speedUpSigilTransaction,
  topUp,
  waitForTransaction,
  walletAuthHeader,
} from "../../sdk/src/index.ts";
export { findRevert } from "../../shared/contractErrors.ts";
export { apiKeyHash, cidHash, toHash32 } from "../../shared/hashing.ts";
