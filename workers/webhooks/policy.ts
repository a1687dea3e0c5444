// How webhooks behave on this deployment, from two of the edge's variables: whether it is a local one
// (SIGIL_ENV development or test: plain http and loopback receivers allowed) and the base of the retry
// schedule (SIGIL_WEBHOOK_RETRY_BASE_MS, 10 s by default; tests make it small). The edge's config
// (config.ts) validates the variables and carries this; the Webhooks Durable Object, which has the
// same bindings, reads it here directly.

/** issue 14: at most 10 endpoints per account. */
export const MAX_ENDPOINTS = 10;

export const DEFAULT_RETRY_BASE_MS = 10_000;
export const MIN_RETRY_BASE_MS = 10;
export const MAX_RETRY_BASE_MS = 3_600_000;

export type WebhookPolicy = {
  /** A local deployment: http and loopback/private receivers allowed (never in production). */
  local: boolean;
  /** The first retry's delay; the whole schedule scales with it (schedule.ts). */
  retryBaseMs: number;
};

export function webhookPolicy(vars: {
  SIGIL_ENV?: string | undefined;
  SIGIL_WEBHOOK_RETRY_BASE_MS?: string | undefined;
}): WebhookPolicy {
  const base = Number(vars.SIGIL_WEBHOOK_RETRY_BASE_MS ?? DEFAULT_RETRY_BASE_MS);
  const env = vars.SIGIL_ENV ?? "development";
  return {
    local: env !== "production",
    retryBaseMs:
      Number.isInteger(base) && base >= MIN_RETRY_BASE_MS && base <= MAX_RETRY_BASE_MS ? base : DEFAULT_RETRY_BASE_MS,
  };
}

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
