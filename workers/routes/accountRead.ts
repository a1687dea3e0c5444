// An account's list read (wallets, groups, usage keys, actions): live from the chain, or, while the
// chain cannot be reached, the isolate's last answer to the same read if it is young enough and no
// write of the account came through since (chain/lastGood.ts), with `Sigil-Stale: <seconds>` saying
// how old it is. A chain outage then stops neither runs (the key cache) nor the lists a client
// just read; writes still wait for the chain.
import type { Context } from "hono";
import { SigilError } from "../../shared/errors.ts";
import { callerAccount, hashHex } from "../billing/account.ts";
import { keep, recall, wrote } from "../chain/lastGood.ts";
import { callerKey } from "../middleware/auth/index.ts";
import type { EdgeEnv } from "../router.ts";

/** The caller's account (hex), if the isolate knows it without the chain; undefined when it does not. */
async function accountOf(c: Context<EdgeEnv>): Promise<string | undefined> {
  try {
    return hashHex((await callerAccount(c.get("config"), callerKey(c))).master);
  } catch {
    return undefined;
  }
}

/** `read()`'s answer, kept under `name`; when the chain is down, the kept one, said stale. */
export async function accountRead<T>(c: Context<EdgeEnv>, name: string, read: () => Promise<T>): Promise<T> {
  try {
    const value = await read();
    const account = await accountOf(c);
    if (account !== undefined) keep(account, name, value);
    return value;
  } catch (err) {
    if (!(err instanceof SigilError) || err.code !== "chain_unavailable") throw err;
    const account = await accountOf(c);
    const kept = account === undefined ? undefined : recall(account, name);
    if (!kept) throw err;
    c.header("Sigil-Stale", String(Math.ceil(kept.ageMs / 1000)));
    c.get("log").info("list answered from its last read: the chain cannot be reached", {
      read: name.split("|")[0],
      age_ms: kept.ageMs,
    });
    return kept.value as T;
  }
}

/** After a write of the caller's account that went or may have gone through: its kept lists are not given again. */
export async function accountWrote(c: Context<EdgeEnv>): Promise<void> {
  const account = await accountOf(c);
  if (account !== undefined) wrote(account);
}
