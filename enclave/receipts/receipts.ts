// Run receipts (shared/receipt.ts), the enclave's side: the receipt key of this instance, the quote
// that binds it (report_data = SHA-512("sigil-receipt-v1:" ‖ public key), served at
// `GET /attestation/receipt-key`), the record of what each run's keys were used for, and the
// signature over each run's receipt. The key is derived from the root key and the instance id
// (keys/derive.ts `receiptKey`): the same across restarts of one instance, another on every other
// instance; it is derived afresh for each signature and zeroed, like every key here.
import type { BudgetState } from "../../shared/guardrails/budgets.ts";
import { createHash } from "node:crypto";
import { bytesToHex, hashMessage, hexToBytes, type Address, type Hex } from "viem";
import {
  batchHead,
  MAX_RECEIPT_BATCH,
  merkleBatch,
  receiptKeyReportData,
  receiptLeaf,
  type Sha256,
  type ReceiptKeyAttestation,
  type ReceiptWallet,
  type RunReceipt,
  type RunReceiptBody,
} from "../../shared/receipt.ts";
import type { Keyring } from "../keys/derive.ts";
import { publicKeyOf, serializeSignature, signDigest } from "../keys/ecdsa.ts";
import type { DecodedCall } from "../../shared/guardrails/evaluate.ts";
import type { KeyUse } from "../sandbox/hostOps.ts";
import { ReceiptAnchorer, type AnchoringConfig } from "./anchors.ts";

/** What a wallet's guardrail decided for one use of its key, for the run's receipt. */
export type GuardrailDecision = {
  guardrail: Hex;
  rule: string;
  call?: DecodedCall;
  /** The wallet's budgets after the signature was counted in them (not in the receipt: a dry run shows them). */
  budgets?: { before: BudgetState[]; after: BudgetState[] };
};

/** A quote over 64 bytes of report data, from the enclave's attestation source. */
export type ReceiptQuoteSource = (
  reportData: Uint8Array,
) => Promise<{ quote: string; event_log: string; vm_config?: string; simulated?: true }>;

export class ReceiptSigner {
  readonly instanceId: string;
  readonly composeHash: string;
  readonly address: Address;
  readonly publicKey: Hex;
  readonly #keyring: Keyring;
  readonly #quote: ReceiptQuoteSource;
  #document: Promise<ReceiptKeyAttestation> | undefined;

  readonly #batching: { waitMs: number; inFlight: () => number };
  /** Where this instance anchors its batches' heads (anchors.ts); undefined when it anchors none. */
  readonly anchors: ReceiptAnchorer | undefined;

  /**
   * `batching`: how long a receipt may wait for others while `inFlight()` other operations are still
   * to end (many: up to `waitMs`; none: it is signed at once); by default none waits beyond its turn.
   */
  constructor(args: {
    keyring: Keyring;
    instanceId: string;
    composeHash: string;
    quote: ReceiptQuoteSource;
    batching?: { waitMs: number; inFlight: () => number };
    anchoring?: AnchoringConfig;
  }) {
    // Without a count of the runs in flight, a receipt is never taken to be alone: those asked for
    // in one turn still share a batch.
    this.#batching = args.batching ?? { waitMs: 0, inFlight: () => 1 };
    this.#keyring = args.keyring;
    this.#quote = args.quote;
    this.instanceId = args.instanceId;
    this.composeHash = args.composeHash;
    const key = args.keyring.receiptKey(args.instanceId);
    this.address = key.address.toLowerCase() as Address;
    this.publicKey = bytesToHex(publicKeyOf(key.privateKey));
    key.privateKey.fill(0);
    this.anchors = args.anchoring
      ? new ReceiptAnchorer({
          config: args.anchoring,
          signer: this.address,
          instanceId: this.instanceId,
          sign: (digest) => this.#signHead(hexToBytes(digest)),
          hash: nodeSha256,
        })
      : undefined;
  }

