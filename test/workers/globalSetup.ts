// The stack behind the edge's tests in workerd: the same chain and enclave as the enclave suites
// (test/harness/sharedStack.ts: one for the suites of a vitest process). vitest.config.ts hands
// their URLs to the worker as bindings. Beside it, a
// second enclave whose chain listener stalls right after its first poll: the suites that need two
// instances (an edge's /health over several enclaves, pinning the attestation endpoints to one)
// configure an edge with both; no other suite routes to it.
import type { TestProject } from "vitest/node";
import { spawnEnclave } from "../../bin/stack/enclave.ts";
import { edgeIdentityFromSeed, toBase64Url } from "../../shared/channel/channel.ts";
import { TEST_EDGE_IDENTITY_SEED, TEST_ROOT_KEY } from "../enclave/constants.ts";
import { provideStack } from "../harness/provide.ts";
import { acquireTestStack } from "../harness/sharedStack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { stack, release } = await acquireTestStack();
  let stalled;
  try {
    stalled = await spawnEnclave({
      SIGIL_ENV: "test",
      SIGIL_ENCLAVE_PORT: "0",
      SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED)).publicKey),
      SIGIL_RPC_URL: stack.rpcUrl,
      SIGIL_CONTRACT_ADDRESS: stack.contract,
      SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
      SIGIL_INSTANCE_INDEX: "9",
      SIGIL_SANDBOX_WORKERS: "1",
      SIGIL_LOG_LEVEL: "warn",
      // One poll at start, the next in ten minutes, and stalled one second after that first poll.
      SIGIL_LISTENER_POLL_MS: "600000",
      SIGIL_LISTENER_STALLED_AFTER_MS: "1000",
    });
  } catch (err) {
    await release();
    throw err;
  }
  provideStack(project, stack);
  project.provide("stalledEnclaveUrl", stalled.url);
  return async () => {
    await stalled.stop();
    await release();
  };
}
