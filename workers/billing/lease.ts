// An isolate's credit leases (docs/design/billing.md, Leases): the credit one edge isolate has reserved in
// an account's Ledger for the runs it meters, so that a run is held here, in memory, and costs the
// Ledger no call of its own. What a run used is charged here too, and its answer goes out at once; the
// charges go to the Ledger in the isolate's commits, each with every charge made meanwhile (a group
// commit): the first charge after a quiet moment schedules one COMMIT_DELAY_MS later, and it goes on
// committing until nothing is pending. So one client pays a Ledger call every few runs, and many
// clients pay one call for many runs. Should the isolate die before it commits a run it answered, the
// enclave that ran it settles that run's charge itself (enclave/receipts/settlements.ts,
// workers/routes/settlements.ts); the Ledger charges each billing ref once, whoever comes first.
//
// A lease is per account and per usage key (the key's cap counts the lease, so a key can never be
// leased past it). The Ledger grants a run's need plus a little for the runs that follow (at most a
// quarter of what the account has left beyond the need); what an isolate does not use it gives back
// at its commits, and all of it once it has been idle IDLE_RETURN_MS. A run in flight when a commit
// happens is told to the Ledger (`opened`), so that, should the isolate die, the lease's expiry
// charges it in full under its own billing ref, as an expired hold is charged, unless its enclave
// settles it first; a run that began and ended between two commits never needs to be.
import type { Logger } from "../../shared/log.ts";
import { DEFAULT_COMMIT_DELAY_MS } from "../config.ts";
import type { Ledger } from "./ledger.ts";
import type {
  CommitResult,
  KeyCap,
  LeaseCharge,
  LeaseCommit,
  LeaseOpen,
  UsageDetail,
  UsageMeta,
} from "./ledgerTypes.ts";

/**
 * How a lease reaches its account's Ledger (a stub of it, made in the calling request): the Ledger's
 * own `lease` and `commit`, as a call answers them.
 */
export type LeaseLedger = {
  [K in "lease" | "commit"]: (...args: Parameters<Ledger[K]>) => Promise<ReturnType<Ledger[K]>>;
};

/** Beyond the longest run in flight, how long a lease outlives its isolate's last commit: the run's way back, and a commit. */
export const LEASE_MARGIN_MS = 5 * 60_000;
/** How many runs' worth of credit a busy isolate keeps beyond what its runs in flight hold. */
const KEEP_RUNS = 4;
/** How many times a commit is tried before whoever waits on its charges is told its error. */
const COMMIT_ATTEMPTS = 3;
/** How long the first charge after a quiet moment waits for others to commit with, unless the lease is told otherwise (SIGIL_LEASE_COMMIT_DELAY_MS; config.ts says why a second). */
export const COMMIT_DELAY_MS = DEFAULT_COMMIT_DELAY_MS;
/** How many failed commits in a row a scheduled commit makes before it leaves its charges to the next request. */
const DRAIN_ATTEMPTS = 5;
/** How often a request whose charge waits for another request's commit looks whether it is done. */
const COMMIT_POLL_MS = 3;
/** After this long without a run, an isolate gives its whole lease back. */
export const IDLE_RETURN_MS = 2_000;

/** A run held under the lease: its cents, when it must have ended, and whether the Ledger knows of it. */
type Reservation = {
  cents: number;
  deadline: number;
  op: UsageMeta["op"];
  detail: UsageDetail | undefined;
  told: boolean;
};

/** A hold under a lease: the cents granted (0: refused, and by what), and the Ledger's free balance as last heard. */
export type LeaseHold = {
  granted: number;
  refusedBy?: "balance" | "spend_limit";
  freeCents: number;
  webhooks: boolean;
};

/** A settle under a lease, once committed: what the run was charged and what the Ledger said after. */
export type LeaseSettle = { chargedCents: number; freeCents: number; keySpentCents?: number; webhooks: boolean };

/**
 * A charge made under a lease: what the run is charged (its answer says so at once), whether the
 * account's webhooks must hear of it (as the Ledger last said), and its commit, when someone must
 * wait for it (the balance after it, for balance.low).
 */
