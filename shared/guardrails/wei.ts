// A wei amount in words, apart from budgets.ts so that what shows it (describe.ts, the dashboard's
// first page) does not load viem's hashing with it.

/** A wei amount as a person reads it, in ether with no trailing zeros: "0.25 ETH". */
export function showWei(wei: bigint): string {
  const whole = wei / 10n ** 18n;
  const frac = (wei % 10n ** 18n).toString().padStart(18, "0").replace(/0+$/, "");
  return `${whole}${frac ? `.${frac}` : ""} ETH`;
}

/** Lamports as a person reads them: "1.5 SOL (1500000000 lamports)", or "5000 lamports" below a thousandth of a SOL. */
export function showLamports(lamports: bigint): string {
  if (lamports < 1_000_000n) return `${lamports} lamports`;
  const whole = lamports / 1_000_000_000n;
  const fraction = (lamports % 1_000_000_000n).toString().padStart(9, "0").replace(/0+$/, "");
  return `${whole}${fraction ? `.${fraction}` : ""} SOL (${lamports} lamports)`;
}
