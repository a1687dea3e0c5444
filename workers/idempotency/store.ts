// The Idempotency Durable Object (docs/design/api.md, Idempotency keys): one per account, named by its master
// hash like its Ledger, so the usage keys of an account share its bound. A record's scope is the
// caller's key hash and the client's Idempotency-Key, so one key can never read another's answers.
// A record holds:
//
//   fingerprint   SHA-256 of (method, path, body): the same key with another body is refused
//   ref           the first attempt's request id: every attempt under the key holds and settles
//                 under it, so the Ledger charges the key once (docs/design/billing.md)
//   state         in_progress (an attempt holds the lease), open (an attempt ended without an
//                 answer to keep: the enclave was lost under it, or it took over from one that
//                 was), done (the answer is kept and replayed)
//   owner, lease_until   the attempt in flight; it renews the lease while it lives, so an edge
//                 that died lets a retry take over within a lease
//   enclave, instance    the enclave the latest attempt was sent to and the channel key it had
//                 then: a retry goes back to that enclave while it is the same process
//   first_outcome what became of the first attempt when it gave no answer
//   the answer    status, the headers that matter, the body as the edge gives it (sealed under
//                 the caller's key; in chunks: a run's answer can be larger than a row may be)
//
// Records expire 24 h after the first attempt; an account keeps at most MAX_RECORDS of them and
// MAX_STORED_BYTES of answers, the oldest evicted first (never one whose lease is live). Every
// method is one synchronous transaction. The requests without an account keep their records in
// objects of their own (new_account's, one per client address: idempotency/index.ts), most of
// which are never visited again; so records do not wait for a later request to expire them: an
// alarm, set for the oldest record's expiry, drops what has expired, and an object left with none
// deletes its storage.
import { DurableObject } from "cloudflare:workers";

export const RECORD_TTL_MS = 24 * 3600_000;
export const MAX_RECORDS = 1000;
export const MAX_STORED_BYTES = 32 << 20;
/** Characters per stored chunk of an answer's body (a row holds at most 2 MB). */
const CHUNK_CHARS = 256 << 10;

/** A response as it is kept and replayed. */
export type StoredAnswer = { status: number; headers: Record<string, string>; body: string };

/** What became of a first attempt that gave no answer. */
export type FirstOutcome = "interrupted" | "abandoned";

export type Begun =
  /** No record: this request is the first attempt, its request id the key's ref. */
  | { kind: "first"; ref: string }
  /** An earlier attempt gave no answer: this one takes over, under the same ref. */
  | { kind: "retry"; ref: string; enclave: string | null; instance: string | null; firstOutcome: FirstOutcome }
  | { kind: "replay"; ref: string; answer: StoredAnswer }
  /** The key was first used with another method, path or body. */
  | { kind: "reused" }
  | { kind: "in_progress"; retryAfterSeconds: number };

type Row = {
  fingerprint: string;
  ref: string;
  state: "in_progress" | "open" | "done";
  owner: string | null;
  lease_until: number;
  enclave: string | null;
  instance: string | null;
  first_outcome: FirstOutcome | null;
  status: number | null;
  headers: string | null;
};

export class Idempotency extends DurableObject {
  readonly #sql: SqlStorage;

