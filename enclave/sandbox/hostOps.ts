// What `Sigil.Actions`, `fetch` and the other host-backed globals do, on the worker side of a run.
// Keys come from the service thread, which authorizes every wallet for this run's (key, code) and
// checks the derived address before it hands the key over; here they are used once and zeroed.
// Cryptography is native (@noble, libsecp256k1, viem, WebCrypto), never JavaScript inside QuickJS.
//
// viem (typed data, transactions) and the network stack (fetch: Node's http, https and c-ares) are
// loaded by a worker the first time a run needs them: together they are about 45 MiB of a worker's
// memory, and most runs — hello, signMessage, getPublicKey, hashes — use neither.
import { keccak_256 } from "@noble/hashes/sha3";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex as nobleHex, hexToBytes as nobleBytes, utf8ToBytes } from "@noble/hashes/utils";
import type { Hex, TransactionSerializable, TypedDataDefinition } from "viem";
import type { SignRequest } from "../../shared/guardrails/evaluate.ts";
import type { SignedKind } from "../../shared/receipt.ts";
import { publicKeyOf, serializeSignature, signDigest } from "../keys/ecdsa.ts";
import { ed25519Sign, solanaAddressOf } from "../keys/ed25519.ts";
import type { SandboxLimits } from "../config.ts";
import type { ByteBudget, FetchPolicy, GuardedRequest, Resolver } from "./net/guardedFetch.ts";
import { CodedError, type RunHost } from "./runtime.ts";

let viemModule: Promise<typeof import("viem")> | undefined;
/** viem, loaded at its first use in this worker. */
const viem = () => (viemModule ??= import("viem"));

let solanaModule: Promise<typeof import("@solana/kit")> | undefined;
/** @solana/kit (wire transactions, base58), loaded at the first Solana signature in this worker. */
const solanaKit = () => (solanaModule ??= import("@solana/kit"));

let netModule: Promise<typeof import("./net/guardedFetch.ts")> | undefined;
/** The fetch guard and its resolver, loaded at the first fetch in this worker. */
export const net = () => (netModule ??= import("./net/guardedFetch.ts"));

const bytesToHex = (bytes: Uint8Array): Hex => `0x${nobleHex(bytes)}`;
const hexToBytes = (hex: string): Uint8Array => nobleBytes(hex.slice(2));

