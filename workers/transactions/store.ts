// The Transactions Durable Object (docs/design/transactions.md): one per account, the nonces its
// wallets send with on each chain and the record of every transaction the service sent for it. Every
// enclave instance reserves here, over the edge (routes/transactions.ts), before it signs a
// transaction it will send; an object runs one method at a time and each is one synchronous
// transaction of its SQLite storage, durably committed before it answers — so two sends never get
// one nonce, whichever instances make them.
//
// A nonce is taken while a record holds it: reserved (within its lease), pending, or mined
// (confirmed, reverted, or replaced by another transaction of the same nonce). A reservation takes
// the lowest nonce not taken that is at least the chain's pending count for the wallet — so a nonce
// released by a send that failed is the next one used (the gap filled) and one the wallet used
// outside this service is never reused. A reservation neither sent nor released within its lease
// (its enclave died between reserving and sending) is released by the next reservation of its
// wallet and chain; had it been broadcast after all, the chain's pending count is past it.
//
// The n-th send of a run is found again by the run's ref and n: a run retried under its
// Idempotency-Key has the same ref, so its sends get their first records back — the nonce still held,
// or the hash already sent — and are never numbered twice. A retried send of something else at the
// same place (`payload` differs) is refused.
import { DurableObject } from "cloudflare:workers";
import {
  TERMINAL_STATUSES,
  type TransactionAnswer,
  type TransactionRecord,
  type TransactionRequest,
  type TransactionStatus,
} from "../../shared/transactions.ts";
import { migrate, type Migration } from "../migrations.ts";

/** How long a reservation holds its nonce without being sent or released. */
export const RESERVATION_LEASE_MS = 60_000;

/** The statuses whose record holds its nonce (a reservation only within its lease). */
const HOLDING: readonly TransactionStatus[] = ["reserved", "pending", "confirmed", "reverted", "replaced"];

const MIGRATIONS: readonly Migration[] = [
  (sql) =>
    sql.exec(`
      CREATE TABLE txs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        ref TEXT NOT NULL,
        idx INTEGER NOT NULL,
        payload TEXT NOT NULL,
        wallet TEXT NOT NULL,
        chain INTEGER NOT NULL,
        nonce INTEGER NOT NULL,
        status TEXT NOT NULL,
        hash TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        lease_until INTEGER,
        block_number TEXT,
        gas_used TEXT,
        fee_wei TEXT,
        last_error TEXT,
        UNIQUE (ref, idx)
      );
      CREATE INDEX txs_nonce ON txs (wallet, chain, nonce);
      CREATE INDEX txs_status ON txs (status);
    `),
];

type Row = {
  seq: number;
  id: string;
  ref: string;
  idx: number;
  payload: string;
  wallet: string;
  chain: number;
  nonce: number;
  status: TransactionStatus;
  hash: string | null;
  created_at: number;
  updated_at: number;
  lease_until: number | null;
  block_number: string | null;
  gas_used: string | null;
  fee_wei: string | null;
  last_error: string | null;
};

/** Filters and the page of a listing. */
export type TransactionQuery = {
  wallet?: string;
  chain_id?: number;
  status?: TransactionStatus;
  /** The last page's `next_cursor`. */
  cursor?: string;
  limit: number;
};

/** A request refused: what the answer says instead of a record. */
class Refusal extends Error {
  readonly code: "conflict" | "not_found";
  constructor(code: "conflict" | "not_found", message: string) {
    super(message);
    this.code = code;
  }
}