export type Settlement = {
  chargedCents: number;
  webhooks: boolean;
  /** Waits for the charge's commit: the scheduled one, or (`now`) one made at once. */
  committed(now?: boolean): Promise<LeaseSettle>;
};

/**
 * A charge waiting to be committed, and what came of it. The request that made it waits for
 * `settled` by looking (a short timer), never by awaiting a promise another request resolves:
 * workerd cancels a request that waits on nothing of its own ("Promise will never complete").
 */
type Pending = { charge: LeaseCharge; settled?: LeaseSettle; failed?: unknown; attempts: number };

export class CreditLease {
  id: string = crypto.randomUUID();
  /** What the Ledger holds for this lease, as this isolate counts it. */
  leased = 0;
  key: KeyCap | undefined;
  /** The Ledger's answer to the last call: its free balance, and whether the account's webhooks must hear. */
  freeCents = 0;
  webhooks = true;
  readonly #reserved = new Map<string, Reservation>();
  #reservedCents = 0;
  /** Charges not yet committed, and who waits on each. */
  #pending: Pending[] = [];
  #owedCents = 0;
  /** Refs the Ledger was told were in flight that ended without a charge (released). */
  #closed: string[] = [];
  /** Whether a commit is under way (made by one of the isolate's requests). */
  #committing = false;
  /** Whether a commit is scheduled (#schedule), and keeps committing until nothing is pending. */
  #scheduled = false;
  /** When the scheduled commit is due (0: it is not waiting). */
  #commitAt = 0;
  /** The largest run need seen lately: what the lease keeps beyond its runs is a few of these. */
  #lastNeed = 1;
  #lastActivity = 0;
  #idleWatch = false;
  /** Whether a request is asking the Ledger for more credit, and how many holds are waiting for credit. */
  #growing = false;
  #wanting = 0;
  /** Whether the Ledger's view of this lease (its runs in flight, its size) is behind and worth a commit. */
  #dirty = false;
  /** Whether the next commit gives back everything its runs in flight do not hold (the key's cap changed, or the isolate is idle). */
  #returnIdle = false;
  readonly #log: Logger | undefined;
  /** How long the first charge after a quiet moment waits before its commit (COMMIT_DELAY_MS unless configured). */
  commitDelayMs = COMMIT_DELAY_MS;
  /** How long the Ledger asked its isolates to gather charges between commits, at its last commit (CommitResult.paceMs). */
  #paceMs = 0;

  constructor(key: KeyCap | undefined, log?: Logger) {
    this.key = key;
    this.#log = log;
  }

  /**
   * The key's cap is now `key.capCents` (the key cache read it anew after an event): the Ledger
   * judges every grant by the cap it is given, so what this lease holds beyond its runs in flight
   * is given back before its next hold, and asked for again under the new cap.
   */
  capChanged(key: KeyCap): void {
    this.key = key;
    this.#returnIdle = true;
  }

  /** The credit this isolate may still give a run. */
  get available(): number {
    return this.leased - this.#reservedCents - this.#owedCents;
  }

  /** Whether anything is held, owed or leased (an idle, empty lease may be forgotten). */
  get busy(): boolean {
    return (
      this.leased > 0 || this.#reserved.size > 0 || this.#pending.length > 0 || this.#committing || this.#scheduled
    );
  }

