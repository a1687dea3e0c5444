// A Durable Object's SQLite schema as numbered migrations. An object records how many it has run
// (its one-row `schema_version` table: workerd refuses PRAGMA user_version, SQLITE_AUTH) and, when it
// wakes, runs those it has not, in order, each with its new version in one transaction: an object
// reads its version once per wake and is never probed for its tables or columns. A change to a
// schema is a new migration at the end of its list; a migration that has shipped is never edited.

/** One step of a schema: what it changes in the object's SQL storage. */
export type Migration = (sql: SqlStorage) => void;

/** Runs the migrations of `migrations` that `storage` has not run. */
export function migrate(storage: DurableObjectStorage, migrations: readonly Migration[]): void {
  const { sql } = storage;
  const version = schemaVersion(sql);
  for (let next = version; next < migrations.length; next++) {
    const migration = migrations[next] as Migration;
    storage.transactionSync(() => {
      migration(sql);
      sql.exec("UPDATE schema_version SET version = ? WHERE id = 1", next + 1);
    });
  }
}

/** How many migrations the object has run (0 for one made before they were numbered, or new). */
export function schemaVersion(sql: SqlStorage): number {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
    INSERT OR IGNORE INTO schema_version (id, version) VALUES (1, 0);
  `);
  return sql.exec<{ version: number }>("SELECT version FROM schema_version WHERE id = 1").one().version;
}

/** The columns `table` has now (for a first migration that meets objects of more than one earlier shape). */
export function columnsOf(sql: SqlStorage, table: string): Set<string> {
  return new Set(
    sql
      .exec<{ name: string }>(`PRAGMA table_info(${table})`)
      .toArray()
      .map((r) => r.name),
  );
}
