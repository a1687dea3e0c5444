// The credit ledger (billing.md, Ledger): one Durable Object per account, named by the account's
// master hash, which survives conversion to ChainSecured and ownership transfers, so the balance
// stays with the account. All amounts are integer cents, in the object's SQLite storage:
//
//   entries(id, kind, cents, ref UNIQUE, key_hash, created_at)   credit (+, ref = payment intent),
//                                                                  charge (−, ref = request id),
//                                                                  adjustment (±)
//   holds(id, request_id UNIQUE, cents, key_hash, expires_at)     credit reserved for work in flight
//   account(id = 1, settled_cents, customer_id, email)             the sum of entries, cached; the
//                                                                  Stripe customer and new_account's email
//
// The free balance is the settled sum minus the live holds. Every operation is one synchronous
// transaction of the object (no await inside), so concurrent requests cannot both spend the same
// cent. `hold`, `settle` and `release` are idempotent on the request id, `credit` on the payment
// intent id. A hold that expires unsettled is charged in full, as the charge of its request id
// (billing.md): the edge that held it stopped before it could settle (killed, or its invocation
// cancelled while the work went on), so the work may have been done, and a client must not be
// able to avoid paying by making that happen. Every operation first turns the holds that have
// expired into charges, so nothing anyone reads ever shows an expired hold. A settle that comes
// after that finds the charge and charges nothing more; a hold for a request id already charged
// reserves nothing new.
import { DurableObject } from "cloudflare:workers";

export type HoldRefusal = "balance" | "spend_limit";
/** `alreadyCharged`: the request id was charged already (its hold expired): `granted` is what it paid, nothing new is held. */
export type HoldResult = { granted: number; freeCents: number; refusedBy?: HoldRefusal; alreadyCharged?: true };
/** `keySpentCents`: for a usage key's request, its charges plus holds after the settle (webhooks' usage_key.cap_reached). */
export type SettleResult = { chargedCents: number; freeCents: number; keySpentCents?: number };
export type CreditResult = { creditedCents: number; alreadyCredited: boolean; freeCents: number };
export type Balance = { settledCents: number; heldCents: number; freeCents: number };
/** The ledger checked against itself: the cached sum must equal the entries' sum. */
export type LedgerAudit = Balance & { entriesSumCents: number; consistent: boolean };

/** A spend-capped usage key (cap 0 = none): its charges plus holds may not pass the cap. */
export type KeyCap = { keyHash: string; capCents: number };

