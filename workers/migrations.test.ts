// Numbered migrations of a Durable Object's SQLite schema, in workerd: each runs once, in order, with
// its version in one transaction; and the Ledger's first one brings a ledger of the shape it had
// before the migrations were numbered to today's, its side tables filled from its entries. They run
// on Idempotency objects, which keep their schema apart and have no schema_version of their own.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "./env.ts";
import { LEDGER_MIGRATIONS } from "./billing/ledgerSchema.ts";
import { WEBHOOKS_MIGRATIONS } from "./webhooks/schema.ts";
import { columnsOf, migrate, schemaVersion, type Migration } from "./migrations.ts";

const namespace = (env as unknown as Env).IDEMPOTENCY!;
let n = 0;
const object = () => namespace.get(namespace.idFromName(`migrations-test-${Date.now()}-${n++}`));
const versionOf = (sql: SqlStorage) => schemaVersion(sql);

describe("migrate", () => {
  it("runs each migration once, in order, and records how many have run", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const ran: number[] = [];
      const migrations: Migration[] = [
        (sql) => {
          ran.push(1);
          sql.exec("CREATE TABLE t (a INTEGER)");
        },
        (sql) => {
          ran.push(2);
          sql.exec("ALTER TABLE t ADD COLUMN b TEXT");
        },
      ];
      migrate(state.storage, migrations.slice(0, 1));
      expect(versionOf(state.storage.sql)).toBe(1);
      migrate(state.storage, migrations);
      migrate(state.storage, migrations);
      expect(ran).toEqual([1, 2]);
      expect(versionOf(state.storage.sql)).toBe(2);
      expect([...columnsOf(state.storage.sql, "t")]).toEqual(["a", "b"]);
    });
  });

  it("a migration that fails leaves nothing of itself and its version unchanged, and runs again next time", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      let fail = true;
      const migrations: Migration[] = [
        (sql) => {
          sql.exec("CREATE TABLE u (a INTEGER)");
          if (fail) throw new Error("half done");
        },
      ];
      expect(() => migrate(state.storage, migrations)).toThrow("half done");
      expect(versionOf(state.storage.sql)).toBe(0);
      expect(columnsOf(state.storage.sql, "u").size).toBe(0);
      fail = false;
      migrate(state.storage, migrations);
      expect(versionOf(state.storage.sql)).toBe(1);
      expect(columnsOf(state.storage.sql, "u").has("a")).toBe(true);
    });
  });
});

describe("the Webhooks object's first migration", () => {
  it("gives an object made before ledger_synced that column, its settings kept", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const { sql } = state.storage;
      sql.exec(`
        CREATE TABLE settings (id INTEGER PRIMARY KEY CHECK (id = 1), account_id TEXT,
          balance_low_cents INTEGER NOT NULL DEFAULT 0, balance_low_armed INTEGER NOT NULL DEFAULT 1);
        INSERT INTO settings (id, account_id, balance_low_cents) VALUES (1, '0xab', 250);
      `);
      migrate(state.storage, WEBHOOKS_MIGRATIONS);
      expect(sql.exec("SELECT account_id, balance_low_cents, ledger_synced FROM settings").one()).toEqual({
        account_id: "0xab",
        balance_low_cents: 250,
        ledger_synced: 0,
      });
      expect(columnsOf(sql, "deliveries").has("window_start")).toBe(true);
    });
  });
});

describe("the Ledger's first migration", () => {
  it("brings a ledger of the shape before numbered migrations to today's, its key spend and payments read from its entries", async () => {
    await runInDurableObject(object(), (_instance, state) => {
      const { sql } = state.storage;
      // The first ledgers: no op, detail or balance_after; no email, pruned_cents or webhooks; no side tables.
      sql.exec(`
        CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, cents INTEGER NOT NULL,
          ref TEXT NOT NULL UNIQUE, key_hash TEXT, created_at INTEGER NOT NULL);
        CREATE TABLE holds (id INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE,
          cents INTEGER NOT NULL, key_hash TEXT, expires_at INTEGER NOT NULL);
        CREATE TABLE account (id INTEGER PRIMARY KEY, settled_cents INTEGER NOT NULL, customer_id TEXT);
        INSERT INTO account (id, settled_cents) VALUES (1, 493);
        INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('credit', 500, 'pi_1', NULL, 1);
        INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('charge', -3, 'req_1', 'k1', 2);
        INSERT INTO entries (kind, cents, ref, key_hash, created_at) VALUES ('charge', -4, 'req_2', 'k1', 3);
      `);
      migrate(state.storage, LEDGER_MIGRATIONS);
      expect(versionOf(sql)).toBe(LEDGER_MIGRATIONS.length);
      expect(columnsOf(sql, "entries")).toEqual(
        new Set(["id", "kind", "cents", "ref", "key_hash", "created_at", "op", "detail", "balance_after"]),
      );
      expect(columnsOf(sql, "account")).toEqual(
        new Set(["id", "settled_cents", "customer_id", "email", "pruned_cents", "webhooks"]),
      );
      expect(sql.exec("SELECT key_hash, spent_cents FROM key_spend").toArray()).toEqual([
        { key_hash: "k1", spent_cents: 7 },
      ]);
      expect(sql.exec("SELECT ref FROM payment_refs").toArray()).toEqual([{ ref: "pi_1" }]);
      expect(sql.exec("SELECT settled_cents FROM account").one().settled_cents).toBe(493);
    });
  });
});
