// A wei amount in words, apart from budgets.ts so that what shows it (describe.ts, the dashboard's
// first page) does not load viem's hashing with it.

/** A wei amount as a person reads it, in ether with no trailing zeros: "0.25 ETH". */
export function showWei(wei: bigint): string {
  const whole = wei / 10n ** 18n;
  const frac = (wei % 10n ** 18n).toString().padStart(18, "0").replace(/0+$/, "");
  return `${whole}${frac ? `.${frac}` : ""} ETH`;
}
