// The local stack's configuration: read from the environment once, validated, typed.
import { join } from "node:path";
import { z } from "zod";
import type { PortChoice } from "./ports.ts";

/** The repository's git-ignored `.sigil/`. */
export const defaultStateDir = join(import.meta.dirname, "../../.sigil");

const schema = z.object({
  /** Use this chain instead of starting anvil. */
  SIGIL_RPC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Port for the local anvil; 0 lets it pick a free one. */
  SIGIL_ANVIL_PORT: z.coerce.number().int().min(0).max(65_535).default(8545),
  /** Port for the edge (the public API) under wrangler dev; 0 picks a free one. */
  SIGIL_EDGE_PORT: z.coerce.number().int().min(0).max(65_535).default(8787),
  /** Port for the local enclave's internal API; 0 lets it pick a free one. */
  SIGIL_ENCLAVE_PORT: z.coerce.number().int().min(0).max(65_535).default(8790),
  /** Where the stack writes its state (local.json); tests point it at a temporary folder. */
  SIGIL_STATE_DIR: z.string().min(1).optional(),
  /** Deployer key for a chain without unlocked accounts; anvil's dev account is used otherwise. */
  SIGIL_DEPLOYER_PRIVATE_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be 0x followed by 64 hex digits")
    .optional(),
  /** The IPFS gateway the enclave fetches `ipfs_id` scripts from (the enclave's default, https://ipfs.io, when unset). */
  SIGIL_IPFS_GATEWAY: z.url({ protocol: /^https?$/ }).optional(),
  /** How often the enclave anchors its receipts on the local chain, in seconds (the enclave's default, 60, when unset). */
  SIGIL_RECEIPT_ANCHOR_INTERVAL_S: z.coerce.number().int().min(1).max(86_400).optional(),
  /** `on` (default): writes and runs are charged; `off` for a stack that sells nothing. */
  SIGIL_BILLING: z.enum(["on", "off"]).default("on"),
  /** Port for the local Stripe emulator (when no Stripe keys are set); 0 picks a free one. */
  SIGIL_STRIPE_PORT: z.coerce.number().int().min(0).max(65_535).default(12111),
  /** The edge's first webhook retry delay in ms (default 10000; docs/guides/webhooks.md); tests make it small. */
  SIGIL_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).optional(),
  /** Real (test-mode) Stripe instead of the emulator: all three, or none. */
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_/, "must be a Stripe secret key (sk_… or rk_…)")
    .optional(),
  STRIPE_PUBLISHABLE_KEY: z.string().regex(/^pk_/, "must be a Stripe publishable key (pk_…)").optional(),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_/, "must be a Stripe webhook secret (whsec_…)")
    .optional(),
});

export type StackConfig = {
  rpcUrl: string | undefined;
  /** Each port with the variable that sets it, and whether the user set it (ports.ts). */
  ports: { anvil: PortChoice; edge: PortChoice; enclave: PortChoice; stripe: PortChoice };
  stateDir: string;
  deployerPrivateKey: string | undefined;
  billing: boolean;
  /** The enclave's IPFS gateway, when the operator names one. */
  ipfsGateway: string | undefined;
  /** The edge's SIGIL_WEBHOOK_RETRY_BASE_MS when set (the edge's default otherwise). */
  webhookRetryBaseMs: number | undefined;
  /** The enclave's SIGIL_RECEIPT_ANCHOR_INTERVAL_S when set. */
  receiptAnchorIntervalS: number | undefined;
  /** Set when the operator gives Stripe keys; otherwise the stack runs the local emulator. */
  stripe: { secretKey: string; publishableKey: string; webhookSecret: string } | undefined;
};

/** Parses the environment; the error names each bad variable and never echoes a secret's value. */
export function readStackConfig(env: Record<string, string | undefined> = process.env): StackConfig {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid configuration: ${problems}`);
  }
  const c = result.data;
  const stripeKeys = [c.STRIPE_SECRET_KEY, c.STRIPE_PUBLISHABLE_KEY, c.STRIPE_WEBHOOK_SECRET];
  if (stripeKeys.some((k) => k !== undefined) && !stripeKeys.every((k) => k !== undefined)) {
    throw new Error(
      "invalid configuration: set STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY and STRIPE_WEBHOOK_SECRET together, or none of them (for the local Stripe emulator)",
    );
  }
  const port = (
    variable: "SIGIL_ANVIL_PORT" | "SIGIL_EDGE_PORT" | "SIGIL_ENCLAVE_PORT" | "SIGIL_STRIPE_PORT",
  ): PortChoice => ({
    variable,
    port: c[variable],
    chosen: (env[variable] ?? "") !== "",
  });
  return {
    rpcUrl: c.SIGIL_RPC_URL,
    ports: {
      anvil: port("SIGIL_ANVIL_PORT"),
      edge: port("SIGIL_EDGE_PORT"),
      enclave: port("SIGIL_ENCLAVE_PORT"),
      stripe: port("SIGIL_STRIPE_PORT"),
    },
    stateDir: c.SIGIL_STATE_DIR ?? defaultStateDir,
    deployerPrivateKey: c.SIGIL_DEPLOYER_PRIVATE_KEY,
    billing: c.SIGIL_BILLING === "on",
    ipfsGateway: c.SIGIL_IPFS_GATEWAY,
    webhookRetryBaseMs: c.SIGIL_WEBHOOK_RETRY_BASE_MS,
    receiptAnchorIntervalS: c.SIGIL_RECEIPT_ANCHOR_INTERVAL_S,
    stripe:
      c.STRIPE_SECRET_KEY && c.STRIPE_PUBLISHABLE_KEY && c.STRIPE_WEBHOOK_SECRET
        ? {
            secretKey: c.STRIPE_SECRET_KEY,
            publishableKey: c.STRIPE_PUBLISHABLE_KEY,
            webhookSecret: c.STRIPE_WEBHOOK_SECRET,
          }
        : undefined,
  };
}
