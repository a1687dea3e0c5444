// Calls an operation of the table (shared/operations.ts) on an enclave: `enclave.call(op, input,
// ctx)` seals `{op, ids, input}` in a session to the enclave's channel key (shared/channel/), which
// the edge pinned after verifying the quote that binds it (attest.ts). Enclaves that do not answer
// are routed around — one that cannot be reached, fails its attestation or answers 503 without
// having acted is skipped for a few seconds and the next one is tried — but an operation that acts
// (a write, a run) goes to no second enclave once the first may have acted on it (it was
// delivered and no answer came back, or the answer says a transaction was sent): the client gets
// 503 and decides. An enclave that failed is probed before it gets such a request again. When none
// answers the client gets 503 enclave_unavailable with Retry-After — unless an enclave answered that
// the chain is unreachable from it (503 chain_unavailable, nothing sent): that enclave works, stays
// in rotation, and its answer is the client's when no other enclave does better. An enclave's own error answer
// reaches the client as it is, including a 503 that says its IPFS gateway is down. A request sent
// under an Idempotency-Key (idempotency/) carries the key to the enclave, which answers a repeat
// from its memory; the edge notes which enclave (and which channel key of it) each attempt goes to
// before sending it, and a retry may be held to that one enclave.
import { ChannelError, edgeIdentityFromSeed, type OperationRequest } from "../../shared/channel/channel.ts";
import { ChannelClient, ChannelUnavailableError, type ChannelAnswer } from "../../shared/channel/client.ts";
import { acts, type OperationInput, type OperationName, type OperationOutput } from "../../shared/operations.ts";
import { errorStatus, isExposed, SigilError, transactionHashIn, type ErrorCode } from "../../shared/errors.ts";
import { forgetAfterOwnWrite } from "../chain/keyCache.ts";
import type { EdgeConfig } from "../config.ts";
import { type RequestIds, requestLog } from "../log.ts";
import { enclaveVerifier } from "./attest.ts";
import { enclaveOfInstance, forgetInstance, instanceAt, noteInstance } from "./instances.ts";

const SKIP_FAILED_MS = 5_000;
/** Per isolate: enclaves that failed recently, until when they are skipped. */
const failedUntil = new Map<string, number>();
/** Per isolate: enclaves that failed and have not answered since; probed before a request that must not run twice. */
const suspect = new Set<string>();
let nextStart = 0;

/** What an enclave answered: the operation's output, or its error. */
export type EnclaveAnswer = ChannelAnswer;

/** The HTTP status an answer stands for. */
const statusOf = (answer: EnclaveAnswer): number => (answer.ok ? 200 : answer.status);

/** The enclaves in the order to try them: healthy ones first, rotating, then the recently failed. */
function candidates(urls: string[]): string[] {
  const now = Date.now();
  const start = nextStart++ % Math.max(1, urls.length);
  const rotated = [...urls.slice(start), ...urls.slice(0, start)];
  const healthy = rotated.filter((u) => (failedUntil.get(u) ?? 0) <= now);
  const failed = rotated.filter((u) => (failedUntil.get(u) ?? 0) > now);
  return [...healthy, ...failed];
}

/** Whether a failure to get an answer proves the enclave did nothing with the request. */
function notDelivered(err: unknown): boolean {
  return err instanceof ChannelUnavailableError || err instanceof ChannelError;
}

/**
 * 503 codes with which a working enclave reports that something it fetches from, not itself, is
 * down: the answer is the client's (with its own code and Retry-After), and the enclave is not
 * taken out of rotation for it — another enclave, behind the same gateway, would only repeat it.
 */
const UPSTREAM_UNAVAILABLE: ReadonlySet<string> = new Set(["ipfs_unavailable"]);

/**
 * Whether an enclave's 503 answer means it declined the request and another may be asked: its
 * error names no transaction it sent, and it does not report an upstream of the enclave as down.
 */
function declined(answer: EnclaveAnswer): boolean {
  if (answer.ok) return false;
  if (UPSTREAM_UNAVAILABLE.has(answer.error.code)) return false;
  return transactionHashIn(answer.error.details) === undefined;
}

/**
 * Whether an enclave's 503 says the chain is unreachable from it (`chain_unavailable`, nothing
 * sent): the enclave itself is working, so it is not taken out of rotation, and another enclave,
 * whose way to the chain may be sound, is asked; when none does better, this is the client's answer
 * (its code and Retry-After), not enclave_unavailable, which would blame the enclave.
 */
function chainDown(answer: EnclaveAnswer): boolean {
  return (
    !answer.ok &&
    answer.status === 503 &&
    answer.error.code === "chain_unavailable" &&
    transactionHashIn(answer.error.details) === undefined
  );
}

