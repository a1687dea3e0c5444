// An account's credit as the billing endpoints show it (docs/design/billing.md, Ledger): the free balance in
// cents, never below zero (a late settle after a hold expired may take it under), and in dollars.
import { ledgerToRead } from "./account.ts";
import type { Ledger } from "./ledger.ts";

/** Cents as dollars, e.g. 1234 → "$12.34", -5 → "-$0.05". */
export function centsDisplay(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(Math.trunc(cents));
  return `${sign}$${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/** What a client is told it may spend: free credit, never negative. */
export const shownBalanceCents = (freeCents: number) => Math.max(0, freeCents);

/** The credit free to spend in the account `master`'s Ledger among `ledgers`, and the same in dollars. */
export async function accountBalance(
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  master: bigint,
): Promise<{ cents: number; display: string }> {
  const { freeCents } = await (await ledgerToRead(ledgers, master)).balance();
  const cents = shownBalanceCents(freeCents);
  return { cents, display: centsDisplay(cents) };
}
