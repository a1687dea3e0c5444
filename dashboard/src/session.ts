// Who the dashboard acts as: an API key (kept in this tab's sessionStorage only, never in a URL or
// a cookie), or a browser wallet (EIP-1193) that signs X-Wallet-Auth for a ChainSecured account's
// billing and history reads. Either way the page talks to the API of its own origin through
// @sigil/sdk, the same client every other Sigil program uses.
import {
  createWalletClient,
  custom,
  getAddress,
  type Account,
  type Address,
  type Chain,
  type EIP1193Provider,
  type Transport,
  type WalletClient,
} from "viem";
import { createSigilClient, walletAuthHeader, type GetAccountOutput, type SigilClient } from "../../sdk/src/index.ts";
import { collect } from "../../sdk/src/reads.ts";

/** The account a key session acts in (get_account): its id, name, counts and the fees it pays. */
export type SigilAccount = GetAccountOutput;

export type Session =
  | {
      kind: "key";
      client: SigilClient;
      keyKind: "master" | "usage";
      keyHash: string;
      keyName?: string;
      account: SigilAccount;
    }
  | {
      kind: "wallet";
      client: SigilClient;
      address: Address;
      provider: EIP1193Provider;
      signer: WalletClient<Transport, Chain | undefined, Account>;
    };

/** What every page of the dashboard is given: the session it acts in, and what the URL names after the page (#/wallets/<address>). */
export type PageProps = { session: Session; param?: string | undefined };

const KEY_ITEM = "sigil.dashboard.key";

/** The API of the page's own origin, with no credentials: public reads. */
export const anonymous = (): SigilClient => createSigilClient({ baseUrl: location.origin });

/** A session for `apiKey`, checked against the service first (a wrong key throws its SigilError). */
export async function signInWithKey(apiKey: string): Promise<Session> {
  const client = createSigilClient({ baseUrl: location.origin, apiKey });
  // get_account refuses a key of no account (401 invalid_api_key) and says which kind this one is.
  const account = await client.getAccount();
  const keyHash = account.key.hash.toLowerCase();
  // A usage key's name is in the account's key list (which a usage key may read).
  const usage =
    account.key.kind === "usage"
      ? (await collect(client.all.listApiKeys())).find((k) => k.id.toLowerCase() === keyHash)
      : undefined;
  sessionStorage.setItem(KEY_ITEM, apiKey);
  return {
    kind: "key",
    client,
    keyKind: account.key.kind,
    keyHash,
    ...(usage ? { keyName: usage.name } : {}),
    account,
  };
}

/**
 * A new managed account named `name` (new_account, open to anyone): its master key, shown once by
 * the sign-up form, which then signs in with it.
 */
export async function signUp(name: string, email: string): Promise<{ apiKey: string; accountId: string }> {
  const made = await anonymous().newAccount({ account_name: name, ...(email ? { email } : {}) });
  return { apiKey: made.api_key, accountId: made.account_id };
}

/** The browser's wallet (window.ethereum), its first account, signing X-Wallet-Auth afresh for each request. */
export async function signInWithWallet(
  provider: EIP1193Provider | undefined = (globalThis as { ethereum?: EIP1193Provider }).ethereum,
): Promise<Session> {
  if (!provider) throw Object.assign(new Error("no browser wallet found (window.ethereum)"), { code: "no_wallet" });
  const [account] = (await provider.request({ method: "eth_requestAccounts" })) as string[];
  if (!account) throw Object.assign(new Error("the wallet shared no account"), { code: "no_wallet" });
  const address = getAddress(account);
  const signer = createWalletClient({ account: address, transport: custom(provider) });
  const client = createSigilClient({
    baseUrl: location.origin,
    walletAuth: () => walletAuthHeader({ signer, client: anonymous() }),
  });
  return { kind: "wallet", client, address, provider, signer };
}

/** The key this tab signed in with, if any (a reload keeps the session; closing the tab ends it). */
export async function resumeSession(): Promise<Session | undefined> {
  const key = sessionStorage.getItem(KEY_ITEM);
  if (!key) return undefined;
  try {
    return await signInWithKey(key);
  } catch {
    sessionStorage.removeItem(KEY_ITEM);
    return undefined;
  }
}

export function signOut(): void {
  sessionStorage.removeItem(KEY_ITEM);
}