/** Takes `base` out of rotation for a while; `err`, what it failed with, goes to the request's log. */
function skip(base: string, ids: RequestIds, err?: unknown): void {
  if (err !== undefined) {
    requestLog(ids).error("enclave skipped", {
      enclave: base,
      error: err instanceof Error ? `${err.name}: ${err.message.split("\n")[0]}` : String(err),
    });
  }
  failedUntil.set(base, Date.now() + SKIP_FAILED_MS);
  suspect.add(base);
}

const unavailable = () =>
  new SigilError("enclave_unavailable", "no enclave is reachable right now; try again shortly", {
    retryAfterSeconds: 5,
  });

/**
 * 503 enclave_unavailable for a request that was delivered to an enclave and got no answer that
 * opens (it died, or the answer was lost): unlike a plain 503, the enclave may have acted on it.
 */
export class EnclaveLostError extends SigilError {
  readonly enclave: string;

  constructor(enclave: string) {
    super("enclave_unavailable", "the enclave handling this request was lost before it answered; try again shortly", {
      retryAfterSeconds: 5,
    });
    this.enclave = enclave;
  }
}

/** How a request sent under an Idempotency-Key travels (idempotency/index.ts). */
export type Idempotent = {
  /** The client's Idempotency-Key, which the enclave keeps the operation's outcome under. */
  key: string;
  /**
   * The one enclave process the request may go to — the enclave at `base` while it holds the
   * channel key `instance` — because an earlier attempt under the key reached it.
   */
  only?: { base: string; instance: string };
  /** Awaited before the request is sealed to `base` under its channel key `instance` (each time). */
  beforeSend(base: string, instance: string): Promise<void>;
  /** Set once the enclave has answered from its memory of the key (an earlier attempt's outcome). */
  replayed?: boolean;
};

/**
 * Sends `request` to one enclave after another until one answers with something other than a 503
 * that did nothing (`status` reads an answer's status). A request that must not run twice (one
 * given a `probe`) is not sent on after an enclave that may have acted on it, and goes to an
 * enclave that failed recently only after `probe` has found it answering. A 503 that `upstreamDown`
 * says reports the enclave's upstream as down leaves the enclave in rotation and, when no other
 * enclave answers, is the answer.
 */
async function firstAnswer<R>(
  config: EdgeConfig,
  ids: RequestIds,
  request: (base: string) => Promise<R>,
  status: (answer: R) => number,
  once?: { probe(base: string): Promise<void>; declined(answer: R): boolean },
  only?: string,
  upstreamDown?: (answer: R) => boolean,
): Promise<R> {
  const probe = once?.probe;
  let upstreamAnswer: R | undefined;
  for (const base of only === undefined ? candidates(config.enclaveUrls) : [only]) {
    let res: R;
    try {
      if (probe && suspect.has(base)) await probe(base);
      res = await request(base);
    } catch (err) {
      if (isExposed(err)) throw err;
      skip(base, ids, err);
      if (once && !notDelivered(err)) throw new EnclaveLostError(base);
      continue;
    }
    if (status(res) === 503 && (!once || once.declined(res))) {
      if (upstreamDown?.(res)) {
        failedUntil.delete(base);
        suspect.delete(base);
        upstreamAnswer = res;
      } else {
        skip(base, ids);
      }
      continue;
    }
    failedUntil.delete(base);
    suspect.delete(base);
    return res;
  }
  if (upstreamAnswer !== undefined) return upstreamAnswer;
  throw unavailable();
}

function forwardedIds(ids: RequestIds): Record<string, string> {
  return { "x-request-id": ids.requestId, ...(ids.correlationId ? { "x-correlation-id": ids.correlationId } : {}) };
}

function channelIds(ids: RequestIds): OperationRequest["ids"] {
  return { request_id: ids.requestId, ...(ids.correlationId ? { correlation_id: ids.correlationId } : {}) };
}

let channelClient: { key: string; client: ChannelClient } | undefined;

/** The isolate's channel client for this configuration (its pins live as long as the isolate). */
function channel(config: EdgeConfig): ChannelClient {
  const seed = config.channel.identityKey;
  if (!seed)
    throw new SigilError("enclave_unavailable", "this edge has no channel identity (SIGIL_EDGE_IDENTITY_KEY)", {
      retryAfterSeconds: 30,
    });
  const key = JSON.stringify(config.channel);
  if (channelClient?.key !== key)
    channelClient = {
      key,
      client: new ChannelClient({ identity: edgeIdentityFromSeed(seed), verify: enclaveVerifier(config) }),
    };
  return channelClient.client;
}

