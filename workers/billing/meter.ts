// Metering (docs/design/billing.md, Fees): what a managed write and a run cost, held before the work and
// settled after it, in the caller's account's Ledger, under the request's billing ref — its
// request id, or under an Idempotency-Key the first attempt's, so that every attempt of one
// request holds and settles the same ledger row and is charged once. A managed write holds 1 cent,
// settles 1 once the enclave has sent the transaction — also when it then reverted on chain or its
// receipt did not come (the enclave's error names the transaction) — and releases the hold when
// the enclave refused it before sending. Every metered answer, error or not, says what it cost
// (X-Sigil-Charged-Cents). A route declares it as a stage of its pipeline (`meteredRun()`,
// `meteredWrite(op)`, router.ts) and settles with what the enclave answered (`Meter`). A run holds min(free balance, key's remaining cap, the run's maximum
// seconds) cents, is given that many seconds, and settles max(1, ceil(duration_ms / 1000)) — never
// more than it held (shared/fees.ts, the same function the enclave signs into the run's receipt). A run that stopped because its credit ran out ends with the code
// `insufficient_credits`, its logs kept.
//
// A run's or write's charge is made in the isolate's credit lease and its answer goes out at once: the
// charge reaches the Ledger in the lease's next commit, after the answer (lease.ts), and the enclave
// that ran a run settles it too, should the edge die first (settlement.ts). Settling does not wait on the client: the route's whole attempt runs under waitUntil
// (idempotency/index.ts), and a hold nobody settles — the edge was killed, or the invocation was
// cut off while the enclave worked on — is charged in full when it expires (ledger.ts). So a hold
// must outlive everything the edge may still be waiting for, or a live request would be charged
// its whole hold: a write's outlives its enclave call, a run's its granted seconds and the way there
// and back.
import { runSeconds, WRITE_CENTS } from "../../shared/fees.ts";
import type { Logger } from "../../shared/log.ts";
import type { SigilActionResponse } from "../../shared/operations.ts";
import { SigilError, sentTransactionOf, transactionHashIn } from "../../shared/errors.ts";
import type { Context } from "hono";
import type { EdgeConfig } from "../config.ts";
import { callerKey } from "../middleware/auth/index.ts";
import type { EdgeEnv, Stage } from "../router.ts";
import { callerAccount, hashHex, ledgerOf, type PresentedKey } from "./account.ts";
import {
  type CreditLease,
  type LeaseHold,
  type LeaseLedger,
  leaseOf,
  reclaimLeases,
  type Settlement,
} from "./lease.ts";
import type { Ledger } from "./ledger.ts";
import type { HoldResult, KeyCap, RunBill, UsageDetail } from "./ledgerTypes.ts";

/** How long the edge waits for a run's answer beyond its granted seconds (less than the lease's margin, lease.ts LEASE_MARGIN_MS). */
export const RUN_FORWARD_MARGIN_MS = 60_000;

/**
 * Whose credit a metered request spends: its account's Ledger (`account` names it) and, for a usage
 * key, the key's cap.
 */
export type Payer = {
  ledger: DurableObjectStub<Ledger>;
  /** The same Ledger as a credit lease calls it (lease.ts), its stub made at the first call. */
  via: LeaseLedger;
  account: string;
  key: KeyCap | undefined;
  /** How long its lease's first charge after a quiet moment waits before its commit (SIGIL_LEASE_COMMIT_DELAY_MS). */
  commitDelayMs?: number;
};

/**
 * The payer of a request made with `key`: its account's Ledger among `ledgers` (the LEDGER binding)
 * and the key's cap, from one live read of the chain (a key that may not act is refused here, 401
 * or 403). Undefined while billing is off: nothing is held or charged, and nothing is read.
 */
export async function payerOf(
  config: EdgeConfig,
  ledgers: DurableObjectNamespace<Ledger> | undefined,
  key: PresentedKey,
): Promise<Payer | undefined> {
  if (!config.billing) return undefined;
  const account = await callerAccount(config, key);
  if (!ledgers) ledgerOf(ledgers, account.master);
  // The stub is made when a call needs it: most runs make none (their lease has the credit).
  let stub: DurableObjectStub<Ledger> | undefined;
  const ledger = () => {
    stub ??= ledgerOf(ledgers, account.master);
    return stub;
  };
  return {
    get ledger() {
      return ledger();
    },
    via: {
      lease: (...args) => ledger().lease(...args),
      commit: (...args) => ledger().commit(...args),
    },
    account: hashHex(account.master),
    key: account.isMaster ? undefined : { keyHash: hashHex(account.keyHash), capCents: account.spendLimitCents },
    commitDelayMs: config.commitDelayMs,
  };
}

