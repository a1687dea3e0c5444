// Whose credit a request touches (docs/design/billing.md): the account's master hash names its Ledger. The
// billing endpoints accept either the caller's API key or, for ChainSecured owners without one,
// `X-Wallet-Auth: base64url(JSON {"typed_data": …, "signature": "0x…"})` signed as `BillingAuth`
// by the account's current admin wallet.
import type { Address } from "viem";
import { keyRefusal } from "../../shared/apiKey.ts";
import { SigilError } from "../../shared/errors.ts";
import { readView } from "../chain/client.ts";
import { keyCacheOf, type CallerAccount } from "../chain/keyCache.ts";
import type { EdgeConfig } from "../config.ts";
import { verifyWalletSignature } from "../chain/walletSignature.ts";
import { flushLeases } from "./lease.ts";
import type { Ledger } from "./ledger.ts";

export const WALLET_AUTH_HEADER = "X-Wallet-Auth";
/** 4 KiB of typed data and 4 KiB of signature (hex) fit, base64url-encoded, well inside this. */
const MAX_WALLET_AUTH_CHARS = 24 << 10;

export type { CallerAccount };

/**
 * The caller's key as the request carries it (middleware/auth's `callerKey`, parsed once per
 * request, so the same object for every step of one request).
 */
export type PresentedKey = { keyHash: bigint };

/** Per request: the caller's account is asked once, however many steps (billing, idempotency) ask. */
const accountByKey = new WeakMap<PresentedKey, Promise<CallerAccount>>();

/**
 * The account of the caller's key, through the isolate's key cache (chain/keyCache.ts;
 * docs/design/billing.md, "Whose account a key is: the edge's key cache"): from memory while the contract's events say
 * nothing of the account, else one live read of the chain. A key that may not act is never cached,
 * and gets the answer the enclave would give it (401, 403), not a 402 for its account's credit.
 */
export function callerAccount(config: EdgeConfig, key: PresentedKey): Promise<CallerAccount> {
  const known = accountByKey.get(key);
  if (known) return known;
  const cache = keyCacheOf(config);
  const read = cache ? cache.get(key.keyHash) : liveCallerAccount(config, key.keyHash);
  accountByKey.set(key, read);
  return read;
}

/** One live read of the account of `keyHash` (no chain or contract configured: 503 chain_unavailable, as every read). */
async function liveCallerAccount(config: EdgeConfig, keyHash: bigint): Promise<CallerAccount> {
  const [master, live, spendLimitCents] = await readView(config, "billingOf", [keyHash], keyHash);
  const refusal = keyRefusal({ known: master !== 0n, isMaster: keyHash === master, live });
  if (refusal) throw refusal;
  return { keyHash, master, isMaster: keyHash === master, spendLimitCents: Number(spendLimitCents) };
}

/** A hash as the 64 hex digits that name an account's Durable Objects. */
export const hashHex = (hash: bigint) => hash.toString(16).padStart(64, "0");

/** The Ledger of the account whose master hash is `master`, among the worker's `ledgers` (its LEDGER binding). */
export function ledgerOf(
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  master: bigint,
): DurableObjectStub<Ledger> {
  return accountObject(ledgers, master, "billing needs the LEDGER Durable Object, which is not bound");
}

/**
 * Account `master`'s Ledger, to read its balance, usage or spend: first the charges this isolate made
 * for it and has not committed yet go in (lease.ts), so a caller reads its own runs.
 */
export async function ledgerToRead(
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  master: bigint,
): Promise<DurableObjectStub<Ledger>> {
  const ledger = ledgerOf(ledgers, master);
  await flushLeases(hashHex(master), ledger);
  return ledger;
}

/** The object of account `master` in a per-account Durable Object namespace (named by the master hash); `unbound` if it is missing. */
export function accountObject<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T> | undefined,
  master: bigint,
  unbound: string,
): DurableObjectStub<T> {
  if (!namespace) throw new Error(unbound);
  // An object's id is a pure function of its name, and costs a hash to make: kept per isolate.
  let ids = objectIds.get(namespace);
  if (!ids) {
    ids = new Map();
    objectIds.set(namespace, ids);
  }
  const name = hashHex(master);
  let id = ids.get(name);
  if (!id) {
    if (ids.size >= MAX_OBJECT_IDS) ids.clear();
    id = namespace.idFromName(name);
    ids.set(name, id);
  }
  return namespace.get(id);
}

