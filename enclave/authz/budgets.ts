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
import { askEdge, PATIENCE_MS } from "./askEdge.ts";

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