/** EIP-191's hash of a message, as viem's hashMessage: keccak256("\x19Ethereum Signed Message:\n" ‖ length ‖ bytes). */
function hashMessage(message: string | { raw: Hex }): Hex {
  const bytes = typeof message === "string" ? utf8ToBytes(message) : hexToBytes(message.raw);
  const prefix = utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`);
  const all = new Uint8Array(prefix.length + bytes.length);
  all.set(prefix);
  all.set(bytes, prefix.length);
  return bytesToHex(keccak_256(all));
}

/** What the service thread hands over for one operation. Zeroed after use. */
export type KeyMaterial = { privateKey: Uint8Array; encryptionKey?: Uint8Array };

/**
 * What a key is handed over for, for the run's receipt (shared/receipt.ts): a signature over
 * `digest`, or the private key itself read by the script (`export`). Absent: another use (a public
 * key, an address, encrypt/decrypt).
 */
export type KeyUse = { kind: SignedKind; digest: Hex } | { kind: "export" };

export type KeyRequest = (
  | {
      kind: "wallet";
      pkpId: string;
      encryption: boolean;
      /** The wallet's Solana key (its Ed25519 seed) instead of its EVM key. */
      solana?: true;
    }
  | { kind: "action"; cid: string }
) & {
  use?: KeyUse;
  /**
   * What the key will sign, parsed (or its export): the service thread checks it against the
   * wallet's guardrail before it hands the key over (docs/design/guardrails.md). Made from the same
   * arguments as `use`'s digest, here, by the worker's own code: the script only chooses the arguments.
   */
  signs?: SignRequest;
};

/**
 * A wallet's key the service thread authorized for a run and derived before its script asked for it
 * (operations/sigilAction.ts): a request for that wallet is answered in the worker, without the round
 * trip to the service thread. `pkpId` is lowercase. Zeroed when the run ends.
 */
export type OfferedKey = { pkpId: string; material: KeyMaterial };

export type RunContext = {
  cid: string;
  /** When the run must end now (it moves on while other runs' long slices hold the thread). */
  deadline: () => number;
  limits: SandboxLimits;
  fetchPolicy: FetchPolicy;
  /** How host names are resolved (guardedFetch's c-ares resolver; tests may stub it). */
  resolve?: Resolver;
  /** The signal that stops the run's fetches in flight when it ends (made at its first fetch). */
  signal?: () => AbortSignal;
  /** Asks the service thread for a key; rejects with a CodedError (permission_denied, wallet_key_mismatch, …). */
  requestKey(request: KeyRequest): Promise<KeyMaterial>;
  /** Asks the service thread for a service of the run's (operations/send.ts); rejects with a CodedError. */
  requestService?(op: string, args: unknown): Promise<unknown>;
  /**
   * A dry run (docs/design/guardrails.md, The dry run): a signature or an export is asked of the service
   * thread as in a run — authorized, checked against the guardrail, recorded — but no key comes back
   * and nothing is signed; the script gets a stand-in of zeros of the right shape.
   */
  dryRun?: boolean;
};

type Args = Record<string, unknown>;

/** Revives the `{$bigint: "…"}` tags the prelude uses to carry BigInts through JSON. */
function revive(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(revive);
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === "$bigint" && typeof o.$bigint === "string") return BigInt(o.$bigint);
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = revive(o[k]);
    return out;
  }
  return value;
}

const BIGINT_FIELDS = ["value", "gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas", "maxFeePerBlobGas"] as const;
const NUMBER_FIELDS = ["nonce", "chainId"] as const;

function toTransaction(raw: unknown): TransactionSerializable {
  const tx = { ...(revive(raw) as Record<string, unknown>) };
  try {
    for (const f of BIGINT_FIELDS)
      if (tx[f] !== undefined && tx[f] !== null) tx[f] = BigInt(tx[f] as string | number | bigint);
    for (const f of NUMBER_FIELDS) if (tx[f] !== undefined && tx[f] !== null) tx[f] = Number(tx[f]);
  } catch {
    throw new CodedError(
      null,
      "signTransaction: numeric fields must be numbers, bigints or decimal/hex strings",
      "TypeError",
    );
  }
  return tx as TransactionSerializable;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** A dry run's stand-ins: 32 zero bytes (a signature's r and s, an exported key), 65 zero bytes (a signature). */
const ZERO_WORD: Hex = `0x${"00".repeat(32)}`;
const ZERO_SIGNATURE: Hex = `0x${"00".repeat(65)}`;
const HEX = /^0x([0-9a-fA-F]{2})*$/;
const DIGEST = /^0x[0-9a-fA-F]{64}$/;

/** A message: a string (signed as UTF-8 text) or `{raw: "0x…"}` bytes, viem's convention. */
function messageOf(op: string, message: unknown, field = "message"): string | { raw: Hex } {
  if (typeof message === "string") return message;
  const raw = message !== null && typeof message === "object" ? (message as { raw?: unknown }).raw : undefined;
  if (typeof raw === "string" && HEX.test(raw)) return { raw: raw as Hex };
  throw new CodedError(null, `${op}: ${field} must be a string or {raw: "0x…"}`, "TypeError");
}

function requireObject(op: string, field: string, value: unknown): true {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new CodedError(null, `${op}: ${field} must be an object`, "TypeError");
  return true;
}

/** keccak256 / sha256 input: bytes (sent as hex), a 0x hex string (its bytes), or text (its UTF-8). */
function dataOf(op: string, args: Args): Uint8Array {
  const value = args.value;
  if (typeof value !== "string")
    throw new CodedError(null, `${op} expects a string (hex or text) or bytes`, "TypeError");
  if (args.bytes === true || HEX.test(value)) return hexToBytes(value as Hex);
  return new TextEncoder().encode(value);
}

const keyHex = (key: Uint8Array): Hex => bytesToHex(key);

/**
 * The bytes of a run's fetch responses that have arrived and are not yet in its VM. They are held
 * by the host, outside the run's capped heap, so they get a cap of their own: the run's memory limit.
 */
function inFlightBudget(maxBytes: number): ByteBudget {
  let held = 0;
  return {
    take(bytes) {
      if (held + bytes > maxBytes) return false;
      held += bytes;
      return true;
    },
    give(bytes) {
      held = Math.max(0, held - bytes);
    },
    maxBytes,
  };
}

/** What the wallet and action operations use: a key for a request (counted, zeroed after use) and the requests. */
type Keys = {
  /** `dry`: what a dry run answers instead of `use` for a request that signs or exports (nothing is signed). */
  withKey: <T>(request: KeyRequest, use: (k: KeyMaterial) => T | Promise<T>, dry?: () => T) => Promise<T>;
  wallet: (op: string, args: Args, encryption?: boolean, use?: KeyUse, signs?: SignRequest) => KeyRequest;
  action: (op: string, cid: unknown) => KeyRequest;
};
type AsyncOps = Record<string, (args: Args) => Promise<unknown>>;

/** Signatures with one of the account's wallets, its public key, and the key itself (an export). */
function walletOperations({ withKey, wallet }: Keys): AsyncOps {
  return {
    signMessage: (args) => {
      const message = messageOf("signMessage", args.message);
      const digest = hashMessage(message);
      return withKey(
        wallet("signMessage", args, false, { kind: "message", digest }, { kind: "message", message }),
        (k) => serializeSignature(signDigest(hexToBytes(digest), k.privateKey)),
        () => ZERO_SIGNATURE,
      );
    },
    signTypedData: async (args) => {
      requireObject("signTypedData", "typedData", args.typedData);
      // The digest first, for the receipt; typed data it cannot hash fails as before, once the
      // wallet has been authorized (a wallet the run may not use is the first thing it hears).
      let invalid: CodedError | undefined;
      let digest: Hex | undefined;
      const { hashTypedData } = await viem();
      const typedData = revive(args.typedData) as TypedDataDefinition;
      try {
        digest = hashTypedData(typedData);
      } catch (err) {
        invalid = new CodedError(null, `signTypedData: ${shortMessage(err)}`, "TypeError");
      }
      const request = digest
        ? wallet("signTypedData", args, false, { kind: "typed_data", digest }, { kind: "typed_data", typedData })
        : wallet("signTypedData", args);
      return withKey(
        request,
        (k) => {
          if (invalid || !digest) throw invalid;
          // The digest viem's signTypedData signs (hashTypedData validated the typed data making it).
          return serializeSignature(signDigest(hexToBytes(digest), k.privateKey));
        },
        () => ZERO_SIGNATURE,
      );
    },
    signTransaction: async (args) => {
      requireObject("signTransaction", "transaction", args.transaction);
      let tx: TransactionSerializable | undefined;
      let invalid: CodedError | undefined;
      let digest: Hex | undefined;
      const { keccak256, serializeTransaction } = await viem();
      try {
        tx = toTransaction(args.transaction);
        // The hash viem's signTransaction signs: keccak256 of the unsigned serialization (an
        // EIP-4844 transaction without its sidecars, the network wrapper).
        digest = keccak256(serializeTransaction(tx.type === "eip4844" ? { ...tx, sidecars: false as const } : tx));
      } catch (err) {
        invalid =
          err instanceof CodedError ? err : new CodedError(null, `signTransaction: ${shortMessage(err)}`, "TypeError");
      }
      return withKey(
        digest && tx
          ? wallet(
              "signTransaction",
              args,
              false,
              { kind: "transaction", digest },
              { kind: "transaction", transaction: tx },
            )
          : wallet("signTransaction", args),
        (k) => {
          if (invalid || !digest) throw invalid;
          // As viem's signTransaction: the signature over the unsigned serialization's hash, then the
          // transaction serialized with it (v from the chain id for a legacy EIP-155 one).
          const signature = signDigest(hexToBytes(digest), k.privateKey);
          try {
            return serializeTransaction(tx as TransactionSerializable, signature);
          } catch (err) {
            throw new CodedError(null, `signTransaction: ${shortMessage(err)}`, "TypeError");
          }
        },
        // The transaction serialized with a signature of zeros: its shape, valid for nothing.
        () => serializeTransaction(tx as TransactionSerializable, { r: ZERO_WORD, s: ZERO_WORD, yParity: 0 }),
      );
    },
    signDigest: (args) => {
      if (typeof args.digest !== "string" || !DIGEST.test(args.digest)) {
        throw new CodedError(null, "signDigest: digest must be 0x followed by 64 hex digits", "TypeError");
      }
      const digest = (args.digest as string).toLowerCase() as Hex;
      return withKey(
        wallet("signDigest", args, false, { kind: "hash", digest }, { kind: "hash", digest }),
        (k) => {
          const sig = signDigest(hexToBytes(digest), k.privateKey);
          return { r: sig.r, s: sig.s, v: Number(sig.v), signature: serializeSignature(sig) };
        },
        () => ({ r: ZERO_WORD, s: ZERO_WORD, v: 27, signature: ZERO_SIGNATURE }),
      );
    },
    getPublicKey: (args) => withKey(wallet("getPublicKey", args), (k) => bytesToHex(publicKeyOf(k.privateKey))),
    getPrivateKey: (args) =>
      withKey(
        wallet("getPrivateKey", args, false, { kind: "export" }, { kind: "export" }),
        (k) => keyHex(k.privateKey),
        () => ZERO_WORD,
      ),
  };
}

/** A prepared send (operations/send.ts): the transaction filled and numbered, or the record of one a retried run already sent. */
type PreparedSend =
  | { id: string | null; chain_id: number; nonce: number; transaction: Record<string, unknown> }
  | { sent: Record<string, unknown> };

/**
 * `sendTransaction`: the service thread fills the transaction (gas, EIP-1559 fees) and reserves its
 * nonce at the edge; it is signed here as `signTransaction` signs it — the wallet's grant, guardrail
 * and budgets decide as for any signature — and the service thread broadcasts it and records its hash
 * (docs/design/transactions.md). A signature refused releases the nonce. Each send of a run is
 * numbered, so that the run retried under its Idempotency-Key finds the transactions it sent.
 * `speedUpTransaction` sends a pending transaction again, the same nonce with higher fees, the same way.
 */
function sendOperation(run: RunContext, signTransaction: (args: Args) => Promise<unknown>): AsyncOps {
  let sends = 0;
  return {
    sendTransaction: async (args) => {
      requireObject("sendTransaction", "transaction", args.transaction);
      if (typeof args.pkpId !== "string" || !ADDRESS.test(args.pkpId))
        throw new CodedError(
          null,
          "sendTransaction: pkpId must be a wallet address (0x followed by 40 hex digits)",
          "TypeError",
        );
      const given = toTransaction(args.transaction) as Record<string, unknown>;
      if (given.nonce !== undefined && given.nonce !== null)
        throw new CodedError(
          null,
          "sendTransaction: the service numbers the transaction; to choose its nonce, signTransaction it and send it yourself",
          "TypeError",
        );
      if (typeof given.chainId !== "number")
        throw new CodedError(null, "sendTransaction: transaction.chainId is required", "TypeError");
      if (!run.requestService) throw new CodedError(null, "sendTransaction: this run cannot send transactions");
      const prepared = (await run.requestService("sendTransaction.prepare", {
        pkpId: args.pkpId,
        index: sends++,
        transaction: jsonOf(given),
      })) as PreparedSend;
      return signAndSend(args.pkpId, prepared);
    },
    speedUpTransaction: async (args) => {
      if (typeof args.pkpId !== "string" || !ADDRESS.test(args.pkpId))
        throw new CodedError(
          null,
          "speedUpTransaction: pkpId must be a wallet address (0x followed by 40 hex digits)",
          "TypeError",
        );
      if (typeof args.id !== "string" || !/^tx_[0-9a-f]{24}$/.test(args.id))
        throw new CodedError(
          null,
          "speedUpTransaction: id must be a transaction's id (tx_…, what sendTransaction answered)",
          "TypeError",
        );
      const fees: Record<string, string> = {};
      for (const name of ["maxFeePerGas", "maxPriorityFeePerGas", "gasPrice"] as const) {
        const value = args[name];
        if (value === undefined || value === null) continue;
        if (
          (typeof value !== "string" && typeof value !== "number" && typeof value !== "bigint") ||
          !/^\d+$/.test(String(value))
        )
          throw new CodedError(null, `speedUpTransaction: ${name} must be a whole number of wei`, "TypeError");
        fees[name] = String(value);
      }
      if (!run.requestService) throw new CodedError(null, "speedUpTransaction: this run cannot send transactions");
      const prepared = (await run.requestService("sendTransaction.speedUp", {
        pkpId: args.pkpId,
        index: sends++,
        id: args.id,
        ...fees,
      })) as PreparedSend;
      return signAndSend(args.pkpId, prepared);
    },
  };

  /** Signs a prepared send as signTransaction signs (a refusal releases its nonce) and has it broadcast. */
  async function signAndSend(pkpId: string, prepared: PreparedSend): Promise<unknown> {
    if ("sent" in prepared) return prepared.sent;
    const request = run.requestService;
    if (!request) throw new CodedError(null, "sendTransaction: this run cannot send transactions");
    let serialized: unknown;
    try {
      serialized = await signTransaction({ pkpId, transaction: prepared.transaction });
    } catch (err) {
      if (prepared.id !== null)
        await request("sendTransaction.release", { id: prepared.id, reason: shortMessage(err) }).catch(() => undefined);
      throw err;
    }
    if (run.dryRun === true)
      return { id: null, hash: null, chain_id: prepared.chain_id, nonce: prepared.nonce, status: "dry_run" };
    return request("sendTransaction.broadcast", { id: prepared.id, serialized });
  }
}

/** A transaction's fields as JSON: bigints as decimal strings. */
function jsonOf(tx: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(tx).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
}

/** Whether `bytes` are, whole, a compiled Solana transaction message (legacy or v0) with a signer. */
function isTransactionMessage(kit: typeof import("@solana/kit"), bytes: Uint8Array): boolean {
  try {
    const [message, end] = kit.getCompiledTransactionMessageDecoder().read(bytes, 0);
    return end === bytes.length && message.header.numSignerAccounts > 0 && message.staticAccounts.length > 0;
  } catch {
    return false;
  }
}

/** A dry run's stand-in for an Ed25519 signature: 64 zero bytes. */
const ZERO_ED25519 = new Uint8Array(64);

/**
 * Signatures with a wallet's Solana key (its Ed25519 seed, keys/derive.ts solanaKey): its address, a
 * message's signature (base58, as Solana shows signatures), and a wire transaction (base64, as
 * @solana/kit's getBase64EncodedWireTransaction makes it, legacy or v0) signed in the wallet's slot,
 * the other signers' signatures kept. The receipt records SHA-256 of the bytes signed.
 */
function solanaOperations({ withKey, wallet }: Keys): AsyncOps {
  const solanaWallet = (op: string, args: Args, use?: KeyUse, signs?: SignRequest): KeyRequest => {
    const request = wallet(op, args, false, use, signs);
    return request.kind === "wallet" ? { ...request, solana: true } : request;
  };
  /** A signature over `message` with the Solana key: the receipt records SHA-256 of the bytes, the guardrail sees them. */
  const solanaSigning = (
    op: string,
    args: Args,
    kind: "solana_message" | "solana_transaction",
    message: Uint8Array,
  ): KeyRequest => solanaWallet(op, args, { kind, digest: bytesToHex(sha256(message)) }, { kind, message });
  return {
    getSolanaAddress: (args) => withKey(solanaWallet("getSolanaAddress", args), (k) => solanaAddressOf(k.privateKey)),
    signSolanaMessage: async (args) => {
      const m = messageOf("signSolanaMessage", args.message);
      const message = typeof m === "string" ? utf8ToBytes(m) : hexToBytes(m.raw);
      const kit = await solanaKit();
      // A transaction's message signed as a message is a signed transaction: it goes through
      // signSolanaTransaction, so that what the receipt and a guardrail see is what it is.
      if (isTransactionMessage(kit, message))
        throw new CodedError(
          null,
          "signSolanaMessage: these bytes are a Solana transaction's message; sign it with signSolanaTransaction",
          "TypeError",
        );
      const { getBase58Decoder } = kit;
      return withKey(
        solanaSigning("signSolanaMessage", args, "solana_message", message),
        (k) => getBase58Decoder().decode(ed25519Sign(k.privateKey, message)),
        () => getBase58Decoder().decode(ZERO_ED25519),
      );
    },
    signSolanaTransaction: async (args) => {
      if (typeof args.transaction !== "string" || args.transaction.length === 0)
        throw new CodedError(
          null,
          "signSolanaTransaction: transaction must be a base64 wire transaction (getBase64EncodedWireTransaction)",
          "TypeError",
        );
      const kit = await solanaKit();
      let transaction: ReturnType<ReturnType<typeof kit.getTransactionDecoder>["decode"]>;
      try {
        transaction = kit.getTransactionDecoder().decode(Buffer.from(args.transaction, "base64"));
      } catch (err) {
        throw new CodedError(null, `signSolanaTransaction: not a wire transaction: ${shortMessage(err)}`, "TypeError");
      }
      const message = new Uint8Array(transaction.messageBytes);
      // The service thread handed the key over only for a transaction the wallet signs (sigilAction.ts solanaSigned).
      const signed = (address: string, signature: Uint8Array) => {
        const signatures = { ...transaction.signatures, [address]: signature } as typeof transaction.signatures;
        return Buffer.from(kit.getTransactionEncoder().encode({ ...transaction, signatures })).toString("base64");
      };
      return withKey(
        solanaSigning("signSolanaTransaction", args, "solana_transaction", message),
        (k) => signed(solanaAddressOf(k.privateKey), ed25519Sign(k.privateKey, message)),
        // The transaction as it came: a dry run holds no key, so it cannot say which slot is the wallet's.
        () => args.transaction as string,
      );
    },
  };
}

/** Encryption to and from a wallet's own AES-GCM key. */
function encryptionOperations({ withKey, wallet }: Keys): AsyncOps {
  return {
    encrypt: (args) => {
      const m = messageOf("encrypt", args.plaintext, "plaintext");
      const plaintext = typeof m === "string" ? new TextEncoder().encode(m) : hexToBytes(m.raw);
      return withKey(wallet("encrypt", args, true), async (k) => {
        const key = await crypto.subtle.importKey("raw", k.encryptionKey as Uint8Array<ArrayBuffer>, "AES-GCM", false, [
          "encrypt",
        ]);
        const nonce = crypto.getRandomValues(new Uint8Array(12));
        const sealed = new Uint8Array(
          await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, Uint8Array.from(plaintext)),
        );
        const out = new Uint8Array(12 + sealed.length);
        out.set(nonce);
        out.set(sealed, 12);
        return bytesToHex(out);
      });
    },
    decrypt: (args) => {
      if (typeof args.ciphertext !== "string" || !HEX.test(args.ciphertext)) {
        throw new CodedError(null, "decrypt: ciphertext must be a 0x hex string", "TypeError");
      }
      return withKey(wallet("decrypt", args, true), async (k) => {
        const data = hexToBytes(args.ciphertext as Hex);
        if (data.length < 12 + 16) throw new CodedError(null, "decrypt: the ciphertext is too short", "TypeError");
        const key = await crypto.subtle.importKey("raw", k.encryptionKey as Uint8Array<ArrayBuffer>, "AES-GCM", false, [
          "decrypt",
        ]);
        let plain: Uint8Array;
        try {
          plain = new Uint8Array(
            await crypto.subtle.decrypt({ name: "AES-GCM", iv: data.slice(0, 12) }, key, data.slice(12)),
          );
        } catch {
          throw new CodedError(null, "decrypt: the ciphertext was not made by this wallet or was altered");
        }
        return args.raw === true ? bytesToHex(plain) : new TextDecoder().decode(plain);
      });
    },
  };
}

/** The code's own action identity: its address, public key, signature and key. */
function actionOperations({ withKey, action }: Keys): AsyncOps {
  return {
    getActionWalletAddress: (args) =>
      withKey(action("getActionWalletAddress", args.cid), (k) =>
        bytesToHex(keccak_256(publicKeyOf(k.privateKey).subarray(1)).subarray(12)),
      ),
    getActionPublicKey: (args) =>
      withKey(action("getActionPublicKey", args.cid), (k) => bytesToHex(publicKeyOf(k.privateKey))),
    signMessageAsAction: (args) => {
      const digest = hashMessage(messageOf("signMessageAsAction", args.message));
      return withKey(
        { ...action("signMessageAsAction", undefined), use: { kind: "message", digest } },
        (k) => serializeSignature(signDigest(hexToBytes(digest), k.privateKey)),
        () => ZERO_SIGNATURE,
      );
    },
    getActionPrivateKey: () =>
      withKey(
        { ...action("getActionPrivateKey", undefined), use: { kind: "export" } },
        (k) => keyHex(k.privateKey),
        () => ZERO_WORD,
      ),
  };
}

/** `fetch`, counted against the run's limit, its responses held against the in-flight budget. */
function fetchOperation(run: RunContext): AsyncOps {
  let fetches = 0;
  const inFlight = inFlightBudget(run.limits.memoryLimitBytes);
  return {
    fetch: async (args) => {
      if (++fetches > run.limits.maxFetchCount) {
        throw new CodedError("limit_exceeded", `a run may make at most ${run.limits.maxFetchCount} fetches`);
      }
      const remaining = run.deadline() - Date.now();
      const request: GuardedRequest = {
        url: String(args.url),
        method: String(args.method),
        headers: (args.headers as Array<[string, string]>) ?? [],
        ...(typeof args.body === "string" ? { body: Uint8Array.from(Buffer.from(args.body, "base64")) } : {}),
        ...(args.redirect === "manual" || args.redirect === "error" || args.redirect === "follow"
          ? { redirect: args.redirect }
          : {}),
      };
      const { guardedFetch, FetchError } = await net();
      try {
        const r = await guardedFetch(
          request,
          { ...run.fetchPolicy, timeoutMs: Math.max(1, Math.min(run.fetchPolicy.timeoutMs, remaining)) },
          {
            budget: inFlight,
            ...(run.resolve ? { resolve: run.resolve } : {}),
            ...(run.signal ? { signal: run.signal() } : {}),
          },
        );
        // The runtime copies the body into the VM as this resolves: from then on it counts there.
        inFlight.give(r.body.byteLength);
        return {
          status: r.status,
          statusText: r.statusText,
          headers: r.headers,
          url: r.url,
          redirected: r.redirected,
          body: r.body,
        };
      } catch (err) {
        if (err instanceof FetchError) {
          throw new CodedError(
            err.reason === "limit_exceeded" ? "limit_exceeded" : null,
            err.message,
            err.reason === "limit_exceeded" ? "Error" : "TypeError",
          );
        }
        throw new CodedError(null, "fetch failed", "TypeError");
      }
    },
  };
}

/** The operations a run's code calls without waiting: hashes, URL parsing, random bytes. */
function callSync(op: string, rawArgs: unknown): unknown {
  const args = rawArgs as Args;
  switch (op) {
    case "keccak256":
      return bytesToHex(keccak_256(dataOf(op, args)));
    case "sha256":
      return bytesToHex(sha256(dataOf(op, args)));
    case "parseUrl": {
      try {
        const u = new URL(String(args.input), args.base === undefined ? undefined : String(args.base));
        return {
          href: u.href,
          protocol: u.protocol,
          username: u.username,
          password: u.password,
          host: u.host,
          hostname: u.hostname,
          port: u.port,
          pathname: u.pathname,
          search: u.search,
          hash: u.hash,
          origin: u.origin,
        };
      } catch {
        return null;
      }
    }
    case "randomBytes": {
      const n = Number(args.n);
      if (!Number.isInteger(n) || n < 0 || n > 65_536)
        throw new CodedError(null, "randomBytes: n must be 0 to 65536", "RangeError");
      return Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString("hex");
    }
    default:
      throw new CodedError(null, `unknown host operation ${op}`);
  }
}

/** Builds the host of one run: counts wallet operations and fetches against the run's limits. */
export function createRunHost(run: RunContext): RunHost {
  let walletOps = 0;

  const countWalletOp = () => {
    if (++walletOps > run.limits.maxWalletOperations) {
      throw new CodedError(
        "limit_exceeded",
        `a run may make at most ${run.limits.maxWalletOperations} wallet operations`,
      );
    }
  };

  /** Gets a key, runs `use` with it, and zeroes it whatever happens. In a dry run, a use that signs gets `dry`'s stand-in. */
  const withKey = async <T>(
    request: KeyRequest,
    use: (k: KeyMaterial) => T | Promise<T>,
    dry?: () => T,
  ): Promise<T> => {
    countWalletOp();
    const signs = run.dryRun === true && request.use !== undefined;
    if (signs && !dry) throw new CodedError(null, "this operation cannot be dry-run");
    const material = await run.requestKey(request);
    try {
      // The service thread sent no key for it (an empty one): the answer is a stand-in.
      if (signs && dry) return dry();
      return await use(material);
    } finally {
      material.privateKey.fill(0);
      material.encryptionKey?.fill(0);
    }
  };

  const wallet = (op: string, args: Args, encryption = false, use?: KeyUse, signs?: SignRequest): KeyRequest => {
    if (typeof args.pkpId !== "string" || !ADDRESS.test(args.pkpId)) {
      throw new CodedError(null, `${op}: pkpId must be a wallet address (0x followed by 40 hex digits)`, "TypeError");
    }
    return { kind: "wallet", pkpId: args.pkpId, encryption, ...(use ? { use } : {}), ...(signs ? { signs } : {}) };
  };
  const action = (op: string, cid: unknown): KeyRequest => {
    if (cid !== undefined && cid !== null && (typeof cid !== "string" || cid.length === 0 || cid.length > 128)) {
      throw new CodedError(null, `${op}: cid must be a non-empty CID string`, "TypeError");
    }
    return { kind: "action", cid: typeof cid === "string" ? cid : run.cid };
  };

  const keys: Keys = { withKey, wallet, action };
  const signing = walletOperations(keys);
  const asyncOps: AsyncOps = {
    ...signing,
    ...sendOperation(run, signing.signTransaction as (args: Args) => Promise<unknown>),
    ...solanaOperations(keys),
    ...encryptionOperations(keys),
    ...actionOperations(keys),
    ...fetchOperation(run),
  };

  return {
    async callAsync(op, args) {
      const fn = asyncOps[op];
      if (!fn) throw new CodedError(null, `unknown host operation ${op}`);
      return fn(args as Args);
    },
    callSync,
  };
}

function shortMessage(err: unknown): string {
  const text = err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : String(err);
  return text.split("\n")[0] ?? "invalid input";
}