  /** Whether the tables exist (an object whose storage its alarm deleted makes them again when used). */
  #schemaMade = false;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    this.#schema();
  }

  #schema(): void {
    if (this.#schemaMade) return;
    this.#schemaMade = true;
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS records (
        scope TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        ref TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('in_progress', 'open', 'done')),
        owner TEXT,
        lease_until INTEGER NOT NULL DEFAULT 0,
        enclave TEXT,
        instance TEXT,
        first_outcome TEXT CHECK (first_outcome IN ('interrupted', 'abandoned')),
        status INTEGER,
        headers TEXT,
        bytes INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS records_age ON records (created_at);
      CREATE TABLE IF NOT EXISTS answer_chunks (
        scope TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (scope, seq)
      );
    `);
  }

  /**
   * Starts an attempt of `requestId` under `scope`: the first (a record is made, this request
   * holds its lease), a retry that takes over from an attempt that gave no answer, a replay of the
   * kept answer, or a refusal (another body; an attempt still in flight).
   */
  async begin(scope: string, fingerprint: string, requestId: string, leaseMs: number): Promise<Begun> {
    this.#schema();
    const begun = this.ctx.storage.transactionSync((): Begun => {
      const now = Date.now();
      this.#expire(now);
      const row = this.#row(scope);
      if (!row) {
        this.#evict(now);
        this.#sql.exec(
          "INSERT INTO records (scope, fingerprint, ref, state, owner, lease_until, created_at) VALUES (?, ?, ?, 'in_progress', ?, ?, ?)",
          scope,
          fingerprint,
          requestId,
          requestId,
          now + leaseMs,
          now,
        );
        return { kind: "first", ref: requestId };
      }
      if (row.fingerprint !== fingerprint) return { kind: "reused" };
      if (row.state === "done") return { kind: "replay", ref: row.ref, answer: this.#answer(scope, row) };
      if (row.state === "in_progress" && row.lease_until > now) {
        return { kind: "in_progress", retryAfterSeconds: Math.max(1, Math.ceil((row.lease_until - now) / 1000)) };
      }
      // The attempt in flight stopped renewing its lease: its edge is gone.
      const firstOutcome: FirstOutcome = row.first_outcome ?? "abandoned";
      this.#sql.exec(
        "UPDATE records SET state = 'in_progress', owner = ?, lease_until = ?, first_outcome = ? WHERE scope = ?",
        requestId,
        now + leaseMs,
        firstOutcome,
        scope,
      );
      return { kind: "retry", ref: row.ref, enclave: row.enclave, instance: row.instance, firstOutcome };
    });
    // A new record expires at the latest when an alarm already set fires (it is for an older one).
    if (begun.kind === "first" && (await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + RECORD_TTL_MS);
    return begun;
  }

  /** Drops the expired records; sets the alarm for the next expiry, or deletes the storage of an object left empty. */
  override async alarm(): Promise<void> {
    this.#schema();
    this.#expire(Date.now());
    const { oldest } = this.#sql.exec<{ oldest: number | null }>("SELECT MIN(created_at) AS oldest FROM records").one();
    if (oldest !== null) {
      await this.ctx.storage.setAlarm(oldest + RECORD_TTL_MS);
      return;
    }
    await this.ctx.storage.deleteAll();
    this.#schemaMade = false;
  }

  /** Extends the lease of `owner`'s attempt; false when another attempt took over or it ended. */
  renew(scope: string, owner: string, leaseMs: number): boolean {
    this.#schema();
    const now = Date.now();
    return (
      this.#sql.exec(
        "UPDATE records SET lease_until = ? WHERE scope = ? AND owner = ? AND state = 'in_progress'",
        now + leaseMs,
        scope,
        owner,
      ).rowsWritten > 0
    );
  }

  /** Notes, before it is sent, which enclave (and which channel key of it) `owner`'s attempt goes to. */
  target(scope: string, owner: string, enclave: string, instance: string): boolean {
    this.#schema();
    return (
      this.#sql.exec(
        "UPDATE records SET enclave = ?, instance = ? WHERE scope = ? AND owner = ? AND state = 'in_progress'",
        enclave,
        instance,
        scope,
        owner,
      ).rowsWritten > 0
    );
  }

  /**
   * Keeps `answer` as the key's answer. Any attempt may give it (one that lost its lease but got
   * an answer after all still knows what happened); the first answer kept stays.
   */
  finish(scope: string, answer: StoredAnswer): void {
    this.#schema();
    this.ctx.storage.transactionSync(() => {
      const row = this.#row(scope);
      if (!row || row.state === "done") return;
      this.#sql.exec("DELETE FROM answer_chunks WHERE scope = ?", scope);
      for (let seq = 0; seq * CHUNK_CHARS < answer.body.length || seq === 0; seq++) {
        this.#sql.exec(
          "INSERT INTO answer_chunks (scope, seq, data) VALUES (?, ?, ?)",
          scope,
          seq,
          answer.body.slice(seq * CHUNK_CHARS, (seq + 1) * CHUNK_CHARS),
        );
      }
      this.#sql.exec(
        "UPDATE records SET state = 'done', owner = NULL, lease_until = 0, status = ?, headers = ?, bytes = ? WHERE scope = ?",
        answer.status,
        JSON.stringify(answer.headers),
        new TextEncoder().encode(answer.body).length,
        scope,
      );
      this.#evict(Date.now());
    });
  }

  /**
   * `owner`'s attempt reached an enclave that was lost before it answered: the record stays open
   * for a retry, which learns that the first attempt was interrupted.
   */
  interrupted(scope: string, owner: string): void {
    this.#schema();
    this.#sql.exec(
      "UPDATE records SET state = 'open', owner = NULL, lease_until = 0, first_outcome = COALESCE(first_outcome, 'interrupted') WHERE scope = ? AND owner = ? AND state = 'in_progress'",
      scope,
      owner,
    );
  }

  /**
   * `owner`'s attempt did nothing (refused before it acted: no credit, rate-limited, no enclave
   * reachable) and holds nothing. The first attempt's record goes, so the key is free as if
   * unused; after an attempt that gave no answer the record stays open, with its ref, for the next.
   */
  unused(scope: string, owner: string): void {
    this.#schema();
    this.ctx.storage.transactionSync(() => {
      const row = this.#row(scope);
      if (!row || row.owner !== owner || row.state !== "in_progress") return;
      if (row.first_outcome === null) {
        this.#delete(scope);
      } else {
        this.#sql.exec("UPDATE records SET state = 'open', owner = NULL, lease_until = 0 WHERE scope = ?", scope);
      }
    });
  }

  #row(scope: string): Row | undefined {
    return this.#sql
      .exec<Row>(
        "SELECT fingerprint, ref, state, owner, lease_until, enclave, instance, first_outcome, status, headers FROM records WHERE scope = ?",
        scope,
      )
      .toArray()[0];
  }

  #answer(scope: string, row: Row): StoredAnswer {
    const body = this.#sql
      .exec<{ data: string }>("SELECT data FROM answer_chunks WHERE scope = ? ORDER BY seq", scope)
      .toArray()
      .map((c) => c.data)
      .join("");
    return { status: row.status ?? 500, headers: JSON.parse(row.headers ?? "{}") as Record<string, string>, body };
  }

  #delete(scope: string): void {
    this.#sql.exec("DELETE FROM answer_chunks WHERE scope = ?", scope);
    this.#sql.exec("DELETE FROM records WHERE scope = ?", scope);
  }

  #expire(now: number): void {
    for (const { scope } of this.#sql
      .exec<{ scope: string }>("SELECT scope FROM records WHERE created_at <= ?", now - RECORD_TTL_MS)
      .toArray())
      this.#delete(scope);
  }

  /**
   * Drops records until one more fits within the bounds: answered ones first, oldest first; a
   * record whose lease is live stays.
   */
  #evict(now: number): void {
    const totals = () =>
      this.#sql
        .exec<{ n: number; bytes: number }>("SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS bytes FROM records")
        .one();
    let t = totals();
    if (t.n < MAX_RECORDS && t.bytes <= MAX_STORED_BYTES) return;
    const candidates = this.#sql
      .exec<{ scope: string; bytes: number }>(
        "SELECT scope, bytes FROM records WHERE NOT (state = 'in_progress' AND lease_until > ?) ORDER BY state <> 'done', created_at",
        now,
      )
      .toArray();
    for (const c of candidates) {
      if (t.n < MAX_RECORDS && t.bytes <= MAX_STORED_BYTES) return;
      this.#delete(c.scope);
      t = { n: t.n - 1, bytes: t.bytes - c.bytes };
    }
  }
}
