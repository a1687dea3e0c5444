// Audit log: the account's administrative history, newest first, read from the contract's events
// (GET /audit) — what changed, in which block and transaction, sent by whom — a page at a time.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { AuditEvent } from "../../../sdk/src/index.ts";
import { ErrorNote, List, Short, useAction, useLoad } from "../ui.tsx";

const PAGE = 25;

export function Audit({ session }: PageProps) {
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const first = useLoad(async () => {
    const page = await session.client.audit({ limit: PAGE });
    setEvents(page.events);
    setCursor(page.next_cursor);
    return page;
  });
  const more = useAction(async () => {
    if (!cursor) return;
    const page = await session.client.audit({ limit: PAGE, cursor });
    setEvents((e) => [...e, ...page.events]);
    setCursor(page.next_cursor);
  });
  if (first.error) return <ErrorNote error={first.error} />;
  if (!first.data)
    return (
      <p class="muted" role="status">
        Loading the audit log…
      </p>
    );
  return (
    <>
      <List
        items={events}
        empty="No administrative changes yet."
        caption="The account's administrative history, newest first"
        columns={[
          ["When", (e) => (e.block_time === null ? "—" : new Date(e.block_time * 1000).toLocaleString())],
          ["What", (e) => e.summary],
          ["Block", (e) => String(e.block_number)],
          ["Sender", (e) => (e.actor ? <Short value={e.actor} /> : "—")],
          ["Transaction", (e) => <Short value={e.tx_hash} />],
        ]}
      />
      {cursor && (
        <button type="button" class="secondary" disabled={more.busy} onClick={() => void more.run()}>
          {more.busy ? "Loading…" : "Older events"}
        </button>
      )}
      <ErrorNote error={more.error} />
    </>
  );
}
