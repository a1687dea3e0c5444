// The edge's token for one run's budget reservations (docs/design/guardrails.md, Budgets): sealed into
// the run's request to the enclave (only the enclave that runs it can read it), presented back by that
// enclave when it reserves (routes/budgets.ts). It names the run's billing ref and an expiry, under an
// HMAC keyed by a key derived from the edge's channel identity seed — the one secret every isolate of
// the edge shares — so any isolate checks it without storing anything, and nobody but an enclave that
// was sent a run can spend a wallet's budget.
import { fromBase64Url, toBase64Url } from "../../shared/channel/channel.ts";

const LABEL = new TextEncoder().encode("sigil budget token v1");
const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(seedHex: string): Promise<CryptoKey> {
  let key = keys.get(seedHex);
  if (!key) {
    key = (async () => {
      const seed = Uint8Array.from(seedHex.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
      const material = await crypto.subtle.digest("SHA-256", new Uint8Array([...LABEL, ...seed]));
      return crypto.subtle.importKey("raw", material, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    })();
    keys.set(seedHex, key);
  }
  return key;
}

/** A token for the run charged under `ref`, good until `expiresAt` (ms). */
export async function issueBudgetToken(seedHex: string, ref: string, expiresAt: number): Promise<string> {
  const claim = new TextEncoder().encode(JSON.stringify({ ref, exp: expiresAt }));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await keyOf(seedHex), claim));
  return `${toBase64Url(claim)}.${toBase64Url(mac)}`;
}

/** The ref a token names, if this edge made it and it has not expired. */
export async function verifyBudgetToken(seedHex: string, token: string, now: number): Promise<string | undefined> {
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
    const { ref, exp } = JSON.parse(new TextDecoder().decode(claim)) as { ref?: unknown; exp?: unknown };
    if (typeof ref !== "string" || typeof exp !== "number" || exp < now) return undefined;
    return ref;
  } catch {
    return undefined;
  }
}

/** How long past the longest run a run's token stays good: a reservation made near its end still counts. */
const TOKEN_MARGIN_MS = 60_000;

/**
 * Where a run sent at `now` to `requestUrl` reserves in budgets, and its token, or undefined when it
 * cannot (no identity seed; in production, no https URL — the token is never sent in the clear): its
 * budgeted signatures are then refused. The URL is SIGIL_BUDGET_URL, or the origin the run came to.
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
): Promise<{ url: string; token: string; ref: string } | undefined> {
  const seed = config.channel.identityKey;
  const url = config.budgetUrl ?? new URL(requestUrl).origin;
  if (!seed || (config.env === "production" && !url.startsWith("https://"))) return undefined;
  const token = await issueBudgetToken(seed, ref, now + config.limits.maxTimeoutMs + TOKEN_MARGIN_MS);
  return { url, token, ref };
}