  /**
   * Holds up to `needCents` for `ref` (a run, or a managed write: `meta`) that may take `lastsMs`:
   * from the lease when it has them, else after one call that adds them to it. `granted` 0 is a refusal.
   */
  async hold(
    ledger: LeaseLedger,
    ref: string,
    needCents: number,
    lastsMs: number,
    meta: UsageMeta,
  ): Promise<LeaseHold> {
    this.#lastActivity = Date.now();
    this.#lastNeed = Math.max(1, needCents);
    const known = this.#reserved.get(ref);
    if (known) return { granted: known.cents, freeCents: this.freeCents, webhooks: this.webhooks };
    // The key's cap changed on chain: what the lease holds was granted under the old one. Give it
    // back, so that the Ledger judges this run by the new cap.
    if (this.#returnIdle) await this.#until(ledger, () => (this.#returnIdle ? undefined : true));
    let refusedBy: LeaseHold["refusedBy"];
    // Whether this hold's own ask told the Ledger of it (as in flight under the lease).
    let told = false;
    // One request of the isolate asks the Ledger for more at a time; the others wait for its answer
    // (looking, as #until does) and ask only if it did not bring enough. The ones waiting make the
    // ask bigger, so a burst of runs costs a few calls, not one each.
    this.#wanting++;
    try {
      while (this.#growing && this.available < needCents) await new Promise((r) => setTimeout(r, COMMIT_POLL_MS));
      if (this.available < needCents) {
        this.#growing = true;
        try {
          const want = needCents - Math.max(0, this.available);
          // Room for as many more as are in flight now: a busy isolate asks seldom.
          const extra = Math.max(KEEP_RUNS, this.#wanting - 1, this.#reserved.size) * needCents;
          const open = { ref, cents: needCents, op: meta.op, ...(meta.detail ? { detail: meta.detail } : {}) };
          let answer = await ledger.lease(this.id, want, extra, lastsMs + LEASE_MARGIN_MS, this.key, open);
          if (answer.expired) {
            this.#restart();
            answer = await ledger.lease(this.id, needCents, extra, lastsMs + LEASE_MARGIN_MS, this.key, open);
          }
          told = answer.granted > 0;
          this.leased += answer.granted;
          this.freeCents = answer.freeCents;
          this.webhooks = answer.webhooks;
          refusedBy = answer.refusedBy;
        } finally {
          this.#growing = false;
        }
      }
    } finally {
      this.#wanting--;
    }
    const granted = Math.max(0, Math.min(needCents, this.available));
    if (granted === 0)
      return { granted: 0, refusedBy: refusedBy ?? "balance", freeCents: this.freeCents, webhooks: this.webhooks };
    // A run may last as many seconds as it was granted cents; a write takes what it takes.
    const lasts = meta.op === "run" ? Math.min(lastsMs, granted * 1000) : lastsMs;
    this.#reserved.set(ref, {
      cents: granted,
      deadline: Date.now() + lasts + LEASE_MARGIN_MS,
      op: meta.op,
      detail: meta.detail,
      told,
    });
    this.#reservedCents += granted;
    return { granted, freeCents: this.freeCents, webhooks: this.webhooks };
  }

  /**
   * Charges run `ref` `cents` (never more than it held). The run's answer does not wait for the
   * charge to reach the Ledger: it goes in the isolate's next commit, which the first charge after a
   * quiet moment schedules COMMIT_DELAY_MS later (`defer` keeps the calling request's invocation alive
   * for it: waitUntil), with every charge made meanwhile. `committed()` answers once it is in the
   * Ledger, with what the ref was charged there (another attempt's charge, if one was made first) and
   * the balance after. An edge killed before its commit loses no charge: the enclave that ran the
   * run settles it itself (docs/design/billing.md, Leases).
   */
  settle(
    ledger: LeaseLedger,
    ref: string,
    cents: number,
    meta: UsageMeta,
    defer?: (work: Promise<unknown>) => void,
  ): Settlement {
    this.#lastActivity = Date.now();
    const held = this.#reserved.get(ref);
    this.#take(ref);
    const charge: LeaseCharge = {
      ref,
      cents: Math.max(0, Math.min(Math.floor(cents), held?.cents ?? cents)),
      op: meta.op,
      detail: { ...held?.detail, ...meta.detail },
    };
    const entry: Pending = { charge, attempts: 0 };
    this.#pending.push(entry);
    this.#owedCents += charge.cents;
    this.#schedule(ledger, defer);
    return {
      chargedCents: charge.cents,
      webhooks: this.webhooks,
      // Waits for the scheduled commit (it does not commit sooner: the charge goes with its batch).
      committed: (now = false) =>
        this.#until(
          ledger,
          () => {
            if (entry.failed !== undefined) throw entry.failed;
            return entry.settled;
          },
          now,
        ),
    };
  }

