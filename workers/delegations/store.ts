// The Delegations Durable Object (docs/design/delegation.md, Revocation and its bound): one per account
// (named by its master hash), the uses counted against each block of the account's delegated keys (by
// the block's counter: the hash of its chain's tag at it, which only a holder of that chain can name)
// and the blocks revoked (by id). Every run through a delegated key asks it first, through the edge
// (routes/delegations.ts), and so does every read with one (delegations/verify.ts, op "peek"): one
// synchronous SQLite transaction, durably committed before it answers, so concurrent runs on several
// enclave instances and edges never use a key more times than it allows, and a revocation holds from
// the next request on. A block's uses are forgotten a day after its own expiry (the earliest of its
// chain up to it; none, never); revocations are kept.
import { DurableObject } from "cloudflare:workers";
import { migrate, type Migration } from "../migrations.ts";
import type { DelegationUseAnswer, DelegationUseRequest } from "../../shared/delegation.ts";

const MIGRATIONS: readonly Migration[] = [
  // The first form kept uses by block id (replaced by 2 before it was released).
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
  // Uses by the block's counter (the hash of the chain's tag at it), revocations by its id.
  (sql) =>
    sql.exec(`
      DROP TABLE blocks;
      CREATE TABLE uses (
        counter TEXT PRIMARY KEY,
        used INTEGER NOT NULL,
        expires_at INTEGER,
        last_used_at INTEGER NOT NULL
      );
      CREATE INDEX uses_expires ON uses (expires_at);
      CREATE TABLE revoked (
        id TEXT PRIMARY KEY,
        revoked_at INTEGER NOT NULL
      );
    `),
];

/** How long after a block's expiry its uses are kept (a run that started just before it still counts). */
const KEPT_AFTER_EXPIRY_S = 86_400;

export class Delegations extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, MIGRATIONS);
  }

  /**
   * A run's use of a chain: refused when any of its blocks is revoked or has used all its `max_uses`;
   * else, op "use", one more use counted against every block (all or nothing); op "peek" counts
   * nothing (whether the key still stands, for its reads).
   */
  use(request: DelegationUseRequest, nowMs: number = Date.now()): DelegationUseAnswer {
    const now = Math.floor(nowMs / 1000);
    return this.ctx.storage.transactionSync(() => {
      for (const block of request.blocks) {
        if (this.#revokedAt(block.id) !== null) return { granted: false, id: block.id, reason: "revoked" };
        if (block.max_uses !== undefined && this.#used(block.counter) >= block.max_uses)
          return { granted: false, id: block.id, reason: "used_up", max_uses: block.max_uses };
      }
      if (request.op === "use") {
        // A block's expiry only ever grows, or becomes none: its row is never forgotten while a chain holding it may run.
        for (const block of request.blocks)
          this.#sql.exec(
            `INSERT INTO uses (counter, used, expires_at, last_used_at) VALUES (?, 1, ?, ?)
             ON CONFLICT (counter) DO UPDATE SET
               used = used + 1,
               last_used_at = excluded.last_used_at,
               expires_at = CASE WHEN uses.expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL
                                 ELSE max(uses.expires_at, excluded.expires_at) END`,
            block.counter,
            block.expires_at ?? null,
            now,
          );
        this.#sql.exec("DELETE FROM uses WHERE expires_at IS NOT NULL AND expires_at < ?", now - KEPT_AFTER_EXPIRY_S);
      }
      return { granted: true };
    });
  }

  /** Revokes block `id` (and so every key whose chain holds it); says whether it already was. */
  revoke(id: string, nowMs: number = Date.now()): { already: boolean } {
    return this.ctx.storage.transactionSync(() => {
      if (this.#revokedAt(id) !== null) return { already: true };
      this.#sql.exec("INSERT INTO revoked (id, revoked_at) VALUES (?, ?)", id, Math.floor(nowMs / 1000));
      return { already: false };
    });
  }

  #revokedAt(id: string): number | null {
    return (
      this.#sql.exec<{ revoked_at: number }>("SELECT revoked_at FROM revoked WHERE id = ?", id).toArray()[0]
        ?.revoked_at ?? null
    );
  }

  #used(counter: string): number {
    return this.#sql.exec<{ used: number }>("SELECT used FROM uses WHERE counter = ?", counter).toArray()[0]?.used ?? 0;
  }
}
