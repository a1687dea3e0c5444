// Reserving room in a wallet's budgets (docs/design/guardrails.md, Budgets), as this enclave instance
// does before it releases a budgeted signature: one request to the edge that sent the run (its URL
// and its token for the run came sealed with the run), answered by the wallet's Budgets object,
// which counts for every instance at once. A reservation is idempotent — the store counts a payload's
// digest once — so a request whose answer was lost is simply sent again; when no answer comes, the
// signature is refused (deny by default): a budget that cannot be checked is not skipped.
import type { Address, Hex } from "viem";
import {
  BUDGET_PATH,
  budgetCharge,
  budgetLimits,
  budgetValue,
  countedDigest,
  countedValue,
  budgetRefusal,
  budgetState,
  useOf,
  type BudgetAccess,
  type BudgetAnswer,
  type BudgetCharge,
  type BudgetLimit,
  type BudgetRequest,
  type BudgetRunner,
  type BudgetState,
  type BudgetUse,
} from "../../shared/guardrails/budgets.ts";
import type { SignRequest } from "../../shared/guardrails/evaluate.ts";
import type { Budget } from "../../shared/guardrails/schema.ts";

/**
 * How long one attempt waits, and how many are made, before the signature is refused. The last waits
 * until the run's own deadline (at least this long): the store may have committed a reservation
 * whose answer is slow (a busy edge), and a run that gave up on it would leave a signature counted
 * that it never made.
 */
const ATTEMPT_TIMEOUT_MS = 2_000;
const ATTEMPTS = 3;
/** A reservation's last attempt waits this long when no run deadline is given. */
const PATIENCE_MS = 30_000;

export class BudgetUnavailableError extends Error {
  override readonly name = "BudgetUnavailableError";
}

/** Asks the store at `access` to reserve (or peek at) room for one signature. */
export async function askBudgets(
  access: BudgetAccess,
  request: BudgetRequest,
  fetchImpl: typeof fetch = fetch,
  deadline: number = Date.now() + PATIENCE_MS,
  allowHttp = true,
): Promise<BudgetAnswer> {
  try {
    return await askEdge<BudgetAnswer>(
      access,
      BUDGET_PATH,
      request,
      // Not an answer of the store: as good as none (a refusal named budgets.undefined would say nothing).
      (answer) => typeof answer.granted === "boolean" && Array.isArray(answer.before),
      { fetchImpl, deadline, allowHttp },
    );
  } catch (err) {
    throw new BudgetUnavailableError(`the wallet's budgets could not be reserved in (${(err as Error).message})`);
  }
}

/**
 * Posts `body` to `path` at the edge that sent the run (`access`: its URL and the run's token) and
 * returns its JSON answer once `isAnswer` accepts it. Each attempt waits ATTEMPT_TIMEOUT_MS but the
 * last, which waits until `deadline`: the edge may have done what was asked and be slow to say so.
 * A 4xx is the same next time, so it ends the attempts. Throws an Error saying what the last attempt met.
 */
