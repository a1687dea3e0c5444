// Webhooks: the endpoints the service POSTs the account's events to (payments, a low balance, a usage
// key at its cap, failed runs), each signed with its endpoint's secret. The list of endpoints; a form
// that adds one (its signing secret shown this once, with a copy button: the list never has it);
// removal after a confirmation; an endpoint's delivery log, a page at a time, where a delivery can be
// sent again; and balance.low's threshold. They configure the account, so the API takes the master
// key or a ChainSecured admin wallet: a usage key is refused (account_key_required), said in words.
import { useEffect, useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import {
  WEBHOOK_EVENT_TYPES,
  type SigilClient,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventType,
} from "../../../sdk/src/index.ts";
import {
  dollars,
  ErrorNote,
  Form,
  List,
  Load,
  Loading,
  Section,
  Short,
  ShownOnce,
  TextField,
  useAction,
  useLoad,
} from "../ui.tsx";

/** What each event tells, in words (docs/guides/webhooks.md). */
const EVENTS: Record<WebhookEventType, string> = {
  "payment.credited": "a top-up was credited",
  "payment.failed": "a top-up's payment failed (a declined card)",
  "balance.low": "the balance went under the threshold below",
  "usage_key.cap_reached": "a usage key reached its spend cap",
  "run.failed": "a run ended with an error (one per run)",
  "guardrail.denied": "a wallet's guardrail refused a signature a script asked for (one per run)",
  "budget.exhausted": "a wallet's budget refused a signature for want of room, once until room frees up",
  "transaction.confirmed": "a transaction a script sent was mined and succeeded",
  "transaction.reverted": "a transaction a script sent was mined and reverted",
  "transaction.replaced": "another transaction of the same nonce was mined in place of one a script sent",
  "transaction.dropped": "a transaction a script sent left the chain's pool unmined; its nonce is free again",
};
/** What a new endpoint receives unless told otherwise: the API's default, everything but run.failed. */
const DEFAULT_EVENTS = WEBHOOK_EVENT_TYPES.filter((t) => t !== "run.failed");
/** Deliveries per page of the log. */
const PAGE = 10;

const when = (unixSeconds: number) => new Date(unixSeconds * 1000).toLocaleString();

async function webhooks(client: SigilClient) {
  // One after the other: a wallet signs each request, and a refused first one needs no second.
  const endpoints = await client.listWebhooks();
  return { endpoints, settings: await client.getWebhookSettings() };
}

export function Webhooks({ session }: PageProps) {
  const loaded = useLoad(() => webhooks(session.client));
  const [open, setOpen] = useState<WebhookEndpoint | undefined>();
  if (loaded.error) {
    return (
      <>
        <ErrorNote error={loaded.error} />
        {loaded.error.code === "account_key_required" && (
          <p class="muted">
            Webhooks configure the account, so only its master key (or a ChainSecured account's admin wallet) manages
            them. Sign in with the master key to see them.
          </p>
        )}
      </>
    );
  }
  if (!loaded.data) return <Loading what="webhook endpoints" />;
  const { endpoints, settings } = loaded.data;
  return (
    <>
      <List
        items={endpoints}
        empty="No webhook endpoints yet. Add one below to have payments, a low balance and spent caps POSTed to your server."
        caption="The account's webhook endpoints"
        columns={[
          ["URL", (e) => <code class="mono">{e.url}</code>],
          ["Events", (e) => e.events.join(", ")],
          ["Status", (e) => (e.disabled ? "disabled" : "enabled")],
          ["Created", (e) => when(e.created)],
        ]}
        name={(e) => e.url}
        buttons={[
          {
            label: "Deliveries",
            names: "Deliveries to",
            expanded: (e) => open?.id === e.id,
            onClick: (e) => setOpen(open?.id === e.id ? undefined : e),
          },
        ]}
        remove={{
          ask: (e) =>
            `Remove the webhook endpoint ${e.url}? It gets no more events, and its delivery log goes with it.`,
          run: async (e) => {
            await session.client.deleteWebhook({ webhook_id: e.id });
            if (open?.id === e.id) setOpen(undefined);
            loaded.reload();
          },
        }}
      />
      {open && <Deliveries key={open.id} client={session.client} endpoint={open} />}
      <AddEndpoint client={session.client} onAdded={loaded.reload} />
      <Settings client={session.client} cents={settings.balance_low_cents} onSaved={loaded.reload} />
    </>
  );
}

/** The last attempt's answer: the receiver's status code, or why none came. */
function response(d: WebhookDelivery): string {
  const last = d.attempts.at(-1);
  if (!last) return "not sent yet";
  if (last.status_code !== null && last.error === null) return String(last.status_code);
  return last.error ?? String(last.status_code);
}

function status(d: WebhookDelivery): string {
  const tries = `${d.attempts.length} attempt${d.attempts.length === 1 ? "" : "s"}`;
  if (d.status === "pending" && d.next_attempt_at !== null)
    return `pending, ${tries}; next at ${when(d.next_attempt_at)}`;
  return `${d.status}, ${tries}`;
}

function Deliveries({ client, endpoint }: { client: SigilClient; endpoint: WebhookEndpoint }) {
  const [page, setPage] = useState(0);
  const loaded = useLoad(async () => {
    let total: number | undefined;
    const items = await client.listWebhookDeliveries(
      { webhook_id: endpoint.id, page_number: page, page_size: PAGE },
      {
        onResponse: (info) => {
          const header = info.headers.get("x-total-count");
          if (header !== null && /^\d+$/.test(header)) total = Number(header);
        },
      },
    );
    return { items, total: total ?? page * PAGE + items.length };
  }, [page]);
  const resend = useAction(async (d: WebhookDelivery) => {
    const sent = await client.resendWebhookDelivery({ webhook_id: endpoint.id, delivery_id: d.id });
    loaded.reload();
    return sent;
  });
  // While a delivery is due within the next half minute, the log follows it by itself.
  const soon = loaded.data?.items
    .filter((d) => d.status === "pending")
    .map((d) => (d.next_attempt_at ?? 0) * 1000)
    .filter((at) => at < Date.now() + 30_000)
    .sort((a, b) => a - b)[0];
  useEffect(() => {
    if (soon === undefined || loaded.loading) return;
    const timer = setTimeout(loaded.reload, Math.max(2_000, soon - Date.now() + 1_000));
    return () => clearTimeout(timer);
  }, [soon, loaded.loading, loaded.reload]);
  const pages = loaded.data ? Math.max(1, Math.ceil(loaded.data.total / PAGE)) : 1;
  return (
    <Section
      id="deliveries"
      title={
        <>
          Deliveries to <code class="mono">{endpoint.url}</code>
        </>
      }
    >
      <p class="row">
        <button type="button" class="small secondary" disabled={loaded.loading} onClick={loaded.reload}>
          {loaded.loading ? "Loading…" : "Refresh deliveries"}
        </button>
      </p>
      <Load loaded={loaded} what="deliveries">
        {({ items, total }) => (
          <>
            <List
              items={items}
              empty="No deliveries yet: events go to this endpoint as they happen."
              caption={`Deliveries to this endpoint, newest first (page ${page + 1} of ${pages}, ${total} in all)`}
              columns={[
                ["When", (d) => when(d.created)],
                [
                  "Event",
                  (d) => (
                    <>
                      {d.event_type}
                      <div>
                        <Short value={d.event_id} />
                      </div>
                    </>
                  ),
                ],
                ["Status", status],
                ["Response", response],
              ]}
              name={(d) => `${d.event_type} ${d.event_id}`}
              buttons={[{ label: "Resend", disabled: resend.busy, onClick: (d) => void resend.run(d) }]}
            />
            {items.length > 0 && pages > 1 && (
              <nav aria-label="Delivery pages" class="row">
                <button type="button" class="small secondary" disabled={page === 0} onClick={() => setPage(page - 1)}>
                  Newer
                </button>
                <button
                  type="button"
                  class="small secondary"
                  disabled={page + 1 >= pages}
                  onClick={() => setPage(page + 1)}
                >
                  Older
                </button>
              </nav>
            )}
          </>
        )}
      </Load>
      <ErrorNote error={resend.error} />
      {resend.result && (
        <p role="status">
          Sending {resend.result.event_type} <code class="mono">{resend.result.event_id}</code> again now (the same
          event id: a receiver that has it already can drop it).
        </p>
      )}
    </Section>
  );
}

function AddEndpoint({ client, onAdded }: { client: SigilClient; onAdded(): void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEventType[]>(DEFAULT_EVENTS);
  const add = useAction(async () => {
    if (events.length === 0)
      throw Object.assign(new Error("pick at least one event for the endpoint to receive"), { code: "no_events" });
    // In the list's order, as the API answers them.
    const made = await client.createWebhook({
      url: url.trim(),
      events: WEBHOOK_EVENT_TYPES.filter((t) => events.includes(t)),
    });
    setUrl("");
    onAdded();
    return made;
  });
  return (
    <Section id="add-endpoint" title="Add an endpoint">
      <Form
        submit="Add endpoint"
        busyLabel="Adding…"
        action={add}
        outcome={
          add.result && (
            <ShownOnce
              what="The endpoint's signing secret, shown this once:"
              note={
                <>
                  it will not be shown again. Keep it on your server: it checks each delivery's Sigil-Signature header
                  (the SDK's <code>verifyWebhook</code>).
                </>
              }
              value={add.result.secret}
              testId="webhook-secret"
              copy="Copy secret"
            />
          )
        }
      >
        <TextField
          label="Endpoint URL"
          hint="An https URL of your server that answers 2xx; at most 10 endpoints"
          type="url"
          inputMode="url"
          required
          spellcheck={false}
          autoComplete="off"
          maxLength={2048}
          value={url}
          onInput={setUrl}
        />
        <fieldset>
          <legend>Events it receives</legend>
          {WEBHOOK_EVENT_TYPES.map((t) => (
            // Not a flex row: at 360 px the words wrap beside the box instead of dropping under it.
            <div>
              <label>
                <input
                  type="checkbox"
                  class="check"
                  checked={events.includes(t)}
                  onChange={(e) => setEvents(e.currentTarget.checked ? [...events, t] : events.filter((x) => x !== t))}
                />{" "}
                <code>{t}</code>: {EVENTS[t]}
              </label>
            </div>
          ))}
        </fieldset>
      </Form>
    </Section>
  );
}

function Settings({ client, cents, onSaved }: { client: SigilClient; cents: number; onSaved(): void }) {
  const [text, setText] = useState(cents ? (cents / 100).toFixed(2) : "0");
  const save = useAction(async () => {
    const amount = Number(text);
    if (text.trim() === "" || !Number.isFinite(amount) || amount < 0 || amount > 999_999.99) {
      throw Object.assign(new Error("the threshold is an amount in dollars from 0 to 999999.99"), {
        code: "invalid_amount",
      });
    }
    const saved = await client.updateWebhookSettings({ balance_low_cents: Math.round(amount * 100) });
    onSaved();
    return saved;
  });
  return (
    <Section id="settings" title="Low-balance warning">
      <p data-testid="balance-low-now">
        {cents ? `balance.low fires when the balance goes under ${dollars(cents)}.` : "balance.low is off."}
      </p>
      <Form
        submit="Save threshold"
        busyLabel="Saving…"
        action={save}
        outcome={
          save.result && (
            <p role="status">
              Saved:{" "}
              {save.result.balance_low_cents
                ? `the threshold is ${dollars(save.result.balance_low_cents)}`
                : "balance.low is off"}
              .
            </p>
          )
        }
      >
        <TextField
          label="Low-balance threshold in dollars"
          hint="balance.low fires once each time a charge takes the balance from at least this to under it (set above the balance now, it waits for a top-up first); 0 turns it off"
          type="number"
          inputMode="decimal"
          min={0}
          step="0.01"
          required
          value={text}
          onInput={setText}
        />
      </Form>
    </Section>
  );
}
