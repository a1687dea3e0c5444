// Idempotency keys (docs/design/api.md; Stripe's semantics) for every managed write and `sigil_action`. A
// request may carry `Idempotency-Key: <1–255 visible ASCII characters>`; the account's Idempotency
// object (store.ts) keeps, per caller key and idempotency key, what the first request asked and
// what it was answered:
//
// - the same key with the same method, path and body within 24 h replays the first answer (status,
//   body, X-Sigil-Charged-Cents, Retry-After), with `Idempotent-Replayed: true` and `Original-Request: <its
//   request id>`: nothing is sent to an enclave, nothing charged;
// - the same key with another body → 422 idempotency_key_reused;
// - the same key while an attempt is in flight → 409 request_in_progress, with Retry-After.
//
// Kept: every answer of a request that reached an enclave and was answered (2xx, 4xx, 500), and
// any error that names a transaction it sent. Not kept, so the key can be used again: what was
// refused before anything was done (401, 402, 403 of the edge, 429, 503 with nothing sent). An
// attempt that reached an enclave and got no answer (the enclave was lost, or this edge was
// killed) is retried under the same billing ref — the first attempt's request id — so the Ledger
// charges the key once; a retry goes back to the enclave the attempt reached while it is the same
// process (the same channel key), which joins the operation or answers with its outcome
// (enclave/idempotency.ts). If that process is gone, a run is run again and says what became of the
// first attempt (`first_attempt`); a write is not sent again — whether the lost enclave sent it is
// unknown — and answers 409 write_outcome_unknown, for good.
//
// A kept answer is sealed (AES-GCM) under a key derived from the caller's raw API key, which only
// a request carrying that key can open: an answer may hold a secret (add_usage_api_key's new key,
// what a script returned), and API keys are never stored readable.
//
// The writes that take no API key (new_account, the signature endpoints; the billing endpoints under
// X-Wallet-Auth) keep their records the same way, under a holder of their own (`KeyHolder`): the
// signer's wallet, or for new_account the client's address; their answers (a new API key, a usage
// key) are sealed under a key derived from the Idempotency-Key and the body, which only the client
// that sent them presents (the record holds a hash of the Idempotency-Key, never the key), so such
// a key must be unguessable: a random UUID.
//
// Whether or not a key is sent, the whole attempt — the enclave's answer, the settlement, the kept
// answer — runs to its end after the client has gone (waitUntil): disconnecting avoids no charge.
import { bytesToHex } from "@noble/hashes/utils";
import type { Context } from "hono";
import { routePath } from "hono/route";
import { z } from "zod";
import { ChannelUnavailableError } from "../../shared/channel/client.ts";
import { isExposed, SigilError, sentTransactionOf } from "../../shared/errors.ts";
import type { EdgeEnv, Stage } from "../router.ts";
import { callerAccount, hashHex } from "../billing/account.ts";
import { payerOf, releaseHold } from "../billing/meter.ts";
import { EnclaveLostError, enclaveInstance, type Idempotent } from "../enclave/client.ts";
import { errorResponse } from "../errors.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { takeDeferredLimits } from "../middleware/rateLimit/index.ts";
import type { FirstOutcome, Idempotency, StoredAnswer } from "./store.ts";
import { canonicalJson } from "../../shared/canonicalJson.ts";

/** How long an attempt holds its key without renewing: a killed edge frees it within this. */
const LEASE_MS = 15_000;
const RENEW_EVERY_MS = 5_000;
/**
 * The headers of an answer that are part of it, kept and replayed with its body. Retry-After too: a
 * kept 503 (one that names the transaction it sent) is replayed as it was first answered, so every
 * 503 carries it.
 */
const KEPT_HEADERS = ["content-type", "x-sigil-charged-cents", "deprecation", "link", "retry-after"];

/** The request header, as the routes declare it (lowercase: Hono's header validation reads it so). */
export const idempotencyHeaders = z.object({
  "idempotency-key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "must be 1 to 255 visible ASCII characters (no spaces)")
    .optional()
    .describe(
      "Makes the request safe to retry: the same key with the same body within 24 h answers the first answer again (Idempotent-Replayed: true) without acting or charging again; with another body 422 idempotency_key_reused; while the first is in flight 409 request_in_progress (Retry-After)",
    ),
});

