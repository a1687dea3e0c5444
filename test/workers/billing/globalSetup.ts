// The stack behind the billing suites: the edge's usual chain and enclave (test/harness/sharedStack.ts)
// and a local Stripe (emulators/stripe.ts). The edge in workerd has no address the emulator
// could post webhooks to, so it delivers none here; the suites fetch its signed-for events and
// post them to the edge themselves (the end-to-end suite has real deliveries).
import type { TestProject } from "vitest/node";
import { startStripeEmulator } from "../../../emulators/stripe.ts";
import { provideStack, provideStripe } from "../../harness/provide.ts";
import { acquireTestStack } from "../../harness/sharedStack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { stack, release } = await acquireTestStack();
  const stripe = await startStripeEmulator().catch(async (err: unknown) => {
    await release();
    throw err;
  });
  provideStack(project, stack);
  provideStripe(project, stripe);
  return async () => {
    await stripe.stop();
    await release();
  };
}