/** Refusals (402) made while the account's Ledger said its Webhooks object has nothing to hear of (HoldResult.webhooks). */
const refusedQuietly = new WeakSet<SigilError>();

/** Whether `err` is a refusal of credit for an account whose Webhooks object has nothing to hear of (so none is told of it). */
export function refusedWithoutWebhooks(err: unknown): boolean {
  return err instanceof SigilError && refusedQuietly.has(err);
}

function refused(hold: HoldResult): SigilError {
  const error =
    hold.refusedBy === "spend_limit"
      ? new SigilError("insufficient_credits", "this API key has spent its spend limit", {
          details: { spend_limit: true },
        })
      : new SigilError("insufficient_credits", "the account has no credit left; top up through /billing", {
          details: { balance_cents: hold.freeCents },
        });
  if (!hold.webhooks) refusedQuietly.add(error);
  return error;
}

/**
 * What one metered request holds and is charged (the `metered` stages): made by the stage before
 * the request's handler, settled by the handler with what the enclave answered (`settleRun`,
 * `settleWrite`), or by the stage after it when the handler threw (a write that was sent costs its
 * cent; anything else frees the hold). `settlement` and `run` say what came of it to the stages before
 * (the account's webhooks, webhooks/emit.ts).
 */
export class Meter {
  /** The milliseconds the run may last, as many whole seconds as its credit covers; undefined while billing is off. */
  grantedMs: number | undefined;
  /** What the request was charged, in cents. */
  chargedCents = 0;
  /**
   * The request's charge, when billing is on and it was settled: made in the isolate's credit lease
   * and committed to the Ledger after the answer (`committed()` waits for that, and says the balance after).
   */
  settlement: Settlement | undefined;
  /** The run's answer, once settled. */
  run: SigilActionResponse | undefined;
  #maxSeconds = 0;
  #done = false;
  /** The isolate's lease a run is held under (lease.ts); a write is held in the Ledger itself. */
  #lease: CreditLease | undefined;

  readonly payer: Payer | undefined;
  /** The billing ref: the request id, or under an Idempotency-Key the first attempt's. */
  readonly ref: string;
  readonly log: Logger | undefined;
  /** Says what the request cost, once it is settled (the stage sets X-Sigil-Charged-Cents with it). */
  readonly #tell: ((chargedCents: number) => void) | undefined;
  /** Keeps the request's invocation alive for work after its answer (waitUntil). */
  readonly #defer: ((work: Promise<unknown>) => void) | undefined;

  constructor(
    payer: Payer | undefined,
    ref: string,
    log: Logger | undefined,
    tell?: (chargedCents: number) => void,
    defer?: (work: Promise<unknown>) => void,
  ) {
    this.payer = payer;
    this.ref = ref;
    this.log = log;
    this.#tell = tell;
    this.#defer = defer;
  }