/** How requests reach an enclave. */
export type EnclaveTransport = {
  /**
   * One request to the enclave at `base`, and its answer. Throws ChannelUnavailableError (or a
   * ChannelError refusal) when the enclave certainly did nothing; anything else it throws means
   * the request may have been acted on. `beforeSeal` is awaited with the enclave's channel key
   * before the request is sealed to it; if it throws, nothing is sent (ChannelUnavailableError).
   */
  send(
    base: string,
    request: OperationRequest,
    timeoutMs: number,
    beforeSeal?: (instance: string) => Promise<void>,
  ): Promise<EnclaveAnswer>;
  /** Resolves when the enclave at `base` answers at all; throws ChannelUnavailableError if not. */
  probe(base: string): Promise<void>;
  /**
   * The channel key the enclave at `base` holds now, asked afresh: a new one means a new enclave
   * process, which knows nothing of what the last one did. Throws ChannelUnavailableError when the
   * enclave cannot be reached.
   */
  instance(base: string): Promise<string>;
};

/** The production transport: sealed to the enclave's verified channel key (shared/channel/). */
export function channelTransport(config: EdgeConfig): EnclaveTransport {
  const client = channel(config);
  return {
    send: (base, request, timeoutMs, beforeSeal) =>
      client.call(base, request, { timeoutMs, ...(beforeSeal ? { beforeSeal } : {}) }),
    probe: (base) => client.probe(base),
    instance: (base) => client.currentKey(base),
  };
}

/** The channel key the enclave at `base` has now (see EnclaveTransport.instance). */
export function enclaveInstance(config: EdgeConfig, base: string, transport?: EnclaveTransport): Promise<string> {
  return (transport ?? channelTransport(config)).instance(base);
}

/** What a call needs besides the operation and its input. */
export type CallContext = {
  config: EdgeConfig;
  ids: RequestIds;
  /** How long to wait for the answer once sent (default 150 s). */
  timeoutMs?: number | undefined;
  /** The client's Idempotency-Key, and where an earlier attempt under it went. */
  idempotent?: Idempotent | undefined;
  /** How requests reach an enclave (tests give their own). */
  transport?: EnclaveTransport;
};

/**
 * Calls `op` with `input` (the validated body, with the caller's key as `api_key` where the
 * operation takes one) on an enclave and returns its output; an enclave's error answer is thrown as
 * the SigilError it names, with its details and Retry-After.
 */
async function call<Op extends OperationName>(
  op: Op,
  input: OperationInput<Op>,
  ctx: CallContext,
): Promise<OperationOutput<Op>> {
  const { config } = ctx;
  if (config.enclaveUrls.length === 0) {
    throw new SigilError("enclave_unavailable", "no enclave is configured", { retryAfterSeconds: 30 });
  }
  const send = ctx.transport ?? channelTransport(config);
  const idempotent = ctx.idempotent;
  const request: OperationRequest = {
    op,
    ids: channelIds(ctx.ids),
    input,
    ...(idempotent ? { idempotency_key: idempotent.key } : {}),
  };
  const answer = await firstAnswer(
    config,
    ctx.ids,
    (base) =>
      send.send(
        base,
        request,
        ctx.timeoutMs ?? 150_000,
        idempotent &&
          (async (instance) => {
            // A retry bound to one process is not sealed to another that took its place.
            if (idempotent.only && instance !== idempotent.only.instance)
              throw new ChannelUnavailableError(`${base} is no longer the enclave process an earlier attempt reached`);
            await idempotent.beforeSend(base, instance);
          }),
      ),
    statusOf,
    acts(op) ? { probe: (base) => send.probe(base), declined } : undefined,
    idempotent?.only?.base,
    chainDown,
  );
  if (idempotent && answer.replayed) idempotent.replayed = true;
  if (answer.ok) {
    // A write that changed a key (removed it, capped it) is in force at this isolate at once.
    if (acts(op)) forgetAfterOwnWrite(config, op, input);
    return answer.output as OperationOutput<Op>;
  }
  throw errorOf(answer);
}

/**
 * An enclave's error answer as the SigilError it names, with its details and Retry-After; a code
 * the edge does not know, or internal_error, with nothing of the enclave's message.
 */
function errorOf(answer: Extract<EnclaveAnswer, { ok: false }>): SigilError {
  const { error } = answer;
  const code = error.code in errorStatus ? (error.code as ErrorCode) : "internal_error";
  return new SigilError(code, code === "internal_error" ? "an internal error occurred" : error.message, {
    ...(error.details === undefined ? {} : { details: error.details }),
    ...(answer.retry_after === undefined ? {} : { retryAfterSeconds: answer.retry_after }),
  });
}

/** The enclaves, as the edge's routes reach them. */
export const enclave = { call };

/**
 * One request to the enclave at `base` and no other (the edge's /health asks each in turn), through
 * the channel, answered as it is. `timeoutMs` bounds the whole call, the key's verification
 * included. 503 enclave_unavailable when no answer comes.
 */
