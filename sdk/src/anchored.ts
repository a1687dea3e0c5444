// Anchored receipts (issue 34, part 2; docs/guides/receipts.md, "Anchored receipts"), opt in:
// `verifyAnchored(client, run, { rpcUrl })` checks that the run's receipt is in the tree of batch
// heads its instance anchored on chain for the receipt's epoch — so the run happened no later than
// the anchor's block, and the service cannot show anyone a receipt of that epoch outside that tree.
// The epoch closes SIGIL_RECEIPT_ANCHOR_INTERVAL_S after it opened (a minute by default): `waitMs`
// waits for its anchor. The check reads the ReceiptAnchor contract through `rpcUrl` (an RPC of the
// receipt's `anchor.chain_id`), never through the service.
//
// The key the anchor is under is the one that signed the receipt's batch (recovered from the
// receipt's signature); that it is the instance's attested key is the receipt check's (the client's
// verifyReceipts, verifyReceipt). Save the answer's `proof` with the receipt to check it again later
// without the service (`proof` option): the instance keeps paths for a bounded number of heads.
import {
  decodeFunctionResult,
  encodeFunctionData,
  hexToBytes,
  hexToNumber,
  recoverMessageAddress,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import {
  AnchorCheckError,
  checkAnchored,
  receiptAnchorAbi,
  receiptHead,
  type AnchorProof,
  type OnChainAnchor,
} from "../../shared/receiptAnchor.ts";
import type { RunReceipt } from "../../shared/receipt.ts";
import type { SigilClient } from "./client.ts";
import { SigilError } from "./errors.ts";

export type { AnchorProof } from "../../shared/receiptAnchor.ts";

/**
 * Why an anchored check failed: `check` names it — `pending` (not on chain yet: ask again later),
 * `not_anchored`, `no_anchor`, `batch`, `proof`, `root`, `size`, `time`, `signer` (the batch is
 * not the attested key's), `chain` or `service` (one could not be read).
 */
export class SigilAnchorError extends SigilError {
  override name = "SigilAnchorError";
  readonly check: AnchorCheckError["check"] | "signer" | "service";
  constructor(check: SigilAnchorError["check"], message: string) {
    super({ code: "receipt_not_anchored", message: `the receipt's anchor failed ${check}: ${message}`, status: 0 });
    this.check = check;
  }
}

export type AnchoredOptions = {
  /** An RPC URL of the receipt's anchor chain (`receipt.anchor.chain_id`)… */
  rpcUrl?: string;
  /** …or a viem client of it. */
  publicClient?: PublicClient;
  /** Wait up to this long for the epoch to close and its anchor to be mined (default 0: check as it is now). */
  waitMs?: number;
  /** How often to ask meanwhile (default 1 000 ms). */
  pollMs?: number;
  /** A saved proof (the `proof` of an earlier answer, or GET /attestation/receipt-anchor's), instead of asking the service. */
  proof?: AnchorProof;
  /**
   * The attested receipt key's address (its GET /attestation/receipt-key `address`): the receipt's
   * batch must be signed by it. Without it the check says only that the key that signed the batch
   * anchored it — which proves nothing of a receipt whose own check (verifyReceipt) was not made.
   */
  signer?: Address;
};

export type AnchoredReceipt = {
  epoch: number;
  root: `0x${string}`;
  /** How many batch heads the epoch's tree holds. */
  heads: number;
  /** The block time (unix seconds) the root was anchored at: the run happened no later. */
  anchoredAt: number;
  /** The receipt key the anchor is under. */
  signer: Address;
  /** The head's path, to keep with the receipt. */
  proof: AnchorProof;
};

type ReceiptCarrier = { receipt: RunReceipt };

/**
 * Checks that the receipt of `run` (a sigilAction answer, or its receipt) is anchored on chain; its
 * anchor, or throws SigilAnchorError. `client` asks the service for the head's path (pinned to the
 * receipt's instance) unless `options.proof` is given.
 */
export async function verifyAnchored(
  client: SigilClient | undefined,
  run: RunReceipt | ReceiptCarrier,
  options: AnchoredOptions,
): Promise<AnchoredReceipt> {
  const receipt = "receipt" in run ? run.receipt : run;
  const anchor = receipt.anchor;
  if (!anchor) throw new SigilAnchorError("no_anchor", "the receipt names no anchor (its instance anchors nothing)");
  const head = receiptHead(receipt);
  if (!head) throw new SigilAnchorError("batch", "the receipt's batch path leads to no root");
  const signer = (
    await recoverMessageAddress({ message: { raw: hexToBytes(head) }, signature: receipt.signature })
  ).toLowerCase() as Address;
  if (options.signer !== undefined && options.signer.toLowerCase() !== signer)
    throw new SigilAnchorError(
      "signer",
      `the receipt's batch is signed by ${signer}, not by the attested receipt key ${options.signer.toLowerCase()}`,
    );
  const chain = options.publicClient
    ? viaClient(options.publicClient)
    : options.rpcUrl
      ? viaRpc(options.rpcUrl)
      : undefined;
  if (!chain) throw new TypeError("verifyAnchored needs rpcUrl or publicClient: an RPC of the anchor's chain");
  let chainId: number;
  try {
    chainId = await chain.chainId();
  } catch (err) {
    throw new SigilAnchorError("chain", `the anchor chain's RPC could not be reached: ${(err as Error).message}`);
  }
  if (chainId !== anchor.chain_id)
    throw new SigilAnchorError(
      "chain",
      `the RPC serves chain ${chainId}; the receipt is anchored on ${anchor.chain_id}`,
    );
  const readAnchor = (key: Address, epoch: number) => chain.anchor(anchor.contract, key, epoch);

  const deadline = Date.now() + (options.waitMs ?? 0);
  for (;;) {
    let proof = options.proof;
    if (!proof) {
      if (!client) throw new TypeError("verifyAnchored needs a client to ask for the head's path, or options.proof");
      try {
        proof = (await client.getReceiptAnchor({
          instance: receipt.instance_id,
          epoch: anchor.epoch,
          head,
        })) as unknown as AnchorProof;
      } catch (err) {
        throw new SigilAnchorError("service", `the head's path could not be fetched: ${(err as Error).message}`);
      }
    }
    try {
      const found = await checkAnchored(receipt, signer, proof, readAnchor);
      return { ...found, signer, proof };
    } catch (err) {
      if (!(err instanceof AnchorCheckError)) throw err;
      const waitable = err.check === "pending" && !options.proof && Date.now() < deadline;
      if (!waitable) throw new SigilAnchorError(err.check, err.message);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs ?? 1_000, deadline - Date.now())));
  }
}