/**
 * The header of the writes that take no API key: as `idempotencyHeaders`, and the key also seals the
 * kept answer, which may hold a secret, so it must be unguessable.
 */
export const openIdempotencyHeaders = z.object({
  "idempotency-key": idempotencyHeaders.shape["idempotency-key"].describe(
    "Makes the request safe to retry: the same key with the same body within 24 h answers the first answer again (Idempotent-Replayed: true) without acting again; with another body 422 idempotency_key_reused; while the first is in flight 409 request_in_progress (Retry-After). This endpoint takes no API key: the key and the body are what a replay is given the kept answer for (and what it is sealed under), so use an unguessable key, a random UUID, and keep it to yourself",
  ),
});

/** What the answer of a retry says of the first attempt, which gave no answer (sigil_action). */
export const firstAttemptSchema = z
  .object({
    request_id: z
      .string()
      .describe("the first attempt's X-Request-Id; every attempt under the key is charged under it, once"),
    outcome: z
      .enum(["interrupted", "abandoned", "resumed"])
      .describe(
        "interrupted: the enclave running it was lost before it answered; it was not charged, and this is a new run. abandoned: the edge serving it stopped before it answered and the enclave it reached is gone (or it reached none); this is a new run. resumed: the edge serving it stopped before it answered; this is that attempt's own run, which the enclave finished",
      ),
    message: z.string(),
  })
  .describe(
    "present when this answer comes from a retry (same Idempotency-Key) of a request whose first attempt gave no answer",
  );
export type FirstAttempt = z.infer<typeof firstAttemptSchema>;

/** The headers an answer under an Idempotency-Key may carry, for the OpenAPI document. */
export const idempotentAnswerHeaders = {
  "Idempotent-Replayed": z
    .string()
    .optional()
    .describe(
      "`true` when this is the answer an earlier request with the same Idempotency-Key got (nothing was done or charged again)",
    ),
  "Original-Request": z
    .string()
    .optional()
    .describe("the request id of the first request with this Idempotency-Key, on replays and retries"),
};

/** One attempt of a request sent under an Idempotency-Key. */
export type Attempt = {
  /** The billing ref: the first attempt's request id. */
  ref: string;
  /**
   * The record's stable name (SHA-256 of its object and scope, hex): the same for every attempt under
   * the key, even after an attempt that did nothing freed it; for keys handed on (Stripe's).
   */
  record: string;
  /** Set when an earlier attempt under the key gave no answer. */
  retry?: { outcome: FirstOutcome; enclave: string | null; instance: string | null };
  /** How the request travels to the enclave (the key, and where a retry may go). */
  send: Idempotent;
};

/**
 * Whose record a request's Idempotency-Key names, and what seals the answer kept in it.
 */
export type KeyHolder = {
  /** The name of the Idempotency object the record is kept in (the account's master hash, hex, for a caller with a key). */
  object: string;
  /** The record's scope in that object: whose it is and the key (or the key's hash). */
  scope: string;
  /** What the answer's sealing key is derived from: something only a request that may read the answer carries. */
  secret: string;
  /** The Idempotency-Key the enclave keeps the operation under, when not the client's own (newAccountHolder). */
  enclaveKey?: string;
};

/** The holder of a request's key: undefined to serve it without a record (it names no holder). */
export type HolderOf = (c: Context<EdgeEnv>, key: string, body: unknown) => Promise<KeyHolder | undefined>;

/** How a stage's request is made once: its records' holder, and where a retry of an attempt that gave no answer goes. */
export type IdempotentOptions = {
  /** By default the caller's API key, in its account's object (apiKeyHolder). */
  holder?: HolderOf;
  /**
   * `run` or `write`: the request reaches an enclave, and a retry goes back to the process the
   * first attempt reached (routeRetry). Unset: nothing the route does needs that (it may simply act
   * again), and the enclave is not told the key.
   */
  retry?: "run" | "write";
};

/** Each request's attempt under its Idempotency-Key (none without one, or for a holder that named none). */
const attempts = new WeakMap<Request, Attempt>();