export async function askEnclave<Op extends OperationName>(
  config: EdgeConfig,
  ids: RequestIds,
  base: string,
  call: { op: Op; input: OperationInput<Op>; timeoutMs?: number },
  transport?: EnclaveTransport,
): Promise<EnclaveAnswer> {
  const send = transport ?? channelTransport(config);
  const timeoutMs = call.timeoutMs ?? 150_000;
  const request: OperationRequest = { op: call.op, ids: channelIds(ids), input: call.input };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ChannelUnavailableError(`${base} did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([send.send(base, request, timeoutMs), timedOut]);
  } catch (err) {
    if (isExposed(err)) throw err;
    skip(base, ids, err);
    throw unavailable();
  } finally {
    clearTimeout(timer);
  }
}

/** The headers of an attestation answer that reach the client. */
const PASSED_HEADERS = [
  "content-type",
  "cache-control",
  "etag",
  "last-modified",
  "retry-after",
  "x-attestation-simulated",
  "x-sigil-instance",
];

/**
 * Passes a public attestation GET (`/attestation`, `/info`, `/evidences/…`) through to an enclave
 * as it is (status, type, body), so a verifier can check its bytes, with `X-Sigil-Instance` naming
 * the instance that answered. With `instance`, only that instance is asked (404
 * instance_not_found when no configured enclave is it), so a client can take the quote, /info and
 * the evidences from one VM. A nonce quote goes through the channel, naming the client (`clientIp`)
 * so that the enclave counts it against that client's budget rather than the edge's; the rest is a
 * plain GET (in production /evidences/ is the ingress's, which no channel reaches).
 */
export async function proxyToEnclave(
  config: EdgeConfig,
  ids: RequestIds,
  url: URL,
  options: { instance?: string | undefined; clientIp?: string | undefined } = {},
  transport?: EnclaveTransport,
): Promise<Response> {
  const forwarded = new URL(url);
  forwarded.searchParams.delete("instance");
  const pathAndQuery = `${forwarded.pathname}${forwarded.search}`;
  const viaChannel = forwarded.pathname === "/attestation" && forwarded.searchParams.has("nonce");
  const ask = async (base: string): Promise<{ status: number; base: string; res: Response }> => {
    let res: Response;
    if (viaChannel) {
      const send = transport ?? channelTransport(config);
      const input: OperationInput<"attestation"> = { query: forwarded.search, client: options.clientIp ?? "unknown" };
      const answer = await send.send(base, { op: "attestation", ids: channelIds(ids), input }, 30_000);
      if (!answer.ok) throw errorOf(answer);
      const passed = answer.output as OperationOutput<"attestation">;
      res = new Response(passed.body, { status: passed.status, headers: passed.headers });
    } else {
      res = await fetch(`${base}${pathAndQuery}`, { headers: forwardedIds(ids), signal: AbortSignal.timeout(30_000) });
    }
    noteInstance(base, res.headers.get("x-sigil-instance"));
    return { status: res.status, base, res };
  };

  let answered: { base: string; res: Response };
  if (options.instance === undefined) {
    answered = await firstAnswer(config, ids, ask, (a) => a.status);
  } else {
    answered = await pinnedAnswer(config, ids, options.instance, ask);
  }
  const headers = new Headers();
  for (const name of PASSED_HEADERS) {
    const v = answered.res.headers.get(name);
    if (v) headers.set(name, v);
  }
  // The ingress's answers (/evidences/ in production) do not say; the edge knows whose ingress it asked.
  const instance = headers.get("x-sigil-instance") ?? instanceAt(answered.base);
  if (instance) headers.set("x-sigil-instance", instance);
  return new Response(answered.res.body, { status: answered.res.status, headers });
}

/** The answer of instance `instanceId` alone; once more after finding it elsewhere, when the enclave asked says it is now another. */
async function pinnedAnswer<R extends { base: string; res: Response }>(
  config: EdgeConfig,
  ids: RequestIds,
  instanceId: string,
  ask: (base: string) => Promise<R>,
): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const base = await enclaveOfInstance(config, instanceId);
    let answer: R;
    try {
      answer = await ask(base);
    } catch (err) {
      if (isExposed(err)) throw err;
      skip(base, ids, err);
      throw unavailable();
    }
    const named = answer.res.headers.get("x-sigil-instance");
    if (named === null || named === instanceId) return answer;
    // That enclave was replaced by another instance since we last asked: never pass its answer off as the pinned one.
    forgetInstance(base);
    noteInstance(base, named);
    await answer.res.body?.cancel();
    if (attempt > 0) throw new SigilError("instance_not_found", `instance ${instanceId} is no longer served here`);
  }
}
