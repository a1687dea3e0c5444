// Forwards an operation to an enclave's internal API (shared/enclaveApi.ts) through the attested
// channel (shared/channel/): each request is sealed in a session to the enclave's channel key, which
// the edge pinned after verifying the quote that binds it (attest.ts). Enclaves that do not answer
// are routed around — one that cannot be reached, fails its attestation or answers 503 without
// having acted is skipped for a few seconds and the next one is tried — but a request that must not
// run twice (a write, a run) goes to no second enclave once the first may have acted on it (it was
// delivered and no answer came back, or the answer says a transaction was sent): the client gets
// 503 and decides. An enclave that failed is probed before it gets such a request again. When none
// answers the client gets 503 enclave_unavailable with Retry-After. An enclave's own error answer
// reaches the client as it is, including a 503 that says its IPFS gateway is down. A request sent
// under an Idempotency-Key (idempotency/) carries the key to the enclave, which answers a repeat
// from its memory; the edge notes which enclave (and which channel key of it) each attempt goes to
// before sending it, and a retry may be held to that one enclave.
import { ChannelError, edgeIdentityFromSeed } from "../../shared/channel/channel.ts";
import { ChannelClient, ChannelUnavailableError, type ChannelAnswer } from "../../shared/channel/client.ts";
import type { EnclaveOperation } from "../../shared/enclaveApi.ts";
import { errorStatus, isExposed, SigilError, transactionHashIn, type ErrorCode } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { EdgeConfig } from "../config.ts";
import { requestLog } from "../log.ts";
import type { RequestIds } from "../middleware/requestId/index.ts";
import { enclaveVerifier } from "./attest.ts";
import { enclaveOfInstance, forgetInstance, instanceAt, noteInstance } from "./instances.ts";

const SKIP_FAILED_MS = 5_000;
/** Per isolate: enclaves that failed recently, until when they are skipped. */
const failedUntil = new Map<string, number>();
/** Per isolate: enclaves that failed and have not answered since; probed before a request that must not run twice. */
const suspect = new Set<string>();
let nextStart = 0;

/** What an enclave answered: status, headers and the JSON text of its body. */
export type EnclaveAnswer = ChannelAnswer;

export type EnclaveCall = { method?: "GET" | "POST"; path: string; body?: unknown; timeoutMs?: number; idempotent?: Idempotent };

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
  try {
    const error = (JSON.parse(answer.body) as { error?: { code?: unknown; details?: unknown } } | null)?.error;
    if (typeof error?.code === "string" && UPSTREAM_UNAVAILABLE.has(error.code)) return false;
    return transactionHashIn(error?.details) === undefined;
  } catch {
    return true; // not an error body: nothing says a transaction was sent
  }
}

function skip(base: string, log: Logger, err?: unknown): void {
  if (err !== undefined) {
    log.error("enclave skipped", { enclave: base, error: err instanceof Error ? `${err.name}: ${err.message.split("\n")[0]}` : String(err) });
  }
  failedUntil.set(base, Date.now() + SKIP_FAILED_MS);
  suspect.add(base);
}

const unavailable = () => new SigilError("enclave_unavailable", "no enclave is reachable right now; try again shortly", { retryAfterSeconds: 5 });

/**
 * 503 enclave_unavailable for a request that was delivered to an enclave and got no answer that
 * opens (it died, or the answer was lost): unlike a plain 503, the enclave may have acted on it.
 */
export class EnclaveLostError extends SigilError {
  readonly enclave: string;

