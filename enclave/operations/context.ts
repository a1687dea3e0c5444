// What every enclave operation works with, and the checks they share. Operations are plain
// functions of (enclave, validated input, request context): they know nothing of HTTP.
import { createHash } from "node:crypto";
import { getAddress, type Address } from "viem";
import { keyRefusal } from "../../shared/apiKey.ts";
import { mapContractError } from "../../shared/contractErrors.ts";
import { isExposed, SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash } from "../../shared/hashing.ts";
import { Recent } from "../../shared/recent.ts";
import { DELEGATED_KEY_PREFIX } from "../../shared/delegation.ts";
import type { PermissionCache } from "../authz/cache.ts";
import { readDelegatedKey, type DelegatedKey } from "../authz/delegation.ts";
import type { GuardrailStore } from "../authz/guardrails.ts";
import type { ChainContext, KeyResolution } from "../chain/client.ts";
import type { EnclaveConfig } from "../config.ts";
import type { Keyring } from "../keys/derive.ts";
import type { Logger } from "../../shared/log.ts";
import type { PayerPool } from "../payers/pool.ts";
import type { ReceiptSigner } from "../receipts/receipts.ts";
import type { Settlements } from "../receipts/settlements.ts";
import type { SandboxPool } from "../sandbox/pool.ts";

export type Enclave = {
  config: EnclaveConfig;
  keyring: Keyring;
  chain: ChainContext;
  cache: PermissionCache;
  /** The wallets' guardrails, loaded and compiled by hash (authz/guardrails.ts). */
  guardrails: GuardrailStore;
  payers: PayerPool;
  sandbox: SandboxPool;
  /** Signs each run's receipt with this instance's attested receipt key. */
  receipts: ReceiptSigner;
  /** Settles billed runs' charges at their edge, should the edge not have (receipts/settlements.ts). */
  settlements?: Settlements;
  log: Logger;
};

export type RequestContext = { requestId: string; correlationId: string | null; log: Logger };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The request's ids: the edge makes the request id; one missing or malformed is replaced. */
export function requestContext(
  log: Logger,
  sentRequestId: string | undefined,
  sentCorrelationId: string | undefined,
): RequestContext {
  const requestId = sentRequestId && UUID.test(sentRequestId) ? sentRequestId : crypto.randomUUID();
  const correlationId = sentCorrelationId && sentCorrelationId.length <= 200 ? sentCorrelationId : null;
  return { requestId, correlationId, log: log.child({ requestId, ...(correlationId ? { correlationId } : {}) }) };
}

/** A caller's key: its hash and standing; for a delegated key, its root usage key's, and the key's chain. */
export type CallerKey = { keyHash: bigint; resolution: KeyResolution; delegation?: DelegatedKey };

/**
 * A caller's key hash, remembered by Node's SHA-256 of the key (a few times cheaper than the
 * JavaScript keccak256 it saves on every request of a key seen before). The raw key is never kept.
 */
const keyHashes = new Recent<string, bigint>(10_000);

function callerKeyHash(apiKey: string): bigint {
  return keyHashes.getOrMake(createHash("sha256").update(apiKey).digest("base64"), () => apiKeyHash(apiKey));
}

/**
 * Hashes the caller's raw key and checks it can act — write or run: it must resolve, be live,
 * and (for `owner` operations) be the master key. A converted account's old master key is refused
 * with `chain_secured_account`; an expired or unknown key with `invalid_api_key`.
 */
export async function callerKey(
  enclave: Enclave,
  apiKey: string,
  options: { owner?: boolean; delegated?: boolean } = {},
): Promise<CallerKey> {
  if (apiKey.startsWith(DELEGATED_KEY_PREFIX)) return delegatedCaller(enclave, apiKey, options);
  const keyHash = callerKeyHash(apiKey);
  const { value: resolution } = await readChain(() => enclave.cache.resolve(keyHash));
  const known = resolution.master !== 0n;
  if (known && isPastExpiry(resolution)) throw new SigilError("invalid_api_key", "the API key has expired");
  const refusal = keyRefusal({ known, isMaster: resolution.isMaster, live: resolution.live });
  if (refusal) throw refusal;
  if (options.owner && !resolution.isMaster) {
    throw new SigilError("account_key_required", "this operation needs the account's master key, not a usage key");
  }
  return { keyHash, resolution };
}