export class Ledger extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS entries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('credit', 'charge', 'adjustment')),
        cents INTEGER NOT NULL,
        ref TEXT NOT NULL UNIQUE,
        key_hash TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS entries_key ON entries (key_hash) WHERE key_hash IS NOT NULL;
      CREATE TABLE IF NOT EXISTS holds (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        request_id TEXT NOT NULL UNIQUE,
        cents INTEGER NOT NULL CHECK (cents > 0),
        key_hash TEXT,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS account (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        settled_cents INTEGER NOT NULL,
        customer_id TEXT,
        email TEXT
      );
      INSERT OR IGNORE INTO account (id, settled_cents) VALUES (1, 0);
    `);
    // Ledgers made before the email column existed get it.
    const columns = this.#sql.exec<{ name: string }>("PRAGMA table_info(account)").toArray().map((r) => r.name);
    if (!columns.includes("email")) this.#sql.exec("ALTER TABLE account ADD COLUMN email TEXT");
  }

  /**
   * Reserves up to `maxCents` for `requestId`: the smallest of the free balance, the key's
   * remaining cap and `maxCents`. Nothing left → granted 0, no hold, and what refused.
   */
  hold(requestId: string, maxCents: number, holdMs: number, key?: KeyCap): HoldResult {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const existing = this.#sql.exec<{ cents: number }>("SELECT cents FROM holds WHERE request_id = ?", requestId).toArray()[0];
      if (existing) return { granted: existing.cents, freeCents: this.#free(now) };
      const charged = this.#charged(requestId);
      if (charged !== undefined) return { granted: charged, freeCents: this.#free(now), alreadyCharged: true };
      const free = this.#free(now);
      let granted = Math.min(Math.floor(maxCents), free);
      let refusedBy: HoldRefusal = "balance";
      if (key && key.capCents > 0) {
        const left = key.capCents - this.#keySpent(key.keyHash, now);
        if (left < granted) {
          granted = left;
          refusedBy = "spend_limit";
        }
      }
      if (granted <= 0) return { granted: 0, freeCents: free, refusedBy };
      this.#sql.exec("INSERT INTO holds (request_id, cents, key_hash, expires_at) VALUES (?, ?, ?, ?)", requestId, granted, key?.keyHash ?? null, now + holdMs);
      return { granted, freeCents: free - granted };
    });
  }

  /**
   * Charges `chargedCents` for `requestId` and frees its hold. The charge never exceeds the hold it
   * settles (a run is stopped at the seconds it was granted); a second settle, or one after the
   * hold expired and was charged in full, charges nothing more and answers the charge there is.
   */
  settle(requestId: string, chargedCents: number, key?: KeyCap): SettleResult {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const done = this.#charged(requestId);
      if (done !== undefined) {
        this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
        return { chargedCents: done, freeCents: this.#free(now) };
      }
      const hold = this.#sql.exec<{ cents: number; key_hash: string | null }>("SELECT cents, key_hash FROM holds WHERE request_id = ?", requestId).toArray()[0];
      const cents = Math.max(0, Math.floor(hold ? Math.min(chargedCents, hold.cents) : chargedCents));
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
      const keyHash = hold?.key_hash ?? key?.keyHash ?? null;
      if (cents > 0) {
        this.#sql.exec("INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('charge', ?, ?, ?, ?)", -cents, requestId, keyHash, now);
        this.#sql.exec("UPDATE account SET settled_cents = settled_cents - ? WHERE id = 1", cents);
      }
      return { chargedCents: cents, freeCents: this.#free(now), ...(keyHash === null ? {} : { keySpentCents: this.#keySpent(keyHash, now) }) };
    });
  }

  /**
   * Frees `requestId`'s hold without charging (the work was refused before it cost anything). A
   * hold that had expired is a charge already and stays one.
   */
  release(requestId: string): Balance {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", requestId);
      return this.#balance(now);
    });
  }

  /** Adds a payment's `cents` once per payment intent, whichever path reports it first. */
  credit(paymentIntentId: string, cents: number): CreditResult {
    return this.ctx.storage.transactionSync(() => {
      const now = this.#chargeExpired();
      const known = this.#sql.exec("SELECT 1 FROM entries WHERE ref = ?", paymentIntentId).toArray()[0];
      if (known) return { creditedCents: 0, alreadyCredited: true, freeCents: this.#free(now) };
      const amount = Math.floor(cents);
      this.#sql.exec("INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('credit', ?, ?, NULL, ?)", amount, paymentIntentId, now);
      this.#sql.exec("UPDATE account SET settled_cents = settled_cents + ? WHERE id = 1", amount);
      return { creditedCents: amount, alreadyCredited: false, freeCents: this.#free(now) };
    });
  }

  balance(): Balance {
    return this.ctx.storage.transactionSync(() => this.#balance(this.#chargeExpired()));
  }

  /** The account's Stripe customer: the stored one, else `candidate` becomes it (first one wins). */
  customer(candidate?: string): string | null {
    if (candidate) this.#sql.exec("UPDATE account SET customer_id = ? WHERE id = 1 AND customer_id IS NULL", candidate);
    return this.#sql.exec<{ customer_id: string | null }>("SELECT customer_id FROM account WHERE id = 1").one().customer_id;
  }

  /** The account's contact email from new_account (kept for its Stripe customer); `email` replaces it. (Not `email`: that name is the Email Workers handler.) */
  contactEmail(email?: string): string | null {
    if (email) this.#sql.exec("UPDATE account SET email = ? WHERE id = 1", email);
    return this.#sql.exec<{ email: string | null }>("SELECT email FROM account WHERE id = 1").one().email;
  }

  /** The invariant billing tests end with: the cached sum equals the sum of the entries. */
  audit(): LedgerAudit {
    return this.ctx.storage.transactionSync(() => {
      const b = this.#balance(this.#chargeExpired());
      const entriesSum = this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM entries").one().s;
      return { ...b, entriesSumCents: entriesSum, consistent: entriesSum === b.settledCents };
    });
  }

  /**
   * Turns every hold that has expired into the charge of its request id, in full (a request id
   * charged already keeps its charge), and answers the time it judged by.
   */
  #chargeExpired(): number {
    const now = Date.now();
    const expired = this.#sql.exec<{ request_id: string; cents: number; key_hash: string | null; expires_at: number }>("SELECT request_id, cents, key_hash, expires_at FROM holds WHERE expires_at <= ?", now).toArray();
    for (const hold of expired) {
      if (this.#charged(hold.request_id) === undefined) {
        this.#sql.exec("INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('charge', ?, ?, ?, ?)", -hold.cents, hold.request_id, hold.key_hash, hold.expires_at);
        this.#sql.exec("UPDATE account SET settled_cents = settled_cents - ? WHERE id = 1", hold.cents);
      }
      this.#sql.exec("DELETE FROM holds WHERE request_id = ?", hold.request_id);
    }
    return now;
  }

  /** What `requestId` was charged, if it was. */
  #charged(requestId: string): number | undefined {
    const row = this.#sql.exec<{ cents: number }>("SELECT cents FROM entries WHERE ref = ? AND kind = 'charge'", requestId).toArray()[0];
    return row === undefined ? undefined : -row.cents;
  }

  #balance(now: number): Balance {
    const settled = this.#settled();
    const held = this.#held(now);
    return { settledCents: settled, heldCents: held, freeCents: settled - held };
  }

  #settled(): number {
    return this.#sql.exec<{ settled_cents: number }>("SELECT settled_cents FROM account WHERE id = 1").one().settled_cents;
  }

  #held(now: number): number {
    return this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM holds WHERE expires_at > ?", now).one().s;
  }

  #free(now: number): number {
    return Math.max(0, this.#settled() - this.#held(now));
  }

  /** A key's charges plus its live holds. */
  #keySpent(keyHash: string, now: number): number {
    const charged = this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(-cents), 0) AS s FROM entries WHERE key_hash = ? AND kind = 'charge'", keyHash).one().s;
    const held = this.#sql.exec<{ s: number }>("SELECT COALESCE(SUM(cents), 0) AS s FROM holds WHERE key_hash = ? AND expires_at > ?", keyHash, now).one().s;
    return charged + held;
  }
}
