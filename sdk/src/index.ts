// @sigil/sdk: a typed client of the Sigil API, a viem Account backed by a Sigil wallet, and the
// ChainSecured helpers (EIP-712 signatures, X-Wallet-Auth, AccountConfig calls), and `verifyReceipt`
// for the signed receipt of a run. Runs wherever
// `fetch` does; viem is its only peer dependency.
export {
  BUSY_RETRIES,
  createSigilClient,
  type CallOptions,
  type Method,
  type PageItem,
  type ResponseInfo,
  type SigilClient,
  type SigilClientOptions,
  type WalletAuth,
} from "./client.ts";
export {
  SigilError,
  SigilNetworkError,
  SigilTimeoutError,
  SigilWebhookError,
  isSigilError,
  type ClientErrorCode,
  type WebhookErrorCode,
} from "./errors.ts";
export {
  verifyWebhook,
  DEFAULT_TOLERANCE_SECONDS,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  WEBHOOK_EVENT_TYPES,
  type VerifyWebhookOptions,
  type WebhookEvent,
  type WebhookEventType,
} from "./webhooks.ts";
export { topUp, type TopUpResult } from "./billing.ts";
export {
  sendSigilTransaction,
  speedUpSigilTransaction,
  waitForTransaction,
  SigilTransactionTimeoutError,
  type SentSigilTransaction,
  TERMINAL_TRANSACTION_STATUSES,
  type WaitForTransactionOptions,
} from "./transactions.ts";
export { grantSigner, toSigilAccount, SIGNER_CID, SIGNER_CODE } from "./account.ts";
export {
  accountConfig,
  accountConfigAbi,
  accountConfigCall,
  signSigilTypedData,
  walletAuthHeader,
  walletLookupHash,
  type SignedTypedData,
  type SigilPrimaryType,
  type SigilTypedData,
  type TypedDataSigner,
  type UsageKeyGrant,
} from "./chainSecured.ts";
export { SigilReceiptError, type ReceiptFailure, type ReceiptPolicy } from "./verifiedRuns.ts";
export {
  SigilAnchorError,
  verifyAnchored,
  type AnchoredOptions,
  type AnchoredReceipt,
  type AnchorProof,
} from "./anchored.ts";
export {
  walletHistory,
  type HistoryChecks,
  type WalletHistoryOptions,
  type WalletSignature,
} from "./walletHistory.ts";
export {
  verifyReceipt,
  receiptMessage,
  type AsJson,
  jsonSha256,
  textSha256,
  type ReceiptCheck,
  type ReceiptInput,
  type ReceiptKeyAttestation,
  type ReceiptVerification,
  type ReceiptWallet,
  type RunReceipt,
  type SignedDigest,
  type VerifyReceiptOptions,
} from "./receipt.ts";
export { operations, type OperationId, type Operations } from "./generated/api.ts";
export type * from "./generated/api.ts";
