// API keys: standard base64 (RFC 4648, `=`-padded) of 32 random bytes, 44 characters.
// Keys are shown once and never stored or logged; only their hashes (hashing.ts) go on chain.
import { SigilError } from "./errors.ts";
import { apiKeyHash } from "./hashing.ts";

const KEY_BYTES = 32;
const KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

/** A new API key from the platform CSPRNG (WebCrypto, so it runs in Workers and Node alike). */
export function generateApiKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(KEY_BYTES));
  return btoa(String.fromCharCode(...bytes));
}

/** A new API key (to show once) and its hash (what goes on chain). */
export function newApiKey(): { apiKey: string; hash: bigint } {
  const apiKey = generateApiKey();
  return { apiKey, hash: apiKeyHash(apiKey) };
}

/**
 * Whether `value` (trimmed) has the form of an API key: 44 characters of canonical base64 that
 * decode to exactly 32 bytes. A 64-hex public hash, or any other text, never passes, so a hash
 * published on chain can never be presented as a key.
 */
export function isApiKeyFormat(value: string): boolean {
  const key = value.trim();
  if (!KEY_PATTERN.test(key)) return false;
  // The last character before `=` carries 2 padding bits that canonical base64 leaves zero.
  const decoded = atob(key);
  return decoded.length === KEY_BYTES && btoa(decoded) === key;
}

/**
 * Why a presented key may not write or run, the same on both sides (the edge bills only keys that
 * may act; the enclave decides): unknown or removed → invalid_api_key; a converted account's old
 * master key → chain_secured_account; an expired usage key → invalid_api_key. `live` as the
 * contract's resolveKey says (a master key is live while its account is managed).
 */
export function keyRefusal(key: { known: boolean; isMaster: boolean; live: boolean }): SigilError | undefined {
  if (!key.known) return new SigilError("invalid_api_key", "the API key is not valid");
  if (key.live) return undefined;
  if (key.isMaster) {
    return new SigilError(
      "chain_secured_account",
      "this account is ChainSecured: its old master key may read, but writes are sent on chain by its admin wallet and it can no longer run scripts",
    );
  }
  return new SigilError("invalid_api_key", "the API key has expired");
}
