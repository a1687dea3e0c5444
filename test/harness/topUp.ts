// The top-up the end-to-end suites buy credit with: the SDK's topUp (sdk/src/billing.ts) for an API
// URL and key, as `sigil topup` (bin/cli/billing.ts) runs it.
import { createSigilClient, topUp as sdkTopUp, type TopUpResult } from "../../sdk/src/index.ts";

export type TopUpOptions = {
  /** The API base, e.g. http://127.0.0.1:8787/core/v1 (or the origin alone). */
  api: string;
  key: string;
  amountCents: number;
  /** A Stripe test payment method; pm_card_visa succeeds, pm_card_chargeDeclined is declined. */
  card?: string;
  /** How long to wait for a payment Stripe reports as processing (default 120 s). */
  waitMs?: number;
};

export type { TopUpResult };

/** Buys `amountCents` of credit for the account of `key`; a refusal throws the SDK's SigilError. */
export function topUp(options: TopUpOptions): Promise<TopUpResult> {
  return sdkTopUp(createSigilClient({ baseUrl: options.api, apiKey: options.key }), {
    amountCents: options.amountCents,
    ...(options.card ? { paymentMethod: options.card } : {}),
    ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
  });
}
