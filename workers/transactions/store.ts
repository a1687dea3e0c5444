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
import { keccak256, type Hex } from "viem";
import {
  TERMINAL_STATUSES,
  type TransactionAnswer,
  type TransactionRecord,
  type TransactionRequest,
  type TransactionStatus,
} from "../../shared/transactions.ts";
import { edgeConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { edgeLog } from "../log.ts";
import { migrate, type Migration } from "../migrations.ts";
import { accountIdOf, webhooksOf } from "../webhooks/emit.ts";
import { follow, rpcReads, type FollowOutcome, type PendingTransaction } from "./follow.ts";

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
  // The follower (follow.ts): since when a pending transaction has been seen nowhere; whether a
  // terminal state's webhook is still to be told (0) — an outbox, so a state written is told even if
  // the object stops between the two; the account the object is for, which webhooks are sent as.
  // Speed-ups: the signed bytes of what was sent (a speed-up re-signs them with higher fees), which
  // transaction a speed-up replaces, and which one took a replaced transaction's nonce.
  (sql) =>
    sql.exec(`
      ALTER TABLE txs ADD COLUMN missing_since INTEGER;
      ALTER TABLE txs ADD COLUMN told INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE txs ADD COLUMN raw TEXT;
      ALTER TABLE txs ADD COLUMN replaces TEXT;
      ALTER TABLE txs ADD COLUMN replaced_by TEXT;
      CREATE INDEX txs_untold ON txs (told) WHERE told = 0;
      CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), account TEXT NOT NULL);
    `),
];

