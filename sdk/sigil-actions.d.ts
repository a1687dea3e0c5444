// Types for Sigil scripts ("actions"): the globals a script sees in the sandbox — `Sigil` with
// `Sigil.Actions`, and the Web APIs the sandbox provides beside the language — and helper types for
// `main`. The reference they describe is docs/actions.md; test/unit/sigilActionsTypes.test.ts
// type-checks every example there against this file.
//
// Use it with `"lib": ["es2023"]` and `"types": []` (no "dom", no @types/node): the sandbox is not a
// browser and not Node, and those libraries would declare globals it does not have (document,
// setInterval, AbortController, crypto.subtle, process, require, …). For example, in a tsconfig.json
// beside your scripts:
//
//   { "compilerOptions": { "lib": ["es2023"], "types": [], "allowJs": true, "checkJs": true,
//       "strict": true, "noEmit": true, "moduleDetection": "force" },
//     "include": ["*.js", "node_modules/@sigil/sdk/sigil-actions.d.ts"] }
//
// Differences from lib.es2023 remain: the sandbox has no `Intl`, `SharedArrayBuffer`, `Atomics` or
// `FinalizationRegistry` (docs/actions.md, "What is not there"), and `eval` and the `Function`
// constructor throw EvalError.

/** `0x` followed by hex digits (an even number of them where bytes are meant). */
export type Hex = `0x${string}`;
/** A wallet address: `0x` followed by 40 hex digits, in any case. */
export type Address = `0x${string}`;

/** Any value JSON can carry: what `js_params` and `response` are made of. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * A message to sign: a string is signed as its UTF-8 text; `{ raw }` signs those bytes
 * (viem's convention). Both with the EIP-191 prefix.
 */
export type SignableMessage = string | { raw: Hex };

/** A number the host turns into a bigint: a bigint, a number, or a decimal or `0x` hex string. */
export type Quantity = bigint | number | string;

/** One field of an EIP-712 struct type. */
export interface TypedDataField {
  name: string;
  type: string;
}

/** EIP-712 typed data as viem's signTypedData takes it (`EIP712Domain` is derived from `domain`). */
export interface TypedData {
  domain?: {
    name?: string;
    version?: string;
    chainId?: number | bigint;
    verifyingContract?: Address;
    salt?: Hex;
  };
  types: Record<string, readonly TypedDataField[]>;
  primaryType: string;
  message: Record<string, unknown>;
}

/** An EIP-7702 authorization signed by the account that delegates (viem's SignedAuthorization). */
export interface SignedAuthorization {
  /** The contract the authorizing account delegates to. */
  address: Address;
  chainId: number;
  nonce: number;
  r: Hex;
  s: Hex;
  yParity: number;
  v?: bigint;
}

/** An entry of an EIP-2930 access list. */
export interface AccessListEntry {
  address: Address;
  storageKeys: readonly Hex[];
}

/**
 * A transaction to sign, as viem's serializer takes it: its type is `type`, or inferred from its
 * fields (authorizationList → eip7702, blobVersionedHashes or maxFeePerBlobGas → eip4844,
 * maxFeePerGas → eip1559, gasPrice with accessList → eip2930, gasPrice → legacy). Numeric fields
 * may be bigints, numbers or decimal/hex strings. Every type but legacy needs chainId.
 */
export interface TransactionRequest {
  /** eip4844 is signed with blobVersionedHashes and without its blobs. */
  type?: "legacy" | "eip2930" | "eip1559" | "eip4844" | "eip7702";
  to?: Address | null;
  value?: Quantity;
  data?: Hex;
  nonce?: number | bigint | string;
  chainId?: number | bigint | string;
  gas?: Quantity;
  gasPrice?: Quantity;
  maxFeePerGas?: Quantity;
  maxPriorityFeePerGas?: Quantity;
  maxFeePerBlobGas?: Quantity;
  blobVersionedHashes?: readonly Hex[];
  accessList?: readonly AccessListEntry[];
  authorizationList?: readonly SignedAuthorization[];
}

/** What `signDigest` returns: a raw secp256k1 signature with low s. */
export interface DigestSignature {
  r: Hex;
  s: Hex;
  /** 27 + the recovery bit. */
  v: 27 | 28;
  /** `r ‖ s ‖ v`, 65 bytes as hex. */
  signature: Hex;
}

/** What every wallet function takes: the wallet, by its address. */
export interface WalletArgs {
  /** The wallet's address. It must be usable by the calling key and this script (docs/actions.md, "Which wallets a script may use"). */
  pkpId: Address;
}

/** A run's own facts, as `Sigil.request`. */
export interface SigilRequest {
  /** The request's id (the X-Request-Id the edge gave the request). */
  readonly requestId: string;
  /** The caller's X-Correlation-Id, or null when none was sent. */
  readonly correlationId: string | null;
  /** The CIDv0 (`Qm…`) of the code that is running. */
  readonly cid: string;
}