/**
 * A delegated key as a caller (docs/design/delegation.md): its tag checked, its root usage key resolved
 * and refused as that key would be (removed, expired: the whole chain with it), and the chain not past
 * any block's expiry. Only operations that say so take one (a run, a read); any other is refused.
 */
async function delegatedCaller(
  enclave: Enclave,
  key: string,
  options: { owner?: boolean; delegated?: boolean },
): Promise<CallerKey> {
  if (!options.delegated || options.owner)
    throw new SigilError(
      "permission_denied",
      "a delegated key runs actions and reads; this operation needs the account's API key",
      { details: { scope: "delegated_key" } },
    );
  const delegation = readDelegatedKey(enclave, key);
  const keyHash = delegation.root;
  const { value: resolution } = await readChain(() => enclave.cache.resolve(keyHash));
  const known = resolution.master !== 0n;
  if (!known || resolution.isMaster || !resolution.live)
    throw new SigilError("invalid_api_key", "the usage key this delegated key descends from no longer acts");
  if (isPastExpiry(resolution))
    throw new SigilError("invalid_api_key", "the usage key this delegated key descends from has expired");
  // Its keys work while its guardrail still lets it delegate: taking the section away ends them all.
  const guardrail = resolution.guardrail
    ? await readChain(() =>
        enclave.guardrails.load(resolution.master, { usageKey: keyHash }, resolution.guardrail as `0x${string}`),
      )
    : undefined;
  if (!guardrail || "broken" in guardrail || !guardrail.compiled.document.delegation)
    throw new SigilError("invalid_api_key", "the usage key this delegated key descends from no longer delegates");
  const expiresAt = delegation.effective.expires_at;
  if (expiresAt !== undefined && expiresAt <= Math.floor(Date.now() / 1000))
    throw new SigilError("invalid_api_key", "the delegated key has expired");
  return { keyHash, resolution, delegation };
}

/**
 * A usage key whose expiration has passed by the clock. The chain judges expiry by the latest
 * block's time, which can lag (a quiet chain mines no block): the enclave does not wait for one.
 */
export function isPastExpiry(resolution: KeyResolution, nowSeconds = Math.floor(Date.now() / 1000)): boolean {
  return !resolution.isMaster && resolution.expiresAt !== 0n && resolution.expiresAt <= BigInt(nowSeconds);
}

/** Runs a chain read; a failure becomes 503 `chain_unavailable` (or its mapped revert). */
export async function readChain<T>(read: () => Promise<T>, keyHash?: bigint): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (isExposed(err)) throw err;
    throw mapContractError(err, keyHash === undefined ? {} : { keyHash }).error;
  }
}

/**
 * An entry of `cid_hashes_permitted` as the contract takes it: `0`/`"0"` (any action), a `0x` hash
 * as given, or the hash of a raw CID, which the request schema has already made canonical.
 */
export function toCidHash(value: string | number): bigint {
  if (value === 0 || value === "0") return 0n;
  if (typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value)) return BigInt(value);
  return cidHash(String(value));
}

/**
 * A `pkp_id`: an address, or the decimal id of one of the caller's wallets (ids are stable: wallets
 * are never removed, so id n is item n of the account's wallet list).
 */
export async function toWalletAddress(
  enclave: Enclave,
  keyHash: bigint,
  pkpId: string | number,
  field: string,
): Promise<Address> {
  if (typeof pkpId === "string" && pkpId.startsWith("0x")) return getAddress(pkpId.toLowerCase());
  const id = BigInt(pkpId);
  const { client, contract } = enclave.chain;
  const [items] = await readChain(
    () =>
      client.readContract({
        address: contract,
        abi: accountConfigAbi,
        functionName: "listWallets",
        args: [keyHash, id, 1n],
      }),
    keyHash,
  );
  const wallet = items[0];
  if (!wallet || wallet.id !== id) {
    throw new SigilError("wallet_not_found", `${field}: no wallet with id ${id} on this account`);
  }
  return wallet.wallet;
}

/** The usage key an owner operation targets: the raw key or its `0x` hash. */
export function usageKeyHashOf(value: string): bigint {
  return /^0x[0-9a-fA-F]{64}$/.test(value) ? BigInt(value) : apiKeyHash(value);
}