  /**
   * What the run's token lets the enclave that runs it settle (docs/design/billing.md, Leases): its
   * account, key, lease and the cents it holds; undefined while billing is off or before its hold.
   */
  get bill(): RunBill | undefined {
    if (!this.payer || this.grantedMs === undefined || !this.#lease) return undefined;
    return {
      account: this.payer.account,
      key: this.payer.key?.keyHash ?? null,
      max: Math.floor(this.grantedMs / 1000),
      lease: this.#lease.id,
    };
  }

  /** Whether the request has been settled (or its hold freed). */
  get done(): boolean {
    return this.#done;
  }

  /**
   * Holds a run that may last `timeoutMs` (the configured default, limits.timeoutMs): that many
   * seconds, or as many as the credit covers (`grantedMs`); none at all is a refusal (402, thrown).
   */
  async holdRun(timeoutMs: number, cid: string | undefined): Promise<void> {
    if (!this.payer) return;
    const { via: ledger, account, key } = this.payer;
    this.#maxSeconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    const lease = leaseOf(account, key, this.log, this.payer.commitDelayMs);
    this.#lease = lease;
    const meta = { op: "run" as const, ...(cid ? { detail: { cid } } : {}) };
    const hold = await holdOrReclaim(this.payer, lease, () =>
      lease.hold(ledger, this.ref, this.#maxSeconds, this.#maxSeconds * 1000, meta),
    );
    if (hold.granted === 0) throw refused(hold);
    this.grantedMs = hold.granted * 1000;
  }

  /**
   * Charges the run by its started seconds (shared/fees.ts, the function the enclave signs the run's
   * receipt with) and answers `answer` as the client gets it: a run stopped because its credit ran
   * out ends in `insufficient_credits`. What is settled should be the receipt's `charged_cents`: when
   * it is not (the hold had expired and was charged in full, or an edge and an enclave disagree on
   * the fee), the log says so loudly, and the answer keeps the receipt the enclave signed.
   */
  async settleRun(answer: SigilActionResponse): Promise<SigilActionResponse> {
    this.#done = true;
    if (this.payer && this.grantedMs !== undefined && this.#lease) {
      const ledger = this.payer.via;
      const lease = this.#lease;
      const granted = this.grantedMs / 1000;
      this.settlement = lease.settle(
        ledger,
        this.ref,
        runSeconds(answer.duration_ms),
        { op: "run", detail: runDetail(answer) },
        this.#defer,
      );
      this.chargedCents = this.settlement.chargedCents;
      if (this.#defer) lease.returnWhenIdle(ledger, this.#defer);
      if (granted < this.#maxSeconds && answer.error?.code === "timeout") {
        answer = {
          ...answer,
          error: {
            code: "insufficient_credits",
            message: `the run used up the credit it could hold (${granted} s) and was stopped`,
          },
        };
      }
    }
    // The enclave's answer is not parsed on the way back: an enclave that sent no receipt is logged, not a crash.
    const receiptCents = (answer.receipt as SigilActionResponse["receipt"] | undefined)?.charged_cents;
    if (receiptCents !== this.chargedCents) {
      this.log?.error("run receipt disagrees with the ledger", {
        ref: this.ref,
        receiptCents: receiptCents ?? null,
        chargedCents: this.chargedCents,
        durationMs: answer.duration_ms,
      });
    }
    this.run = answer;
    this.#tell?.(this.chargedCents);
    return answer;
  }

  /** Holds a managed write's cent; without credit for it, the write is refused (402, thrown) before it is sent. */
  async holdWrite(operation: string): Promise<void> {
    if (!this.payer) return;
    const { via: ledger, account, key } = this.payer;
    const lease = leaseOf(account, key, this.log, this.payer.commitDelayMs);
    this.#lease = lease;
    // The lease outlives the write's enclave call (150 s, after reaching an enclave) by its margin.
    const hold = await holdOrReclaim(this.payer, lease, () =>
      lease.hold(ledger, this.ref, WRITE_CENTS, 0, { op: "write", detail: { operation } }),
    );
    if (hold.granted === 0) throw refused(hold);
  }

  /**
   * Charges a managed write: 1 cent once the enclave has sent its transaction (`result` names it,
   * or the error it ended in does: it reverted on chain, or its receipt did not come), nothing when
   * it was refused before it was sent (the hold is freed).
   */
  async settleWrite(operation: string, outcome: { result: unknown } | { error: unknown }): Promise<void> {
    this.#done = true;
    if (this.payer && this.#lease) {
      const ledger = this.payer.via;
      const sent = "result" in outcome ? transactionHashIn(outcome.result) : sentTransactionOf(outcome.error);
      if ("result" in outcome || sent !== undefined) {
        this.settlement = this.#lease.settle(
          ledger,
          this.ref,
          WRITE_CENTS,
          { op: "write", detail: { operation, ...(sent ? { transaction_hash: sent } : {}) } },
          this.#defer,
        );
        this.chargedCents = this.settlement.chargedCents;
        // A write's answer waits for its charge's commit, made at once: no enclave settles a write
        // should this edge die after answering (a run's does), and a write takes seconds anyway.
        try {
          await this.settlement.committed(true);
        } catch (err) {
          // Still pending in the lease, for its next commit: the write is made, and answered so.
          this.log?.error("a write's charge is not committed yet; it waits for the next commit", {
            ref: this.ref,
            error: err instanceof Error ? err.message : String(err),
          });
        }
        if (this.#defer) this.#lease.returnWhenIdle(ledger, this.#defer);
      } else this.#lease.release(ledger, this.ref, this.#defer);
    }
    this.#tell?.(this.chargedCents);
  }

  /** Frees the hold without charging (a hold that had expired is a charge already and stays one). */
  async release(): Promise<void> {
    this.#done = true;
    if (this.payer && this.#lease) this.#lease.release(this.payer.via, this.ref, this.#defer);
    else await releaseHold(this.payer, this.ref);
  }
}

/**
 * A hold under `lease`, asked again once when the account had no credit for it while its other
 * leases in this isolate (its other keys') kept some: they give it back first (lease.ts reclaimLeases).
 */
async function holdOrReclaim(payer: Payer, lease: CreditLease, hold: () => Promise<LeaseHold>): Promise<LeaseHold> {
  const first = await hold();
  if (first.granted > 0 || first.refusedBy === "spend_limit") return first;
  return (await reclaimLeases(payer.account, payer.via, lease)) ? hold() : first;
}

/** Each metered request's meter. */
const meters = new WeakMap<Request, Meter>();

/** The meter of a request whose route declared a `metered` stage. */
export function meterOf(c: Context<EdgeEnv>): Meter | undefined {
  return meters.get(c.req.raw);
}

/** The request's waitUntil (none outside a Worker invocation). */
function deferOf(c: Context<EdgeEnv>): ((work: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return undefined;
  }
}

/** A new meter for `c`: its caller's payer (one chain read, when billing is on) and its billing ref. */
async function startMeter(c: Context<EdgeEnv>): Promise<Meter> {
  const payer = await payerOf(c.get("config"), c.env.LEDGER, callerKey(c));
  // What it cost goes out as X-Sigil-Charged-Cents, set as the meter settles: before the handler
  // answers, when it settles (a header set on an answer already made would copy it).
  const meter = new Meter(
    payer,
    c.get("ref") ?? c.get("ids").requestId,
    c.get("log"),
    (cents) => c.header("X-Sigil-Charged-Cents", String(cents)),
    deferOf(c),
  );
  meters.set(c.req.raw, meter);
  return meter;
}

/**
 * A run's time limit: the caller's `timeout_ms`, or the configured default; over the configured
 * maximum is the caller's mistake (400), told before anything is held.
 */
export function runTimeoutMs(
  requested: number | undefined,
  limits: { timeoutMs: number; maxTimeoutMs: number },
): number {
  if (requested === undefined) return limits.timeoutMs;
  if (requested > limits.maxTimeoutMs)
    throw new SigilError("invalid_request", `timeout_ms must be at most ${limits.maxTimeoutMs} (max_timeout_ms)`, {
      details: [{ path: "timeout_ms", message: `at most ${limits.maxTimeoutMs}` }],
    });
  return requested;
}

/**
 * The stage that charges a run (router.ts `pipeline`): it holds before the handler, which gives the
 * run `grantedMs` and settles it with the enclave's answer (`settleRun`); a handler that threw frees
 * the hold. A settled answer says what it cost in X-Sigil-Charged-Cents.
 */
export function meteredRun(): Stage {
  return async (c, next) => {
    const input = (c.req as { valid(target: "json"): { ipfs_id?: string; timeout_ms?: number } | undefined }).valid(
      "json",
    );
    const timeoutMs = runTimeoutMs(input?.timeout_ms, c.get("config").limits);
    const meter = await startMeter(c);
    // The CID is known here only for a run by ipfs_id; the settle records the answer's.
    await meter.holdRun(timeoutMs, input?.ipfs_id);
    await next();
    if (!meter.done) await meter.release();
  };
}

/**
 * The stage that charges a managed write `operation` 1 cent (router.ts `pipeline`): it holds before
 * the handler, which settles with the enclave's answer (`settleWrite`); when the handler threw, the
 * write costs its cent if it was sent, and nothing if not. Every answer, error or not, says what it
 * cost in X-Sigil-Charged-Cents (0 when it was refused before it was sent).
 */
export function meteredWrite(operation: string): Stage {
  return async (c, next) => {
    c.header("X-Sigil-Charged-Cents", "0");
    const meter = await startMeter(c);
    await meter.holdWrite(operation);
    await next();
    if (!meter.done) await meter.settleWrite(operation, { error: c.error });
  };
}

/** Frees `ref`'s hold without charging (a hold that had expired is a charge already and stays one). */
export async function releaseHold(payer: Payer | undefined, ref: string): Promise<void> {
  if (!payer) return;
  await payer.ledger.release(ref);
}

/** What the usage history keeps of a run: its CID, duration, whether it failed, and its signed receipt. */
function runDetail(answer: SigilActionResponse): UsageDetail {
  const receipt = (answer as { receipt?: unknown }).receipt;
  return {
    cid: answer.cid,
    duration_ms: answer.duration_ms,
    ...(answer.has_error && answer.error ? { error_code: answer.error.code } : {}),
    ...(receipt === undefined ? {} : { receipt: JSON.stringify(receipt) }),
  };
}
