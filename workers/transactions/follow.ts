// Following sent transactions to the end (docs/design/transactions.md, Following): what one read of a
// chain says of the account's pending transactions there. The Transactions object (store.ts) calls
// it from its alarm, every SIGIL_TX_FOLLOW_MS while anything is pending, and writes what it answers.
//
// For each wallet, the count of its mined transactions (its nonce at the latest block) is read
// first; then, for each pending transaction of the wallet:
// - its nonce below that count: the nonce was used. Its receipt says `confirmed` (status 1) or
//   `reverted` (status 0); no receipt means another transaction of the same nonce was mined —
//   `replaced`. (The count is read before the receipt, so a transaction mined by then has one.)
// - not yet: in the chain's pool it stays pending. Seen nowhere — the pool lost it, or its broadcast
//   never arrived (an RPC that did not answer) — its signed bytes are sent again: the same signature,
//   so nothing the wallet did not sign; the RPC taking them, it is pending again. Refused (the wallet
//   cannot pay for it any more, its fee is under the chain's) or unanswered since `missing_since`
//   for the drop delay, it is `dropped`: its nonce free again for the next send, which fills the gap
//   the transactions after it wait on.
// An RPC that does not answer leaves every transaction it was asked about pending, with the reason
// in `last_error` — a stated state, read again at the next alarm.
import { createPublicClient, http, type Hex, type PublicClient } from "viem";

/** A pending transaction, as the follower needs it. */
export type PendingTransaction = {
  id: string;
  wallet: Hex;
  nonce: number;
  hash: Hex;
  /** Since when it has been seen neither in a block nor in the pool (ms), or null. */
  missingSince: number | null;
  /** Its signed bytes, to send again when the chain has lost it; null when they must not be (a speed-up replaced it). */
  raw: Hex | null;
};

/** What became of a pending transaction. */
export type FollowOutcome =
  | { id: string; status: "confirmed" | "reverted"; blockNumber: string; gasUsed: string; feeWei: string }
  | { id: string; status: "replaced" }
  | { id: string; status: "dropped"; lastError: string | null }
  | { id: string; status: "pending"; missingSince: number | null; lastError: string | null };

/** The reads the follower makes of one chain (an RPC; the tests' fakes). */
export type ChainReads = {
  /** The wallet's transactions in blocks: its nonce at the latest block. */
  minedCount(wallet: Hex): Promise<number>;
  /** The transaction's receipt, or null when no block has it. */
  receipt(hash: Hex): Promise<{ success: boolean; blockNumber: bigint; gasUsed: bigint; feeWei: bigint } | null>;
  /** Whether the RPC knows the transaction (in its pool or a block). */
  known(hash: Hex): Promise<boolean>;
  /** Sends signed bytes again (eth_sendRawTransaction); throws the RPC's refusal. */
  resend(raw: Hex): Promise<void>;
};

const clients = new Map<string, PublicClient>();

/** The reads of the chain at `url`: JSON-RPC calls made together go as one batch; each gives up after 5 s. */
export function rpcReads(url: string): ChainReads {
  let client = clients.get(url);
  if (!client) {
    client = createPublicClient({ transport: http(url, { batch: { batchSize: 100 }, retryCount: 0, timeout: 5_000 }) });
    clients.set(url, client);
  }
  const c = client;
  return {
    minedCount: (wallet) => c.getTransactionCount({ address: wallet, blockTag: "latest" }),
    receipt: async (hash) => {
      // eth_getTransactionReceipt itself: viem's getTransactionReceipt throws on null, which is an answer here.
      const r = await c.request({ method: "eth_getTransactionReceipt", params: [hash] });
      if (!r) return null;
      return {
        success: r.status === "0x1",
        blockNumber: BigInt(r.blockNumber),
        gasUsed: BigInt(r.gasUsed),
        feeWei: BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice ?? "0x0"),
      };
    },
    known: async (hash) => (await c.request({ method: "eth_getTransactionByHash", params: [hash] })) !== null,
    resend: async (raw) => {
      await c.request({ method: "eth_sendRawTransaction", params: [raw] });
    },
  };
}

/** The first line of an RPC's error, without the URL viem puts in it (it may carry a key). */
export function rpcError(err: unknown): string {
  const text = (err as { shortMessage?: string }).shortMessage ?? (err instanceof Error ? err.message : String(err));
  return (text.split("\n")[0] ?? "").replace(/https?:\/\/\S+/g, "<rpc>").slice(0, 300);
}

/**
 * What the chain read through `reads` says of `pending` (all of one chain) at `now`: a transaction
 * unseen for `dropAfterMs` is dropped.
 */
export async function follow(
  pending: readonly PendingTransaction[],
  reads: ChainReads,
  now: number,
  dropAfterMs: number,
): Promise<FollowOutcome[]> {
  const byWallet = new Map<Hex, PendingTransaction[]>();
  for (const tx of pending) {
    const list = byWallet.get(tx.wallet);
    if (list) list.push(tx);
    else byWallet.set(tx.wallet, [tx]);
  }
  const outcomes = await Promise.all(
    [...byWallet].map(async ([wallet, txs]): Promise<FollowOutcome[]> => {
      let mined: number;
      try {
        mined = await reads.minedCount(wallet);
      } catch (err) {
        const lastError = `the chain's RPC did not answer: ${rpcError(err)}`;
        return txs.map((tx) => ({ id: tx.id, status: "pending", missingSince: tx.missingSince, lastError }));
      }
      return Promise.all(txs.map((tx) => followOne(tx, mined, reads, now, dropAfterMs)));
    }),
  );
  return outcomes.flat();
}

async function followOne(
  tx: PendingTransaction,
  mined: number,
  reads: ChainReads,
  now: number,
  dropAfterMs: number,
): Promise<FollowOutcome> {
  try {
    if (tx.nonce < mined) {
      const receipt = await reads.receipt(tx.hash);
      // No receipt, yet the RPC knows the hash: mined, its receipt not served yet (a node behind
      // another, behind a balancer): read again at the next follow, never said replaced.
      if (!receipt)
        return (await reads.known(tx.hash))
          ? { id: tx.id, status: "pending", missingSince: null, lastError: null }
          : { id: tx.id, status: "replaced" };
      return {
        id: tx.id,
        status: receipt.success ? "confirmed" : "reverted",
        blockNumber: receipt.blockNumber.toString(),
        gasUsed: receipt.gasUsed.toString(),
        feeWei: receipt.feeWei.toString(),
      };
    }
    if (await reads.known(tx.hash)) return { id: tx.id, status: "pending", missingSince: null, lastError: null };
    let refused: string | null = null;
    if (tx.raw !== null) {
      try {
        await reads.resend(tx.raw);
        return { id: tx.id, status: "pending", missingSince: null, lastError: null };
      } catch (err) {
        const message = rpcError(err);
        // "Already known": the pool has it after all (another node answered the read). "Nonce too
        // low": its nonce is used — the next follow reads which transaction took it. Neither is lost.
        if (/already known|known transaction|nonce too low/i.test(message))
          return { id: tx.id, status: "pending", missingSince: null, lastError: null };
        refused = `the chain had lost it, and refused it sent again: ${message}`;
      }
    }
    const since = tx.missingSince ?? now;
    if (now - since >= dropAfterMs) return { id: tx.id, status: "dropped", lastError: refused };
    return { id: tx.id, status: "pending", missingSince: since, lastError: refused };
  } catch (err) {
    return {
      id: tx.id,
      status: "pending",
      missingSince: tx.missingSince,
      lastError: `the chain's RPC did not answer: ${rpcError(err)}`,
    };
  }
}
