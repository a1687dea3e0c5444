// Overview: the credit, a warning when it runs low, the last 30 days of spend as a chart (per day,
// runs and writes apart, the amounts on an axis beside it and the days named under it), the latest runs with their outcome and cost, and
// the latest payments — all from GET /usage and the balance.
import type { PageProps } from "../session.ts";
import type { PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { dollars, Empty, List, Load, Section, Short, useLoad } from "../ui.tsx";
import { PAYMENT_COLUMNS } from "./billing.tsx";

type UsageEvent = PageItem<"listUsage">;

const DAY_MS = 86_400_000;
/** At most this many events are read for the chart (20 pages): enough for a month of most accounts. */
const MAX_EVENTS = 2_000;
/** Below this the overview warns, unless the account set its own threshold (webhook settings). */
const DEFAULT_LOW_CENTS = 100;

async function overviewData(client: SigilClient) {
  const since = Date.now() - 30 * DAY_MS;
  // One more than is drawn: whether there were more.
  const read = await collect(client.all.listUsage({ from: new Date(since).toISOString(), limit: 100 }), MAX_EVENTS + 1);
  const events = read.slice(0, MAX_EVENTS);
  const truncated = read.length > MAX_EVENTS;
  const [balance, threshold] = await Promise.all([
    client.getBalance(),
    client.getWebhookSettings().then(
      // 0 turns the webhook off; the overview still warns below the default.
      (s) => s.balance_low_cents || DEFAULT_LOW_CENTS,
      () => DEFAULT_LOW_CENTS,
    ),
  ]);
  return { balance, threshold, events, truncated, since };
}

export function Overview({ session }: PageProps) {
  const loaded = useLoad(() => overviewData(session.client));
  return (
    <Load loaded={loaded} what="the overview">
      {({ balance, threshold, events, truncated, since }) => (
        <>
          <Section id="credit" title="Credit">
            <p class="big" data-testid="balance">
              {balance.balance_display}
            </p>
            {balance.balance_cents < threshold && (
              <p class="warning" role="status">
                Low balance: below {dollars(threshold)}. Runs and writes stop when it reaches zero —{" "}
                <a href="#/billing">buy credit</a>.
              </p>
            )}
          </Section>
          <Section id="spend" title="Spend, last 30 days">
            <SpendChart events={events} since={since} />
            {truncated && <p class="muted">Drawn from the newest {MAX_EVENTS} events.</p>}
          </Section>
          <Section id="runs" title="Recent runs">
            <RecentRuns events={events.filter((e) => e.kind === "run").slice(0, 10)} />
          </Section>
          <Section id="payments" title="Recent payments">
            <RecentPayments events={events.filter((e) => e.kind === "top_up" || e.kind === "refund").slice(0, 5)} />
          </Section>
        </>
      )}
    </Load>
  );
}

type Day = { day: string; runs: number; writes: number };

/** Cents charged per UTC day since `since`, runs and writes apart, oldest first (30 days, none left out). */
export function spendByDay(events: UsageEvent[], since: number): Day[] {
  const days: Day[] = [];
  const first = Math.floor(since / DAY_MS);
  const last = Math.floor(Date.now() / DAY_MS);
  for (let d = first; d <= last; d++)
    days.push({ day: new Date(d * DAY_MS).toISOString().slice(0, 10), runs: 0, writes: 0 });
  for (const e of events) {
    const day = days[Math.floor(Date.parse(e.time) / DAY_MS) - first];
    if (!day) continue;
    if (e.kind === "run") day.runs += e.charged_cents;
    else if (e.kind === "write") day.writes += e.charged_cents;
  }
  return days;
}

/** Round cents up to a "nice" top for the axis (1, 2, 2.5 or 5 × a power of ten), so its ticks read well. */
export function niceTop(cents: number): number {
  if (cents <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(cents));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= cents) return Math.ceil(step * power);
  return Math.ceil(10 * power);
}

