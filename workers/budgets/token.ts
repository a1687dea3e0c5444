// The edge's token for one run (docs/design/guardrails.md, Budgets; docs/design/billing.md, Leases):
// sealed into the run's request to the enclave (only the enclave that runs it can read it), presented
// back by that enclave when it reserves room in a wallet's budgets (routes/budgets.ts) and, billing on,
// when it settles the run's charge itself (routes/settlements.ts: whose account, which usage key, at
// most how many cents, the `bill` part of the claim). It names the run's billing ref and an expiry, under an
// HMAC keyed by a key derived from the edge's channel identity seed — the one secret every isolate of
// the edge shares — so any isolate checks it without storing anything, and nobody but an enclave that
// was sent a run can spend a wallet's budget.
import { fromBase64Url, toBase64Url } from "../../shared/channel/channel.ts";
import type { RunBill } from "../billing/ledgerTypes.ts";

const LABEL = new TextEncoder().encode("sigil budget token v1");
/**
 * The HMAC key per seed, once made. The key itself is kept, never a pending promise of it: a request
 * must not await another request's promise (shared/flight.ts says why), so requests that find none
 * each make it (a digest and an import) and the first to finish keeps it.
 */
const keys = new Map<string, CryptoKey>();

async function keyOf(seedHex: string): Promise<CryptoKey> {
  const known = keys.get(seedHex);
  if (known) return known;
  const seed = Uint8Array.from(seedHex.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
  const material = await crypto.subtle.digest("SHA-256", new Uint8Array([...LABEL, ...seed]));
  const key = await crypto.subtle.importKey("raw", material, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
  if (!keys.has(seedHex)) keys.set(seedHex, key);
  return keys.get(seedHex) ?? key;
}

/** A token for the run charged under `ref`, good until `expiresAt` (ms); with `bill`, it lets its enclave settle the run's charge. */
export async function issueBudgetToken(
  seedHex: string,
  ref: string,
  expiresAt: number,
  bill?: RunBill,
): Promise<string> {
  const claim = new TextEncoder().encode(JSON.stringify({ ref, exp: expiresAt, ...(bill ? { bill } : {}) }));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await keyOf(seedHex), claim));
  return `${toBase64Url(claim)}.${toBase64Url(mac)}`;
}

/** The ref a token names, if this edge made it and it has not expired. */
export async function verifyBudgetToken(seedHex: string, token: string, now: number): Promise<string | undefined> {
  return (await verifyRunToken(seedHex, token, now))?.ref;
}

/** What a token says (its ref, and what its run may be charged, if it says), if this edge made it and it has not expired. */
export async function verifyRunToken(
  seedHex: string,
  token: string,
  now: number,
): Promise<{ ref: string; bill?: RunBill } | undefined> {
  const [claimPart, macPart, extra] = token.split(".");
  if (!claimPart || !macPart || extra !== undefined) return undefined;
  let claim: Uint8Array<ArrayBuffer>;
  let mac: Uint8Array<ArrayBuffer>;
  try {
    claim = new Uint8Array(fromBase64Url(claimPart));
    mac = new Uint8Array(fromBase64Url(macPart));
  } catch {
    return undefined;
  }
  if (!(await crypto.subtle.verify("HMAC", await keyOf(seedHex), mac, claim))) return undefined;
  try {
    const { ref, exp, bill } = JSON.parse(new TextDecoder().decode(claim)) as {
      ref?: unknown;
      exp?: unknown;
      bill?: Partial<RunBill>;
    };
    if (typeof ref !== "string" || typeof exp !== "number" || exp < now) return undefined;
    if (
      bill &&
      typeof bill.account === "string" &&
      (bill.key === null || typeof bill.key === "string") &&
      typeof bill.max === "number" &&
      typeof bill.lease === "string"
    )
      return { ref, bill: { account: bill.account, key: bill.key, max: bill.max, lease: bill.lease } };
    return { ref };
  } catch {
    return undefined;
  }
}

/**
 * How long past the longest run a run's token stays good: a reservation made near its end still
 * counts, and the enclave's settlement of its charge (made a few seconds after the run, and tried
 * again while the edge is unreachable) is taken.
 */
const TOKEN_MARGIN_MS = 15 * 60_000;

/**
 * Where a run sent at `now` to `requestUrl` reserves in budgets (and, with `bill`, settles its own
 * charge), and its token, or undefined when it cannot (no identity seed; in production, no https
 * URL — the token is never sent in the clear): its budgeted signatures are then refused, and its
 * charge is the edge's alone to make. The URL is SIGIL_BUDGET_URL, or the origin the run came to.
 */
export async function budgetAccess(
  // What of the edge's config (config.ts) it reads; not its type, which only the worker's build knows.
  config: {
    env: string;
    budgetUrl?: string | undefined;
    limits: { maxTimeoutMs: number };
    channel: { identityKey?: string | undefined };
  },
  requestUrl: string,
  ref: string,
  now: number,
  bill?: RunBill,
): Promise<{ url: string; token: string; ref: string } | undefined> {
  const seed = config.channel.identityKey;
  const url = config.budgetUrl ?? new URL(requestUrl).origin;
  if (!seed || (config.env === "production" && !url.startsWith("https://"))) return undefined;
  const token = await issueBudgetToken(seed, ref, now + config.limits.maxTimeoutMs + TOKEN_MARGIN_MS, bill);
  return { url, token, ref };
}
