// What the Ledger (ledger.ts) takes and answers: its holds, settles, credits, refunds, balances and
// usage history, for the edge code that calls it and the objects that read it (webhooks/).

export type HoldRefusal = "balance" | "spend_limit";
/** `alreadyCharged`: the request id was charged already (its hold expired): `granted` is what it paid, nothing new is held. */
/** `webhooks`: whether the account's Webhooks object must hear of this request (false: it has no endpoint and no balance.low threshold). */
export type HoldResult = {
  granted: number;
  freeCents: number;
  refusedBy?: HoldRefusal;
  alreadyCharged?: true;
  webhooks: boolean;
};
/** `keySpentCents`: for a usage key's request, its charges plus holds after the settle (webhooks' usage_key.cap_reached). */
export type SettleResult = { chargedCents: number; freeCents: number; keySpentCents?: number; webhooks: boolean };
export type CreditResult = { creditedCents: number; alreadyCredited: boolean; freeCents: number };
export type Balance = { settledCents: number; heldCents: number; freeCents: number };
/** The ledger checked against itself: the cached sum must equal the entries' sum plus what the retention pruned. */
export type LedgerAudit = Balance & { entriesSumCents: number; prunedCents: number; consistent: boolean };

/** A spend-capped usage key (cap 0 = none): its charges plus holds may not pass the cap. */
export type KeyCap = { keyHash: string; capCents: number };

/** What an entry was: a run, a managed write, a top-up or a refund (entries from before these were recorded: `null`). */
export type UsageOp = "run" | "write" | "top_up" | "refund";
/** The particulars of a charge, held with its hold so that an expired hold's charge has them too. */
export type UsageDetail = {
  /** A run's action CID. */
  cid?: string;
  /** A run's duration. */
  duration_ms?: number;
  /** A failed run's error code. */
  error_code?: string;
  /** A write's operation (add_group, …). */
  operation?: string;
  /** A write's transaction. */
  transaction_hash?: string;
  /** A run's signed receipt, as its JSON text (kept as the run answered it). */
  receipt?: string;
  /** A refund's payment intent. */
  payment_intent?: string;
  /** Set on a charge made because its hold expired unsettled. */
  hold_expired?: true;
  /** Set on a run's charge the enclave that ran it settled before its edge did (Leases). */
  settled_by_enclave?: true;
};
/**
 * What a run's charge may be settled as, by the enclave that ran it (the `bill` of the run's token,
 * budgets/token.ts): the account's Ledger, the usage key (null: the master key), at most `max` cents,
 * out of the edge isolate's credit lease `lease`.
 */
export type RunBill = { account: string; key: string | null; max: number; lease: string };

/**
 * A run's charge as the enclave that ran it settles it (routes/settlements.ts): its ref, the cents its
 * receipt says (never more than the edge's token allows), the usage key, and its usage detail — without
 * one, the Ledger only says whether the ref is charged yet.
 */
export type RunSettlement = {
  ref: string;
  cents: number;
  keyHash: string | null;
  /** The edge isolate's lease the run was held under, when it was (its charge is paid out of it). */
  leaseId?: string;
  detail?: UsageDetail;
};

/** What a metered piece of work is, given with its hold and completed at its settle. */
export type UsageMeta = { op: "run" | "write"; detail?: UsageDetail };

/** One entry of the usage history. */
export type UsageEntry = {
  id: number;
  createdAt: number;
  kind: "credit" | "charge" | "adjustment";
  op: UsageOp | null;
  cents: number;
  ref: string;
  keyHash: string | null;
  balanceAfterCents: number | null;
  detail: UsageDetail;
};
/** Which entries `usage` answers: older than `before` (an id), in [from, to) ms, of `ops`, of `keyHash`. */
export type UsageQuery = {
  before?: number;
  limit: number;
  from?: number;
  to?: number;
  ops?: UsageOp[];
  keyHash?: string;
  /** Only the runs whose receipt lists signatures by this wallet (lowercase address). */
  wallet?: string;
};
export type UsagePage = { entries: UsageEntry[]; more: boolean };
export type RefundResult = { debitedCents: number; alreadyDebited: boolean; freeCents: number };

/**
 * What a lease request answers (ledger.ts, Leases): `granted` cents were added to the lease (0: none
 * could be, and `refusedBy` says what refused), `leaseCents` is what it holds now. `expired`: this
 * lease id expired and was closed; the isolate must start a new one.
 */
export type LeaseResult = {
  granted: number;
  leaseCents: number;
  freeCents: number;
  refusedBy?: HoldRefusal;
  expired?: true;
  webhooks: boolean;
};
/** A run (or a managed write) metered under a lease: charged `cents` under its billing ref, with what the usage history keeps of it. */
export type LeaseCharge = { ref: string; cents: number; op: UsageMeta["op"]; detail: UsageDetail; expired?: true };
/** A run in flight under a lease, as the ledger keeps it should the isolate die: charged in full when the lease expires. */
export type LeaseOpen = { ref: string; cents: number; op: UsageMeta["op"]; detail?: UsageDetail };
/**
 * One commit of a lease: the runs it charges, the runs opened and closed since the last commit, the
 * credit it gives back, and how long the lease must live now (0 with nothing left: closed).
 */
export type LeaseCommit = {
  charges: LeaseCharge[];
  opened: LeaseOpen[];
  closed: string[];
  returnCents: number;
  /** What the isolate's runs in flight hold after the commit (the balance shows it as held; the rest of the lease as free). */
  inFlightCents: number;
  ttlMs: number;
};
/**
 * What a commit answers: per charge what its ref is charged (for a ref charged already, that charge), what the lease
 * holds now, the account's free balance and, for a key's lease, the key's spend after it.
 */
export type CommitResult = {
  charged: number[];
  /**
   * What the isolate takes out of its count of the lease for this commit: what it gave back, what it
   * charged, and what enclaves' settlements of its runs took out of the lease since (settleRuns).
   */
  takenCents: number;
  /** The lease's runs enclaves settled since its last commit that this commit did not charge (their refs and what each took out of the lease). */
  settledByEnclave?: Array<{ ref: string; cents: number }>;
  /**
   * How long the isolate should let its charges gather before its next commit, at least (ms): the
   * object's pace, so that however many isolates serve the account its commits stay within what one
   * object takes (ledger.ts LEDGER_COMMITS_PER_SECOND).
   */
  paceMs: number;
  leaseCents: number;
  freeCents: number;
  keySpentCents?: number;
  expired?: true;
  webhooks: boolean;
};
