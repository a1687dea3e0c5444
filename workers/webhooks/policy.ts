// The webhooks' fixed rules: how many endpoints an account may have, how long an attempt may take,
// and the retry schedule, which scales with the deployment's base (config.ts, `webhooks`).

/** issue 14: at most 10 endpoints per account. */
export const MAX_ENDPOINTS = 10;

/** Every attempt gets this long to answer (issue 14: 10 s). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** The retry delays grow ×3 from the base up to this many bases (1 h at the default base). */
export const MAX_DELAY_BASES = 360;
/** Retries stop once the next would come later than this many bases after the first attempt (24 h at the default base). */
export const WINDOW_BASES = 8_640;

/**
 * When to try again after `failedAttempts` failures of a delivery first tried at `windowStart`, or
 * undefined once the window (24 h at the default base) is over: base × 3^(n−1), at most 360 bases.
 * At the default base: 10 s, 30 s, 90 s, 4.5 min, 13.5 min, 40.5 min, then every hour, for 24 h.
 */
export function nextAttemptAt(
  now: number,
  windowStart: number,
  failedAttempts: number,
  baseMs: number,
): number | undefined {
  const delay = Math.min(baseMs * 3 ** Math.max(0, failedAttempts - 1), baseMs * MAX_DELAY_BASES);
  const at = now + delay;
  return at > windowStart + baseMs * WINDOW_BASES ? undefined : at;
}