export async function askEdge<T>(
  access: BudgetAccess,
  path: string,
  body: unknown,
  isAnswer: (answer: Record<string, unknown>) => boolean,
  options: { fetchImpl?: typeof fetch; deadline?: number; allowHttp?: boolean } = {},
): Promise<T> {
  const fetchImpl = options.fetchImpl ?? fetch;
  const deadline = options.deadline ?? Date.now() + PATIENCE_MS;
  const allowHttp = options.allowHttp ?? true;
  let url: URL;
  try {
    url = new URL(path, access.url);
  } catch {
    throw new Error("the edge's URL is not http(s)");
  }
  if (url.protocol !== "https:" && !(allowHttp && url.protocol === "http:"))
    throw new Error(`the edge's URL is not ${allowHttp ? "http(s)" : "https"}`);
  let last = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const res = await fetchImpl(url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${access.token}` },
        body: JSON.stringify(body),
        // The token goes to the edge's URL and nowhere else.
        redirect: "error",
        signal: AbortSignal.timeout(
          attempt < ATTEMPTS ? ATTEMPT_TIMEOUT_MS : Math.max(ATTEMPT_TIMEOUT_MS, deadline - Date.now()),
        ),
      });
      const text = await res.text();
      if (res.ok) {
        const answer = JSON.parse(text) as Record<string, unknown>;
        if (!isAnswer(answer)) throw new Error("the edge's answer is not one it should give");
        return answer as T;
      }
      last = `the edge answered ${res.status}`;
      if (res.status >= 400 && res.status < 500) break;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
  }
  throw new Error(last);
}

/** What a run's budgeted signature met: room reserved (the counters before and after), or the budget that had none. */
export type BudgetOutcome =
  | { granted: true; before: BudgetState[]; after: BudgetState[] }
  | { granted: false; budget: string; reason: string; observed: string; before: BudgetState[] };

/**
 * One run's side of its wallets' budgets: where it reserves (`access`, from the edge; absent, every
 * budgeted signature is refused) and who it is (for the budgets counted per key or per action). A dry
 * run reserves nothing: it reads the counters (peek) and adds its own would-be signatures to them in
 * memory, so that its later requests meet the budgets as a real run's would.
 */
export class RunBudgets {
  readonly #access: (BudgetAccess & { ref: string }) | undefined;
  readonly #runner: BudgetRunner & { account: Hex };
  readonly #dry: boolean;
  readonly #fetch: typeof fetch;
  readonly #deadline: number | undefined;
  readonly #allowHttp: boolean;
  /** A dry run's own would-be signatures, per wallet, budget and scope. */
  readonly #pending = new Map<string, { count: number; value: bigint; oldest: number | null; digests: Set<string> }>();

  constructor(options: {
    access: (BudgetAccess & { ref: string }) | undefined;
    runner: BudgetRunner & { account: Hex };
    dry: boolean;
    fetchImpl?: typeof fetch;
    /** Until when a reservation's last attempt waits: the run's own deadline. */
    deadline?: number;
    /** Whether the edge may be reached over plain http (not in production). */
    allowHttp?: boolean;
  }) {
    this.#access = options.access;
    this.#runner = options.runner;
    this.#dry = options.dry;
    this.#fetch = options.fetchImpl ?? fetch;
    this.#deadline = options.deadline;
    this.#allowHttp = options.allowHttp ?? true;
  }

  /**
   * Room for `request` to be signed by `signer`, which a guardrail allowed, in its `budgets`, counted
   * under `counters` (the wallet's address, or "key:0x…" for a usage key's own guardrail).
   * `signedDigest`: the digest the worker already made of it and will sign (its KeyUse), so that the
   * payload is not serialized and hashed a second time here; without it, it is computed.
   */
  async reserve(
    counters: string,
    signer: Address,
    budgets: readonly Budget[],
    request: SignRequest,
    signedDigest?: Hex,
  ): Promise<BudgetOutcome> {
    if (!this.#access) throw new BudgetUnavailableError("this run was sent without a way to reach the budgets' store");
    const { ref, ...access } = this.#access;
    const payload = signedDigest ? { digest: signedDigest, ...budgetValue(request) } : budgetCharge(request);
    const charge = { ...payload, digest: countedDigest(signer, payload.digest) };
    const limits = budgetLimits(budgets, this.#runner);
    const answer = await askBudgets(
      access,
      {
        op: this.#dry ? "peek" : "reserve",
        account: this.#runner.account,
        wallet: counters.toLowerCase(),
        ref,
        digest: charge.digest.toLowerCase() as Hex,
        value_wei: charge.valueWei.toString(),
        ...(charge.valueLamports > 0n ? { value_lamports: charge.valueLamports.toString() } : {}),
        budgets: limits,
      },
      this.#fetch,
      this.#deadline,
      this.#allowHttp,
    );
    if (!this.#dry) return answer;
    return this.#addPending(counters, limits, charge, answer);
  }

  /** A dry run: the store's counters plus this run's earlier would-be signatures, decided as the store would. */
  #addPending(counters: string, limits: BudgetLimit[], charge: BudgetCharge, answer: BudgetAnswer): BudgetOutcome {
    const entries = limits.map((limit) => {
      const id = `${counters.toLowerCase()}|${limit.name}|${limit.scope}`;
      const pending = this.#pending.get(id) ?? { count: 0, value: 0n, oldest: null, digests: new Set<string>() };
      const stored = answer.before.find((s) => s.name === limit.name && s.scope === limit.scope);
      const base = stored ? useOf(stored) : { count: 0, value: 0n, oldest: null };
      const use: BudgetUse = {
        count: base.count + pending.count,
        value: base.value + pending.value,
        oldest: base.oldest ?? pending.oldest,
      };
      const fresh = !(answer.granted && answer.repeated) && !pending.digests.has(charge.digest);
      return { id, limit, pending, use, fresh };
    });
    const before = entries.map((e) => budgetState(e.limit, e.use));
    for (const e of entries) {
      const refusal = e.fresh ? budgetRefusal(e.limit, e.use, countedValue(e.limit, charge)) : undefined;
      if (refusal) return { granted: false, budget: e.limit.name, ...refusal, before };
    }
    const now = Date.now();
    const after = entries.map((e) => {
      if (!e.fresh) return budgetState(e.limit, e.use);
      e.pending.count += 1;
      e.pending.oldest ??= now;
      e.pending.value += countedValue(e.limit, charge);
      e.pending.digests.add(charge.digest);
      this.#pending.set(e.id, e.pending);
      return budgetState(e.limit, {
        count: e.use.count + 1,
        value: e.use.value + countedValue(e.limit, charge),
        oldest: e.use.oldest ?? now,
      });
    });
    return { granted: true, before, after };
  }
}
