// The last answer of each of an account's list reads, kept so that a list asked for while the chain
// cannot be reached is answered from it, said to be stale (routes/accountRead.ts), instead of 503
// chain_unavailable. An answer is kept per isolate for STALE_FOR_MS, and only until a write of its
// account goes through this isolate: a client that wrote and then lists here sees its write or a
// 503, never a list from before it. A write through another isolate is missed for at most
// STALE_FOR_MS, and only while the chain is down (when the chain answers, lists are read live).
import { Recent } from "../../shared/recent.ts";

/** How old a kept answer may be and still be given. */
export const STALE_FOR_MS = 30_000;
/** Answers kept per isolate, the oldest forgotten first. */
const KEPT = 20_000;

type Kept = { value: unknown; at: number; generation: number };
const answers = new Recent<string, Kept>(KEPT);
/** Per account (master hash, hex): how many writes of it went through this isolate. */
const generations = new Recent<string, number>(KEPT);

const generationOf = (account: string) => generations.get(account) ?? 0;

/** Keeps `value`, the answer of `read` for `account`, read live now. */
export function keep(account: string, read: string, value: unknown, now = Date.now()): void {
  answers.set(`${account}|${read}`, { value, at: now, generation: generationOf(account) });
}

/** The answer kept for `read` of `account` and its age in ms, if one is young enough and no write of the account came since. */
export function recall(account: string, read: string, now = Date.now()): { value: unknown; ageMs: number } | undefined {
  const kept = answers.get(`${account}|${read}`);
  if (!kept || kept.generation !== generationOf(account) || now - kept.at > STALE_FOR_MS) return undefined;
  return { value: kept.value, ageMs: now - kept.at };
}

/** A write of `account` went (or may have gone) through: what was kept of it is no longer given. */
export function wrote(account: string): void {
  generations.set(account, generationOf(account) + 1);
}
