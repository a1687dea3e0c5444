// A run's transactions, sent (docs/design/transactions.md): the service-thread side of
// `Sigil.Actions.sendTransaction`. The worker asks, in order:
//
// 1. `sendTransaction.prepare`: the wallet must be one the run may use; the chain one this
//    deployment sends to; the transaction is filled (gas: the RPC's estimate plus a fifth; EIP-1559
//    fees: the RPC's estimate) and its nonce reserved in the account's Transactions object at the
//    edge, over the run's token, from the wallet's pending count on the chain. A retried run's send
//    gets back what it reserved or sent the first time.
// 2. (the worker signs it as signTransaction does: grant, guardrail and budgets decide there)
// 3. `sendTransaction.broadcast`: the signed bytes to the chain's RPC. Accepted, the record is
//    pending with its hash; refused by the RPC, the nonce is released and the script told why; no
//    answer, the record is pending all the same (the hash is the bytes'), for the follower to decide.
//    `sendTransaction.release` frees the nonce of a send whose signature was refused.
import {
  createPublicClient,
  HttpRequestError,
  http,
  keccak256,
  parseTransaction,
  TimeoutError,
  toHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { z } from "zod";
import { toHash32 } from "../../shared/hashing.ts";
import {
  TRANSACTIONS_PATH,
  type TransactionAnswer,
  type TransactionRecord,
  type TransactionRequest,
} from "../../shared/transactions.ts";
import { askEdge } from "../authz/askEdge.ts";
import type { ServiceProvider } from "../sandbox/pool.ts";
import { CodedError } from "../sandbox/runtime.ts";
import type { Enclave } from "./context.ts";
import { walletGrant } from "./walletGrant.ts";

/** What a send needs of its run. */
export type SendRun = {
  keyHash: bigint;
  master: bigint;
  actionHash: bigint;
  /** A run through a delegated key: the wallets it may send from (walletGrant checks them). */
  onlyWallets?: ReadonlySet<string>;
  /** The edge's URL and the run's token (the run's billing ref), as budgets reach the edge; absent, nothing is sent. */
  access: { url: string; token: string; ref: string } | undefined;
  dry: boolean;
  deadline: number;
};

/** What the script gets for a send: where to find it, and where it is. */
export type SentTransaction = Pick<TransactionRecord, "id" | "hash" | "chain_id" | "nonce" | "status">;

const prepareArgs = z.object({
  pkpId: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  index: z.number().int().nonnegative().max(10_000),
  transaction: z.looseObject({
    chainId: z.number().int().positive(),
    to: z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/)
      .nullish(),
    value: z.string().regex(/^\d+$/).optional(),
    data: z
      .string()
      .regex(/^0x([0-9a-fA-F]{2})*$/)
      .optional(),
    gas: z.string().regex(/^\d+$/).optional(),
    maxFeePerGas: z.string().regex(/^\d+$/).optional(),
    maxPriorityFeePerGas: z.string().regex(/^\d+$/).optional(),
    gasPrice: z.string().regex(/^\d+$/).optional(),
  }),
});
const broadcastArgs = z.object({ id: z.string().min(1), serialized: z.string().regex(/^0x([0-9a-fA-F]{2})+$/) });
const releaseArgs = z.object({ id: z.string().min(1), reason: z.string().max(512) });
const fee = z.string().regex(/^\d+$/).optional();
const speedUpArgs = z.object({
  pkpId: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  index: z.number().int().nonnegative().max(10_000),
  id: z.string().min(1).max(64),
  maxFeePerGas: fee,
  maxPriorityFeePerGas: fee,
  gasPrice: fee,
});

/** A fee raised by an eighth, rounded up: what nodes require of a replacement (geth: 10 %). */
export const bumped = (fee: bigint): bigint => fee + (fee + 7n) / 8n;

/** Clients of the configured chains other than the contract's, by RPC URL. */
const clients = new Map<string, PublicClient>();

