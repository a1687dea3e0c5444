// The Budgets Durable Object (docs/design/guardrails.md, Budgets): the counters of one wallet's
// budgets, one object per wallet (named `<account master hash>:<wallet>`), so budgets scale with
// wallets and one busy wallet never waits on another. Every enclave instance reserves here, over the
// edge (routes/budgets.ts), before it releases a budgeted signature; an object runs one method at a
// time and each is one synchronous transaction of its SQLite storage, durably committed before it
// answers — so concurrent runs, several enclave instances and several edges never overspend, and
// what was reserved survives any process's death.
//
// An entry is one signature counted in one budget's scope: (budget, scope, digest, value, at). A
// budget's use is the sum of its scope's entries in the last `window_seconds`; a digest already
// counted in the window is counted once (budgets.ts says why). Values are kept as four 32-bit limbs
// so that SQLite sums them exactly (a wei amount does not fit its 64-bit integers); a transaction of
// 2^128 wei or more is refused. Entries older than the longest window a budget may have are dropped.
import { DurableObject } from "cloudflare:workers";
import { migrate, type Migration } from "../migrations.ts";
import { MAX_BUDGET_WINDOW_SECONDS } from "../../shared/guardrails/schema.ts";
import {
  budgetRefusal as refusalOf,
  budgetState as stateOf,
  type BudgetAnswer,
  type BudgetLimit,
  type BudgetRequest,
  type BudgetState,
  type BudgetUse as Use,
} from "../../shared/guardrails/budgets.ts";

const LIMB = 1n << 32n;

const MIGRATIONS: readonly Migration[] = [
  (sql) =>
    sql.exec(`
      CREATE TABLE entries (
        id INTEGER PRIMARY KEY,
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        digest TEXT NOT NULL,
        v0 INTEGER NOT NULL, v1 INTEGER NOT NULL, v2 INTEGER NOT NULL, v3 INTEGER NOT NULL,
        at INTEGER NOT NULL,
        ref TEXT NOT NULL
      );
      CREATE INDEX entries_window ON entries (budget, scope, at);
      CREATE INDEX entries_digest ON entries (budget, scope, digest);
      CREATE INDEX entries_at ON entries (at);
      CREATE TABLE exhausted (
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        notified_until INTEGER NOT NULL,
        PRIMARY KEY (budget, scope)
      );
    `),
];

function limbs(value: bigint): [number, number, number, number] {
  return [0, 1, 2, 3].map((i) => Number((value >> (32n * BigInt(i))) % LIMB)) as [number, number, number, number];
}

export class Budgets extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#sql = ctx.storage.sql;
    migrate(ctx.storage, MIGRATIONS);
  }

  /**
   * Reserves room for one signature in every budget of `request` (op "reserve"), or says what a
   * reservation would find (op "peek": nothing changes). All or nothing: a budget without room
   * refuses the signature and nothing is counted in the others.
   */
  decide(request: BudgetRequest, now: number = Date.now()): BudgetAnswer {
    return this.ctx.storage.transactionSync(() => {
      const value = BigInt(request.value_wei);
      const before = request.budgets.map((limit) => ({ limit, use: this.#use(limit, now) }));
      const fresh = before.map(({ limit }) => !this.#counted(limit, request.digest, now));
      for (const [i, { limit, use }] of before.entries()) {
        if (!fresh[i]) continue;
        const refusal = refusalOf(limit, use, value);
        if (refusal) {
          const states = before.map((b) => stateOf(b.limit, b.use));
          const notify = request.op === "reserve" && this.#firstRefusal(limit, use, now);
          return { granted: false, budget: limit.name, ...refusal, before: states, notify };
        }
      }
      const after = before.map(({ limit, use }, i) =>
        fresh[i]
          ? { limit, use: { count: use.count + 1, value: use.value + value, oldest: use.oldest ?? now } }
          : { limit, use },
      );
      if (request.op === "reserve") {
        const [v0, v1, v2, v3] = limbs(value);
        for (const [i, { limit }] of before.entries()) {
          if (!fresh[i]) continue;
          this.#sql.exec(
            "INSERT INTO entries (budget, scope, digest, v0, v1, v2, v3, at, ref) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            limit.name,
            limit.scope,
            request.digest,
            v0,
            v1,
            v2,
            v3,
            now,
            request.ref,
          );
        }
        this.#sql.exec("DELETE FROM entries WHERE at <= ?", now - MAX_BUDGET_WINDOW_SECONDS * 1000);
      }
      return {
        granted: true,
        repeated: fresh.every((f) => !f),
        before: before.map((b) => stateOf(b.limit, b.use)),
        after: after.map((a) => stateOf(a.limit, a.use)),
      };
    });
  }

  /** The counters of `limits` now; a budget counted per key or per action: every scope of it that has entries in its window. */
  states(limits: Array<Omit<BudgetLimit, "scope"> & { scope?: string }>, now: number = Date.now()): BudgetState[] {
    const out: BudgetState[] = [];
    for (const limit of limits) {
      const scopes =
        limit.scope !== undefined
          ? [limit.scope]
          : limit.per === "wallet"
            ? ["wallet"]
            : this.#sql
                .exec<{ scope: string }>(
                  "SELECT DISTINCT scope FROM entries WHERE budget = ? AND at > ? ORDER BY scope",
                  limit.name,
                  now - limit.window_seconds * 1000,
                )
                .toArray()
                .map((r) => r.scope);
      for (const scope of scopes) {
        const full = { ...limit, scope };
        out.push(stateOf(full, this.#use(full, now)));
      }
    }
    return out;
  }

  #use(limit: BudgetLimit, now: number): Use {
    const row = this.#sql
      .exec<{
        n: number;
        s0: number | null;
        s1: number | null;
        s2: number | null;
        s3: number | null;
        oldest: number | null;
      }>(
        `SELECT COUNT(*) AS n, SUM(v0) AS s0, SUM(v1) AS s1, SUM(v2) AS s2, SUM(v3) AS s3, MIN(at) AS oldest
         FROM entries WHERE budget = ? AND scope = ? AND at > ?`,
        limit.name,
        limit.scope,
        now - limit.window_seconds * 1000,
      )
      .one();
    const value = [row.s0, row.s1, row.s2, row.s3].reduce<bigint>(
      (sum, s, i) => sum + (BigInt(s ?? 0) << (32n * BigInt(i))),
      0n,
    );
    return { count: row.n, value, oldest: row.oldest };
  }

  #counted(limit: BudgetLimit, digest: string, now: number): boolean {
    return (
      this.#sql
        .exec(
          "SELECT 1 FROM entries WHERE budget = ? AND scope = ? AND digest = ? AND at > ? LIMIT 1",
          limit.name,
          limit.scope,
          digest,
          now - limit.window_seconds * 1000,
        )
        .toArray().length > 0
    );
  }

  /** Whether this refusal is the budget's first since room last freed up (budget.exhausted is said once per exhaustion). */
  #firstRefusal(limit: BudgetLimit, use: Use, now: number): boolean {
    const row = this.#sql
      .exec<{ notified_until: number }>(
        "SELECT notified_until FROM exhausted WHERE budget = ? AND scope = ?",
        limit.name,
        limit.scope,
      )
      .toArray()[0];
    if (row && row.notified_until > now) return false;
    const until = (use.oldest ?? now) + limit.window_seconds * 1000;
    this.#sql.exec(
      "INSERT INTO exhausted (budget, scope, notified_until) VALUES (?, ?, ?) ON CONFLICT (budget, scope) DO UPDATE SET notified_until = excluded.notified_until",
      limit.name,
      limit.scope,
      until,
    );
    return true;
  }
}
