// The Delegations Durable Object (docs/design/delegation.md, Revocation and its bound): one per account
// (named by its master hash), the uses counted against each block of the account's delegated keys and
// the blocks revoked. Every run through a delegated key asks it first, through the edge
// (routes/delegations.ts): one synchronous SQLite transaction, durably committed before it answers,
// so concurrent runs on several enclave instances and edges never use a key more times than it
// allows, and a revocation holds from the next run on. A block's row is forgotten a day after its
// chain expires (a chain without expiry keeps its rows); a revoked block's stays.
import { DurableObject } from "cloudflare:workers";
import { migrate, type Migration } from "../migrations.ts";
import type { DelegationUseAnswer, DelegationUseRequest } from "../../shared/delegation.ts";

const MIGRATIONS: readonly Migration[] = [
  (sql) =>
    sql.exec(`
      CREATE TABLE blocks (
        id TEXT PRIMARY KEY,
        used INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER,
        last_used_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX blocks_expires ON blocks (expires_at);
    `),
];

/** How long after a chain's expiry its blocks' rows are kept (a run that started just before it still counts). */
const KEPT_AFTER_EXPIRY_S = 86_400;

type Row = { id: string; used: number; revoked_at: number | null };

export class Delegations extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, MIGRATIONS);
  }

  /**
   * A run's use of a chain: refused when any of its blocks is revoked or has used all its `max_uses`;
   * else, op "use", one more use counted against every block (all or nothing).
   */
  use(request: DelegationUseRequest, nowMs: number = Date.now()): DelegationUseAnswer {
    const now = Math.floor(nowMs / 1000);
    return this.ctx.storage.transactionSync(() => {
      for (const block of request.blocks) {
        const row = this.#row(block.id);
        if (row?.revoked_at != null) return { granted: false, id: block.id, reason: "revoked" };
        if (block.max_uses !== undefined && (row?.used ?? 0) >= block.max_uses)
          return { granted: false, id: block.id, reason: "used_up", max_uses: block.max_uses };
      }
      if (request.op === "use") {
        for (const block of request.blocks)
          this.#sql.exec(
            `INSERT INTO blocks (id, used, expires_at, last_used_at) VALUES (?, 1, ?, ?)
             ON CONFLICT (id) DO UPDATE SET used = used + 1, last_used_at = excluded.last_used_at`,
            block.id,
            block.expires_at ?? null,
            now,
          );
        this.#sql.exec(
          "DELETE FROM blocks WHERE revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at < ?",
          now - KEPT_AFTER_EXPIRY_S,
        );
      }
      return { granted: true };
    });
  }

  /** Revokes block `id` (and so every key whose chain holds it); says whether it already was. */
  revoke(id: string, nowMs: number = Date.now()): { already: boolean; used: number } {
    return this.ctx.storage.transactionSync(() => {
      const row = this.#row(id);
      if (row?.revoked_at != null) return { already: true, used: row.used };
      this.#sql.exec(
        `INSERT INTO blocks (id, used, revoked_at) VALUES (?, 0, ?)
         ON CONFLICT (id) DO UPDATE SET revoked_at = excluded.revoked_at`,
        id,
        Math.floor(nowMs / 1000),
      );
      return { already: false, used: row?.used ?? 0 };
    });
  }

  /** What the store holds of block `id`: its uses and when it was revoked (null: never, or never seen). */
  state(id: string): { used: number; revoked_at: number | null } {
    const row = this.#row(id);
    return { used: row?.used ?? 0, revoked_at: row?.revoked_at ?? null };
  }

  #row(id: string): Row | undefined {
    return this.#sql.exec<Row>("SELECT id, used, revoked_at FROM blocks WHERE id = ?", id).toArray()[0];
  }
}
