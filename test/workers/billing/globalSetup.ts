// The stack behind the billing suites: the edge's usual chain and enclave (test/harness/sharedStack.ts)
// and a local Stripe (emulators/stripe.ts). The edge in workerd has no address the emulator
// could post webhooks to, so it delivers none here; the suites fetch its signed-for events and
// post them to the edge themselves (the end-to-end suite has real deliveries). The edge reaches the
// chain through a loopback proxy of its own (test/harness/tcpProxy.ts), which keyCache.test.ts stops to
// take the chain away from the edge alone: the enclave and the tests reach anvil directly.
import type { TestProject } from "vitest/node";
import { startStripeEmulator } from "../../../emulators/stripe.ts";
import { provideStack, provideStripe } from "../../harness/provide.ts";
import { acquireTestStack } from "../../harness/sharedStack.ts";
import { startProxyControl, startTcpProxy } from "../../harness/tcpProxy.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { stack, release } = await acquireTestStack();
  const stops: Array<() => Promise<void>> = [release];
  const stop = async () => {
    for (const s of stops.splice(0)) await s().catch(() => undefined);
  };
  try {
    const stripe = await startStripeEmulator();
    stops.unshift(() => stripe.stop());
    const edgeChain = await startTcpProxy({ port: Number(new URL(stack.rpcUrl).port) });
    stops.unshift(() => edgeChain.close());
    const control = await startProxyControl(edgeChain);
    stops.unshift(() => control.close());
    provideStack(project, stack);
    provideStripe(project, stripe);
    project.provide("edgeRpcUrl", edgeChain.url);
    project.provide("edgeRpcControlUrl", control.url);
  } catch (err) {
    await stop();
    throw err;
  }
  return stop;
}
