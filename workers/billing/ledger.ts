// The credit ledger (docs/design/billing.md, Ledger): one Durable Object per account, named by the account's
// master hash, which survives conversion to ChainSecured and ownership transfers, so the balance
// stays with the account. All amounts are integer cents, in the object's SQLite storage (its schema:
// ledgerSchema.ts, numbered migrations; what it takes and answers: ledgerTypes.ts):
//
//   entries(id, kind, cents, ref UNIQUE, key_hash, created_at,   credit (+, ref = payment intent),
//           op, detail, balance_after)                            charge (−, ref = request id),
//                                                                  adjustment (±; a refund: ref = refund id);
//                                                                  op says what it was (run, write, top_up,
//                                                                  refund), detail its JSON particulars
//                                                                  (CID, duration, operation, transaction,
//                                                                  receipt), balance_after the settled sum after it
//   holds(id, request_id UNIQUE, cents, key_hash, expires_at,     credit reserved for work in flight, and what
//         op, detail)                                              the work is, should the hold expire into a charge
//   account(id = 1, settled_cents, customer_id, email,             the sum of entries, cached; the Stripe customer
//           pruned_cents, webhooks)                                and new_account's email; the sum of the entries
//                                                                  the retention has pruned; whether the account's
//                                                                  Webhooks object must hear of its settles (below)
//   key_spend(key_hash PRIMARY KEY, spent_cents)                   each usage key's charges, kept as they are made
//                                                                  (its spend cap outlives the entries' retention)
//   payment_refs(ref PRIMARY KEY)                                  every payment intent credited and refund debited,
//                                                                  kept beyond the retention so none counts twice
//   wallet_runs(wallet, entry_id)                                   the runs whose receipt lists signatures by the
//                                                                  wallet, or its key read: GET /usage?wallet=
//
// The entries are the account's usage history (GET /usage, `usage`): newest first by id, so a
// cursor (the last id seen) stays right while new entries arrive. They are kept USAGE_RETENTION_DAYS
// and at most MAX_USAGE_ENTRIES per account; a daily alarm prunes the rest, folding their sum into
// pruned_cents so the cached balance still equals pruned_cents plus the entries' sum.
//
// The free balance is the settled sum minus the live holds. Every operation is one synchronous
// transaction of the object (no await inside), so concurrent requests cannot both spend the same
// cent. `hold`, `settle` and `release` are idempotent on the request id, `credit` on the payment
// intent id. A hold that expires unsettled is charged in full, as the charge of its request id
// (docs/design/billing.md): the edge that held it stopped before it could settle (killed, or its invocation
// cancelled while the work went on), so the work may have been done, and a client must not be
// able to avoid paying by making that happen. Every operation first turns the holds that have
// expired into charges, so nothing anyone reads ever shows an expired hold. A settle that comes
// after that finds the charge and charges nothing more; a hold for a request id already charged
// reserves nothing new.
//
// `webhooks` spares a run the edge's call to the account's Webhooks Durable Object when that object
// has nothing to do with it: no endpoint and no balance.low threshold. The run reads it here, in the
// hold and settle it makes anyway, so knowing costs no read of its own. NULL: not known (a ledger
// from before this column, or an account made outside new_account): tell the object, whose first
// call sets it. 0: nothing to tell. 1: tell. Only the Webhooks object writes it, once its own state
// is what it writes (webhooks/store.ts gives the argument), except `opened`, which marks a brand-new
// account's unknown as 0.
import { DurableObject } from "cloudflare:workers";
import { migrate } from "../migrations.ts";
import { LEDGER_MIGRATIONS } from "./ledgerSchema.ts";

/** How long the usage history keeps an entry, and how many it keeps at most per account. */
export const USAGE_RETENTION_DAYS = 90;
export const MAX_USAGE_ENTRIES = 100_000;
const DAY_MS = 86_400_000;

import type {
  Balance,
  CreditResult,
  HoldRefusal,
  HoldResult,
  CommitResult,
  KeyCap,
  LeaseCommit,
  LeaseOpen,
  LeaseResult,
  RunSettlement,
  LedgerAudit,
  RefundResult,
  SettleResult,
  UsageDetail,
  UsageEntry,
  UsageMeta,
  UsageOp,
  UsagePage,
  UsageQuery,
} from "./ledgerTypes.ts";

