// Reads the CLI (bin/cli) and the dashboard (dashboard/src) both make through the client: a whole
// list, page after page, and which account and which of its keys an API key is. Not part of the
// package's exports; nothing here touches Node or the DOM, so both can load it.
import { apiKeyHash, toHash32 } from "../../shared/hashing.ts";
import { SigilError, type SigilClient } from "./index.ts";

/** The items of a paged list (`client.all.…`), page after page: every one, or the first `most`. */
export async function collect<T>(items: AsyncIterable<T>, most = Number.POSITIVE_INFINITY): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) {
    all.push(item);
    if (all.length >= most) break;
  }
  return all;
}

export type KeyOwner = {
  /** The account's state (account_exists): it exists, and whether it is managed. */
  account: { exists: boolean; managed: boolean };
  /** The key's hash, as the account's lists name it. */
  hash: string;
  /** The usage key it is, when it is one (the master key is not listed). */
  usage: { name: string } | undefined;
};

/** The account of the key `client` holds (`apiKey`), and which of its keys it is; a key of no account is refused. */
export async function keyOwner(client: SigilClient, apiKey: string): Promise<KeyOwner> {
  let requestId: string | undefined;
  const account = await client.accountExists(undefined, { onResponse: (info) => (requestId = info.requestId) });
  // A well-formed key of no account is an answer (exists: false), not a refusal; here it is one.
  if (!account.exists)
    throw new SigilError({ code: "invalid_api_key", message: "no account has this API key", status: 401, requestId });
  // A usage key is one of the account's listed keys; the master key is not listed.
  const hash = toHash32(apiKeyHash(apiKey));
  for await (const k of client.all.listApiKeys()) if (k.id.toLowerCase() === hash) return { account, hash, usage: k };
  return { account, hash, usage: undefined };
}
