// What a run costs (docs/design/billing.md, Fees), in one place for both sides: the edge settles a run's hold
// with it (workers/billing/meter.ts) and the enclave signs the same figure into the run's receipt
// (enclave/receipts/), so the receipt's `charged_cents` is what the ledger charged.

/** What a managed write costs: the cent its hold takes and its settle charges (workers/billing/meter.ts). */
export const WRITE_CENTS = 1;

/** The seconds a run is charged: every started second, at least one. */
export function runSeconds(durationMs: number): number {
  return Math.max(1, Math.ceil(durationMs / 1000));
}

/**
 * The cents a run of `durationMs` is charged: one per started second (at least one), never more
 * than the `grantedSeconds` its hold covered (the run was stopped there). `grantedSeconds`
 * undefined means billing is off: nothing is charged.
 */
export function runChargeCents(durationMs: number, grantedSeconds: number | undefined): number {
  if (grantedSeconds === undefined) return 0;
  return Math.max(0, Math.min(runSeconds(durationMs), Math.floor(grantedSeconds)));
}