/** The attempt the request is, under its Idempotency-Key: its billing ref, the first attempt's fate, how it is sent. */
export function attemptOf(c: Context<EdgeEnv>): Attempt | undefined {
  return attempts.get(c.req.raw);
}

/**
 * The stage that makes an acting request once (router.ts `pipeline`): under its Idempotency-Key a
 * replay answers the kept answer, a reused key or one in flight is refused, and an answer of this
 * attempt is kept (or the record freed) for the next; the whole of it outlives the client. Budgets a
 * route left for later (`openWriteLimit`) are taken only when the request is not a replay. The body
 * the key is fingerprinted with is the validated one (`{}` for a route that takes none).
 */
export function idempotent(options: IdempotentOptions = {}): Stage {
  const holderOf = options.holder ?? apiKeyHolder;
  return async (c, next) => {
    const done = serveOnce(c, next, holderOf, options.retry);
    outliveClient(c, done);
    await done;
  };
}

async function serveOnce(
  c: Context<EdgeEnv>,
  next: () => Promise<void>,
  holderOf: HolderOf,
  retry: IdempotentOptions["retry"],
): Promise<void> {
  const key = c.req.header("idempotency-key");
  if (key === undefined) {
    await takeDeferredLimits(c);
    return next();
  }
  // What the request asks besides its route: its body, or for a route that takes none its path's parameters.
  const req = c.req as { valid(target: "json" | "param"): unknown };
  const body = req.valid("json") ?? req.valid("param") ?? {};
  const holder = await holderOf(c, key, body);
  if (holder === undefined) {
    await takeDeferredLimits(c);
    return next();
  }
  const store = idempotencyOf(c, holder.object);
  const { scope } = holder;
  const { requestId } = c.get("ids");
  const begun = await store.begin(scope, await fingerprint(c, body), requestId, LEASE_MS);
  if (begun.kind === "reused") {
    throw new SigilError(
      "idempotency_key_reused",
      "this Idempotency-Key was first used with another request (method, path or body); use a new key for a new request",
    );
  }
  if (begun.kind === "in_progress") {
    throw new SigilError(
      "request_in_progress",
      "a request with this Idempotency-Key is still in progress; retry when it has answered",
      { retryAfterSeconds: begun.retryAfterSeconds },
    );
  }
  const seal = await answerKey(holder.secret, scope);
  if (begun.kind === "replay") {
    c.res = replay(await open(seal, begun.answer), begun.ref);
    return;
  }

  let forwarded = false;
  const current: Attempt = {
    ref: begun.ref,
    record: await sha256Hex(`${holder.object}\n${scope}`),
    ...(begun.kind === "retry"
      ? { retry: { outcome: begun.firstOutcome, enclave: begun.enclave, instance: begun.instance } }
      : {}),
    send: {
      key: holder.enclaveKey ?? key,
      beforeSend: async (base, instance) => {
        // An attempt whose lease lapsed while it was slow must not act beside the one that took over.
        if (!(await store.target(scope, requestId, base, instance)))
          throw new Error("another attempt has taken this Idempotency-Key over");
        forwarded = true;
      },
    },
  };
  attempts.set(c.req.raw, current);
  c.set("ref", current.ref);
  const heartbeat = setInterval(
    () => void store.renew(scope, requestId, LEASE_MS).catch(() => undefined),
    RENEW_EVERY_MS,
  );
  let fate: ReturnType<typeof fateOf>;
  try {
    await takeDeferredLimits(c);
    if (retry) await routeRetry(c, current, retry);
    c.error = undefined;
    await next();
    fate = c.error === undefined ? "keep" : fateOf(c.error, forwarded);
  } catch (err) {
    c.res = errorResponse(c, err);
    fate = fateOf(err, forwarded);
  } finally {
    clearInterval(heartbeat);
  }
  try {
    if (fate === "keep") await store.finish(scope, await sealed(seal, await kept(c.res)));
    else if (fate === "interrupted") await store.interrupted(scope, requestId);
    else await store.unused(scope, requestId);
  } catch (err) {
    // The answer stands; a retry finds the lease lapsed and the enclave's memory of the operation.
    c.get("log").error("idempotency record not updated", { error: err instanceof Error ? err.message : String(err) });
  }
  if (current.retry || current.send.replayed) c.header("Original-Request", begun.ref);
  if (current.send.replayed) c.header("Idempotent-Replayed", "true");
}

