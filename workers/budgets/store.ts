// The Budgets Durable Object (docs/design/guardrails.md, Budgets): the counters of one wallet's
// budgets, one object per wallet (named `<account master hash>:<wallet>`), so budgets scale with
// wallets and one busy wallet never waits on another. Every enclave instance reserves here, over the
// edge (routes/budgets.ts), before it releases a budgeted signature; an object runs one method at a
// time and each is one synchronous transaction of its SQLite storage, durably committed before it
// answers — so concurrent runs, several enclave instances and several edges never overspend, and
// what was reserved survives any process's death.
//
// A budget's use is kept in time buckets — a 240th of its window each (a day: 6 minutes) — holding
// how many signatures and how much value were counted in them, so a reservation sums at most 241
// rows however busy the wallet (a row per signature made the cost grow with the window's entries:
// ~1 µs each, 0.9 s at 10 signatures a second over a day). A bucket counts until its last moment has
// left the window: the window is never shorter than the budget says (never an over-spend), at most
// a bucket longer. A budget's buckets are kept under its name and window: a new document that keeps
// both keeps what is counted. The digests counted (`seen`) are kept as long, to count a payload once.
// Values are four 32-bit limbs so that SQLite sums them exactly (a wei amount does not fit its
// 64-bit integers); a transaction of 2^128 wei or more is refused. A budget of lamports (Solana)
// counts a request's lamports where the others count its wei, under its own key (`<name>#lamports`),
// so that a document that turns a budget of wei into one of lamports starts it afresh rather than
// mixing the two. Rows older than the longest window are dropped.
import { DurableObject } from "cloudflare:workers";
import { migrate, type Migration } from "../migrations.ts";
import { MAX_BUDGET_WINDOW_SECONDS } from "../../shared/guardrails/schema.ts";
import {
  countedValue,
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
      CREATE TABLE buckets (
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        bucket_ms INTEGER NOT NULL,
        start INTEGER NOT NULL,
        n INTEGER NOT NULL,
        v0 INTEGER NOT NULL, v1 INTEGER NOT NULL, v2 INTEGER NOT NULL, v3 INTEGER NOT NULL,
        PRIMARY KEY (budget, scope, bucket_ms, start)
      );
      CREATE INDEX buckets_start ON buckets (start);
      CREATE TABLE seen (
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        digest TEXT NOT NULL,
        at INTEGER NOT NULL,
        ref TEXT NOT NULL
      );
      CREATE INDEX seen_digest ON seen (budget, scope, digest);
      CREATE INDEX seen_at ON seen (at);
      CREATE TABLE exhausted (
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        notified_until INTEGER NOT NULL,
        PRIMARY KEY (budget, scope)
      );
    `),
];

/** Buckets per window: a window's use is the sum of at most this many (and one) rows, whatever it holds. */
const BUCKETS_PER_WINDOW = 240;
/** How long a budget's time buckets are: a 240th of its window, at least a second (a day: 6 minutes). */
const bucketMsOf = (limit: BudgetLimit) =>
  Math.max(1000, Math.ceil((limit.window_seconds * 1000) / BUCKETS_PER_WINDOW));
/** Rows older than the longest window and its bucket are never counted again. */
const KEPT_MS =
  MAX_BUDGET_WINDOW_SECONDS * 1000 + 2 * Math.ceil((MAX_BUDGET_WINDOW_SECONDS * 1000) / BUCKETS_PER_WINDOW);

/** The key a budget's rows are kept under: its name, and for a budget of lamports its unit ('#' is not in a name). */
const keyOf = (limit: Pick<BudgetLimit, "name" | "max_lamports">) =>
  limit.max_lamports === undefined ? limit.name : `${limit.name}#lamports`;

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
      const charge = { valueWei: BigInt(request.value_wei), valueLamports: BigInt(request.value_lamports ?? "0") };
      const before = request.budgets.map((limit) => ({ limit, use: this.#use(limit, now) }));
      const fresh = before.map(({ limit }) => !this.#counted(limit, request.digest, now));
      for (const [i, { limit, use }] of before.entries()) {
        if (!fresh[i]) continue;
        const refusal = refusalOf(limit, use, countedValue(limit, charge));
        if (refusal) {
          const states = before.map((b) => stateOf(b.limit, b.use));
          // A signature too large for an empty budget is refused (guardrail.denied says so); the
          // budget is not used up by it, and its real exhaustion later must still be told.
          const notify = request.op === "reserve" && use.count > 0 && this.#firstRefusal(limit, use, now);
          return { granted: false, budget: limit.name, ...refusal, before: states, notify };
        }
      }
      const after = before.map(({ limit, use }, i) =>
        fresh[i]
          ? {
              limit,
              // The entry counts until its bucket's end has left the window (#use's `oldest`).
              use: {
                count: use.count + 1,
                value: use.value + countedValue(limit, charge),
                oldest: use.oldest ?? now - (now % bucketMsOf(limit)) + bucketMsOf(limit),
              },
            }
          : { limit, use },
      );
      if (request.op === "reserve") {
        for (const [i, { limit }] of before.entries()) {
          if (!fresh[i]) continue;
          const [v0, v1, v2, v3] = limbs(countedValue(limit, charge));
          const bucketMs = bucketMsOf(limit);
          this.#sql.exec(
            `INSERT INTO buckets (budget, scope, bucket_ms, start, n, v0, v1, v2, v3) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)
             ON CONFLICT (budget, scope, bucket_ms, start) DO UPDATE SET
               n = n + 1, v0 = v0 + excluded.v0, v1 = v1 + excluded.v1, v2 = v2 + excluded.v2, v3 = v3 + excluded.v3`,
            keyOf(limit),
            limit.scope,
            bucketMs,
            now - (now % bucketMs),
            v0,
            v1,
            v2,
            v3,
          );
          this.#sql.exec(
            "INSERT INTO seen (budget, scope, digest, at, ref) VALUES (?, ?, ?, ?, ?)",
            keyOf(limit),
            limit.scope,
            request.digest,
            now,
            request.ref,
          );
        }
        this.#sql.exec("DELETE FROM buckets WHERE start <= ?", now - KEPT_MS);
        this.#sql.exec("DELETE FROM seen WHERE at <= ?", now - KEPT_MS);
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
                  "SELECT DISTINCT scope FROM buckets WHERE budget = ? AND bucket_ms = ? AND start > ? ORDER BY scope",
                  keyOf(limit),
                  bucketMsOf({ ...limit, scope: "" }),
                  windowStart({ ...limit, scope: "" }, now),
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

  /**
   * What `limit`'s scope holds in its window: the sum of the buckets any part of which is inside it
   * (a bucket counts until its last moment has left the window, so the window is never shorter than
   * its budget says, at most a bucket longer). `oldest` is when the oldest counted bucket ends.
   */
  #use(limit: BudgetLimit, now: number): Use {
    const bucketMs = bucketMsOf(limit);
    const row = this.#sql
      .exec<{
        n: number | null;
        s0: number | null;
        s1: number | null;
        s2: number | null;
        s3: number | null;
        oldest: number | null;
      }>(
        `SELECT SUM(n) AS n, SUM(v0) AS s0, SUM(v1) AS s1, SUM(v2) AS s2, SUM(v3) AS s3, MIN(start) AS oldest
         FROM buckets WHERE budget = ? AND scope = ? AND bucket_ms = ? AND start > ?`,
        keyOf(limit),
        limit.scope,
        bucketMs,
        windowStart(limit, now),
      )
      .one();
    const value = [row.s0, row.s1, row.s2, row.s3].reduce<bigint>(
      (sum, s, i) => sum + (BigInt(s ?? 0) << (32n * BigInt(i))),
      0n,
    );
    return { count: row.n ?? 0, value, oldest: row.oldest === null ? null : row.oldest + bucketMs };
  }

  /** Whether `digest` was counted in `limit`'s scope within its window (as the buckets count it). */
  #counted(limit: BudgetLimit, digest: string, now: number): boolean {
    return (
      this.#sql
        .exec(
          "SELECT 1 FROM seen WHERE budget = ? AND scope = ? AND digest = ? AND at > ? LIMIT 1",
          keyOf(limit),
          limit.scope,
          digest,
          windowStart(limit, now),
        )
        .toArray().length > 0
    );
  }

  /** Whether this refusal is the budget's first since room last freed up (budget.exhausted is said once per exhaustion). */
  #firstRefusal(limit: BudgetLimit, use: Use, now: number): boolean {
    const row = this.#sql
      .exec<{ notified_until: number }>(
        "SELECT notified_until FROM exhausted WHERE budget = ? AND scope = ?",
        keyOf(limit),
        limit.scope,
      )
      .toArray()[0];
    if (row && row.notified_until > now) return false;
    const until = (use.oldest ?? now) + limit.window_seconds * 1000;
    this.#sql.exec(
      "INSERT INTO exhausted (budget, scope, notified_until) VALUES (?, ?, ?) ON CONFLICT (budget, scope) DO UPDATE SET notified_until = excluded.notified_until",
      keyOf(limit),
      limit.scope,
      until,
    );
    return true;
  }
}

/** The start a bucket (or a seen digest) must be later than to count in `limit`'s window at `now`. */
function windowStart(limit: BudgetLimit, now: number): number {
  return now - limit.window_seconds * 1000 - bucketMsOf(limit);
}
