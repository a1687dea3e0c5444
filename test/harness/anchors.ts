// The transaction that anchored a receipt's epoch, for the end-to-end anchoring tests
// (test/e2e/anchored*.test.ts). verifyAnchored passes as soon as the root is on chain, which can be
// before the instance has seen its transaction's receipt: its proof then still says `pending`, with no
// transaction. The instance is asked again until it names one.
import type { Hex } from "viem";
import type { AnchoredReceipt, SigilClient } from "../../sdk/src/index.ts";
import type { RunReceipt } from "../../shared/receipt.ts";

export async function anchorTransaction(
  client: SigilClient,
  receipt: RunReceipt,
  anchored: AnchoredReceipt,
  timeoutMs = 60_000,
): Promise<Hex> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const proof = await client.getReceiptAnchor({
      instance: receipt.instance_id,
      epoch: anchored.epoch,
      head: anchored.proof.head,
    });
    if (proof.transaction_hash) return proof.transaction_hash as Hex;
    if (Date.now() > deadline)
      throw new Error(`epoch ${anchored.epoch} of ${receipt.instance_id} names no transaction (${proof.status})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