/**
 * The codes an error thrown by the host carries in `code` (others have none). One that escapes
 * `main` gives the run this `error.code`.
 */
export type SigilHostErrorCode =
  | "permission_denied"
  | "guardrail_denied"
  | "limit_exceeded"
  | "chain_unavailable"
  | "wallet_key_mismatch"
  | "script_error";

/** An error the host threw: its `code`, when it has one, is the run's error code if it escapes main. */
export interface SigilHostError extends Error {
  readonly code?: SigilHostErrorCode;
  /**
   * What the host says beyond the message. For `guardrail_denied`: the guardrail's hash, the rule
   * that refused (a path into the document, "transactions.chains"), why, and the value seen.
   */
  readonly details?: { guardrail: string; allowed: false; rule: string; reason: string; observed?: string };
}

/** The codes a failed run's `error.code` may have. */
export type SigilRunErrorCode = SigilHostErrorCode | "timeout" | "memory_limit" | "insufficient_credits";

/** The answer of `POST /core/v1/sigil_action`, with `R` the type of what main resolves to. */
export interface SigilActionResult<R = JsonValue> {
  /** main's value (or setResponse's) as JSON; null when the run failed. */
  response: R | null;
  /** Everything the script printed with console, one line per call, each ending in "\n". */
  logs: string;
  has_error: boolean;
  error?: { code: SigilRunErrorCode; message: string; stack?: string };
  /** The CIDv0 of the code that ran. */
  cid: string;
  duration_ms: number;
  /** Credits the run cost, in cents. */
  charged_cents: number;
}

/** A transaction sendTransaction sent: its id in Sigil (GET /core/v1/transactions), hash, chain, nonce and where it is. */
export interface SentTransaction {
  id: string;
  hash: Hex | null;
  chain_id: number;
  nonce: number;
  status: "pending" | "confirmed" | "reverted" | "replaced" | "dropped" | "released" | "reserved";
}

/** `Sigil.Actions`: signing and keys, answered by the host. */
export interface SigilActions {
  /** Signs `message` with the wallet (EIP-191, personal_sign); resolves to the 65-byte signature as hex. */
  signMessage(args: WalletArgs & { message: SignableMessage }): Promise<Hex>;
  /** Signs EIP-712 typed data with the wallet; resolves to the 65-byte signature as hex. */
  signTypedData(args: WalletArgs & { typedData: TypedData }): Promise<Hex>;
  /** Signs a transaction with the wallet; resolves to the signed, serialized transaction (ready for eth_sendRawTransaction). */
  signTransaction(args: WalletArgs & { transaction: TransactionRequest }): Promise<Hex>;
  /**
   * Fills the transaction (gas, EIP-1559 fees), numbers it (nonces never collide across runs and
   * enclave instances), signs it as signTransaction would and sends it to the deployment's RPC for its
   * chainId; resolves to its record as soon as the RPC took it. The service then follows it to
   * confirmed, reverted, replaced or dropped. Give no nonce (sign and send it yourself for that).
   */
  sendTransaction(
    args: WalletArgs & { transaction: Omit<TransactionRequest, "nonce"> & { chainId: number } },
  ): Promise<SentTransaction>;
  /**
   * Sends the wallet's pending transaction `id` again with its nonce and higher fees: at least an
   * eighth more than its own (what nodes require of a replacement), at least the chain's estimate now,
   * at least what is given (decimal wei). Signed as any send (grant, guardrail, budgets); resolves to
   * the new transaction's record. Whichever of the two is mined, the other ends `replaced`.
   */
  speedUpTransaction(
    args: WalletArgs & { id: string; maxFeePerGas?: string; maxPriorityFeePerGas?: string; gasPrice?: string },
  ): Promise<SentTransaction>;
  /** Signs a 32-byte digest as it is (raw ECDSA, no prefix, low s) with the wallet. */
  signDigest(args: WalletArgs & { digest: Hex }): Promise<DigestSignature>;
  /** The wallet's uncompressed public key: `0x04` followed by 128 hex digits. */
  getPublicKey(args: WalletArgs): Promise<Hex>;
  /** The wallet's private key: `0x` followed by 64 hex digits. Counts as a wallet operation like the others. */
  getPrivateKey(args: WalletArgs): Promise<Hex>;
  /** The wallet's Solana address: its Ed25519 public key in base58 (a key of its own, derived beside its EVM key). */
  getSolanaAddress(args: WalletArgs): Promise<string>;
  /** Signs `message`'s bytes (text as UTF-8) with the wallet's Solana key, plain Ed25519; resolves to the 64-byte signature in base58. */
  signSolanaMessage(args: WalletArgs & { message: SignableMessage }): Promise<string>;
  /**
   * Signs a Solana wire transaction (base64, legacy or v0, as @solana/kit's getBase64EncodedWireTransaction
   * makes it) in the slot of the wallet's Solana address, keeping the other signers' signatures;
   * resolves to the transaction, base64, ready for sendTransaction. The address must be one of its signers.
   */
  signSolanaTransaction(args: WalletArgs & { transaction: string }): Promise<string>;
  /** Encrypts with the wallet's AES-256-GCM key; resolves to `nonce(12) ‖ ciphertext ‖ tag(16)` as hex. */
  encrypt(args: WalletArgs & { plaintext: SignableMessage }): Promise<Hex>;
  /** Decrypts what `encrypt` made with the same wallet; resolves to the plaintext as UTF-8 text. */
  decrypt(args: WalletArgs & { ciphertext: Hex; raw?: false }): Promise<string>;
  /** Decrypts what `encrypt` made with the same wallet; with `raw: true`, resolves to the plaintext bytes as hex. */
  decrypt(args: WalletArgs & { ciphertext: Hex; raw: true }): Promise<Hex>;
  /** Decrypts what `encrypt` made with the same wallet: text, or with `raw: true` the bytes as hex. */
  decrypt(args: WalletArgs & { ciphertext: Hex; raw?: boolean }): Promise<string>;
  /** The address (lowercase) of the action identity of `cid`, by default the running code's. */
  getActionWalletAddress(args?: { cid?: string } | null): Promise<Address>;
  /** The uncompressed public key of the action identity of `cid`, by default the running code's. */
  getActionPublicKey(args?: { cid?: string } | null): Promise<Hex>;
  /** Signs `message` (EIP-191) with the running code's own action identity. */
  signMessageAsAction(args: { message: SignableMessage }): Promise<Hex>;
  /** The private key of the running code's own action identity. */
  getActionPrivateKey(): Promise<Hex>;
  /** Sets the run's response, used when main returns undefined (the last value set wins). */
  setResponse(value: unknown): void;
  /** keccak256 of text (UTF-8), of a `0x` hex string (its bytes) or of bytes; synchronous. */
  keccak256(data: string | ArrayBuffer | ArrayBufferView): Hex;
  /** SHA-256 of text (UTF-8), of a `0x` hex string (its bytes) or of bytes; synchronous. */
  sha256(data: string | ArrayBuffer | ArrayBufferView): Hex;
}