/** SHA-256 of `text`, hex (WebCrypto's digest: native, where a body may be a 4 MiB script). */
async function sha256Hex(text: string): Promise<string> {
  return bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

/**
 * The holder of a caller with an API key: its account's object, the key's own scope (two keys of
 * one account never see each other's answers), sealed under the raw key.
 */
export function keyHolder(master: bigint, keyHash: bigint, apiKey: string, key: string): KeyHolder {
  return { object: hashHex(master), scope: `${hashHex(keyHash)}:${key}`, secret: apiKey };
}

/** The default holder: the caller's API key, in the object of the account the chain says it is of. */
export async function apiKeyHolder(c: Context<EdgeEnv>, key: string): Promise<KeyHolder> {
  const account = await callerAccount(c.get("config"), callerKey(c));
  // Scoped to the key as sent: a delegated key's answers are its own, not its root's or a sibling's.
  return keyHolder(account.master, callerKey(c).scopeHash, callerKey(c).apiKey, key);
}

/**
 * What a keyless record is sealed under: the Idempotency-Key and the body, which the client that
 * sent them presents again on a retry and which the store does not hold (it holds their hashes).
 */
const keylessSecret = (key: string, body: unknown) => `${key}\n${canonicalJson(body ?? null)}`;

/**
 * The holder of a wallet's request without an API key (the signature endpoints; billing under
 * X-Wallet-Auth): the object named `master` (its account's, or for the signature endpoints the
 * wallet's lookup hash, the master of the account it creates), scoped to the wallet, sealed under
 * the key and the body.
 */
export async function walletHolder(master: bigint, wallet: string, key: string, body: unknown): Promise<KeyHolder> {
  return {
    object: hashHex(master),
    scope: `wallet:${wallet.toLowerCase()}:${await sha256Hex(key)}`,
    secret: keylessSecret(key, body),
  };
}

/**
 * The holder of a new_account request, which has no caller at all: an object per client address
 * (the one the edge sees, CF-Connecting-IP, which Cloudflare sets and a client cannot), so two
 * clients that happen to send the same key are kept apart and a flood from one address evicts only
 * its own records. To the enclave the key goes as the hash of the address and the key, so its
 * memory (which has no caller key to scope by) keeps clients apart too.
 */
export async function newAccountHolder(c: Context<EdgeEnv>, key: string, body: unknown): Promise<KeyHolder> {
  const client = c.req.header("cf-connecting-ip") ?? "unknown";
  return {
    object: `new_account:${await sha256Hex(client)}`,
    scope: `client:${await sha256Hex(key)}`,
    secret: keylessSecret(key, body),
    enclaveKey: await sha256Hex(`new_account\n${client}\n${key}`),
  };
}

/** Keeps the invocation alive until `work` ends, so a client that goes away does not cut it off. */
function outliveClient(c: Context<EdgeEnv>, work: Promise<unknown>): void {
  let ctx: { waitUntil(promise: Promise<unknown>): void };
  try {
    ctx = c.executionCtx;
  } catch {
    return; // no execution context: called outside a Worker invocation
  }
  ctx.waitUntil(work.catch(() => undefined));
}

function idempotencyOf(c: Context<EdgeEnv>, object: string): DurableObjectStub<Idempotency> {
  const namespace = c.env.IDEMPOTENCY;
  if (!namespace) throw new Error("Idempotency-Key needs the IDEMPOTENCY Durable Object, which is not bound");
  return namespace.get(namespace.idFromName(object));
}

/**
 * SHA-256 of what a request asks: its method, the route it reached (not the path as spelled:
 * `new%5Faccount` is new_account) and its body (keys sorted).
 */
function fingerprint(c: Context<EdgeEnv>, body: unknown): Promise<string> {
  return sha256Hex(`${c.req.method} ${routePath(c, -1)}\n${canonicalJson(body ?? null)}`);
}

/** What to do with an attempt's record once it has answered with `err` (thrown). */
function fateOf(err: unknown, forwarded: boolean): "keep" | "interrupted" | "unused" {
  if (err instanceof EnclaveLostError) return "interrupted";
  // Not a refusal: the edge failed after sending; the enclave's memory has the truth for a retry.
  if (!isExposed(err)) return forwarded ? "interrupted" : "unused";
  if (sentTransactionOf(err) !== undefined || err.code === "write_outcome_unknown") return "keep";
  if (!forwarded || err.status === 429 || err.status === 503) return "unused";
  return "keep";
}

async function kept(res: Response): Promise<StoredAnswer> {
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = res.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return { status: res.status, headers, body: await res.clone().text() };
}

/**
 * The AES-GCM key a kept answer is sealed with: HKDF-SHA256 of the holder's secret (the caller's raw
 * API key; for a keyless record the Idempotency-Key and the body), bound to the record.
 */
async function answerKey(secret: string, scope: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new TextEncoder().encode("sigil-idempotency-answer-v1"),
      info: new TextEncoder().encode(scope),
    },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

async function sealed(key: CryptoKey, answer: StoredAnswer): Promise<StoredAnswer> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const cipher = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(answer.body)),
  );
  const out = new Uint8Array(iv.length + cipher.length);
  out.set(iv);
  out.set(cipher, iv.length);
  return { ...answer, body: toBase64(out) };
}