const log = edgeLog.child({ component: "transactions" });

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
  missing_since: number | null;
  told: number;
  raw: string | null;
  replaces: string | null;
  replaced_by: string | null;
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
    replaces: row.replaces,
    replaced_by: row.replaced_by,
  };
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `tx_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export class Transactions extends DurableObject {
  readonly #sql: SqlStorage;
  readonly #env: Env;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#env = env as Env;
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, MIGRATIONS);
  }

  /**
   * A nonce for a send (op "reserve"), the send's hash (op "sent"), or its release (op "release").
   * The alarm is armed for what the answer leaves to do: a pending transaction to follow, a lease to end.
   */
  async decide(request: TransactionRequest, now: number = Date.now()): Promise<TransactionAnswer> {
    const answer = this.#decide(request, now);
    if (answer.ok && (answer.record.status === "pending" || answer.record.status === "reserved")) await this.#arm();
    return answer;
  }

  #decide(request: TransactionRequest, now: number): TransactionAnswer {
    try {
      return this.ctx.storage.transactionSync((): TransactionAnswer => {
        this.#sql.exec("INSERT OR IGNORE INTO meta (id, account) VALUES (1, ?)", request.account.toLowerCase());
        switch (request.op) {
          case "reserve":
            return this.#reserve(request, now);
          case "sent":
            return { ok: true, record: this.#sent(request, now) };
          case "release":
            return { ok: true, record: this.#release(request, now) };
          case "get":
            return this.#getWithRaw(request.id);
          case "replace":
            return this.#replace(request, now);
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

  /**
   * The follower (follow.ts): reads each chain for the pending transactions, writes what became of
   * them, tells the terminal states to the account's webhooks, ends the reservations whose lease ran
   * out, and arms itself again while anything is left to do.
   */
  override async alarm(): Promise<void> {
    const { transactions: settings } = edgeConfig(this.#env);
    const now = Date.now();
    const pending = this.#sql.exec<Row>("SELECT * FROM txs WHERE status = 'pending'").toArray();
    const byChain = new Map<number, Row[]>();
    for (const row of pending) byChain.set(row.chain, [...(byChain.get(row.chain) ?? []), row]);
    const outcomes = (
      await Promise.all(
        [...byChain].map(async ([chain, rows]): Promise<FollowOutcome[]> => {
          const url = settings.chains.get(chain);
          if (url === undefined)
            return rows.map((row) => ({
              id: row.id,
              status: "pending",
              missingSince: row.missing_since,
              lastError: `chain ${chain} is not one the edge follows (SIGIL_CHAINS)`,
            }));
          // Of several pending transactions of one nonce (a speed-up and what it replaces), only the
          // newest is sent again when lost: the pool took it in place of the others.
          const newest = new Map<string, number>();
          for (const row of rows) {
            const key = `${row.wallet}:${row.nonce}`;
            newest.set(key, Math.max(newest.get(key) ?? 0, row.seq));
          }
          const txs: PendingTransaction[] = rows.map((row) => ({
            id: row.id,
            wallet: row.wallet as `0x${string}`,
            nonce: row.nonce,
            hash: row.hash as `0x${string}`,
            missingSince: row.missing_since,
            raw: newest.get(`${row.wallet}:${row.nonce}`) === row.seq ? (row.raw as `0x${string}` | null) : null,
          }));
          return follow(txs, rpcReads(url), now, settings.dropAfterMs);
        }),
      )
    ).flat();
    const at = Date.now();
    // Mined first, so that a transaction replaced in the same read finds the one that took its nonce.
    const mined = (o: FollowOutcome) => (o.status === "confirmed" || o.status === "reverted" ? 0 : 1);
    outcomes.sort((a, b) => mined(a) - mined(b));
    const dropping = new Set(outcomes.filter((o) => o.status === "dropped").map((o) => o.id));
    this.ctx.storage.transactionSync(() => {
      for (const o of outcomes) this.#apply(o, at, dropping);
      // A reservation whose enclave stopped between reserving and sending ends at its lease, not only at the next send.
      for (const { wallet, chain } of this.#sql
        .exec<{ wallet: string; chain: number }>(
          "SELECT DISTINCT wallet, chain FROM txs WHERE status = 'reserved' AND lease_until <= ?",
          at,
        )
        .toArray())
        this.#expire(wallet, chain, at);
    });
    await this.#tell();
    await this.#arm();
  }

  /**
   * Writes what the follower found of one transaction, if it is still pending; a terminal state is to
   * be told. A transaction sped up has left the pool for its replacement: it is dropped only with
   * every pending transaction of its nonce (`dropping`), never while one of them may still be mined.
   */
  #apply(o: FollowOutcome, at: number, dropping: ReadonlySet<string>): void {
    const row = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ? AND status = 'pending'", o.id).toArray()[0];
    if (!row) return;
    const sameNonce = (statuses: string) =>
      this.#sql
        .exec<{ id: string }>(
          `SELECT id FROM txs WHERE wallet = ? AND chain = ? AND nonce = ? AND id != ? AND status IN (${statuses}) ORDER BY seq`,
          row.wallet,
          row.chain,
          row.nonce,
          row.id,
        )
        .toArray()
        .map((r) => r.id);
    if (o.status === "dropped" && sameNonce("'pending'").some((id) => !dropping.has(id))) {
      this.#sql.exec("UPDATE txs SET last_error = NULL WHERE id = ?", o.id);
      return;
    }
    if (o.status === "pending") {
      this.#sql.exec(
        "UPDATE txs SET missing_since = ?, last_error = ? WHERE id = ? AND status = 'pending'",
        o.missingSince,
        o.lastError,
        o.id,
      );
      return;
    }
    const mined = o.status === "confirmed" || o.status === "reverted";
    const lastError =
      o.status === "dropped"
        ? `seen neither in a block nor in the RPC's pool for SIGIL_TX_DROP_AFTER_S${o.lastError ? ` (${o.lastError})` : ""}; its nonce is free again`
        : o.status === "replaced"
          ? "another transaction of its nonce was mined in its place"
          : null;
    const replacedBy = o.status === "replaced" ? (sameNonce("'confirmed', 'reverted'")[0] ?? null) : null;
    this.#sql.exec(
      `UPDATE txs SET status = ?, updated_at = ?, block_number = ?, gas_used = ?, fee_wei = ?, last_error = ?,
         missing_since = NULL, told = 0, replaced_by = ?
       WHERE id = ? AND status = 'pending'`,
      o.status,
      at,
      mined ? o.blockNumber : null,
      mined ? o.gasUsed : null,
      mined ? o.feeWei : null,
      lastError,
      replacedBy,
      o.id,
    );
  }

  /** Tells the account's webhooks each terminal state not told yet (`transaction.<status>`, once per transaction). */
  async #tell(): Promise<void> {
    const rows = this.#sql.exec<Row>("SELECT * FROM txs WHERE told = 0 ORDER BY seq LIMIT 100").toArray();
    if (rows.length === 0) return;
    const account = this.#sql.exec<{ account: string }>("SELECT account FROM meta WHERE id = 1").toArray()[0]?.account;
    for (const row of rows) {
      const record = recordOf(row);
      log.info("transaction followed", {
        id: record.id,
        wallet: record.wallet_address,
        chain: record.chain_id,
        nonce: record.nonce,
        status: record.status,
        block: record.block_number,
      });
      if (account !== undefined && this.#env.WEBHOOKS) {
        const master = BigInt(account);
        try {
          await webhooksOf(this.#env.WEBHOOKS, master).emit(accountIdOf(master), {
            type: `transaction.${record.status as "confirmed" | "reverted" | "replaced" | "dropped"}`,
            dedupe: `transaction.${record.status}:${record.id}`,
            data: record,
          });
        } catch (err) {
          // Told at the next alarm: the event's dedupe key makes a second telling the same event.
          log.warn("transaction webhook failed", {
            id: record.id,
            error: err instanceof Error ? err.message : String(err),
          });
          continue;
        }
      }
      this.#sql.exec("UPDATE txs SET told = 1 WHERE id = ?", row.id);
    }
  }

  /** Arms the alarm for the next thing to do: a follow while anything is pending or untold, else a lease's end. */
  async #arm(): Promise<void> {
    const { transactions: settings } = edgeConfig(this.#env);
    const busy = this.#sql
      .exec<{ n: number }>("SELECT COUNT(*) AS n FROM txs WHERE status = 'pending' OR told = 0")
      .one().n;
    const lease = this.#sql
      .exec<{ at: number | null }>("SELECT MIN(lease_until) AS at FROM txs WHERE status = 'reserved'")
      .one().at;
    let at = busy > 0 ? Date.now() + settings.followMs : null;
    if (lease !== null && (at === null || lease < at)) at = lease;
    if (at === null) return;
    const armed = await this.ctx.storage.getAlarm();
    if (armed === null || armed > at) await this.ctx.storage.setAlarm(at);
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
      } else if (existing.status !== "released") {
        // Sent already (mined, or dropped — which could still be mined: sending it again under
        // another nonce could pay twice): the retried run gets its record, and sends nothing again.
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
    if (request.raw !== undefined && keccak256(request.raw as Hex) !== request.hash)
      throw new Refusal("conflict", `the signed bytes of ${row.id} do not hash to ${request.hash}`);
    if (row.hash === request.hash && row.status !== "reserved") return recordOf(row);
    if (TERMINAL_STATUSES.has(row.status) && row.status !== "released")
      throw new Refusal("conflict", `transaction ${row.id} is ${row.status} already`);
    // Sent after its lease ran out, it is pending all the same: the chain, not the lease, says what became of it.
    this.#sql.exec(
      "UPDATE txs SET status = 'pending', hash = ?, raw = ?, updated_at = ?, lease_until = NULL, last_error = NULL WHERE id = ?",
      request.hash,
      request.raw ?? null,
      now,
      row.id,
    );
    return recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", row.id).one());
  }

  /**
   * A transaction of the account, with the bytes a speed-up of it re-signs: those of the newest
   * pending transaction of its nonce (itself, or an earlier speed-up of it), so that a second speed-up
   * bids over the first, not over the original.
   */
  #getWithRaw(id: string): TransactionAnswer {
    const row = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", id).toArray()[0];
    if (!row) throw new Refusal("not_found", `no transaction ${id} of this account`);
    const newest = this.#sql
      .exec<{ raw: string | null }>(
        "SELECT raw FROM txs WHERE wallet = ? AND chain = ? AND nonce = ? AND status = 'pending' AND raw IS NOT NULL ORDER BY seq DESC LIMIT 1",
        row.wallet,
        row.chain,
        row.nonce,
      )
      .toArray()[0];
    return { ok: true, record: recordOf(row), raw: newest?.raw ?? row.raw ?? undefined };
  }

  /**
   * A nonce for a speed-up of the pending transaction `request.id`: its own, held by both records
   * until one of them is mined (the other is then replaced). The run's n-th send is found again as a
   * reservation's is.
   */
  #replace(request: Extract<TransactionRequest, { op: "replace" }>, now: number): TransactionAnswer {
    const existing = this.#sql
      .exec<Row>("SELECT * FROM txs WHERE ref = ? AND idx = ?", request.ref, request.index)
      .toArray()[0];
    if (existing && existing.payload !== request.payload)
      return {
        ok: false,
        code: "conflict",
        reason: `this run's send ${request.index} was another transaction when it first ran (${existing.id}); a retried run must send what it sent`,
      };
    if (existing && existing.status !== "released") {
      if (existing.status === "reserved")
        this.#sql.exec("UPDATE txs SET lease_until = ? WHERE id = ?", now + RESERVATION_LEASE_MS, existing.id);
      return { ok: true, record: recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", existing.id).one()) };
    }
    const old = this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", request.id).toArray()[0];
    if (!old) throw new Refusal("not_found", `no transaction ${request.id} of this account`);
    if (old.status !== "pending")
      throw new Refusal(
        "conflict",
        `transaction ${old.id} is ${old.status}; only a pending transaction can be sped up`,
      );
    if (existing) {
      this.#sql.exec(
        "UPDATE txs SET nonce = ?, status = 'reserved', hash = NULL, raw = NULL, updated_at = ?, lease_until = ?, last_error = NULL WHERE id = ?",
        old.nonce,
        now,
        now + RESERVATION_LEASE_MS,
        existing.id,
      );
      return { ok: true, record: recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", existing.id).one()) };
    }
    const id = newId();
    this.#sql.exec(
      `INSERT INTO txs (id, ref, idx, payload, wallet, chain, nonce, status, created_at, updated_at, lease_until, replaces)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?)`,
      id,
      request.ref,
      request.index,
      request.payload,
      old.wallet,
      old.chain,
      old.nonce,
      now,
      now,
      now + RESERVATION_LEASE_MS,
      old.id,
    );
    return { ok: true, record: recordOf(this.#sql.exec<Row>("SELECT * FROM txs WHERE id = ?", id).one()) };
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
