// Billing: the credit, buying more, and the payment history (top-ups and refunds from /usage). A
// payment is confirmed with Stripe's API by the publishable key and a test card (the SDK's topUp,
// as `sigil topup` does it) — the local Stripe emulator under `npm start`; Stripe.js's payment
// element would have to load from js.stripe.com, which this page's CSP does not allow.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import { topUp, type PageItem, type SigilClient } from "../../../sdk/src/index.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { dollars, Field, Form, List, Load, TextField, useAction, useLoad, type Column } from "../ui.tsx";

const TEST_CARDS = [
  ["pm_card_visa", "Visa, succeeds"],
  ["pm_card_mastercard", "Mastercard, succeeds"],
  ["pm_card_chargeDeclined", "Declined"],
] as const;
const MIN_TOP_UP_CENTS = 500;

/** A payment's columns (a top-up or a refund), here and in the overview's latest payments. */
export const PAYMENT_COLUMNS: Array<Column<PageItem<"listUsage">>> = [
  ["When", (e) => new Date(e.time).toLocaleString()],
  ["What", (e) => (e.kind === "refund" ? "refund" : "top-up")],
  ["Amount", (e) => dollars(e.amount_cents)],
  ["Balance after", (e) => (e.balance_after_cents === null ? "—" : dollars(e.balance_after_cents))],
];

async function payments(client: SigilClient) {
  const events = await collect(client.all.listUsage({ kind: "top_up,refund", limit: 100 }), 200);
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
          <Form
            labelledBy="buy"
            submit="Pay"
            busyLabel="Paying…"
            action={buy}
            outcome={buy.result && <p role="status">Paid: the balance is now {dollars(buy.result.balanceCents)}.</p>}
          >
            <TextField
              label="Amount in dollars"
              hint={`At least ${dollars(MIN_TOP_UP_CENTS)}`}
              type="number"
              inputMode="decimal"
              step="0.01"
              required
              value={dollarsText}
              onInput={setDollars}
            />
            <Field label="Card" hint="Stripe test cards: this page pays in test mode">
              <select value={card} onChange={(e) => setCard(e.currentTarget.value)}>
                {TEST_CARDS.map(([id, name]) => (
                  <option value={id}>{name}</option>
                ))}
              </select>
            </Field>
          </Form>
          <h2 id="history">Payments</h2>
          <List
            items={events}
            empty="No payments yet."
            caption="Top-ups and refunds, newest first"
            columns={[...PAYMENT_COLUMNS, ["Payment", (e) => <code class="mono">{e.payment_intent ?? "—"}</code>]]}
          />
        </>
      )}
    </Load>
  );
}