  /** EIP-191 (personal_sign) of 32 raw bytes with the receipt key, as viem's signMessage({ raw }) makes it. */
  #signHead(head: Uint8Array): Hex {
    const key = this.#keyring.receiptKey(this.instanceId);
    try {
      return serializeSignature(signDigest(hexToBytes(hashMessage({ raw: head })), key.privateKey));
    } finally {
      key.privateKey.fill(0);
    }
  }

  /** The receipt key and the quote that binds it; the quote is made once (it does not change while the instance runs). */
  attestation(): Promise<ReceiptKeyAttestation> {
    this.#document ??= (async () => {
      const publicKey = Uint8Array.from(Buffer.from(this.publicKey.slice(2), "hex"));
      const q = await this.#quote(await receiptKeyReportData(publicKey));
      return {
        address: this.address,
        public_key: this.publicKey,
        quote: q.quote,
        event_log: q.event_log,
        ...(q.vm_config === undefined ? {} : { vm_config: q.vm_config }),
        instance_id: this.instanceId,
        compose_hash: this.composeHash,
        ...(q.simulated ? { simulated: true as const } : {}),
      };
    })();
    this.#document.catch(() => (this.#document = undefined));
    return this.#document;
  }

  /**
   * Signs `body` (its instance and compose hash are this signer's) with the receipt key, in a batch
   * with the other receipts asked for in the same turn of the event loop (shared/receipt.ts): the
   * first one asked schedules the batch, which is signed once, as soon as this turn is over.
   */
  sign(body: Omit<RunReceiptBody, "instance_id" | "compose_hash">): Promise<RunReceipt> {
    const full: RunReceiptBody = { ...body, instance_id: this.instanceId, compose_hash: this.composeHash };
    return new Promise<RunReceipt>((resolve, reject) => {
      this.#queue.push({ body: full, resolve, reject });
      // With many runs in flight, their receipts are coming: the batch waits for them, a little, and
      // one signature serves them all. Otherwise it is signed as soon as this turn is over: with
      // few runs the CPU has room, and a run's answer should not wait for others.
      const inFlight = this.#batching.inFlight();
      const busy = this.#batching.waitMs > 0 && inFlight >= BUSY_IN_FLIGHT;
      // Alone (no other run to come, none queued): signed at once, not a turn later.
      if (inFlight <= 0 && this.#queue.length === 1 && !this.#immediate && !this.#timer) return this.#flush();
      if (this.#queue.length >= BATCH_TARGET || !busy) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        if (!this.#immediate) this.#immediate = setImmediate(() => this.#flush());
      } else {
        this.#timer ??= setTimeout(() => this.#flush(), this.#batching.waitMs);
      }
    });
  }

  readonly #queue: Array<{ body: RunReceiptBody; resolve: (r: RunReceipt) => void; reject: (e: Error) => void }> = [];
  #immediate: NodeJS.Immediate | undefined;
  #timer: NodeJS.Timeout | undefined;

  /** How many batches have been signed, and how many receipts they held (for /health and the benchmarks). */
  readonly stats = { batches: 0, receipts: 0 };

  #flush(): void {
    clearImmediate(this.#immediate);
    clearTimeout(this.#timer);
    this.#immediate = undefined;
    this.#timer = undefined;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_RECEIPT_BATCH);
      try {
        // Every receipt of the batch names the epoch its head is anchored in, inside what is signed.
        const anchor = this.anchors?.enabled ? this.anchors.ref() : undefined;
        const bodies = batch.map((b) => (anchor ? { ...b.body, anchor } : b.body));
        const { root, proofs } = merkleBatch(
          bodies.map((body) => receiptLeaf(body, nodeSha256)),
          nodeSha256,
        );
        const head = batchHead(root, batch.length, nodeSha256);
        const signature = this.#signHead(head);
        if (anchor) this.anchors?.add(anchor.epoch, head);
        this.stats.batches++;
        this.stats.receipts += batch.length;
        for (const [index, b] of batch.entries()) {
          b.resolve({
            ...(bodies[index] as RunReceiptBody),
            batch: { index, size: batch.length, proof: (proofs[index] as Uint8Array[]).map((p) => bytesToHex(p)) },
            signature,
          });
        }
      } catch (err) {
        for (const b of batch) b.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }
}

/** A batch this large is signed without waiting for more. */
const BATCH_TARGET = 16;
/** Runs in flight from which receipts wait to share a signature (fewer: each is signed at once). */
const BUSY_IN_FLIGHT = 8;

/** Node's SHA-256 (a leaf is about 700 bytes: a quarter of the time of the JavaScript one). */
const nodeSha256: Sha256 = (bytes) => createHash("sha256").update(bytes).digest();

/**
 * The keys one run used, in the order of first use, and what each was used for: every signature's
 * digest, and whether the script read the private key. Fed by the run's key provider, on the
 * service thread, as each key is handed over: it outlives a sandbox worker the watchdog stops.
 */
export class KeyUses {
  readonly #wallets = new Map<string, ReceiptWallet>();

  note(address: Address, action: boolean, use: KeyUse | undefined, decision?: GuardrailDecision): void {
    const wallet = this.#wallet(address, action);
    if (decision) wallet.guardrail = decision.guardrail;
    if (use?.kind === "export") wallet.key_exported = true;
    else if (use)
      wallet.signed.push({
        kind: use.kind,
        digest: use.digest.toLowerCase() as Hex,
        ...(decision ? { rule: decision.rule } : {}),
      });
  }

  /** A use of a wallet's key its guardrail refused. */
  refused(address: Address, use: KeyUse, decision: GuardrailDecision): void {
    const wallet = this.#wallet(address, false);
    wallet.guardrail = decision.guardrail;
    (wallet.refused ??= []).push({
      kind: use.kind,
      ...(use.kind === "export" ? {} : { digest: use.digest.toLowerCase() as Hex }),
      rule: decision.rule,
    });
  }

  #wallet(address: Address, action: boolean): ReceiptWallet {
    const id = `${action ? "action" : "wallet"}:${address.toLowerCase()}`;
    let wallet = this.#wallets.get(id);
    if (!wallet) {
      wallet = { address: address.toLowerCase() as Address, action, signed: [], key_exported: false };
      this.#wallets.set(id, wallet);
    }
    return wallet;
  }

  /** A copy of what was noted so far. */
  list(): ReceiptWallet[] {
    return [...this.#wallets.values()].map((w) => ({
      ...w,
      signed: [...w.signed],
      ...(w.refused ? { refused: [...w.refused] } : {}),
    }));
  }
}