function SpendChart({ events, since }: { events: UsageEvent[]; since: number }) {
  const days = spendByDay(events, since);
  const total = days.reduce((s, d) => s + d.runs + d.writes, 0);
  if (total === 0) return <Empty>Nothing spent in the last 30 days.</Empty>;
  const max = Math.max(...days.map((d) => d.runs + d.writes));
  const top = niceTop(max);
  const W = 620;
  const H = 160;
  /** Room left of the bars for the amounts, and under them for the days. */
  const AXIS = 84;
  const LABELS = 34;
  const TOP = 12;
  const bar = (W - AXIS) / days.length;
  const y = (cents: number) => (cents / top) * (H - TOP);
  // The amounts: 0, half the top (when it is whole cents) and the top, each with a line across.
  const ticks = top % 2 === 0 ? [0, top / 2, top] : [0, top];
  // A label every 7th day back from today (today's included), so the newest bar is always named.
  const labelled = (i: number) => (days.length - 1 - i) % 7 === 0;
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${W} ${H + LABELS}`}
        role="img"
        aria-label={`Spend per day over the last 30 days: ${dollars(total)} in all`}
        data-testid="spend-chart"
      >
        {/* biome-ignore lint/a11y/noAriaHiddenOnFocusable: an SVG group is not focusable; the amounts are in the bars' titles and the caption */}
        <g aria-hidden="true">
          {ticks.map((t) => (
            <>
              <line class="chart-grid" x1={AXIS - 4} x2={W} y1={H - y(t)} y2={H - y(t)} />
              <text class="chart-amount" x={AXIS - 8} y={H - y(t) + 5} text-anchor="end">
                {axisDollars(t)}
              </text>
            </>
          ))}
          <line class="chart-axis" x1={AXIS} x2={AXIS} y1={TOP - 4} y2={H} />
        </g>
        {days.map((d, i) => {
          const runs = y(d.runs);
          const writes = y(d.writes);
          const x = AXIS + i * bar;
          return (
            <g>
              <title>{`${d.day}: runs ${dollars(d.runs)}, writes ${dollars(d.writes)}`}</title>
              {d.runs > 0 && (
                <rect class="bar-runs" x={x + 1} y={H - runs} width={bar - 2} height={runs} data-day={d.day} />
              )}
              {d.writes > 0 && (
                <rect
                  class="bar-writes"
                  x={x + 1}
                  y={H - runs - writes}
                  width={bar - 2}
                  height={writes}
                  data-day={d.day}
                />
              )}
              {labelled(i) && (
                // biome-ignore lint/a11y/noAriaHiddenOnFocusable: an SVG text is not focusable; the day is in the bar's title
                <text
                  class="chart-day"
                  x={Math.min(W - 2, Math.max(AXIS + 2, x + 0.5 * bar))}
                  y={H + 26}
                  text-anchor={i === days.length - 1 ? "end" : "middle"}
                  aria-hidden="true"
                >
                  {dayLabel(d.day)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <span class="key key-runs" aria-hidden="true" /> runs <span class="key key-writes" aria-hidden="true" /> writes
        · {dollars(total)} in all, most on one day {dollars(max)}
      </figcaption>
    </figure>
  );
}

/** An axis amount: "$0", "$0.05", "$1", "$2.50" (no cents when whole dollars). */
function axisDollars(cents: number): string {
  const rounded = Math.round(cents);
  return rounded % 100 === 0 ? `$${rounded / 100}` : dollars(rounded);
}

/** "Nov 25" for "2026-11-25" (a UTC day, as the chart counts them). */
function dayLabel(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, {
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  });
}

function RecentPayments({ events }: { events: UsageEvent[] }) {
  return (
    <List
      items={events}
      empty={
        <>
          No payments yet. <a href="#/billing">Buy credit</a>.
        </>
      }
      caption="The latest payments"
      columns={PAYMENT_COLUMNS}
    />
  );
}

function RecentRuns({ events }: { events: UsageEvent[] }) {
  return (
    <List
      items={events}
      empty={
        <>
          No runs yet. Try one in the <a href="#/playground">playground</a>.
        </>
      }
      caption="The latest runs"
      columns={[
        ["When", (e) => new Date(e.time).toLocaleString()],
        ["Action", (e) => (e.cid ? <Short value={e.cid} /> : "—")],
        [
          "Outcome",
          (e) => (e.error_code ? <span class="bad">failed: {e.error_code}</span> : <span class="good">ok</span>),
        ],
        ["Duration", (e) => (e.duration_ms === null ? "—" : `${e.duration_ms} ms`)],
        ["Cost", (e) => dollars(e.charged_cents)],
      ]}
    />
  );
}