async function open(key: CryptoKey, answer: StoredAnswer): Promise<StoredAnswer> {
  const bytes = fromBase64(answer.body);
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, 12) }, key, bytes.subarray(12));
  return { ...answer, body: new TextDecoder().decode(plain) };
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

function replay(answer: StoredAnswer, ref: string): Response {
  return new Response(answer.body, {
    status: answer.status,
    headers: { ...answer.headers, "Idempotent-Replayed": "true", "Original-Request": ref },
  });
}

/**
 * Where a retry may be sent. An earlier attempt that reached an enclave makes the retry go back to
 * that enclave while it is the same process (its channel key unchanged), which knows what became of
 * the operation. If the process is gone, a run is run afresh anywhere; a write is not sent again
 * (the lost process may have sent it): 409 write_outcome_unknown, and its hold is released (the
 * service cannot show the write was made, so it does not charge for it) — unless the hold has
 * expired meanwhile (5 minutes, meter.ts): an expired hold is a charge already (ledger.ts).
 */
export async function routeRetry(c: Context<EdgeEnv>, attempt: Attempt, kind: "write" | "run"): Promise<void> {
  const { enclave, instance } = attempt.retry ?? {};
  if (!enclave) return;
  let now: string | undefined;
  try {
    now = await enclaveInstance(c.get("config"), enclave);
  } catch (err) {
    if (!(err instanceof ChannelUnavailableError)) throw err;
  }
  if (now !== undefined && now === instance) {
    attempt.send.only = { base: enclave, instance };
    return;
  }
  if (kind === "run") return;
  if (now === undefined) {
    throw new SigilError(
      "enclave_unavailable",
      "the enclave an earlier attempt with this Idempotency-Key reached cannot be reached; try again shortly",
      { retryAfterSeconds: 5 },
    );
  }
  await releaseHold(await payerOf(c.get("config"), c.env.LEDGER, callerKey(c)), attempt.ref);
  throw new SigilError(
    "write_outcome_unknown",
    "an earlier attempt with this Idempotency-Key reached an enclave that was lost before it answered, so whether it made this write is unknown; check the account's state and, if the write is still wanted, send it with a new Idempotency-Key",
    { details: { original_request_id: attempt.ref } },
  );
}

/** What a retry's run answer says of the first attempt (absent on a first attempt). */
export function firstAttemptOf(attempt: Attempt | undefined): { first_attempt?: FirstAttempt } {
  if (!attempt?.retry) return {};
  const outcome = attempt.send.replayed ? "resumed" : attempt.retry.outcome;
  const messages = {
    interrupted:
      "the enclave running the first attempt was lost before it answered; that attempt was not charged, and this is a new run",
    abandoned:
      "the edge serving the first attempt stopped before it answered, and the run it may have started is lost; this is a new run, charged once for this key",
    resumed:
      "the edge serving the first attempt stopped before it answered; this is that attempt's own run, which the enclave finished",
  } as const;
  return { first_attempt: { request_id: attempt.ref, outcome, message: messages[outcome] } };
}
