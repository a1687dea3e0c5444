// What the suites that share the test stack (test/harness/stack.ts) receive from their
// globalSetup through vitest's `inject`: the stack's addresses, typed once for both.
import type { TestProject } from "vitest/node";
import type { StripeEmulator } from "../../emulators/stripe.ts";
import type { TestStack } from "./stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    rpcUrl: string;
    contract: `0x${string}`;
    owner: `0x${string}`;
    enclaveUrl: string;
    enclavePid: number;
    gatewayUrl: string;
    fetchTargetUrl: string;
    listenerPollMs: number;
    /** A second enclave whose chain listener has stalled (test/workers/globalSetup.ts only). */
    stalledEnclaveUrl: string;
    /**
     * The billing suites' edge reaches the chain through a proxy of its own (test/workers/billing/globalSetup.ts),
     * which a test stops and starts by POSTing `/stop` and `/start` to the control URL (tcpProxy.ts).
     */
    edgeRpcUrl: string;
    edgeRpcControlUrl: string;
    /** The local Stripe emulator, where a suite runs one (emulators/stripe.ts). */
    stripeApiBase: string;
    stripeSecretKey: string;
    stripePublishableKey: string;
    stripeWebhookSecret: string;
  }
}

const keys = [
  "rpcUrl",
  "contract",
  "owner",
  "enclaveUrl",
  "enclavePid",
  "gatewayUrl",
  "fetchTargetUrl",
  "listenerPollMs",
] as const;

export function provideStack(project: TestProject, stack: TestStack): void {
  for (const key of keys) project.provide(key, stack[key] as never);
}

export function provideStripe(project: TestProject, stripe: StripeEmulator): void {
  project.provide("stripeApiBase", stripe.url);
  project.provide("stripeSecretKey", stripe.secretKey);
  project.provide("stripePublishableKey", stripe.publishableKey);
  project.provide("stripeWebhookSecret", stripe.webhookSecret);
}
