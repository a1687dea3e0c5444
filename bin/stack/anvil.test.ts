// How the stack's anvil mines: a block per transaction by default (tests and `npm start` see a
// write answered at once), or a block every `blockTimeSeconds` with whatever is pending (the soak,
// whose chain must not grow slower with every block; anvil.ts says why).
import { createPublicClient, createWalletClient, http, type Hex } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "./anvil.ts";

let anvil: Anvil | undefined;
afterEach(async () => {
  await anvil?.stop();
  anvil = undefined;
});

/**
 * Sends `n` transfers from anvil's first account back to back (or `oneByOne`, each once the one
 * before it is mined); the blocks their receipts name.
 */
async function blocksOfTransfers(chain: Anvil, n: number, oneByOne = false): Promise<bigint[]> {
  const transport = http(chain.rpcUrl);
  const publicClient = createPublicClient({ transport, pollingInterval: 50 });
  const walletClient = createWalletClient({ transport });
  const [from, to] = await walletClient.getAddresses();
  let nonce = await publicClient.getTransactionCount({ address: from!, blockTag: "pending" });
  const hashes: Hex[] = [];
  for (let i = 0; i < n; i++) {
    const hash = await walletClient.sendTransaction({
      account: from!,
      to: to!,
      value: 1n,
      nonce: nonce++,
      chain: null,
    });
    if (oneByOne) await publicClient.waitForTransactionReceipt({ hash, timeout: 20_000 });
    hashes.push(hash);
  }
  const receipts = await Promise.all(
    hashes.map((hash) => publicClient.waitForTransactionReceipt({ hash, timeout: 20_000 })),
  );
  return receipts.map((r) => r.blockNumber);
}

describe("startAnvil", () => {
  it("mines a block per transaction by default", async () => {
    anvil = await startAnvil({ accounts: 2 });
    // One by one: anvil mines what is pending when a transaction arrives, so two sent back to back
    // on a busy machine may share a block; each sent after the last was mined never does.
    const blocks = await blocksOfTransfers(anvil, 5, true);
    expect(new Set(blocks).size).toBe(5);
  });

  it("with blockTimeSeconds, mines what is pending once per block time", async () => {
    anvil = await startAnvil({ accounts: 2, blockTimeSeconds: 2 });
    // Five sends take milliseconds: they fall in one block, or two when a block is mined between them.
    const blocks = await blocksOfTransfers(anvil, 5);
    expect(new Set(blocks).size).toBeLessThanOrEqual(2);
  });
});
