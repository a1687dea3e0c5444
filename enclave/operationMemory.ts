// The enclave's memory of operations sent under an Idempotency-Key (docs/design/api.md, Idempotency keys). The
// edge remembers answers it gave; this remembers what the enclave itself started, for the case the
// edge cannot know: its attempt was cut off (the edge was killed, the answer was lost) after the
// enclave took the operation, which may since have sent a transaction or run a script. A retry
// under the same key comes back here (the edge sends it to the same enclave process) and joins the
// operation still in flight or gets the answer it ended with, so it never acts twice.
//
// An operation is remembered under the caller's key hash — hashed here from the raw key it
// carries, never taken from the edge — and the client's key, with a fingerprint of what it asks
// (operation and body, without the key itself and without the run's time budget, which the edge
// sets per attempt); the same key asking for something else is refused. new_account has no caller
// key: it is remembered under the Idempotency-Key alone, which the edge makes the hash of its
// client's address and key (workers/idempotency/, newAccountHolder) so that clients stay apart.
// Taking the edge's word for that gives it nothing: new_account's answer, the new key, passes
// through the edge in the clear to its client anyway, and whoever does not know the client's key
// cannot name its scope. Answers that say the
// operation did nothing (429, or 503 that names no sent transaction) are forgotten at once, so a
// retry may act. The memory is in this process only: an enclave that restarts knows nothing of what
// the last one did (the edge then finds a new channel key and does not send a write back here).
// Bounded by count and by the size of the answers kept, oldest answered first; entries expire a
// day after the operation began.
import { createHash } from "node:crypto";
import { apiKeyHash } from "../shared/hashing.ts";
import type { OperationAnswer } from "../shared/channel/channel.ts";
import { errorBody, SigilError, transactionHashIn } from "../shared/errors.ts";
import { canonicalJson } from "../shared/canonicalJson.ts";

export type RememberedAnswer = OperationAnswer;

export type MemoryLimits = { maxEntries: number; maxBytes: number; ttlMs: number };

export const DEFAULT_MEMORY_LIMITS: MemoryLimits = { maxEntries: 10_000, maxBytes: 64 << 20, ttlMs: 24 * 3600_000 };

/**
 * The request fields that are not part of what an operation asks: the caller's key, and the run's
 * time budget and the seconds billing granted it (a retry may hold a different amount, as when its
 * first attempt was charged already).
 */
const NOT_FINGERPRINTED = new Set(["api_key", "timeout_ms", "billing", "budget"]);

/**
 * The operations taken without a caller key that are remembered all the same: new_account, which
 * sends a transaction and answers a key that exists nowhere else. (The signature endpoints derive
 * afresh and send nothing, so doing one again is harmless; the edge asks again.)
 */
const KEYLESS_REMEMBERED: ReadonlySet<string> = new Set(["new_account"]);

type Entry = {
  fingerprint: string;
  answer: Promise<RememberedAnswer>;
  createdAt: number;
  answered: boolean;
  bytes: number;
};

/** Whether an answer says the operation did nothing, so a retry may do it: kept otherwise. */
function didNothing(answer: RememberedAnswer): boolean {
  if (answer.ok) return false;
  if (answer.status === 429) return true;
  return answer.status === 503 && transactionHashIn(answer.error.details) === undefined;
}

export class OperationMemory {
  readonly #entries = new Map<string, Entry>();
  readonly #limits: MemoryLimits;
  readonly #now: () => number;
  #bytes = 0;

  constructor(limits: MemoryLimits = DEFAULT_MEMORY_LIMITS, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  /**
   * Where `op`'s input (a JSON value) is remembered under `idempotencyKey`: its scope (the
   * caller's key hash and the idempotency key; for new_account, `open:` and the idempotency key)
   * and fingerprint; undefined when the body names no key and the operation is not new_account
   * (it is answered as it is).
   */
  static identify(
    op: string,
    idempotencyKey: string,
    parsed: unknown,
  ): { scope: string; fingerprint: string } | undefined {
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    const { api_key: apiKey } = parsed as { api_key?: unknown };
    if (typeof apiKey !== "string" && !KEYLESS_REMEMBERED.has(op)) return undefined;
    const asked = Object.fromEntries(Object.entries(parsed).filter(([k]) => !NOT_FINGERPRINTED.has(k)));
    const fingerprint = createHash("sha256")
      .update(`${op}\n${canonicalJson(asked)}`)
      .digest("hex");
    // A key hash is hex digits only, so no caller's scope is ever `open:…`.
    const owner = typeof apiKey === "string" ? apiKeyHash(apiKey).toString(16) : "open";
    return { scope: `${owner}:${idempotencyKey}`, fingerprint };
  }

  /**
   * `perform`'s answer, once per scope: a second call while the first runs waits for it, one after
   * gets the answer it ended with (`replayed`), one with another fingerprint a 422.
   */
  async once(
    scope: string,
    fingerprint: string,
    requestId: string,
    perform: () => Promise<RememberedAnswer>,
  ): Promise<{ answer: RememberedAnswer; replayed: boolean }> {
    this.#expire();
    const known = this.#entries.get(scope);
    if (known) {
      if (known.fingerprint !== fingerprint) {
        const err = new SigilError(
          "idempotency_key_reused",
          "this Idempotency-Key was used with another request; use a new key for a new request",
        );
        return { answer: { ok: false, status: err.status, error: errorBody(err, requestId).error }, replayed: false };
      }
      return { answer: await known.answer, replayed: true };
    }
    const entry: Entry = { fingerprint, answer: perform(), createdAt: this.#now(), answered: false, bytes: 0 };
    this.#entries.set(scope, entry);
    let answer: RememberedAnswer;
    try {
      answer = await entry.answer;
    } catch (err) {
      this.#entries.delete(scope);
      throw err;
    }
    if (didNothing(answer)) {
      this.#entries.delete(scope);
    } else {
      entry.answered = true;
      entry.bytes = Buffer.byteLength(JSON.stringify(answer));
      this.#bytes += entry.bytes;
      this.#evict();
    }
    return { answer, replayed: false };
  }

  /** How many operations are remembered (in flight or answered). */
  get size(): number {
    return this.#entries.size;
  }

  #drop(scope: string, entry: Entry): void {
    this.#entries.delete(scope);
    this.#bytes -= entry.bytes;
  }

  #expire(): void {
    const oldest = this.#now() - this.#limits.ttlMs;
    // Entries are in the order they were made: the first young one ends the old ones.
    for (const [scope, entry] of this.#entries) {
      if (entry.createdAt > oldest) break;
      if (entry.answered) this.#drop(scope, entry);
    }
  }

  /** Answered entries go, oldest first, until the memory is within its bounds; one in flight stays. */
  #evict(): void {
    for (const [scope, entry] of this.#entries) {
      if (this.#entries.size <= this.#limits.maxEntries && this.#bytes <= this.#limits.maxBytes) return;
      if (entry.answered) this.#drop(scope, entry);
    }
  }
}