  constructor(enclave: string) {
    super("enclave_unavailable", "the enclave handling this request was lost before it answered; try again shortly", { retryAfterSeconds: 5 });
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
 * that did nothing. A request that must not run twice (one given a `probe`) is not sent on after
 * an enclave that may have acted on it, and goes to an enclave that failed recently only after
 * `probe` has found it answering.
 */
async function firstAnswer<R extends { status: number }>(
  config: EdgeConfig,
  log: Logger,
  request: (base: string) => Promise<R>,
  once?: { probe(base: string): Promise<void>; declined(answer: R): boolean },
  only?: string,
): Promise<R> {
  const probe = once?.probe;
  for (const base of only === undefined ? candidates(config.enclaveUrls) : [only]) {
    let res: R;
    try {
      if (probe && suspect.has(base)) await probe(base);
      res = await request(base);
    } catch (err) {
      if (isExposed(err)) throw err;
      skip(base, log, err);
      if (once && !notDelivered(err)) throw new EnclaveLostError(base);
      continue;
    }
    if (res.status === 503 && (!once || once.declined(res))) {
      skip(base, log);
      continue;
    }
    failedUntil.delete(base);
    suspect.delete(base);
    return res;
  }
  throw unavailable();
}

function forwardedIds(ids: RequestIds): Record<string, string> {
  return { "x-request-id": ids.requestId, ...(ids.correlationId ? { "x-correlation-id": ids.correlationId } : {}) };
}

let channelClient: { key: string; client: ChannelClient } | undefined;

/** The isolate's channel client for this configuration (its pins live as long as the isolate). */
function channel(config: EdgeConfig): ChannelClient {
  const seed = config.channel.identityKey;
  if (!seed) throw new SigilError("enclave_unavailable", "this edge has no channel identity (SIGIL_EDGE_IDENTITY_KEY)", { retryAfterSeconds: 30 });
  const key = JSON.stringify(config.channel);
  if (channelClient?.key !== key) channelClient = { key, client: new ChannelClient({ identity: edgeIdentityFromSeed(seed), verify: enclaveVerifier(config) }) };
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
    request: { method: string; path: string; headers: Record<string, string>; body: string },
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
    send: (base, request, timeoutMs, beforeSeal) => client.call(base, request, { timeoutMs, ...(beforeSeal ? { beforeSeal } : {}) }),
    probe: (base) => client.probe(base),
    instance: (base) => client.currentKey(base),
  };
}

/** The channel key the enclave at `base` has now (see EnclaveTransport.instance). */
export function enclaveInstance(config: EdgeConfig, base: string, transport?: EnclaveTransport): Promise<string> {
  return (transport ?? channelTransport(config)).instance(base);
}

export async function callEnclave<T>(config: EdgeConfig, ids: RequestIds, call: EnclaveCall, transport?: EnclaveTransport): Promise<T> {
  if (config.enclaveUrls.length === 0) {
    throw new SigilError("enclave_unavailable", "no enclave is configured", { retryAfterSeconds: 30 });
  }
  const send = transport ?? channelTransport(config);
  const idempotent = call.idempotent;
  const request = {
    method: call.method ?? "POST",
    path: call.path,
    headers: { "content-type": "application/json", ...forwardedIds(ids), ...(idempotent ? { "idempotency-key": idempotent.key } : {}) },
    body: call.body === undefined ? "" : JSON.stringify(call.body),
  };
  const answer = await firstAnswer(
    config,
    requestLog(ids),
    (base) =>
      send.send(
        base,
        request,
        call.timeoutMs ?? 150_000,
        idempotent &&
          (async (instance) => {
            // A retry bound to one process is not sealed to another that took its place.
            if (idempotent.only && instance !== idempotent.only.instance) throw new ChannelUnavailableError(`${base} is no longer the enclave process an earlier attempt reached`);
            await idempotent.beforeSend(base, instance);
          }),
      ),
    request.method === "GET" ? undefined : { probe: (base) => send.probe(base), declined },
    idempotent?.only?.base,
  );
  if (idempotent && Object.entries(answer.headers).some(([name, value]) => name.toLowerCase() === "idempotent-replayed" && value === "true")) idempotent.replayed = true;
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    throw new SigilError("internal_error", "the enclave answered something that is not JSON");
  }
  if (answer.status >= 200 && answer.status < 300) return body as T;
  const error = (body as { error?: { code?: string; message?: string; details?: unknown } }).error;
  const code = error?.code && error.code in errorStatus ? (error.code as ErrorCode) : "internal_error";
  const retryHeader = Object.entries(answer.headers).find(([name]) => name.toLowerCase() === "retry-after")?.[1];
  const retry = Number(retryHeader ?? NaN);
  throw new SigilError(code, code === "internal_error" ? "an internal error occurred" : (error?.message ?? "the request failed"), {
    ...(error?.details === undefined ? {} : { details: error.details }),
    ...(Number.isFinite(retry) ? { retryAfterSeconds: retry } : {}),
  });
}

