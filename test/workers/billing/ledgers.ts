// The accounts of the billing suites and the audit every billing test ends with (docs/design/billing.md,
// Ledger): after each test, every Ledger in the namespace — each one any request of the test, of an
// earlier test or of a hook created, found by listing the namespace — and every account made here
// must hold `balance == sum of entries` (the ledger's own `audit()`, plus the sum read back from its
// SQLite storage) with no hold left, live or expired. An account whose Ledger was never created has
// no entry and no hold, so nothing a test does to credit can escape the audit.
//
// The workerd pieces (SELF, the LEDGER namespace, listDurableObjectIds, runInDurableObject) are
// passed in by each suite, so this file needs no workerd types (the Node typecheck reads it too).
import { afterEach, expect } from "vitest";
import { apiKeyHash } from "../../../shared/hashing.ts";
import { edgeClient } from "../stack.ts";

/** What `Ledger.audit()` answers (workers/billing/ledger.ts, LedgerAudit). */
export type AuditResult = {
  settledCents: number;
  heldCents: number;
  freeCents: number;
  entriesSumCents: number;
  consistent: boolean;
};

/** The Ledger stub's methods the suites and the audit use. */
export type LedgerStub = {
  audit(): Promise<AuditResult>;
  balance(): Promise<{ settledCents: number; heldCents: number; freeCents: number }>;
  credit(paymentIntentId: string, cents: number): Promise<unknown>;
  customer(candidate?: string): Promise<string | null>;
  hold(requestId: string, maxCents: number, holdMs: number): Promise<{ granted: number }>;
  release(requestId: string): Promise<unknown>;
};

/** A Ledger's storage as read from inside the object (runInDurableObject). */
export type LedgerRows = { settledCents: number; entriesSumCents: number; holdRows: number; openRuns: number };

/** The part of a Durable Object's state the audit reads. */
type SqlState = { storage: { sql: { exec(query: string): { one(): Record<string, unknown> } } } };

/** A Ledger's tables read back without its code: pass to runInDurableObject. */
export function ledgerRows(_ledger: unknown, state: SqlState): LedgerRows {
  const n = (query: string) => Number(state.storage.sql.exec(query).one().n);
  return {
    settledCents: n("SELECT settled_cents AS n FROM account WHERE id = 1"),
    entriesSumCents: n("SELECT COALESCE(SUM(cents), 0) AS n FROM entries"),
    holdRows: n("SELECT COUNT(*) AS n FROM holds"),
    // Runs an isolate's credit lease told the Ledger were in flight: none once everything has answered.
    openRuns: n("SELECT COUNT(*) AS n FROM lease_open"),
  };
}

type Fetcher = { fetch(input: string, init?: RequestInit): Promise<Response> };

export type LedgerDeps<Id, Stub extends LedgerStub> = {
  self: Fetcher;
  namespace: { idFromName(name: string): Id; get(id: Id): Stub };
  /** listDurableObjectIds of cloudflare:test, bound to the namespace. */
  listIds(): Promise<Id[]>;
  /** Reads the object's tables directly (runInDurableObject of cloudflare:test). */
  rows(stub: Stub): Promise<LedgerRows>;
};

/** How long the audit waits for the edge's commits after a test's last answer (lease.ts COMMIT_DELAY_MS and a commit, with room). */
const AUDIT_PATIENCE_MS = 3_000;

export const masterHex = (master: bigint) => master.toString(16).padStart(64, "0");

/**
 * The accounts helper of a billing suite. Registers, for the calling file, an afterEach that audits
 * every Ledger; every account a test makes goes through `newAccount` (or, when a wallet made it on
 * chain, `ledgerOfMaster`), which registers it for that audit as well.
 */
export function billingLedgers<Id extends { toString(): string }, Stub extends LedgerStub>(deps: LedgerDeps<Id, Stub>) {
  const { ok200 } = edgeClient(deps.self);
  /** Every account registered here, by its Ledger's id: audited after every later test too. */
  const registered = new Map<string, { label: string; stub: Stub }>();
  let refs = 0;

  function ledgerOfMaster(master: bigint): Stub {
    const id = deps.namespace.idFromName(masterHex(master));
    const known = registered.get(id.toString());
    if (known) return known.stub;
    const stub = deps.namespace.get(id);
    registered.set(id.toString(), { label: `account ${masterHex(master).slice(0, 12)}`, stub });
    return stub;
  }
  const ledgerOf = (key: string) => ledgerOfMaster(apiKeyHash(key));

  /** Puts `cents` in the account's ledger directly, as a payment intent nobody made would. */
  async function credit(key: string, cents: number): Promise<void> {
    await ledgerOf(key).credit(`pi_direct_${Date.now()}_${refs++}`, cents);
  }

  /** A new managed account (new_account, free), registered for the audit, with `cents` put in its ledger. */
  async function newAccount(name = "payer", options: { email?: string; cents?: number } = {}): Promise<string> {
    const { api_key: key } = await ok200<{ api_key: string }>("new_account", {
      body: { account_name: name, ...(options.email ? { email: options.email } : {}) },
    });
    ledgerOf(key);
    if (options.cents) await credit(key, options.cents);
    return key;
  }

  /** Every Ledger there is, by id: those the namespace lists and those registered here. */
  async function allLedgers(): Promise<Map<string, { label: string; stub: Stub }>> {
    const all = new Map(registered);
    for (const id of await deps.listIds()) {
      if (!all.has(id.toString()))
        all.set(id.toString(), { label: `ledger ${id.toString().slice(0, 12)}`, stub: deps.namespace.get(id) });
    }
    return all;
  }

  /** The invariant, for every Ledger: the failures, by ledger, none when all hold. */
  async function auditFailures(): Promise<string[]> {
    const failures: string[] = [];
    await Promise.all(
      [...(await allLedgers()).values()].map(async ({ label, stub }) => {
        const [audit, rows] = await Promise.all([stub.audit(), deps.rows(stub)]);
        const ok =
          audit.consistent &&
          audit.entriesSumCents === audit.settledCents &&
          audit.heldCents === 0 &&
          audit.freeCents === audit.entriesSumCents - audit.heldCents &&
          rows.holdRows === 0 &&
          rows.openRuns === 0 &&
          rows.entriesSumCents === rows.settledCents &&
          rows.entriesSumCents === audit.entriesSumCents;
        if (!ok) failures.push(`${label}: ${JSON.stringify({ audit, rows })}`);
      }),
    );
    return failures;
  }

  /**
   * The audit, once the edge's last charges are in: a run's answer goes out before its charge reaches
   * the Ledger (workers/billing/lease.ts commits it a moment later), so a failure is looked
   * at again for up to AUDIT_PATIENCE_MS; a hold left behind or a sum that is wrong stays a failure.
   */
  async function auditAll(): Promise<void> {
    const until = Date.now() + AUDIT_PATIENCE_MS;
    let failures = await auditFailures();
    while (failures.length > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      failures = await auditFailures();
    }
    expect(failures, "every ledger: balance == sum of entries, no hold left").toEqual([]);
  }

  /** Every Ledger's settled cents, by ledger: to show a request changed none of them. */
  async function snapshot(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const [id, { stub }] of await allLedgers()) out[id] = (await stub.audit()).entriesSumCents;
    return out;
  }

  afterEach(auditAll);

  return { newAccount, credit, ledgerOf, ledgerOfMaster, auditFailures, snapshot };
}
