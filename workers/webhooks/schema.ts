// The Webhooks object's SQLite schema (store.ts says what each table holds), as numbered migrations
// (../migrations.ts runs them): a change to it is a new one at the end of the list.
import { columnsOf, type Migration } from "../migrations.ts";

export const WEBHOOKS_MIGRATIONS: readonly Migration[] = [
  // 1: the schema as it stood when the migrations were numbered; an object made before then (at
  // version 0) gets what its age left out.
  (sql) => {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS endpoints (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        disabled INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE IF NOT EXISTS settings (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        account_id TEXT,
        balance_low_cents INTEGER NOT NULL DEFAULT 0,
        balance_low_armed INTEGER NOT NULL DEFAULT 1
      );
      INSERT OR IGNORE INTO settings (id) VALUES (1);
      CREATE TABLE IF NOT EXISTS events (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL,
        dedupe TEXT NOT NULL UNIQUE
      );
      CREATE TABLE IF NOT EXISTS deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER,
        window_start INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (endpoint_id, event_id)
      );
      CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_at) WHERE status = 'pending';
      CREATE INDEX IF NOT EXISTS deliveries_endpoint ON deliveries (endpoint_id, created_at);
      CREATE TABLE IF NOT EXISTS attempts (
        delivery_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        at INTEGER NOT NULL,
        status_code INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        PRIMARY KEY (delivery_id, n)
      );
    `);
    if (!columnsOf(sql, "settings").has("ledger_synced"))
      sql.exec("ALTER TABLE settings ADD COLUMN ledger_synced INTEGER NOT NULL DEFAULT 0");
  },
];
