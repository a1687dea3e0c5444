// Billing: the credit, buying more, and the payment history (top-ups and refunds from /usage). A
// payment is confirmed with Stripe's API by the publishable key and a test card (the SDK's topUp,
// as `sigil topup` does it) — the local Stripe emulator under `npm start`; Stripe.js's payment
// element would have to load from js.stripe.com, which this page's CSP does not allow.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import { topUp, type PageItem, type SigilClient } from "../../../sdk/src/index.ts";
import { dollars, Empty, ErrorNote, Field, Form, Load, Table, useAction, useLoad } from "../ui.tsx";

const TEST_CARDS = [
  ["pm_card_visa", "Visa, succeeds"],
  ["pm_card_mastercard", "Mastercard, succeeds"],
  ["pm_card_chargeDeclined", "Declined"],
] as const;
const MIN_TOP_UP_CENTS = 500;

async function payments(client: SigilClient) {
  const events: Array<PageItem<"listUsage">> = [];
  for await (const e of client.all.listUsage({ kind: "top_up,refund", limit: 100 })) {
    events.push(e);
    if (events.length >= 200) break;
  }
  return { balance: await client.getBalance(), events };
}

export function Billing({ session }: PageProps) {
  const loaded = useLoad(() => payments(session.client));
  const [dollarsText, setDollars] = useState("5");
  const [card, setCard] = useState<string>(TEST_CARDS[0][0]);
  const buy = useAction(async () => {
    const amount = Number(dollarsText);
    if (!Number.isFinite(amount) || Math.round(amount * 100) < MIN_TOP_UP_CENTS) {
      throw Object.assign(new Error(`buy at least ${dollars(MIN_TOP_UP_CENTS)}`), { code: "amount_below_minimum" });
    }
    const paid = await topUp(session.client, { amountCents: Math.round(amount * 100), paymentMethod: card });
    loaded.reload();
    return paid;
  });
  return (
    <Load loaded={loaded} what="billing">
      {({ balance, events }) => (
        <>
          <p class="big" data-testid="billing-balance">
            {balance.balance_display}
          </p>
          <h2 id="buy">Buy credit</h2>
          <Form labelledBy="buy" onSubmit={() => buy.run()}>
            <Field label="Amount in dollars" hint={`At least ${dollars(MIN_TOP_UP_CENTS)}`}>
              <input
                type="number"
                inputMode="decimal"
                step="0.01"
                required
                value={dollarsText}
                onInput={(e) => setDollars(e.currentTarget.value)}
              />
            </Field>
            <Field label="Card" hint="Stripe test cards: this page pays in test mode">
              <select value={card} onChange={(e) => setCard(e.currentTarget.value)}>
                {TEST_CARDS.map(([id, name]) => (
                  <option value={id}>{name}</option>
                ))}
              </select>
            </Field>
            <button type="submit" disabled={buy.busy}>
              {buy.busy ? "Paying…" : "Pay"}
            </button>
            <ErrorNote error={buy.error} />
            {buy.result && <p role="status">Paid: the balance is now {dollars(buy.result.balanceCents)}.</p>}
          </Form>
          <h2 id="history">Payments</h2>
          {events.length === 0 ? (
            <Empty>No payments yet.</Empty>
          ) : (
            <Table
              caption="Top-ups and refunds, newest first"
              head={["When", "What", "Amount", "Balance after", "Payment"]}
              rows={events.map((e) => [
                new Date(e.time).toLocaleString(),
                e.kind === "top_up" ? "top-up" : "refund",
                dollars(e.amount_cents),
                e.balance_after_cents === null ? "—" : dollars(e.balance_after_cents),
                <code class="mono">{e.payment_intent ?? "—"}</code>,
              ])}
            />
          )}
        </>
      )}
    </Load>
  );
}