/**
 * A script's `main`: called with the request's `js_params` (null when none were sent); what it
 * returns or resolves to becomes the run's `response`.
 */
export type SigilMain<P = { [key: string]: JsonValue } | null, R = unknown> = (params: P) => R | Promise<R>;

/** The integer typed arrays `crypto.getRandomValues` fills. */
export type IntegerTypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

/** What `new Headers(…)` and fetch's `headers` take. */
export type SigilHeadersInit = SigilHeaders | ReadonlyArray<readonly [string, string]> | Record<string, string>;

/** A body fetch can send. */
export type SigilBodyInit = string | ArrayBuffer | ArrayBufferView | SigilURLSearchParams;

/** The options fetch reads (others are ignored: there is no signal, cache, mode or credentials). */
export interface SigilRequestInit {
  /** Default GET. CONNECT, TRACE and TRACK are refused. */
  method?: string;
  headers?: SigilHeadersInit;
  /** Not with GET or HEAD. */
  body?: SigilBodyInit | null;
  /** Default "follow" (at most 5 redirects, each one checked like the first request). */
  redirect?: "follow" | "manual" | "error";
}

/** Header names are lowercase; repeated values are joined with ", ". */
export interface SigilHeaders {
  append(name: string, value: string): void;
  set(name: string, value: string): void;
  get(name: string): string | null;
  has(name: string): boolean;
  delete(name: string): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  forEach(callback: (value: string, name: string, headers: SigilHeaders) => void, thisArg?: unknown): void;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

/** A fetch's response, its body read in full already; each body method may be called once. */
export interface SigilResponse {
  readonly status: number;
  readonly statusText: string;
  /** status is 200–299. */
  readonly ok: boolean;
  /** The final URL, after redirects. */
  readonly url: string;
  readonly redirected: boolean;
  readonly headers: SigilHeaders;
  readonly bodyUsed: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  text(): Promise<string>;
  // biome-ignore lint/suspicious/noExplicitAny: as fetch's Response.json, so a script reads a body as it would in a browser
  json(): Promise<any>;
}

/** application/x-www-form-urlencoded pairs, as the URL standard has them. */
export interface SigilURLSearchParams {
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  forEach(callback: (value: string, name: string, params: SigilURLSearchParams) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
  toString(): string;
}

/** A parsed URL (WHATWG). Only href, pathname, search and hash can be changed. */
export interface SigilURL {
  href: string;
  readonly protocol: string;
  readonly username: string;
  readonly password: string;
  readonly host: string;
  readonly hostname: string;
  readonly port: string;
  pathname: string;
  search: string;
  hash: string;
  readonly origin: string;
  readonly searchParams: SigilURLSearchParams;
  toString(): string;
  toJSON(): string;
}

declare global {
  /** The sandbox's own API: `Sigil.Actions` and the run's `Sigil.request`. Frozen. */
  namespace Sigil {
    /** Signing and keys with the account's wallets and the code's own identity. */
    const Actions: SigilActions;
    /** The run's request id, correlation id and code CID. */
    const request: SigilRequest;
    /** The type of a script's `main` (the same as SigilMain): `@type {Sigil.Main<Params, Result>}`. */
    type Main<P = { [key: string]: JsonValue } | null, R = unknown> = SigilMain<P, R>;
    /** An error thrown by the host, with its `code` when it has one: `@type {Sigil.HostError}`. */
    type HostError = SigilHostError;
    /** A wallet address. */
    type Address = import("./sigil-actions").Address;
    /** `0x` and hex digits. */
    type Hex = import("./sigil-actions").Hex;
    /** EIP-712 typed data, as signTypedData takes it. */
    type TypedData = import("./sigil-actions").TypedData;
    /** A transaction, as signTransaction takes it. */
    type TransactionRequest = import("./sigil-actions").TransactionRequest;
    /** A JSON value. */
    type JsonValue = import("./sigil-actions").JsonValue;
  }

  /** Each call writes one line to the run's `logs` (objects shown as Node's util.inspect does, depth 2); the levels are not marked. */
  var console: {
    log(...data: unknown[]): void;
    info(...data: unknown[]): void;
    warn(...data: unknown[]): void;
    error(...data: unknown[]): void;
    debug(...data: unknown[]): void;
  };

  /** Makes an HTTP(S) request through the host: public addresses only, counted against the run's fetch limit. */
  function fetch(input: string | { href: string }, init?: SigilRequestInit): Promise<SigilResponse>;

  /** Runs `callback(...args)` after `ms` milliseconds (at most the run's time limit); returns the timer's id. */
  function setTimeout<A extends unknown[]>(callback: (...args: A) => void, ms?: number, ...args: A): number;
  /** Runs `callback` after `ms` milliseconds (at most the run's time limit); returns the timer's id. */
  function setTimeout(callback: (value: undefined) => void, ms?: number): number;
  /** Cancels a timer made by setTimeout. */
  function clearTimeout(id: number | undefined): void;
  /** Runs `callback` as a microtask. */
  function queueMicrotask(callback: () => void): void;

  /** Encodes a Latin-1 string as base64. */
  function btoa(data: string): string;
  /** Decodes base64 into a Latin-1 string (one character per byte). */
  function atob(data: string): string;

  /** A deep copy by the structured-clone algorithm (no transfer list). */
  function structuredClone<T>(value: T): T;

  /** Random values from the host's CSPRNG. There is no crypto.subtle. */
  var crypto: {
    /** Fills an integer typed array (at most 65 536 bytes) with random values and returns it. */
    getRandomValues<T extends IntegerTypedArray>(array: T): T;
    /** A random version 4 UUID. */
    randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
  };

  /** UTF-8 encoding. */
  class TextEncoder {
    readonly encoding: "utf-8";
    encode(input?: string): Uint8Array;
    encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
  }

  /** UTF-8 decoding (the only encoding): invalid bytes become U+FFFD, or throw TypeError with `fatal`. */
  class TextDecoder {
    constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
    readonly encoding: "utf-8";
    readonly fatal: boolean;
    readonly ignoreBOM: boolean;
    decode(input?: ArrayBuffer | ArrayBufferView): string;
  }

  interface URLSearchParams extends SigilURLSearchParams {}
  var URLSearchParams: {
    prototype: URLSearchParams;
    new (init?: string | Record<string, string> | Iterable<readonly [string, string]>): URLSearchParams;
  };

  interface URL extends SigilURL {}
  var URL: {
    prototype: URL;
    /** Throws TypeError ("Invalid URL: …") when `input` (against `base`) is not a URL. */
    new (input: string | URL, base?: string | URL): URL;
    canParse(input: string | URL, base?: string | URL): boolean;
  };

  interface Headers extends SigilHeaders {}
  var Headers: {
    prototype: Headers;
    new (init?: SigilHeadersInit): Headers;
  };

  interface Response extends SigilResponse {}
  /** The class of fetch's responses, for `instanceof`; scripts do not construct responses. */
  var Response: {
    prototype: Response;
    [Symbol.hasInstance](value: unknown): value is Response;
  };
}