  /**
   * Waits until every charge this isolate made so far is in the Ledger (or has failed its commits
   * COMMIT_ATTEMPTS times): a read of the account's balance or usage through this isolate then shows
   * its own runs.
   */
  async flush(ledger: LeaseLedger): Promise<void> {
    const waiting = [...this.#pending];
    if (waiting.length === 0 && !this.#dirty && this.#closed.length === 0) return;
    await this.#until(ledger, () =>
      waiting.every((p) => p.settled !== undefined || p.failed !== undefined) &&
      !this.#dirty &&
      this.#closed.length === 0
        ? true
        : undefined,
    );
  }

  /**
   * Frees `ref`'s hold without a charge (it was refused before it ran, or a write before it was sent),
   * and commits: a Ledger told the run was in flight must hear it is not (or an expiry would charge
   * it), and the credit goes back to the account rather than waiting in this isolate.
   */
  release(ledger: LeaseLedger, ref: string, defer?: (work: Promise<unknown>) => void): void {
    const r = this.#reserved.get(ref);
    if (!r) return;
    this.#take(ref);
    // Told or not: a commit under way may be telling the Ledger of it right now, and nothing would
    // tell it after that the run ended (its lease's expiry would charge it in full).
    this.#closed.push(ref);
    this.#dirty = true;
    this.#schedule(ledger, defer);
  }

  /**
   * Makes sure a commit follows: unless one is scheduled already, COMMIT_DELAY_MS from now (so that
   * the charges of the runs ending meanwhile go with it), and then more until nothing is pending. A
   * commit that fails is tried again after a pause, DRAIN_ATTEMPTS times; its charges then wait for
   * the next request's commit (and an idle isolate's, returnWhenIdle) — and should none come, the
   * enclaves' settlement of each run's charge (Leases) makes it.
   */
  #schedule(ledger: LeaseLedger, defer: ((work: Promise<unknown>) => void) | undefined): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const work = this.#drain(ledger);
    if (defer) defer(work);
    else work.catch(() => undefined);
  }

