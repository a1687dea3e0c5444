// The payer pool (docs/design/keys-and-authz.md): this instance's derived payer wallets submit every managed
// write. A write is simulated first (eth_estimateGas: a revert costs no gas and becomes a mapped
// 4xx), then sent from the least-busy payer with a locally tracked nonce (resynchronized from the
// chain's pending nonce after any send error), and answered from the receipt's decoded events. A
// transaction is signed before it is sent, so a send whose answer is lost is looked up by its hash
// before anything else is sent from that payer: a write the node may have taken is never sent twice.
import {
  BaseError,
  createWalletClient,
  encodeFunctionData,
  http,
  HttpRequestError,
  keccak256,
  parseEventLogs,
  TimeoutError,
  TransactionNotFoundError,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type Hex,
  type TransactionReceipt,
  type WalletClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { mapContractError } from "../../shared/contractErrors.ts";
import { isExposed, SigilError, sentTransactionError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import type { ChainContext } from "../chain/client.ts";
import type { DerivedKey } from "../keys/derive.ts";
import type { Logger } from "../../shared/log.ts";

type Abi = typeof accountConfigAbi;
export type WriteFunction = ContractFunctionName<Abi, "nonpayable">;
export type WriteCall<F extends WriteFunction = WriteFunction> = {
  functionName: F;
  args: ContractFunctionArgs<Abi, "nonpayable", F>;
};
export type DecodedEvent = ReturnType<typeof parseEventLogs<Abi>>[number];
export type WriteResult = { transactionHash: Hex; receipt: TransactionReceipt; events: DecodedEvent[] };

type Payer = {
  account: PrivateKeyAccount;
  nonce: number | undefined;
  /** Writes assigned to this payer that have not got their receipt yet. */
  busy: number;
  /** Serializes nonce assignment and sending for this payer. */
  lock: Promise<unknown>;
};

export type PayerBalance = { address: Address; balance_wei: string; low: boolean };

const NONCE_RETRIES = 2;
/** How long a send whose answer was lost waits for the chain to tell whether it took the transaction. */
const DELIVERY_CHECK_MS = 30_000;

/**
 * Whether a send failed on the way (no answer: the connection broke or timed out), so the node may
 * have taken the transaction; unlike a refusal, which the node answered.
 */
function answerLost(err: unknown): boolean {
  return (
    err instanceof BaseError && Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError))
  );
}

export class PayerPool {
  readonly #chain: ChainContext;
  readonly #wallet: WalletClient;
  readonly #payers: Payer[];
  readonly #confirmations: number;
  readonly #minBalance: bigint;
  readonly #log: Logger;

