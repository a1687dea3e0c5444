// Run receipts (shared/receipt.ts), the enclave's side: the receipt key of this instance, the quote
// that binds it (report_data = SHA-512("sigil-receipt-v1:" ‖ public key), served at
// `GET /attestation/receipt-key`), the record of what each run's keys were used for, and the
// signature over each run's receipt. The key is derived from the root key and the instance id
// (keys/derive.ts `receiptKey`): the same across restarts of one instance, another on every other
// instance; it is derived afresh for each signature and zeroed, like every key here.
import { secp256k1 } from "@noble/curves/secp256k1";
import { bytesToHex, type Address, type Hex } from "viem";
import { signMessage } from "viem/accounts";
import {
  receiptKeyReportData,
  receiptMessage,
  type ReceiptKeyAttestation,
  type ReceiptWallet,
  type RunReceipt,
  type RunReceiptBody,
} from "../../shared/receipt.ts";
import type { Keyring } from "../keys/derive.ts";
import type { KeyUse } from "../sandbox/hostOps.ts";

/** A quote over 64 bytes of report data, from the enclave's attestation source. */
export type ReceiptQuoteSource = (reportData: Uint8Array) => Promise<{ quote: string; event_log: string; vm_config?: string; simulated?: true }>;

export class ReceiptSigner {
  readonly instanceId: string;
  readonly composeHash: string;
  readonly address: Address;
  readonly publicKey: Hex;
  readonly #keyring: Keyring;
  readonly #quote: ReceiptQuoteSource;
  #document: Promise<ReceiptKeyAttestation> | undefined;

  constructor(args: { keyring: Keyring; instanceId: string; composeHash: string; quote: ReceiptQuoteSource }) {
    this.#keyring = args.keyring;
    this.#quote = args.quote;
    this.instanceId = args.instanceId;
    this.composeHash = args.composeHash;
    const key = args.keyring.receiptKey(args.instanceId);
    this.address = key.address.toLowerCase() as Address;
    this.publicKey = bytesToHex(secp256k1.getPublicKey(key.privateKey, false));
    key.privateKey.fill(0);
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

  /** Signs `body` (its instance and compose hash must be this signer's) with the receipt key. */
  async sign(body: Omit<RunReceiptBody, "instance_id" | "compose_hash">): Promise<RunReceipt> {
    const full: RunReceiptBody = { ...body, instance_id: this.instanceId, compose_hash: this.composeHash };
    const key = this.#keyring.receiptKey(this.instanceId);
    try {
      const signature = await signMessage({ message: receiptMessage(full), privateKey: bytesToHex(key.privateKey) });
      return { ...full, signature };
    } finally {
      key.privateKey.fill(0);
    }
  }
}

/**
 * The keys one run used, in the order of first use, and what each was used for: every signature's
 * digest, and whether the script read the private key. Fed by the run's key provider, on the
 * service thread, as each key is handed over: it outlives a sandbox worker the watchdog stops.
 */
export class KeyUses {
  readonly #wallets = new Map<string, ReceiptWallet>();

  note(address: Address, action: boolean, use: KeyUse | undefined): void {
    const id = `${action ? "action" : "wallet"}:${address.toLowerCase()}`;
    let wallet = this.#wallets.get(id);
    if (!wallet) {
      wallet = { address: address.toLowerCase() as Address, action, signed: [], key_exported: false };
      this.#wallets.set(id, wallet);
    }
    if (use?.kind === "export") wallet.key_exported = true;
    else if (use) wallet.signed.push({ kind: use.kind, digest: use.digest.toLowerCase() as Hex });
  }

  /** A copy of what was noted so far. */
  list(): ReceiptWallet[] {
    return [...this.#wallets.values()].map((w) => ({ ...w, signed: [...w.signed] }));
  }
}