  async #drain(ledger: LeaseLedger): Promise<void> {
    const delay = Math.max(this.commitDelayMs, this.#paceMs);
    this.#commitAt = Date.now() + delay;
    await new Promise((r) => setTimeout(r, delay));
    this.#commitAt = 0;
    let failures = 0;
    for (;;) {
      // Checked and cleared in one step: a charge made after this sees no commit scheduled and schedules one.
      if (this.#pending.length === 0 && this.#closed.length === 0 && !this.#dirty) {
        this.#scheduled = false;
        return;
      }
      if (this.#committing) {
        await new Promise((r) => setTimeout(r, COMMIT_POLL_MS));
        continue;
      }
      try {
        await this.#commitGuarded(ledger);
        failures = 0;
      } catch {
        if (++failures >= DRAIN_ATTEMPTS) {
          this.#scheduled = false;
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * 2 ** failures));
      }
    }
  }

  /**
   * Gives back, now, everything this lease holds beyond its runs in flight, once its charges are in:
   * another lease of the account in this isolate was refused credit it may be keeping. False when it
   * has nothing to give.
   */
  async giveBack(ledger: LeaseLedger): Promise<boolean> {
    if (this.leased - this.#reservedCents <= 0 && this.#pending.length === 0) return false;
    this.#returnIdle = true;
    await this.#until(ledger, () => (this.#returnIdle ? undefined : true));
    return true;
  }

  /**
   * Once IDLE_RETURN_MS have passed without a run, gives the whole lease back: `defer` keeps the
   * calling request's invocation alive for the wait (waitUntil). One wait at a time per lease.
   */
  returnWhenIdle(ledger: LeaseLedger, defer: (work: Promise<unknown>) => void): void {
    if (this.#idleWatch) return;
    this.#idleWatch = true;
    defer(
      new Promise((r) => setTimeout(r, IDLE_RETURN_MS + 10))
        .then(() => {
          this.#idleWatch = false;
          if (Date.now() - this.#lastActivity < IDLE_RETURN_MS || this.#reserved.size > 0 || this.leased === 0) return;
          this.#returnIdle = true;
          return this.#until(ledger, () => (this.#returnIdle ? undefined : true));
        })
        .catch(() => undefined),
    );
  }

  /**
   * Waits until `done` answers something: while another request's commit is under way, by looking
   * again every COMMIT_POLL_MS; while a commit is scheduled and `commitNow` is false, by looking when
   * it is due; otherwise by making the next commit itself, of everything pending. A commit that fails
   * leaves its charges pending; a charge whose commits failed COMMIT_ATTEMPTS times is answered with
   * the error (whoever waits on it is told), and stays pending for the next commit, so none is lost.
   */
  async #until<T>(ledger: LeaseLedger, done: () => T | undefined, commitNow = true): Promise<T> {
    for (;;) {
      const answer = done();
      if (answer !== undefined) return answer;
      // Not committing now: while a commit is scheduled, look again when it is due.
      const due = !commitNow && this.#scheduled && !this.#committing ? this.#commitAt - Date.now() : 0;
      if (this.#committing || due > 0) {
        await new Promise((r) => setTimeout(r, Math.max(COMMIT_POLL_MS, due)));
        continue;
      }
      try {
        await this.#commitGuarded(ledger);
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /**
   * One commit of everything pending, by this request. One that fails leaves its charges pending; a
   * charge whose commits failed COMMIT_ATTEMPTS times is marked with the error (whoever waits on it,
   * `committed()`, gets it), and stays pending for the next commit, so none is lost.
   */
  async #commitGuarded(ledger: LeaseLedger): Promise<void> {
    this.#committing = true;
    const batch = this.#pending;
    try {
      await this.#commitOnce(ledger);
    } catch (err) {
      for (const p of batch) {
        p.attempts++;
        if (p.attempts >= COMMIT_ATTEMPTS && p.failed === undefined) p.failed = err;
      }
      this.#log?.error("ledger commit failed; its charges wait for the next commit", {
        lease: this.id,
        charges: batch.length,
        error: err instanceof Error ? err.message : String(err),
      });
      throw err;
    } finally {
      this.#committing = false;
    }
  }

  async #commitOnce(ledger: LeaseLedger): Promise<void> {
    const now = Date.now();
    const returnAll = this.#returnIdle;
    // A run past its deadline whose request never settled it (its invocation was cut off): charged in full, as an expired hold is.
    for (const [ref, r] of this.#reserved) {
      if (r.deadline > now) continue;
      this.#take(ref);
      this.#pending.push({
        charge: { ref, cents: r.cents, op: r.op, detail: r.detail ?? {}, expired: true },
        attempts: 0,
      });
      this.#owedCents += r.cents;
    }
    const batch = this.#pending;
    this.#pending = [];
    const closed = this.#closed;
    this.#closed = [];
    const opened: LeaseOpen[] = [];
    const telling: Reservation[] = [];
    let longest = 0;
    for (const [ref, r] of this.#reserved) {
      longest = Math.max(longest, r.deadline - now);
      if (r.told) continue;
      opened.push({ ref, cents: r.cents, op: r.op, ...(r.detail ? { detail: r.detail } : {}) });
      telling.push(r);
    }
    const charged = batch.reduce((t, p) => t + p.charge.cents, 0);
    // Kept for the runs to come: a few runs' worth, or as much again as its runs in flight hold when
    // it is busy — and never more than a quarter of the account's free balance, so a small account's
    // credit is not left waiting in one isolate.
    const keep = returnAll
      ? this.#reservedCents
      : this.#reservedCents +
        Math.min(Math.max(KEEP_RUNS * this.#lastNeed, this.#reservedCents), Math.floor(this.freeCents / 4));
    const returnCents = Math.max(0, this.leased - charged - keep);
    const commit: LeaseCommit = {
      charges: batch.map((p) => p.charge),
      opened,
      closed,
      returnCents,
      inFlightCents: this.#reservedCents,
      ttlMs: Math.max(longest, 0) + LEASE_MARGIN_MS,
    };
    // What is given back is gone from here at once: a run held while the commit is under way must not count on it.
    this.leased -= returnCents;
    // Cleared now, not after: a release during the commit marks the lease behind again.
    this.#dirty = false;
    let result: CommitResult;
    try {
      result = await ledger.commit(this.id, commit, this.key);
    } catch (err) {
      this.#dirty = true;
      // Nothing was committed: everything is as it was before, for the next attempt.
      this.leased += returnCents;
      this.#pending = batch.concat(this.#pending);
      this.#closed = closed.concat(this.#closed);
      throw err;
    }
    for (const r of telling) r.told = true;
    if (returnAll) this.#returnIdle = false;
    this.#owedCents -= charged;
    // What it charged, and what enclaves' settlements of its runs took out of the lease meanwhile (the
    // Ledger says; what it gave back is out of the count already).
    this.leased = Math.max(0, this.leased - (result.takenCents - returnCents));
    this.freeCents = result.freeCents;
    this.webhooks = result.webhooks;
    this.#paceMs = result.paceMs ?? 0;
    // Runs of this isolate an enclave settled first (the Ledger took their charges out of the lease,
    // counted in takenCents): one still waiting for its commit is charged already, and is not sent.
    for (const { ref, cents } of result.settledByEnclave ?? []) {
      const i = this.#pending.findIndex((p) => p.charge.ref === ref);
      if (i < 0) continue;
      const [p] = this.#pending.splice(i, 1);
      this.#owedCents -= p!.charge.cents;
      p!.settled = { chargedCents: cents, freeCents: result.freeCents, webhooks: result.webhooks };
    }
    if (result.expired) this.#restart();
    batch.forEach((p, i) => {
      p.settled = {
        chargedCents: result.charged[i] ?? 0,
        freeCents: result.freeCents,
        ...(result.keySpentCents === undefined ? {} : { keySpentCents: result.keySpentCents }),
        webhooks: result.webhooks,
      };
    });
  }

  /** Removes run `ref`'s reservation; what it held, if it had one. */
  #take(ref: string): number | undefined {
    const r = this.#reserved.get(ref);
    if (!r) return undefined;
    this.#reserved.delete(ref);
    this.#reservedCents -= r.cents;
    return r.cents;
  }

  /** The Ledger closed this lease (it expired): a new one, from nothing; runs in flight are charged under their refs all the same. */
  #restart(): void {
    this.#log?.warn("credit lease expired before its isolate committed; starting a new one", { lease: this.id });
    this.id = crypto.randomUUID();
    this.leased = 0;
    for (const r of this.#reserved.values()) r.told = false;
  }
}

