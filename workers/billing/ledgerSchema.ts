// The Ledger's SQLite schema (ledger.ts says what each table holds), as numbered migrations
// (../migrations.ts runs them): a change to it is a new one at the end of the list.
import { columnsOf, type Migration } from "../migrations.ts";

export const LEDGER_MIGRATIONS: readonly Migration[] = [
  // 1: the schema as it stood when the migrations were numbered. A ledger made before then is at
  // version 0 in whatever shape its age gave it, so this one takes any of them there: what is
  // missing is made, and the tables kept beside the entries are filled from what the entries say.
  (sql) => {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS entries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('credit', 'charge', 'adjustment')),
        cents INTEGER NOT NULL,
        ref TEXT NOT NULL UNIQUE,
        key_hash TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS entries_key ON entries (key_hash) WHERE key_hash IS NOT NULL;
      CREATE TABLE IF NOT EXISTS holds (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        request_id TEXT NOT NULL UNIQUE,
        cents INTEGER NOT NULL CHECK (cents > 0),
        key_hash TEXT,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS account (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        settled_cents INTEGER NOT NULL,
        customer_id TEXT,
        email TEXT
      );
      INSERT OR IGNORE INTO account (id, settled_cents) VALUES (1, 0);
    `);
    const added: Record<string, Record<string, string>> = {
      account: { email: "TEXT", pruned_cents: "INTEGER NOT NULL DEFAULT 0", webhooks: "INTEGER" },
      entries: { op: "TEXT", detail: "TEXT", balance_after: "INTEGER" },
      holds: { op: "TEXT", detail: "TEXT" },
    };
    for (const [table, columns] of Object.entries(added)) {
      const present = columnsOf(sql, table);
      for (const [name, type] of Object.entries(columns))
        if (!present.has(name)) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
    }
    const tables = new Set(
      sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .toArray()
        .map((r) => r.name),
    );
    if (!tables.has("key_spend")) {
      sql.exec("CREATE TABLE key_spend (key_hash TEXT PRIMARY KEY, spent_cents INTEGER NOT NULL)");
      sql.exec(
        "INSERT INTO key_spend SELECT key_hash, SUM(-cents) FROM entries WHERE kind = 'charge' AND key_hash IS NOT NULL GROUP BY key_hash",
      );
    }
    if (!tables.has("payment_refs")) {
      sql.exec("CREATE TABLE payment_refs (ref TEXT PRIMARY KEY)");
      sql.exec("INSERT INTO payment_refs SELECT ref FROM entries WHERE kind = 'credit' OR op = 'refund'");
    }
    sql.exec("CREATE INDEX IF NOT EXISTS entries_created ON entries (created_at)");
  },
  // 2: credit leases (ledger.ts, Leases): credit an edge isolate has reserved for the runs it meters
  // itself, counted as held like the holds, against the account and the key it was leased for.
  (sql) => {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS leases (
        id TEXT PRIMARY KEY,
        key_hash TEXT,
        cents INTEGER NOT NULL CHECK (cents >= 0),
        in_flight INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS lease_open (
        ref TEXT PRIMARY KEY,
        lease_id TEXT NOT NULL,
        cents INTEGER NOT NULL CHECK (cents > 0),
        op TEXT,
        detail TEXT
      );
      CREATE INDEX IF NOT EXISTS lease_open_lease ON lease_open (lease_id);
    `);
  },
  // 3: runs' charges the enclave that ran them settled before their edge isolate committed them
  // (ledger.ts settleRuns), paid out of the isolate's lease: its next commit learns of them.
  (sql) => {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS lease_settled (
        ref TEXT PRIMARY KEY,
        lease_id TEXT NOT NULL,
        cents INTEGER NOT NULL CHECK (cents >= 0)
      );
      CREATE INDEX IF NOT EXISTS lease_settled_lease ON lease_settled (lease_id);
    `);
  },
  // 4: the wallets each run's receipt says it signed with or read the key of (ledger.ts,
  // wallet_runs), so a wallet's history is read by index rather than by parsing every receipt;
  // filled from the receipts already kept (an entry whose detail or receipt is not what a run
  // writes is passed over, not a reason to stop).
  (sql) => {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS wallet_runs (
        wallet TEXT NOT NULL,
        entry_id INTEGER NOT NULL,
        PRIMARY KEY (wallet, entry_id)
      ) WITHOUT ROWID;
      INSERT OR IGNORE INTO wallet_runs (wallet, entry_id)
        SELECT lower(json_extract(w.value, '$.address')), r.id
        FROM (
          SELECT id, CASE WHEN json_valid(detail) THEN json_extract(detail, '$.receipt') END AS receipt
          FROM entries WHERE op = 'run'
        ) r,
        json_each(
          CASE WHEN json_valid(r.receipt) THEN
            CASE WHEN json_type(r.receipt, '$.wallets') = 'array' THEN r.receipt END
          END,
          '$.wallets'
        ) w
        WHERE CASE WHEN w.type = 'object' THEN
          json_extract(w.value, '$.action') = 0
          AND json_type(w.value, '$.address') = 'text'
          AND (json_array_length(w.value, '$.signed') > 0 OR json_extract(w.value, '$.key_exported') = 1)
        ELSE 0 END;
    `);
  },
];