/** The chain ids this deployment sends to. */
function chainIds(enclave: Enclave): number[] {
  return enclave.config.chains ? [...enclave.config.chains.keys()] : [enclave.chain.chain.id];
}

/** The client of chain `id`, or undefined when the deployment does not send to it. */
function clientOf(enclave: Enclave, id: number): PublicClient | undefined {
  const url = enclave.config.chains?.get(id);
  if (url === undefined)
    return enclave.config.chains === undefined && id === enclave.chain.chain.id ? enclave.chain.client : undefined;
  if (url === enclave.config.rpcUrl && id === enclave.chain.chain.id) return enclave.chain.client;
  let client = clients.get(url);
  if (!client) {
    client = createPublicClient({ transport: http(url, { retryCount: 1, retryDelay: 100, timeout: 10_000 }) });
    clients.set(url, client);
  }
  return client;
}

const rpcMessage = (err: unknown) =>
  ((err as { shortMessage?: string }).shortMessage ?? (err instanceof Error ? err.message : String(err))).split(
    "\n",
  )[0] ?? "";

/** The run's service requests for sending transactions. */
export function sendServices(enclave: Enclave, run: SendRun): ServiceProvider {
  const ask = async (request: TransactionRequest): Promise<TransactionAnswer> => {
    if (!run.access)
      throw new CodedError(null, "sendTransaction: this run was sent without a way to record its transactions");
    try {
      return await askEdge<TransactionAnswer>(
        run.access,
        TRANSACTIONS_PATH,
        request,
        (answer) => typeof answer.ok === "boolean",
        { deadline: run.deadline, allowHttp: enclave.config.env !== "production" },
      );
    } catch (err) {
      throw new CodedError(
        "enclave_unavailable",
        `sendTransaction: the transaction could not be recorded at the edge (${(err as Error).message})`,
      );
    }
  };
  const recorded = (answer: TransactionAnswer): TransactionRecord => {
    if (!answer.ok)
      throw new CodedError(answer.code === "conflict" ? "conflict" : "not_found", `sendTransaction: ${answer.reason}`);
    return answer.record;
  };
  const account = toHash32(run.master);
  const ref = () => run.access?.ref ?? "";
  const chainsOf = new Map<string, number>();

  async function prepare(raw: unknown) {
    const args = prepareArgs.safeParse(raw);
    if (!args.success)
      throw new CodedError(null, "sendTransaction: the transaction's fields are not well formed", "TypeError");
    const { pkpId, index, transaction: tx } = args.data;
    const wallet = pkpId.toLowerCase() as Address;
    // Nothing is read from the chain or reserved for a wallet the run may not use.
    await walletGrant(enclave, run, wallet);
    const client = clientOf(enclave, tx.chainId);
    if (!client)
      throw new CodedError(
        "chain_not_configured",
        `sendTransaction: chain ${tx.chainId} is not one this service sends to (${chainIds(enclave).join(", ")})`,
      );
    const to = tx.to ? (tx.to.toLowerCase() as Address) : undefined;
    const value = BigInt(tx.value ?? "0");
    const data = (tx.data ?? "0x") as Hex;
    let pending: number;
    let gas: bigint;
    let fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };
    try {
      pending = await client.getTransactionCount({ address: wallet, blockTag: "pending" });
      gas =
        tx.gas !== undefined
          ? BigInt(tx.gas)
          : ((await client.estimateGas({ account: wallet, ...(to ? { to } : {}), value, data })) * 6n) / 5n;
      if (tx.gasPrice !== undefined) fees = { gasPrice: BigInt(tx.gasPrice) };
      else if (tx.maxFeePerGas !== undefined && tx.maxPriorityFeePerGas !== undefined)
        fees = { maxFeePerGas: BigInt(tx.maxFeePerGas), maxPriorityFeePerGas: BigInt(tx.maxPriorityFeePerGas) };
      else {
        const estimate = await client.estimateFeesPerGas();
        const maxFeePerGas = tx.maxFeePerGas !== undefined ? BigInt(tx.maxFeePerGas) : estimate.maxFeePerGas;
        const tip =
          tx.maxPriorityFeePerGas !== undefined ? BigInt(tx.maxPriorityFeePerGas) : estimate.maxPriorityFeePerGas;
        fees = { maxFeePerGas, maxPriorityFeePerGas: tip > maxFeePerGas ? maxFeePerGas : tip };
      }
    } catch (err) {
      if (err instanceof HttpRequestError || err instanceof TimeoutError)
        throw new CodedError(
          "chain_unavailable",
          `sendTransaction: chain ${tx.chainId}'s RPC cannot be reached; try again`,
        );
      // The RPC's answer: most often the estimate, for a transaction that would revert or cannot be paid for.
      throw new CodedError("transaction_rejected", `sendTransaction: ${rpcMessage(err)}`);
    }
    const filled = {
      ...tx,
      chainId: tx.chainId,
      ...(to ? { to } : {}),
      value: value.toString(),
      data,
      gas: gas.toString(),
      ...Object.fromEntries(Object.entries(fees).map(([k, v]) => [k, (v as bigint).toString()])),
    };
    if (run.dry) return { id: null, chain_id: tx.chainId, nonce: pending, transaction: { ...filled, nonce: pending } };
    const payload = keccak256(
      toHex(JSON.stringify({ chainId: tx.chainId, to: to ?? null, value: value.toString(), data: data.toLowerCase() })),
    );
    const record = recorded(
      await ask({
        op: "reserve",
        account,
        ref: ref(),
        index,
        wallet,
        chain_id: tx.chainId,
        chain_pending: pending,
        payload,
      }),
    );
    if (record.status !== "reserved") return { sent: sentOf(record) };
    chainsOf.set(record.id, tx.chainId);
    return {
      id: record.id,
      chain_id: tx.chainId,
      nonce: record.nonce,
      transaction: { ...filled, nonce: record.nonce },
    };
  }

  async function broadcast(raw: unknown): Promise<SentTransaction> {
    const args = broadcastArgs.safeParse(raw);
    if (!args.success) throw new CodedError(null, "sendTransaction: not a signed transaction");
    const serialized = args.data.serialized as Hex;
    const hash = keccak256(serialized);
    const chainId = chainsOf.get(args.data.id) ?? parseTransaction(serialized).chainId;
    const client = chainId === undefined ? undefined : clientOf(enclave, chainId);
    if (!client) throw new CodedError(null, "sendTransaction: the transaction names no chain this service sends to");
    try {
      await client.sendRawTransaction({ serializedTransaction: serialized });
    } catch (err) {
      // Not answered: it may be in the pool. The follower reads the chain for its hash, and sends the
      // bytes again if the chain has not got them.
      if (err instanceof HttpRequestError || err instanceof TimeoutError)
        enclave.log.warn("transaction broadcast not answered; recorded pending for the follower", {
          id: args.data.id,
          chain: chainId,
          hash,
          error: rpcMessage(err).replace(/https?:\/\/\S+/g, "<rpc>"),
        });
      else {
        const reason = rpcMessage(err);
        await ask({ op: "release", account, ref: ref(), id: args.data.id, reason: reason.slice(0, 512) }).catch(
          () => undefined,
        );
        throw new CodedError("transaction_rejected", `sendTransaction: chain ${chainId}'s RPC refused it: ${reason}`);
      }
    }
    return sentOf(
      recorded(await ask({ op: "sent", account, ref: ref(), id: args.data.id, hash, raw: serialized.toLowerCase() })),
    );
  }

  /**
   * A speed-up of the pending transaction `id` of the wallet: what was sent, re-filled with fees at
   * least an eighth higher than its own (and at least the chain's estimate now, or the script's),
   * numbered with its nonce by the Transactions object. The worker signs it as any send.
   */
  async function speedUp(raw: unknown) {
    const args = speedUpArgs.safeParse(raw);
    if (!args.success)
      throw new CodedError(null, "speedUpTransaction: give pkpId and the transaction's id (tx_…)", "TypeError");
    const { pkpId, index, id } = args.data;
    const wallet = pkpId.toLowerCase() as Address;
    await walletGrant(enclave, run, wallet);
    const got = await ask({ op: "get", account, ref: ref(), id });
    const record = recorded(got);
    if (record.wallet_address !== wallet)
      throw new CodedError("not_found", `speedUpTransaction: no transaction ${id} of wallet ${wallet}`);
    if (record.status !== "pending" || !got.ok || got.raw === undefined)
      throw new CodedError(
        "conflict",
        `speedUpTransaction: transaction ${id} is ${record.status}; only a pending transaction can be sped up`,
      );
    const client = clientOf(enclave, record.chain_id);
    if (!client)
      throw new CodedError(
        "chain_not_configured",
        `speedUpTransaction: chain ${record.chain_id} is not one this service sends to (${chainIds(enclave).join(", ")})`,
      );
    const sent = parseTransaction(got.raw as Hex);
    const given = (name: "maxFeePerGas" | "maxPriorityFeePerGas" | "gasPrice") =>
      args.data[name] === undefined ? 0n : BigInt(args.data[name]);
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
    const max = (...xs: bigint[]) => xs.reduce((x, y) => (x > y ? x : y));
    let fees: Record<string, string>;
    try {
      if (sent.maxFeePerGas !== undefined) {
        const estimate = await client.estimateFeesPerGas();
        const tip = max(
          bumped(sent.maxPriorityFeePerGas ?? 0n),
          estimate.maxPriorityFeePerGas,
          given("maxPriorityFeePerGas"),
        );
        const maxFee = max(bumped(sent.maxFeePerGas), estimate.maxFeePerGas, given("maxFeePerGas"), tip);
        fees = { maxFeePerGas: maxFee.toString(), maxPriorityFeePerGas: tip.toString() };
      } else {
        // A legacy (or EIP-2930) transaction: one gas price.
        fees = { gasPrice: max(bumped(sent.gasPrice ?? 0n), await client.getGasPrice(), given("gasPrice")).toString() };
      }
    } catch {
      throw new CodedError(
        "chain_unavailable",
        `speedUpTransaction: chain ${record.chain_id}'s RPC cannot be reached; try again`,
      );
    }
    const transaction: Record<string, unknown> = {
      chainId: record.chain_id,
      ...(sent.to ? { to: sent.to.toLowerCase() } : {}),
      value: (sent.value ?? 0n).toString(),
      data: sent.data ?? "0x",
      gas: (sent.gas ?? 0n).toString(),
      nonce: record.nonce,
      ...(sent.accessList?.length ? { accessList: sent.accessList } : {}),
      ...fees,
    };
    if (run.dry) return { id: null, chain_id: record.chain_id, nonce: record.nonce, transaction };
    const payload = keccak256(toHex(JSON.stringify({ replaces: id })));
    const replacement = recorded(await ask({ op: "replace", account, ref: ref(), index, id, payload }));
    if (replacement.status !== "reserved") return { sent: sentOf(replacement) };
    chainsOf.set(replacement.id, record.chain_id);
    return { id: replacement.id, chain_id: record.chain_id, nonce: record.nonce, transaction };
  }

  async function release(raw: unknown): Promise<SentTransaction> {
    const args = releaseArgs.safeParse(raw);
    if (!args.success) throw new CodedError(null, "sendTransaction: nothing to release");
    return sentOf(
      recorded(await ask({ op: "release", account, ref: ref(), id: args.data.id, reason: args.data.reason })),
    );
  }

  return async (op, args) => {
    switch (op) {
      case "sendTransaction.prepare":
        return prepare(args);
      case "sendTransaction.broadcast":
        return broadcast(args);
      case "sendTransaction.release":
        return release(args);
      case "sendTransaction.speedUp":
        return speedUp(args);
      default:
        throw new CodedError(null, `unknown service ${op}`);
    }
  };
}

function sentOf(record: TransactionRecord): SentTransaction {
  return { id: record.id, hash: record.hash, chain_id: record.chain_id, nonce: record.nonce, status: record.status };
}