export class Ledger extends DurableObject {
  readonly #sql: SqlStorage;
  /**
   * The earliest a hold or lease can expire (0: not known yet, so the first call looks). Kept no
   * later than the truth: every hold or lease written lowers it to its own expiry.
   */
  #nextExpiry = 0;
  /** How many calls of each kind the object has served since it woke (`calls`: what bench:ledger divides by runs). */
  readonly #calls: Record<string, number> = {};

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, LEDGER_MIGRATIONS);
    // The retention's daily alarm, armed whenever the object wakes without one.
    void ctx.blockConcurrencyWhile(async () => {
      if ((await ctx.storage.getAlarm()) === null) await ctx.storage.setAlarm(Date.now() + DAY_MS);
    });
  }

  /**
   * Reserves up to `maxCents` for `requestId`: the smallest of the free balance, the key's
   * remaining cap and `maxCents`. Nothing left → granted 0, no hold, and what refused.
   */
  hold(requestId: string, maxCents: number, holdMs: number, key?: KeyCap, meta?: UsageMeta): HoldResult {
    this.#count("hold");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const existing = this.#sql
        .exec<{ cents: number }>("SELECT cents FROM holds WHERE request_id = ?", requestId)
        .toArray()[0];
      const webhooks = this.#webhooks();
      if (existing) return { granted: existing.cents, freeCents: this.#free(now), webhooks };
      const charged = this.#charged(requestId);
      if (charged !== undefined)
        return { granted: charged, freeCents: this.#free(now), alreadyCharged: true, webhooks };
      const free = this.#spendable(now);
      let granted = Math.min(Math.floor(maxCents), free);
      let refusedBy: HoldRefusal = "balance";
      if (key && key.capCents > 0) {
        const left = key.capCents - this.#keySpent(key.keyHash, now, true);
        if (left < granted) {
          granted = left;
          refusedBy = "spend_limit";
        }
      }
      if (granted <= 0) return { granted: 0, freeCents: this.#free(now), refusedBy, webhooks };
      this.#nextExpiry = Math.min(this.#nextExpiry, now + holdMs);
      this.#sql.exec(
        "INSERT INTO holds (request_id, cents, key_hash, expires_at, op, detail) VALUES (?, ?, ?, ?, ?, ?)",
        requestId,
        granted,
        key?.keyHash ?? null,
        now + holdMs,
        meta?.op ?? null,
        meta?.detail ? JSON.stringify(meta.detail) : null,
      );
      return { granted, freeCents: this.#free(now), webhooks };
    });
  }

  /**
   * Charges `chargedCents` for `requestId` and frees its hold. The charge never exceeds the hold it
   * settles (a run is stopped at the seconds it was granted); a second settle, or one after the
   * hold expired and was charged in full, charges nothing more and answers the charge there is.
   */
  settle(requestId: string, chargedCents: number, key?: KeyCap, meta?: UsageMeta): SettleResult {
    this.#count("settle");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const done = this.#charged(requestId);
      if (done !== undefined) {
        this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
        return { chargedCents: done, freeCents: this.#free(now), webhooks: this.#webhooks() };
      }
      const hold = this.#sql
        .exec<{ cents: number; key_hash: string | null; op: string | null; detail: string | null }>(
          "SELECT cents, key_hash, op, detail FROM holds WHERE request_id = ?",
          requestId,
        )
        .toArray()[0];
      const cents = Math.max(0, Math.floor(hold ? Math.min(chargedCents, hold.cents) : chargedCents));
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
      const keyHash = hold?.key_hash ?? key?.keyHash ?? null;
      if (cents > 0) {
        const detail = { ...parseDetail(hold?.detail ?? null), ...meta?.detail };
        this.#charge(requestId, cents, keyHash, now, meta?.op ?? hold?.op ?? null, detail);
      }
      return {
        chargedCents: cents,
        freeCents: this.#free(now),
        ...(keyHash === null ? {} : { keySpentCents: this.#keySpent(keyHash, now) }),
        webhooks: this.#webhooks(),
      };
    });
  }

  /**
   * Frees `requestId`'s hold without charging (the work was refused before it cost anything),
   * whether it is a hold of its own or a run a lease had in flight. A hold that had expired is a
   * charge already and stays one.
   */
  release(requestId: string): Balance {
    this.#count("release");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
      // Or the run a dead isolate's lease had in flight (the edge gave up on it: write_outcome_unknown):
      // its lease shows it held no more, and its expiry will not charge it.
      this.#closeOpen(requestId, "");
      return this.#balance(now);
    });
  }

  /**
   * Adds credit to lease `leaseId` for a run that needs `needCents` more than its isolate has (Leases):
   * the smallest of the need, the free balance and the key's remaining cap, plus up to `extraCents`
   * for the runs that follow — never more than a quarter of what the account (or the key) has left
   * beyond the need, so that a small balance is not held by one isolate. Nothing at all → granted 0,
   * and what refused. The lease lives `ttlMs` more at least.
   */
  lease(
    leaseId: string,
    needCents: number,
    extraCents: number,
    ttlMs: number,
    key?: KeyCap,
    open?: LeaseOpen,
  ): LeaseResult {
    this.#count("lease");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const webhooks = this.#webhooks();
      const free = this.#spendable(now);
      const current = this.#lease(leaseId);
      if (!current && this.#expiredLease(leaseId))
        return { granted: 0, leaseCents: 0, freeCents: this.#free(now), expired: true, webhooks };
      let need = Math.min(Math.floor(needCents), free);
      let beyond = free - need;
      let refusedBy: HoldRefusal = "balance";
      if (key && key.capCents > 0) {
        const left = key.capCents - this.#keySpent(key.keyHash, now, true);
        if (left < need) {
          need = left;
          refusedBy = "spend_limit";
        }
        beyond = Math.min(beyond, left - need);
      }
      const leaseCents = current?.cents ?? 0;
      if (need <= 0) return { granted: 0, leaseCents, freeCents: this.#free(now), refusedBy, webhooks };
      const granted = need + Math.max(0, Math.min(Math.floor(extraCents), Math.floor(beyond / 4)));
      // What the run needs is in flight from now on (until the next commit says what is).
      this.#nextExpiry = Math.min(this.#nextExpiry, now + ttlMs);
      this.#sql.exec(
        "INSERT INTO leases (id, key_hash, cents, in_flight, expires_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET cents = cents + excluded.cents, in_flight = MIN(cents + excluded.cents, in_flight + excluded.in_flight), expires_at = MAX(expires_at, excluded.expires_at)",
        leaseId,
        key?.keyHash ?? null,
        granted,
        need,
        now + ttlMs,
      );
      // The run the credit is for is in flight from now on: should the isolate die before its next
      // commit, the lease's expiry charges it under its own ref (and a retry elsewhere finds it).
      if (open) this.#open(leaseId, { ...open, cents: Math.min(open.cents, need) });
      return { granted, leaseCents: leaseCents + granted, freeCents: this.#free(now), webhooks };
    });
  }

  /**
   * Commits lease `leaseId` (Leases): charges its runs (each once per billing ref: a ref charged
   * already — another attempt's — is charged nothing more, and answers that charge), keeps the runs it has in flight (charged in
   * full under their refs should the lease expire), takes what it charged and what it gives back out
   * of it, and lets it live `ttlMs` more; a lease left with nothing is closed. A lease that had expired
   * (its isolate could not commit for longer than its life) still has its charges made, and answers
   * `expired`.
   */
  commit(leaseId: string, commit: LeaseCommit, key?: KeyCap): CommitResult {
    this.#count("commit");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const current = this.#lease(leaseId);
      const expired = !current && this.#expiredLease(leaseId);
      const keyHash = current?.key_hash ?? key?.keyHash ?? null;
      const charged: number[] = [];
      // Taken out of the lease now; and what the isolate takes out of its count of it, which also
      // counts what enclaves' settlements of its runs took out of it before (settleRuns).
      let taken = commit.returnCents;
      let forgotten = commit.returnCents;
      // Enclaves settle a lease's runs before its isolate commits them rarely: looked for run by run only then.
      const anySettled =
        this.#sql.exec("SELECT 1 FROM lease_settled WHERE lease_id = ? LIMIT 1", leaseId).toArray().length > 0;
      for (const c of commit.charges) {
        const paid = anySettled ? this.#takeSettled(c.ref, leaseId) : undefined;
        if (paid === undefined) {
          taken += c.cents;
          forgotten += c.cents;
        } else forgotten += paid;
        this.#closeOpen(c.ref, leaseId);
        const done = this.#charged(c.ref);
        if (done !== undefined) {
          charged.push(done);
          continue;
        }
        const cents = Math.max(0, Math.floor(c.cents));
        if (cents > 0)
          this.#charge(c.ref, cents, keyHash, now, c.op, c.expired ? { ...c.detail, hold_expired: true } : c.detail);
        charged.push(cents);
      }
      // This lease's runs only: a ref in flight under another lease (a retry metered elsewhere) stays so.
      for (const ref of commit.closed)
        this.#sql.exec("DELETE FROM lease_open WHERE ref = ? AND lease_id = ?", ref, leaseId);
      // Its other runs the enclaves settled since its last commit, paid out of the lease: the isolate
      // hears of them now (one not committed yet it will not commit; one it freed because its answer
      // never came, it ran all the same).
      const settledByEnclave = anySettled
        ? this.#sql
            .exec<{ ref: string; cents: number }>("SELECT ref, cents FROM lease_settled WHERE lease_id = ?", leaseId)
            .toArray()
            .map((row) => ({ ref: row.ref, cents: row.cents }))
        : [];
      if (settledByEnclave.length > 0) {
        this.#sql.exec("DELETE FROM lease_settled WHERE lease_id = ?", leaseId);
        for (const row of settledByEnclave) forgotten += row.cents;
      }
      let leaseCents = 0;
      if (current) {
        for (const o of commit.opened) this.#open(leaseId, o);
        leaseCents = Math.max(0, current.cents - Math.max(0, Math.floor(taken)));
        if (
          leaseCents === 0 &&
          this.#sql.exec("SELECT 1 FROM lease_open WHERE lease_id = ?", leaseId).toArray().length === 0
        )
          this.#sql.exec("DELETE FROM leases WHERE id = ?", leaseId);
        else
          this.#sql.exec(
            "UPDATE leases SET cents = ?, in_flight = ?, expires_at = MAX(expires_at, ?) WHERE id = ?",
            leaseCents,
            Math.min(leaseCents, Math.max(0, Math.floor(commit.inFlightCents))),
            now + commit.ttlMs,
            leaseId,
          );
      }
      return {
        charged,
        takenCents: forgotten,
        paceMs: this.#paceMs(),
        ...(settledByEnclave.length > 0 ? { settledByEnclave } : {}),
        leaseCents,
        freeCents: this.#free(now),
        ...(keyHash === null ? {} : { keySpentCents: this.#keySpent(keyHash, now) }),
        ...(expired ? { expired: true as const } : {}),
        webhooks: this.#webhooks(),
      };
    });
  }

  /**
   * Runs' charges as the enclaves that ran them settle them (docs/design/billing.md, Leases): each ref
   * charged already (by its edge's commit, or an earlier settlement) is left as it is; one that is
   * not is charged now when its detail is given — it is no longer in flight under any lease, and a
   * commit of it later (its edge was slow, not dead) finds it charged and charges nothing more — and
   * is answered as `missing` when it is not, so that the enclave sends its detail.
   */
  settleRuns(runs: RunSettlement[]): { charged: number; missing: string[] } {
    this.#count("settleRuns");
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const missing: string[] = [];
      let charged = 0;
      for (const run of runs) {
        if (this.#charged(run.ref) !== undefined) continue;
        if (!run.detail) {
          missing.push(run.ref);
          continue;
        }
        this.#closeOpen(run.ref, "");
        this.#sql.exec("DELETE FROM holds WHERE request_id = ?", run.ref);
        const cents = Math.max(0, Math.floor(run.cents));
        if (cents === 0) continue;
        // Paid out of the lease the run was held under, while it lives: the credit was held for it
        // there. The lease's isolate learns of it at its next commit (lease_settled).
        const lease = run.leaseId ? this.#lease(run.leaseId) : undefined;
        if (lease && run.leaseId) {
          const paid = Math.min(lease.cents, cents);
          this.#sql.exec(
            "UPDATE leases SET cents = cents - ?, in_flight = MIN(in_flight, cents - ?) WHERE id = ?",
            paid,
            paid,
            run.leaseId,
          );
          this.#sql.exec(
            "INSERT OR REPLACE INTO lease_settled (ref, lease_id, cents) VALUES (?, ?, ?)",
            run.ref,
            run.leaseId,
            paid,
          );
        }
        this.#charge(run.ref, cents, lease?.key_hash ?? run.keyHash, now, "run", {
          ...run.detail,
          settled_by_enclave: true,
        });
        charged++;
      }
      return { charged, missing };
    });
  }

  /** The calls served since the object woke, by kind. */
  calls(): Record<string, number> {
    return { ...this.#calls };
  }

  #count(kind: string): void {
    this.#calls[kind] = (this.#calls[kind] ?? 0) + 1;
  }

  /** Adds a payment's `cents` once per payment intent, whichever path reports it first. */
  credit(paymentIntentId: string, cents: number): CreditResult {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      if (!this.#newPaymentRef(paymentIntentId))
        return { creditedCents: 0, alreadyCredited: true, freeCents: this.#free(now) };
      const amount = Math.floor(cents);
      this.#entry("credit", amount, paymentIntentId, null, now, "top_up", {});
      return { creditedCents: amount, alreadyCredited: false, freeCents: this.#free(now) };
    });
  }

  /**
   * Takes back a refunded payment's `cents`, once per refund id (Stripe's refund.* events may come
   * more than once). The credit may have been spent already: the balance may then go below zero,
   * and nothing can be spent until a top-up brings it back above.
   */
  refund(refundId: string, paymentIntentId: string, cents: number): RefundResult {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      if (!this.#newPaymentRef(refundId)) return { debitedCents: 0, alreadyDebited: true, freeCents: this.#free(now) };
      const amount = Math.floor(cents);
      this.#entry("adjustment", -amount, refundId, null, now, "refund", { payment_intent: paymentIntentId });
      return { debitedCents: amount, alreadyDebited: false, freeCents: this.#free(now) };
    });
  }

  /** A page of the usage history, newest first (see UsageQuery). */
  usage(query: UsageQuery): UsagePage {
    return this.ctx.storage.transactionSync(() => {
      this.#chargeExpired();
      const where: string[] = [];
      const args: Array<string | number> = [];
      const when = (clause: string, ...values: Array<string | number>) => {
        where.push(clause);
        args.push(...values);
      };
      if (query.before !== undefined) when("id < ?", query.before);
      if (query.from !== undefined) when("created_at >= ?", query.from);
      if (query.to !== undefined) when("created_at < ?", query.to);
      if (query.keyHash !== undefined) when("key_hash = ?", query.keyHash);
      if (query.wallet !== undefined)
        when("id IN (SELECT entry_id FROM wallet_runs WHERE wallet = ?)", query.wallet.toLowerCase());
      if (query.ops?.length) when(`op IN (${query.ops.map(() => "?").join(", ")})`, ...query.ops);
      const rows = this.#sql
        .exec<{
          id: number;
          created_at: number;
          kind: UsageEntry["kind"];
          op: UsageOp | null;
          cents: number;
          ref: string;
          key_hash: string | null;
          balance_after: number | null;
          detail: string | null;
        }>(
          `SELECT id, created_at, kind, op, cents, ref, key_hash, balance_after, detail FROM entries ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT ?`,
          ...args,
          query.limit + 1,
        )
        .toArray();
      return {
        more: rows.length > query.limit,
        entries: rows.slice(0, query.limit).map((r) => ({
          id: r.id,
          createdAt: r.created_at,
          kind: r.kind,
          op: r.op,
          cents: r.cents,
          ref: r.ref,
          keyHash: r.key_hash,
          balanceAfterCents: r.balance_after,
          detail: parseDetail(r.detail),
        })),
      };
    });
  }

  /** What each of `keyHashes` has been charged so far (its holds not included): list_api_keys shows it against the key's cap. */
  keySpend(keyHashes: string[]): Record<string, number> {
    const spent: Record<string, number> = {};
    for (const hash of keyHashes) {
      spent[hash] =
        this.#sql
          .exec<{ spent_cents: number }>("SELECT spent_cents FROM key_spend WHERE key_hash = ?", hash)
          .toArray()[0]?.spent_cents ?? 0;
    }
    return spent;
  }

  /**
   * The retention (daily): entries older than USAGE_RETENTION_DAYS, and beyond the newest
   * MAX_USAGE_ENTRIES, leave the history; their sum stays in the balance through pruned_cents.
   */
  override async alarm(): Promise<void> {
    this.prune(Date.now());
    await this.ctx.storage.setAlarm(Date.now() + DAY_MS);
  }

  /** Prunes as the alarm does, judging age by `now`; how many entries it removed. */
  prune(now: number): number {
    return this.ctx.storage.transactionSync(() => {
      const cutoff = this.#sql
        .exec<{ id: number }>("SELECT id FROM entries ORDER BY id DESC LIMIT 1 OFFSET ?", MAX_USAGE_ENTRIES)
        .toArray()[0]?.id;
      const old = "created_at < ? OR id <= ?";
      const args = [now - USAGE_RETENTION_DAYS * DAY_MS, cutoff ?? 0];
      const { n, s } = this.#sql
        .exec<{ n: number; s: number }>(
          `SELECT COUNT(*) AS n, COALESCE(SUM(cents), 0) AS s FROM entries WHERE ${old}`,
          ...args,
        )
        .one();
      if (n === 0) return 0;
      this.#sql.exec(`DELETE FROM entries WHERE ${old}`, ...args);
      this.#sql.exec("DELETE FROM wallet_runs WHERE entry_id NOT IN (SELECT id FROM entries)");
      this.#sql.exec("UPDATE account SET pruned_cents = pruned_cents + ? WHERE id = 1", s);
      return n;
    });
  }

  balance(): Balance {
    return this.ctx.storage.transactionSync(() => this.#balance(this.#chargeExpired()));
  }

  /** The account's Stripe customer: the stored one, else `candidate` becomes it (first one wins). */
  customer(candidate?: string): string | null {
    if (candidate) this.#sql.exec("UPDATE account SET customer_id = ? WHERE id = 1 AND customer_id IS NULL", candidate);
    return this.#sql.exec<{ customer_id: string | null }>("SELECT customer_id FROM account WHERE id = 1").one()
      .customer_id;
  }

  /** The account's contact email from new_account (kept for its Stripe customer); `email` replaces it. (Not `email`: that name is the Email Workers handler.) */
  contactEmail(email?: string): string | null {
    if (email) this.#sql.exec("UPDATE account SET email = ? WHERE id = 1", email);
    return this.#sql.exec<{ email: string | null }>("SELECT email FROM account WHERE id = 1").one().email;
  }

  /**
   * new_account made this account just now: its key has been in nobody's hands, so its Webhooks
   * object has no endpoint and no threshold. An unknown `webhooks` becomes 0 (one the Webhooks
   * object has set already stays: that object spoke first). `email` is kept as contactEmail keeps it.
   */
  opened(email?: string): void {
    this.ctx.storage.transactionSync(() => {
      if (email) this.#sql.exec("UPDATE account SET email = ? WHERE id = 1", email);
      this.#sql.exec("UPDATE account SET webhooks = 0 WHERE id = 1 AND webhooks IS NULL");
    });
  }

  /** The account's Webhooks object says whether it has anything to hear of (an endpoint or a balance.low threshold); only it calls this. */
  setWebhooks(active: boolean): void {
    this.#sql.exec("UPDATE account SET webhooks = ? WHERE id = 1", active ? 1 : 0);
  }

  /** The invariant billing tests end with: the cached sum equals the sum of the entries. */
  audit(): LedgerAudit {
    return this.ctx.storage.transactionSync(() => {
      const b = this.#balance(this.#chargeExpired());
      const entriesSum = this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM entries").one().s;
      const pruned = this.#sql
        .exec<{ pruned_cents: number }>("SELECT pruned_cents FROM account WHERE id = 1")
        .one().pruned_cents;
      return {
        ...b,
        entriesSumCents: entriesSum,
        prunedCents: pruned,
        consistent: entriesSum + pruned === b.settledCents,
      };
    });
  }

  /**
   * Turns every hold that has expired into the charge of its request id, in full (a request id
   * charged already keeps its charge), and answers the time it judged by.
   */
  #chargeExpired(): number {
    const now = Date.now();
    // Nothing can have expired before the earliest expiry there is: most calls look no further.
    if (now < this.#nextExpiry) return now;
    const expired = this.#sql
      .exec<{
        request_id: string;
        cents: number;
        key_hash: string | null;
        expires_at: number;
        op: string | null;
        detail: string | null;
      }>("SELECT request_id, cents, key_hash, expires_at, op, detail FROM holds WHERE expires_at <= ?", now)
      .toArray();
    for (const hold of expired) {
      if (this.#charged(hold.request_id) === undefined) {
        this.#charge(hold.request_id, hold.cents, hold.key_hash, hold.expires_at, hold.op, {
          ...parseDetail(hold.detail),
          hold_expired: true,
        });
      }
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", hold.request_id);
    }
    // A lease whose isolate stopped committing (Leases): the runs it had in flight are charged in
    // full under their refs, as an expired hold is; the rest of its credit is free again. Its id is
    // kept among payment_refs (kept beyond the retention), so a late request for it is told to start anew.
    const leases = this.#sql
      .exec<{ id: string; key_hash: string | null; expires_at: number }>(
        "SELECT id, key_hash, expires_at FROM leases WHERE expires_at <= ?",
        now,
      )
      .toArray();
    for (const lease of leases) {
      const open = this.#sql
        .exec<{ ref: string; cents: number; op: string | null; detail: string | null }>(
          "SELECT ref, cents, op, detail FROM lease_open WHERE lease_id = ?",
          lease.id,
        )
        .toArray();
      for (const o of open) {
        if (this.#charged(o.ref) === undefined)
          this.#charge(o.ref, o.cents, lease.key_hash, lease.expires_at, o.op, {
            ...parseDetail(o.detail),
            hold_expired: true,
          });
      }
      this.#sql.exec("DELETE FROM lease_open WHERE lease_id = ?", lease.id);
      this.#sql.exec("DELETE FROM lease_settled WHERE lease_id = ?", lease.id);
      this.#sql.exec("DELETE FROM leases WHERE id = ?", lease.id);
      this.#newPaymentRef(leaseRef(lease.id));
    }
    this.#nextExpiry =
      this.#sql
        .exec<{ at: number | null }>(
          "SELECT MIN(at) AS at FROM (SELECT MIN(expires_at) AS at FROM holds UNION ALL SELECT MIN(expires_at) FROM leases)",
        )
        .one().at ?? Number.POSITIVE_INFINITY;
    return now;
  }

  /** Records a charge of `cents` (> 0) under `requestId`, and the key's spend. */
  #charge(
    requestId: string,
    cents: number,
    keyHash: string | null,
    at: number,
    op: string | null,
    detail: UsageDetail,
  ): void {
    this.#entry("charge", -cents, requestId, keyHash, at, op, detail);
    if (keyHash !== null) {
      this.#sql.exec(
        "INSERT INTO key_spend (key_hash, spent_cents) VALUES (?, ?) ON CONFLICT (key_hash) DO UPDATE SET spent_cents = spent_cents + excluded.spent_cents",
        keyHash,
        cents,
      );
    }
  }

  /** Adds an entry of `cents` (signed) and moves the cached sum by it; the entry records the sum after it. */
  #entry(
    kind: UsageEntry["kind"],
    cents: number,
    ref: string,
    keyHash: string | null,
    at: number,
    op: string | null,
    detail: UsageDetail,
  ): void {
    const after = this.#sql
      .exec<{ settled_cents: number }>(
        "UPDATE account SET settled_cents = settled_cents + ? WHERE id = 1 RETURNING settled_cents",
        cents,
      )
      .one().settled_cents;
    const { id } = this.#sql
      .exec<{ id: number }>(
        "INSERT INTO entries (kind, cents, ref, key_hash, created_at, op, detail, balance_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        kind,
        cents,
        ref,
        keyHash,
        at,
        op,
        Object.keys(detail).length ? JSON.stringify(detail) : null,
        after,
      )
      .one();
    if (detail.receipt !== undefined) this.#walletRuns(id, detail.receipt);
  }

  /** Indexes the entry just added under each wallet its receipt says signed with, or read the key of (wallet_runs). */
  #walletRuns(entryId: number, receiptText: string): void {
    let wallets: unknown;
    try {
      wallets = (JSON.parse(receiptText) as { wallets?: unknown }).wallets;
    } catch {
      return;
    }
    if (!Array.isArray(wallets)) return;
    for (const w of wallets as Array<{
      address?: unknown;
      action?: unknown;
      signed?: unknown;
      key_exported?: unknown;
    }>) {
      const used = (Array.isArray(w.signed) && w.signed.length > 0) || w.key_exported === true;
      if (w && w.action === false && typeof w.address === "string" && used)
        this.#sql.exec(
          "INSERT OR IGNORE INTO wallet_runs (wallet, entry_id) VALUES (?, ?)",
          w.address.toLowerCase(),
          entryId,
        );
    }
  }

  /** Marks a payment intent or refund id as counted; false if it was already. */
  #newPaymentRef(ref: string): boolean {
    if (this.#sql.exec("SELECT 1 FROM payment_refs WHERE ref = ?", ref).toArray()[0]) return false;
    this.#sql.exec("INSERT INTO payment_refs (ref) VALUES (?)", ref);
    return true;
  }

  /** What `requestId` was charged, if it was. */
  #charged(requestId: string): number | undefined {
    const row = this.#sql
      .exec<{ cents: number }>("SELECT cents FROM entries WHERE ref = ? AND kind = 'charge'", requestId)
      .toArray()[0];
    return row === undefined ? undefined : -row.cents;
  }

  #balance(now: number): Balance {
    const settled = this.#settled();
    const held = this.#held(now);
    // A refund of credit already spent can leave the settled sum below zero; nothing is free then.
    return { settledCents: settled, heldCents: held, freeCents: Math.max(0, settled - held) };
  }

  /** Whether the account's Webhooks object must hear of a request: unless it said it has nothing to hear of. */
  #webhooks(): boolean {
    return (
      this.#sql.exec<{ webhooks: number | null }>("SELECT webhooks FROM account WHERE id = 1").one().webhooks !== 0
    );
  }

  #settled(): number {
    return this.#sql.exec<{ settled_cents: number }>("SELECT settled_cents FROM account WHERE id = 1").one()
      .settled_cents;
  }

  /**
   * What is held, as the balance shows it: the live holds and what the leases' runs in flight hold (as
   * their isolates last said). The credit a lease keeps for runs to come is the account's still, and
   * shown as free; it is not spendable elsewhere until its isolate gives it back (#spendable).
   */
  #held(now: number): number {
    return (
      this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM holds WHERE expires_at > ?", now).one()
        .s +
      this.#sql
        .exec<{ s: number }>("SELECT COALESCE(SUM(in_flight), 0) AS s FROM leases WHERE expires_at > ?", now)
        .one().s
    );
  }

  /** What a new hold or lease may be granted: the settled sum less every hold and every lease, whole. */
  #spendable(now: number): number {
    const leased = this.#sql
      .exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM leases WHERE expires_at > ?", now)
      .one().s;
    const held = this.#sql
      .exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM holds WHERE expires_at > ?", now)
      .one().s;
    return Math.max(0, this.#settled() - held - leased);
  }

  /** Records run `o` as in flight under lease `leaseId`. */
  #open(leaseId: string, o: LeaseOpen): void {
    if (o.cents <= 0) return;
    // A retry of a run another lease had in flight: it is this lease's now (#closeOpen says why).
    this.#closeOpen(o.ref, leaseId);
    this.#sql.exec(
      "INSERT OR REPLACE INTO lease_open (ref, lease_id, cents, op, detail) VALUES (?, ?, ?, ?, ?)",
      o.ref,
      leaseId,
      Math.floor(o.cents),
      o.op,
      o.detail ? JSON.stringify(o.detail) : null,
    );
  }

  /**
   * Run `ref` is charged (by lease `by`): it is no longer in flight anywhere. When another lease had it
   * in flight — its first attempt's isolate died, and the retry was metered elsewhere — that lease no
   * longer shows it as held, and its expiry will not charge it.
   */
  #closeOpen(ref: string, by: string): void {
    const row = this.#sql
      .exec<{ lease_id: string; cents: number }>("SELECT lease_id, cents FROM lease_open WHERE ref = ?", ref)
      .toArray()[0];
    if (!row) return;
    if (row.lease_id !== by)
      this.#sql.exec("UPDATE leases SET in_flight = MAX(0, in_flight - ?) WHERE id = ?", row.cents, row.lease_id);
    this.#sql.exec("DELETE FROM lease_open WHERE ref = ?", ref);
  }

  /**
   * How long each isolate serving the account should gather its charges between commits so that
   * their commits together stay near LEDGER_COMMITS_PER_SECOND: one commit per isolate per that many
   * ms, each isolate holding one lease per key it meters (the live leases count them), at most
   * MAX_PACE_MS. One isolate, or a few: nothing beyond their own delay.
   */
  #paceMs(): number {
    const leases = this.#sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM leases").one().n;
    return Math.min(MAX_PACE_MS, Math.floor((leases * 1000) / LEDGER_COMMITS_PER_SECOND));
  }

  /** What an enclave's settlement of run `ref` took out of lease `leaseId` (settleRuns), now told to its isolate; undefined if none. */
  #takeSettled(ref: string, leaseId: string): number | undefined {
    const row = this.#sql
      .exec<{ cents: number }>("SELECT cents FROM lease_settled WHERE ref = ? AND lease_id = ?", ref, leaseId)
      .toArray()[0];
    if (!row) return undefined;
    this.#sql.exec("DELETE FROM lease_settled WHERE ref = ?", ref);
    return row.cents;
  }

  /** Whether lease `leaseId` expired (and so may not be used again). */
  #expiredLease(leaseId: string): boolean {
    return this.#sql.exec("SELECT 1 FROM payment_refs WHERE ref = ?", leaseRef(leaseId)).toArray().length > 0;
  }

  #lease(leaseId: string): { cents: number; key_hash: string | null } | undefined {
    return this.#sql
      .exec<{ cents: number; key_hash: string | null }>("SELECT cents, key_hash FROM leases WHERE id = ?", leaseId)
      .toArray()[0];
  }

  #free(now: number): number {
    return Math.max(0, this.#settled() - this.#held(now));
  }

  /**
   * A key's charges plus its live holds and its leases: whole (`strict`, what caps a new grant), or
   * only their runs in flight (what the key has spent and is spending, as shown).
   */
  #keySpent(keyHash: string, now: number, strict = false): number {
    const charged =
      this.#sql
        .exec<{ spent_cents: number }>("SELECT spent_cents FROM key_spend WHERE key_hash = ?", keyHash)
        .toArray()[0]?.spent_cents ?? 0;
    const held = this.#sql
      .exec<{ s: number }>(
        "SELECT COALESCE(SUM(cents), 0) AS s FROM holds WHERE key_hash = ? AND expires_at > ?",
        keyHash,
        now,
      )
      .one().s;
    const leased = this.#sql
      .exec<{ s: number }>(
        `SELECT COALESCE(SUM(${strict ? "cents" : "in_flight"}), 0) AS s FROM leases WHERE key_hash = ? AND expires_at > ?`,
        keyHash,
        now,
      )
      .one().s;
    return charged + held + leased;
  }
}

/**
 * The commits a second one account's Ledger paces its isolates to, together: half of what one Durable
 * Object takes (about 1 000 requests a second), leaving room for lease asks, reads and settlements.
 */
export const LEDGER_COMMITS_PER_SECOND = 500;
/** The longest an isolate is asked to gather charges between commits (a second: past it, reads through other isolates lag too much). */
const MAX_PACE_MS = 1_000;

/** Marks an expired lease's id (in payment_refs, which is kept beyond retention), so a late request for it starts anew. */
const leaseRef = (leaseId: string) => `lease:${leaseId}`;

function parseDetail(json: string | null): UsageDetail {
  if (!json) return {};
  try {
    return JSON.parse(json) as UsageDetail;
  } catch {
    return {};
  }
}