/** What the check reads of the anchor chain. */
type AnchorChain = {
  chainId(): Promise<number>;
  anchor(contract: Address, signer: Address, epoch: number): Promise<OnChainAnchor>;
};

const anchorsCall = (signer: Address, epoch: number) =>
  ({ abi: receiptAnchorAbi, functionName: "anchors", args: [signer, BigInt(epoch)] }) as const;

function viaClient(client: PublicClient): AnchorChain {
  return {
    chainId: () => client.getChainId(),
    async anchor(contract, signer, epoch) {
      const [root, heads, anchoredAt] = await client.readContract({ address: contract, ...anchorsCall(signer, epoch) });
      return { root, heads, anchoredAt: Number(anchoredAt) };
    },
  };
}

/** Each RPC URL's chain id, asked once. */
const chainIds = new Map<string, number>();

/**
 * The chain at `rpcUrl`, read with two JSON-RPC calls (eth_chainId, eth_call) and no viem client: an
 * app that bundles the SDK (the dashboard) carries no chain client for it.
 */
export function viaRpc(rpcUrl: string): AnchorChain {
  const rpc = async (method: string, params: unknown[]): Promise<Hex> => {
    const res = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok) throw new Error(`the RPC answered ${res.status}`);
    const body = (await res.json()) as { result?: Hex; error?: { message?: string } };
    if (body.error || body.result === undefined) throw new Error(body.error?.message ?? "the RPC gave no result");
    return body.result;
  };
  return {
    chainId: async () => {
      let id = chainIds.get(rpcUrl);
      if (id === undefined) {
        id = hexToNumber(await rpc("eth_chainId", []));
        if (chainIds.size >= 64) chainIds.clear();
        chainIds.set(rpcUrl, id);
      }
      return id;
    },
    async anchor(contract, signer, epoch) {
      const call = anchorsCall(signer, epoch);
      const data = await rpc("eth_call", [{ to: contract, data: encodeFunctionData(call) }, "latest"]);
      const [root, heads, anchoredAt] = decodeFunctionResult({ ...call, data });
      return { root, heads, anchoredAt: Number(anchoredAt) };
    },
  };
}