function recordOf(row: Row): TransactionRecord {
  return {
    id: row.id,
    wallet_address: row.wallet,
    chain_id: row.chain,
    nonce: row.nonce,
    hash: (row.hash as TransactionRecord["hash"]) ?? null,
    status: row.status,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    block_number: row.block_number,
    gas_used: row.gas_used,
    fee_wei: row.fee_wei,
    last_error: row.last_error,
  };
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `tx_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export class Transactions extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, MIGRATIONS);
  }

  /** A nonce for a send (op "reserve"), the send's hash (op "sent"), or its release (op "release"). */
  decide(request: TransactionRequest, now: number = Date.now()): TransactionAnswer {
    try {
      return this.ctx.storage.transactionSync((): TransactionAnswer => {
        switch (request.op) {
          case "reserve":
            return this.#reserve(request, now);
          case "sent":
            return { ok: true, record: this.#sent(request, now) };
          case "release":
            return { ok: true, record: this.#release(request, now) };
        }
      });
    } catch (err) {
      // A refusal changed nothing (the transaction rolled back) and is the answer, not an error.
      if (err instanceof Refusal) return { ok: false, code: err.code, reason: err.message };
      throw err;
    }
  }

  /** One record, or undefined. */
  get(id: string): TransactionRecord | undefined {
    const row = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", id).toArray()[0];
    return row ? recordOf(row) : undefined;
  }

  /** Records newest first, filtered, a page at a time (`next_cursor` null on the last page). */
  list(query: TransactionQuery): { items: TransactionRecord[]; next_cursor: string | null } {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (query.wallet !== undefined) {
      where.push("wallet = ?");
      args.push(query.wallet.toLowerCase());
    }
    if (query.chain_id !== undefined) {
      where.push("chain = ?");
      args.push(query.chain_id);
    }
    if (query.status !== undefined) {
      where.push("status = ?");
      args.push(query.status);
    }
    if (query.cursor !== undefined) {
      where.push("seq < ?");
      args.push(Number(query.cursor));
    }
    const rows = this.#sql
      .exec<Row>(
        `SELECT * FROM txs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`,
        ...args,
        query.limit + 1,
      )
      .toArray();
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return { items: page.map(recordOf), next_cursor: rows.length > query.limit && last ? String(last.seq) : null };
  }

  #row(id: string, ref: string): Row {
    const row = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", id).toArray()[0];
    // Another run's transaction is as good as none to this one.
    if (!row || row.ref !== ref) throw new Refusal("not_found", `no transaction ${id} of this run`);
    return row;
  }

  #reserve(request: Extract<TransactionRequest, { op: "reserve" }>, now: number): TransactionAnswer {
    const existing = this.#sql
      .exec<Row>("SELECT * FROM txs WHERE ref = ? AND idx = ?", request.ref, request.index)
      .toArray()[0];
    if (existing) {
      if (existing.payload !== request.payload)
        return {
          ok: false,
          code: "conflict",
          reason: `this run's send ${request.index} was another transaction when it first ran (${existing.id}); a retried run must send what it sent`,
        };
      if (existing.status === "reserved") {
        // Its lease may have run out and its nonce been taken since: then it is released below and numbered afresh.
        this.#expire(existing.wallet, existing.chain, now);
        const still = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", existing.id).one();
        if (still.status === "reserved") {
          this.#sql.exec("UPDATE txs SET lease_until = ? WHERE id = ?", now + RESERVATION_LEASE_MS, existing.id);
          return { ok: true, record: recordOf({ ...still, lease_until: now + RESERVATION_LEASE_MS }) };
        }
      } else if (existing.status !== "released" && existing.status !== "dropped") {
        // Sent already (or mined): the retried run gets its record, and sends nothing again.
        return { ok: true, record: recordOf(existing) };
      }
      const nonce = this.#freeNonce(existing.wallet, existing.chain, request.chain_pending, now);
      this.#sql.exec(
        "UPDATE txs SET nonce = ?, status = 'reserved', hash = NULL, updated_at = ?, lease_until = ?, last_error = NULL WHERE id = ?",
        nonce,
        now,
        now + RESERVATION_LEASE_MS,
        existing.id,
      );
      return { ok: true, record: recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", existing.id).one()) };
    }
    const nonce = this.#freeNonce(request.wallet, request.chain_id, request.chain_pending, now);
    const id = newId();
    this.#sql.exec(
      `INSERT INTO txs (id, ref, idx, payload, wallet, chain, nonce, status, created_at, updated_at, lease_until)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?)`,
      id,
      request.ref,
      request.index,
      request.payload,
      request.wallet,
      request.chain_id,
      nonce,
      now,
      now,
      now + RESERVATION_LEASE_MS,
    );
    return { ok: true, record: recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", id).one()) };
  }

  /** Releases the reservations of (wallet, chain) whose lease has run out. */
  #expire(wallet: string, chain: number, now: number): void {
    this.#sql.exec(
      `UPDATE txs SET status = 'released', updated_at = ?, lease_until = NULL,
         last_error = 'neither sent nor released within its lease (its enclave stopped between reserving and sending)'
       WHERE wallet = ? AND chain = ? AND status = 'reserved' AND lease_until <= ?`,
      now,
      wallet,
      chain,
      now,
    );
  }

  /** The lowest nonce of (wallet, chain) at least `from` that no record holds. */
  #freeNonce(wallet: string, chain: number, from: number, now: number): number {
    this.#expire(wallet, chain, now);
    const held = this.#sql
      .exec<{ nonce: number }>(
        `SELECT DISTINCT nonce FROM txs WHERE wallet = ? AND chain = ? AND nonce >= ? AND status IN (${HOLDING.map(() => "?").join(", ")}) ORDER BY nonce`,
        wallet,
        chain,
        from,
        ...HOLDING,
      )
      .toArray();
    let nonce = from;
    for (const { nonce: taken } of held) {
      if (taken !== nonce) break;
      nonce++;
    }
    return nonce;
  }

  #sent(request: Extract<TransactionRequest, { op: "sent" }>, now: number): TransactionRecord {
    const row = this.#row(request.id, request.ref);
    if (row.hash === request.hash && row.status !== "reserved") return recordOf(row);
    if (TERMINAL_STATUSES.has(row.status) && row.status !== "released")
      throw new Refusal("conflict", `transaction ${row.id} is ${row.status} already`);
    // Sent after its lease ran out, it is pending all the same: the chain, not the lease, says what became of it.
    this.#sql.exec(
      "UPDATE txs SET status = 'pending', hash = ?, updated_at = ?, lease_until = NULL, last_error = NULL WHERE id = ?",
      request.hash,
      now,
      row.id,
    );
    return recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", row.id).one());
  }

  #release(request: Extract<TransactionRequest, { op: "release" }>, now: number): TransactionRecord {
    const row = this.#row(request.id, request.ref);
    if (row.status === "released") return recordOf(row);
    if (row.status !== "reserved")
      throw new Refusal("conflict", `transaction ${row.id} was sent (${row.status}); it cannot be released`);
    this.#sql.exec(
      "UPDATE txs SET status = 'released', updated_at = ?, lease_until = NULL, last_error = ? WHERE id = ?",
      now,
      request.reason,
      row.id,
    );
    return recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", row.id).one());
  }
}