/** The ids of the per-account objects this isolate has reached, by namespace and name (at most MAX_OBJECT_IDS each). */
const objectIds = new WeakMap<object, Map<string, DurableObjectId>>();
const MAX_OBJECT_IDS = 10_000;

/** What the billing endpoints need to know of their caller. */
export type BillingCaller = { master: bigint; via: "api_key" | "wallet"; wallet?: Address };

/**
 * How a billing request names its caller: its API key, or the value of its X-Wallet-Auth header
 * (the route has refused a request that sends both).
 */
export type BillingCredentials = { key: PresentedKey } | { walletAuth: string };

/**
 * The account of a key that may act, as metered requests find it (`callerAccount`: the isolate's key
 * cache, kept by the contract's events within its stated bound), or undefined for a key that may not
 * act — whose caller then reads live and answers as it always did (a converted account's old master
 * key may still read some things). A chain that cannot be reached for a key the cache does not hold
 * is 503 chain_unavailable, thrown.
 */
export async function keyThatMayAct(config: EdgeConfig, key: PresentedKey): Promise<CallerAccount | undefined> {
  try {
    return await callerAccount(config, key);
  } catch (err) {
    if (err instanceof SigilError && err.code === "chain_unavailable") throw err;
    return undefined;
  }
}

/**
 * The account a billing request is for. `pay` (create or confirm a payment) needs a key that may
 * act for the account; `read` (the balance) also lets a converted account's old master key look.
 * A key that may act is found as a run's is (the key cache: served through a chain outage, a
 * removed key refused within the same bound); any other is read live.
 */
export async function billingCaller(
  config: EdgeConfig,
  credentials: BillingCredentials,
  use: "read" | "pay",
): Promise<BillingCaller> {
  if ("walletAuth" in credentials) return walletCaller(config, credentials.walletAuth);
  const acting = await keyThatMayAct(config, credentials.key);
  if (acting) return { master: acting.master, via: "api_key" };
  const { keyHash } = credentials.key;
  const [master, live] = await readView(config, "billingOf", [keyHash], keyHash);
  const isMaster = keyHash === master;
  if (!(use === "read" && isMaster && master !== 0n)) {
    const refusal = keyRefusal({ known: master !== 0n, isMaster, live });
    if (refusal) throw refusal;
  }
  return { master, via: "api_key" };
}

/** X-Wallet-Auth's value decoded (not yet verified): a value that is not base64url JSON with both fields is 401 invalid_signature, 413 when oversized. */
export function decodeWalletAuth(value: string): { typed_data: unknown; signature: string } {
  if (value.length > MAX_WALLET_AUTH_CHARS)
    throw new SigilError(
      "payload_too_large",
      `${WALLET_AUTH_HEADER} must be at most ${MAX_WALLET_AUTH_CHARS} characters`,
    );
  // docs/design/api.md (Signature endpoints): a value that is not base64url JSON with both fields is 401.
  const bad = () =>
    new SigilError(
      "invalid_signature",
      `${WALLET_AUTH_HEADER} must be base64url(JSON {"typed_data": {…}, "signature": "0x…"})`,
    );
  const text = value.trim();
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(text)) throw bad();
  let parsed: unknown;
  try {
    const base64 = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
    const binary = atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "="));
    parsed = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (ch) => ch.charCodeAt(0))));
  } catch {
    throw bad();
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw bad();
  const { typed_data, signature, ...rest } = parsed as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typed_data === undefined || typeof signature !== "string" || signature === "")
    throw bad();
  return { typed_data, signature };
}

async function walletCaller(config: EdgeConfig, header: string): Promise<BillingCaller> {
  const wallet = await verifyWalletSignature(config, "BillingAuth", decodeWalletAuth(header));
  // A wallet that is or was an account's admin names it among the contract's aliases; a usage key
  // registered under the wallet's lookup hash is a key, not the wallet, and is never read here.
  const [master, admin] = await readView(config, "accountOfWallet", [wallet]);
  if (master === 0n)
    throw new SigilError("account_not_found", "no account is administered by the wallet that signed X-Wallet-Auth");
  if (admin.toLowerCase() !== wallet.toLowerCase()) {
    throw new SigilError("permission_denied", "the wallet that signed X-Wallet-Auth is no longer this account's admin");
  }
  return { master, via: "wallet", wallet };
}