/** An internal operation with the caller's validated body. */
export function forward<T>(config: EdgeConfig, ids: RequestIds, op: EnclaveOperation, body: unknown, options: { timeoutMs?: number; idempotent?: Idempotent | undefined } = {}): Promise<T> {
  return callEnclave<T>(config, ids, {
    path: `/internal/v1/${op}`,
    body,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.idempotent === undefined ? {} : { idempotent: options.idempotent }),
  });
}

/**
 * One request to the enclave at `base` and no other (the edge's /health asks each in turn), through
 * the channel, answered as it is. `timeoutMs` bounds the whole call, the key's verification
 * included. 503 enclave_unavailable when no answer comes.
 */
export async function askEnclave(config: EdgeConfig, ids: RequestIds, base: string, call: EnclaveCall & { headers?: Record<string, string> }, transport?: EnclaveTransport): Promise<EnclaveAnswer> {
  const send = transport ?? channelTransport(config);
  const timeoutMs = call.timeoutMs ?? 150_000;
  const request = {
    method: call.method ?? "GET",
    path: call.path,
    headers: { "content-type": "application/json", ...forwardedIds(ids), ...call.headers },
    body: call.body === undefined ? "" : JSON.stringify(call.body),
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ChannelUnavailableError(`${base} did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([send.send(base, request, timeoutMs), timedOut]);
  } catch (err) {
    if (isExposed(err)) throw err;
    skip(base, requestLog(ids), err);
    throw unavailable();
  } finally {
    clearTimeout(timer);
  }
}

/** The headers of an attestation answer that reach the client. */
const PASSED_HEADERS = ["content-type", "cache-control", "etag", "last-modified", "retry-after", "x-attestation-simulated", "x-sigil-instance"];
/** Where the edge names its client to the enclave, inside the channel (enclave/internalApi.ts). */
const CLIENT_IP_HEADER = "x-sigil-client-ip";

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
      const answer = await send.send(
        base,
        { method: "GET", path: `/internal/v1/attestation${forwarded.search}`, headers: { ...forwardedIds(ids), ...(options.clientIp ? { [CLIENT_IP_HEADER]: options.clientIp } : {}) }, body: "" },
        30_000,
      );
      res = new Response(answer.body, { status: answer.status, headers: answer.headers });
    } else {
      res = await fetch(`${base}${pathAndQuery}`, { headers: forwardedIds(ids), signal: AbortSignal.timeout(30_000) });
    }
    noteInstance(base, res.headers.get("x-sigil-instance"));
    return { status: res.status, base, res };
  };

  let answered: { base: string; res: Response };
  if (options.instance === undefined) {
    answered = await firstAnswer(config, requestLog(ids), ask);
  } else {
    answered = await pinnedAnswer(config, requestLog(ids), options.instance, ask);
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
async function pinnedAnswer<R extends { base: string; res: Response }>(config: EdgeConfig, log: Logger, instanceId: string, ask: (base: string) => Promise<R>): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const base = await enclaveOfInstance(config, instanceId);
    let answer: R;
    try {
      answer = await ask(base);
    } catch (err) {
      if (isExposed(err)) throw err;
      skip(base, log, err);
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
