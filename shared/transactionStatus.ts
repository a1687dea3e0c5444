// Where a sent transaction is (docs/design/transactions.md): the statuses, and which of them are
// terminal. Apart from shared/transactions.ts, with no zod, so that the SDK, the CLI and the dashboard
// name the same list without carrying its schemas.

/** Where a transaction is: held for a send, in the pool, or one of the terminal states. */
export const TRANSACTION_STATUSES = [
  "reserved",
  "pending",
  "confirmed",
  "reverted",
  "replaced",
  "dropped",
  "released",
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/** The states a transaction does not leave. */
export const TERMINAL_STATUSES: ReadonlySet<TransactionStatus> = new Set([
  "confirmed",
  "reverted",
  "replaced",
  "dropped",
  "released",
]);
