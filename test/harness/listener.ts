// Waiting for an enclave's chain listener, without timed sleeps: until it has read a block (its
// public GET /health's last_block), or until an account's recent events are out of its re-read
// window. The listener reads its last SIGIL_LISTENER_REORG_DEPTH blocks again on every poll and each
// event it reads drops the named account's cached grants; so a test that needs a grant to stay
// cached between two runs (or one that checks a drop is caused by something else) first moves the
// account's setup past that window.
import { createPublicClient, createTestClient, http } from "viem";
import { expect, vi } from "vitest";

/** Blocks the enclave's listener reads again on every poll (its default SIGIL_LISTENER_REORG_DEPTH, which the test stacks keep). */
export const REORG_DEPTH = 3;

/** Waits until the listener of the enclave at `enclaveUrl` has processed `block`. */
export async function listenerHasRead(enclaveUrl: string, block: bigint): Promise<void> {
  await vi.waitFor(
    async () => {
      const body = (await (await fetch(`${enclaveUrl}/health`)).json()) as { listener: { last_block: string | null } };
      expect(BigInt(body.listener.last_block ?? -1)).toBeGreaterThanOrEqual(block);
    },
    { timeout: 15_000, interval: 50 },
  );
}

/** Mines empty blocks past the listener's re-read window and waits until it has read them: no earlier event is read again. */
export async function leaveReadWindow(rpcUrl: string, enclaveUrl: string): Promise<void> {
  await createTestClient({ mode: "anvil", transport: http(rpcUrl) }).mine({ blocks: REORG_DEPTH + 1 });
  await listenerHasRead(
    enclaveUrl,
    await createPublicClient({ transport: http(rpcUrl) }).getBlockNumber({ cacheTime: 0 }),
  );
}
