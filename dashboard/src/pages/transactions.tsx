// Transactions: what the account's scripts sent (Sigil.Actions.sendTransaction) and where each is —
// pending, or followed to confirmed, reverted, replaced or dropped (docs/design/transactions.md) —
// newest first, a page at a time (GET /transactions), filtered by status.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { Transaction } from "../../../sdk/src/index.ts";
import { ErrorNote, List, Short, useAction, useLoad } from "../ui.tsx";
import { TRANSACTION_STATUSES, type TransactionStatus } from "../../../shared/transactionStatus.ts";

const PAGE = 25;
const STATUSES = TRANSACTION_STATUSES;
type Status = TransactionStatus;

/** What the record says beyond its status: the block it was mined in, what replaced it, what went wrong. */
function outcome(t: Transaction): string {
  if (t.block_number !== null) return `block ${t.block_number}, fee ${t.fee_wei ?? "?"} wei`;
  if (t.replaced_by) return `replaced by ${t.replaced_by}`;
  return t.last_error ?? "";
}

export function Transactions({ session }: PageProps) {
  const [status, setStatus] = useState<Status | "">("");
  const [items, setItems] = useState<Transaction[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const query = (after?: string) => ({
    limit: PAGE,
    ...(status ? { status } : {}),
    ...(after ? { cursor: after } : {}),
  });
  const first = useLoad(async () => {
    const page = await session.client.listTransactions(query());
    setItems(page.transactions);
    setCursor(page.next_cursor);
    return page;
  }, [status]);
  const more = useAction(async () => {
    if (!cursor) return;
    const page = await session.client.listTransactions(query(cursor));
    setItems((t) => [...t, ...page.transactions]);
    setCursor(page.next_cursor);
  });
  return (
    <>
      <label>
        Status{" "}
        <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as Status | "")}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      {first.error ? (
        <ErrorNote error={first.error} />
      ) : !first.data ? (
        <p class="muted" role="status">
          Loading transactions…
        </p>
      ) : (
        <List
          items={items}
          empty="No transactions sent yet: a script sends one with Sigil.Actions.sendTransaction."
          caption="Transactions the account's scripts sent, newest first"
          columns={[
            ["Updated", (t) => new Date(t.updated_at).toLocaleString()],
            ["Status", (t) => t.status],
            ["Chain", (t) => String(t.chain_id)],
            ["Nonce", (t) => String(t.nonce)],
            ["Wallet", (t) => <Short value={t.wallet_address} />],
            ["Hash", (t) => (t.hash ? <Short value={t.hash} /> : "—")],
            ["Outcome", (t) => outcome(t)],
            ["Id", (t) => t.id],
          ]}
        />
      )}
      {cursor && (
        <button type="button" class="secondary" disabled={more.busy} onClick={() => void more.run()}>
          {more.busy ? "Loading…" : "Older transactions"}
        </button>
      )}
      <ErrorNote error={more.error} />
    </>
  );
}