  constructor(options: {
    chain: ChainContext;
    rpcUrl: string;
    keys: DerivedKey[];
    confirmations: number;
    minBalanceWei: bigint;
    log: Logger;
  }) {
    if (options.keys.length === 0) throw new Error("the payer pool needs at least one payer key");
    this.#chain = options.chain;
    this.#wallet = createWalletClient({
      chain: options.chain.chain,
      transport: http(options.rpcUrl, { retryCount: 0, timeout: 30_000 }),
    });
    // viem's local account keeps the key as hex for signing; payer keys live as long as the process.
    this.#payers = options.keys.map((k) => {
      const account = privateKeyToAccount(`0x${Buffer.from(k.privateKey).toString("hex")}`);
      k.privateKey.fill(0);
      return { account, nonce: undefined, busy: 0, lock: Promise.resolve() };
    });
    this.#confirmations = options.confirmations;
    this.#minBalance = options.minBalanceWei;
    this.#log = options.log;
  }

  get addresses(): Address[] {
    return this.#payers.map((p) => p.account.address);
  }

  /**
   * Simulates, sends and waits for one write. Throws a SigilError: the mapped revert (no gas spent),
   * or 503 `chain_unavailable`, or 500 for anything the caller cannot fix; once the transaction has
   * been sent, the error carries its hash (`details.transaction_hash`).
   */
  async write<F extends WriteFunction>(
    call: WriteCall<F>,
    context: { keyHash?: bigint; log?: Logger } = {},
  ): Promise<WriteResult> {
    const log = context.log ?? this.#log;
    const payer = this.#leastBusy();
    payer.busy++;
    try {
      const { client, contract } = this.#chain;
      const data = encodeFunctionData({
        abi: accountConfigAbi,
        functionName: call.functionName,
        args: call.args,
      } as never);
      let gas: bigint;
      try {
        gas = await client.estimateContractGas(this.#simulation(call, payer));
      } catch (err) {
        throw this.#mapped(err, context.keyHash, log, "simulation refused the write");
      }
      // Headroom over the estimate: state can change a little between simulation and inclusion.
      gas = (gas * 12n) / 10n + 10_000n;
      const transactionHash = await this.#send(payer, { to: contract, data, gas }, log);
      log.info("write sent", { fn: call.functionName, tx: transactionHash, payer: payer.account.address });
      try {
        return await this.#outcome(transactionHash, payer, call, context.keyHash, log);
      } catch (err) {
        // Sent, then failed: the error says which transaction, and the edge charges the write.
        throw sentTransactionError(
          this.#mapped(err, context.keyHash, log, "waiting for the receipt failed"),
          transactionHash,
        );
      }
    } finally {
      payer.busy--;
    }
  }

  /**
   * Sends one call to another contract than AccountConfig (the ReceiptAnchor: receipts/anchors.ts)
   * from the least busy payer, as `write` sends: its gas estimated first (a revert costs nothing and
   * throws the node's error), the same per-payer nonce order, and waits for it to be mined. Throws
   * when it reverts on chain.
   */
  async sendCall(
    call: { to: Address; data: Hex },
    log: Logger = this.#log,
  ): Promise<{ transactionHash: Hex; blockNumber: bigint }> {
    const payer = this.#leastBusy();
    payer.busy++;
    try {
      const { client } = this.#chain;
      const estimate = await client.estimateGas({ account: payer.account.address, to: call.to, data: call.data });
      const transactionHash = await this.#send(payer, { ...call, gas: (estimate * 12n) / 10n + 10_000n }, log);
      let receipt: Awaited<ReturnType<typeof client.waitForTransactionReceipt>>;
      try {
        receipt = await client.waitForTransactionReceipt({
          hash: transactionHash,
          confirmations: this.#confirmations,
          timeout: 120_000,
        });
      } catch (err) {
        // Sent, but its receipt did not come: the caller may find it mined later, and by which transaction.
        const reason = (err as { shortMessage?: string }).shortMessage ?? (err as Error).message;
        throw sentTransactionError(
          new SigilError("chain_unavailable", `no receipt for the transaction: ${reason}`, { cause: err }),
          transactionHash,
        );
      }
      if (receipt.status !== "success")
        throw sentTransactionError(new SigilError("internal_error", "the transaction reverted"), transactionHash);
      return { transactionHash, blockNumber: receipt.blockNumber };
    } finally {
      payer.busy--;
    }
  }

  /** The receipt of a sent write, decoded; a revert is simulated again for its reason. */
  async #outcome(
    transactionHash: Hex,
    payer: Payer,
    call: WriteCall,
    keyHash: bigint | undefined,
    log: Logger,
  ): Promise<WriteResult> {
    const { client } = this.#chain;
    const receipt = await client.waitForTransactionReceipt({
      hash: transactionHash,
      confirmations: this.#confirmations,
      timeout: 120_000,
    });
    if (receipt.status !== "success") {
      // Another write changed the state between simulation and inclusion: simulate again, with the
      // ABI so that the contract's custom error is decoded into its API code.
      try {
        await client.simulateContract(this.#simulation(call, payer));
      } catch (err) {
        throw this.#mapped(err, keyHash, log, "the write reverted on chain");
      }
      log.error("write reverted on chain without a reproducible reason", { tx: transactionHash });
      throw new SigilError("internal_error", "the transaction reverted");
    }
    return { transactionHash, receipt, events: parseEventLogs({ abi: accountConfigAbi, logs: receipt.logs }) };
  }

  async balances(): Promise<PayerBalance[]> {
    return Promise.all(
      this.#payers.map(async (p) => {
        const balance = await this.#chain.client.getBalance({ address: p.account.address });
        return { address: p.account.address, balance_wei: balance.toString(), low: balance < this.#minBalance };
      }),
    );
  }

  /** `call` as `payer` would send it, for estimating its gas or simulating it. */
  #simulation(call: WriteCall, payer: Payer): never {
    const { contract } = this.#chain;
    return {
      address: contract,
      abi: accountConfigAbi,
      functionName: call.functionName,
      args: call.args,
      account: payer.account.address,
    } as never;
  }

  #leastBusy(): Payer {
    let best = this.#payers[0] as Payer;
    for (const p of this.#payers) if (p.busy < best.busy) best = p;
    return best;
  }

  /**
   * Signs and sends one transaction from `payer` with its next nonce; its hash. The transaction is
   * signed here, so its hash is known before it is sent: a send whose answer is lost (the connection
   * broke, or timed out) may still have reached the node, and the payer sends nothing else until the
   * chain tells (#delivered). Sent: its hash, as any other. Not sent: 503 chain_unavailable naming
   * no transaction, so a retry may send it. Unknown once the chain has been asked long enough: 503
   * chain_unavailable naming it, as a sent write whose receipt did not come. Never a second
   * transaction for a write the node may have taken.
   */
  async #send(payer: Payer, tx: { to: Address; data: Hex; gas: bigint }, log: Logger): Promise<Hex> {
    const run = payer.lock.then(async () => {
      for (let attempt = 0; ; attempt++) {
        if (payer.nonce === undefined) {
          try {
            payer.nonce = await this.#chain.client.getTransactionCount({
              address: payer.account.address,
              blockTag: "pending",
            });
          } catch (err) {
            // Nothing sent yet: an unreachable chain is 503 chain_unavailable, like any other read.
            throw this.#mapped(err, undefined, log, "reading the payer's nonce failed");
          }
        }
        const nonce = payer.nonce;
        let serialized: Hex;
        try {
          const request = await this.#wallet.prepareTransactionRequest({
            account: payer.account,
            chain: this.#chain.chain,
            to: tx.to,
            data: tx.data,
            gas: tx.gas,
            nonce,
          });
          serialized = await payer.account.signTransaction(request as never);
        } catch (err) {
          payer.nonce = undefined;
          throw this.#mapped(err, undefined, log, "preparing the transaction failed");
        }
        const hash = keccak256(serialized);
        try {
          await this.#wallet.sendRawTransaction({ serializedTransaction: serialized });
          payer.nonce = nonce + 1;
          return hash;
        } catch (err) {
          // Whatever happened, the local nonce may be wrong now: read it again before the next send.
          payer.nonce = undefined;
          if (answerLost(err)) {
            if (await this.#delivered(hash, payer, nonce, log)) {
              payer.nonce = nonce + 1;
              return hash;
            }
            throw this.#mapped(err, undefined, log, "sending the transaction failed before the node took it");
          }
          const message = err instanceof Error ? err.message : String(err);
          if (attempt < NONCE_RETRIES && /nonce|replacement transaction|already known/i.test(message)) {
            log.warn("nonce conflict; resynchronizing from the chain", { payer: payer.account.address, attempt });
            continue;
          }
          throw this.#mapped(err, undefined, log, "sending the transaction failed");
        }
      }
    });
    payer.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Whether the node took `hash` (`payer`'s transaction of `nonce`), whose send lost its answer:
   * asked until the chain answers, for DELIVERY_CHECK_MS at most. The chain knows the transaction,
   * or its pending nonce has passed `nonce` (only this payer's lock sends from it): taken. It knows
   * neither: not taken. Still unreachable at the end: 503 chain_unavailable naming the transaction.
   */
  async #delivered(hash: Hex, payer: Payer, nonce: number, log: Logger): Promise<boolean> {
    const { client } = this.#chain;
    const deadline = Date.now() + DELIVERY_CHECK_MS;
    for (;;) {
      try {
        await client.getTransaction({ hash });
        log.warn("a send lost its answer, but the node took the transaction", {
          tx: hash,
          payer: payer.account.address,
        });
        return true;
      } catch (err) {
        if (err instanceof TransactionNotFoundError) {
          try {
            const pending = await client.getTransactionCount({ address: payer.account.address, blockTag: "pending" });
            return pending > nonce;
          } catch {
            // unreachable again: ask once more below
          }
        }
      }
      if (Date.now() > deadline) {
        log.error("a send lost its answer and the chain cannot tell whether it took the transaction", {
          tx: hash,
          payer: payer.account.address,
        });
        throw sentTransactionError(
          new SigilError(
            "chain_unavailable",
            "the chain could not be reached to tell whether the transaction was sent; try again shortly",
            { retryAfterSeconds: 5 },
          ),
          hash,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  #mapped(err: unknown, keyHash: bigint | undefined, log: Logger, what: string): SigilError {
    if (isExposed(err)) return err;
    const { error, internal } = mapContractError(err, keyHash === undefined ? {} : { keyHash });
    if (internal)
      log.error(what, { error: err instanceof Error ? err.message.split("\n").slice(0, 3).join(" | ") : String(err) });
    return error;
  }
}