/** Leases an isolate holds, most recently used last; empty ones are forgotten past MAX_LEASES. */
const MAX_LEASES = 10_000;
const leases = new Map<string, CreditLease>();

/**
 * The account `ledgerName`'s other leases in this isolate (its other keys') give back what they keep
 * beyond their runs in flight, after `refused` was refused credit: the account's credit must not wait
 * in one key's lease while another key's run is refused for it. True when any gave something back
 * (the refused hold may ask again).
 */
export async function reclaimLeases(ledgerName: string, ledger: LeaseLedger, refused: CreditLease): Promise<boolean> {
  const prefix = `${ledgerName}:`;
  const others = [...leases].filter(([name, lease]) => name.startsWith(prefix) && lease !== refused);
  const gave = await Promise.all(others.map(([, lease]) => lease.giveBack(ledger)));
  return gave.some(Boolean);
}

/**
 * Waits until the charges this isolate made for account `ledgerName` are in its Ledger (`ledger`): a
 * read of the account's balance or usage through the isolate shows the runs it answered.
 */
export async function flushLeases(ledgerName: string, ledger: LeaseLedger): Promise<void> {
  const prefix = `${ledgerName}:`;
  const mine = [...leases].filter(([name, lease]) => name.startsWith(prefix) && lease.busy).map(([, lease]) => lease);
  await Promise.all(mine.map((lease) => lease.flush(ledger)));
}

/** This isolate's lease on account `ledgerName`'s credit for `key` (undefined: the master key). */
export function leaseOf(
  ledgerName: string,
  key: KeyCap | undefined,
  log?: Logger,
  commitDelayMs = COMMIT_DELAY_MS,
): CreditLease {
  const name = `${ledgerName}:${key?.keyHash ?? "-"}`;
  let lease = leases.get(name);
  if (!lease) {
    lease = new CreditLease(key, log);
    leases.set(name, lease);
    if (leases.size > MAX_LEASES) {
      for (const [n, l] of leases) {
        if (leases.size <= MAX_LEASES) break;
        if (!l.busy) leases.delete(n);
      }
    }
  } else if (key && lease.key && lease.key.capCents !== key.capCents) lease.capChanged(key);
  lease.commitDelayMs = commitDelayMs;
  return lease;
}
