// createSigilClient: one typed method per operation of the service's OpenAPI document (the method
// is the operationId: `list_api_keys` → listApiKeys), built from the generated table
// (src/generated/api.ts), so a new route is a new method with the edge's own types. Only `fetch`
// is used (injectable), so the client runs in Node ≥ 20, browsers, Workers, Deno and Bun.
//
// Retries only where repeating cannot act twice: reads, and writes and runs that carry an
// Idempotency-Key (the client makes one per call unless given one, and sends the same key on every
// attempt, so the service answers a repeat with the first answer). They follow 429 and 503 answers
// after their Retry-After, 409 request_in_progress likewise, and a failed connection after a short
// backoff, each wait lengthened by up to half at random (withJitter); a timeout is not retried (the
// call's budget is spent). A 503 edge_busy — the edge refused the request at its door, before any
// work — is retried after its Retry-After on its own budget (BUSY_RETRIES, not the call's
// `retries`), for every call whose caller allows retries: nothing can have acted on it, and it
// comes in bursts (the seconds after an outage) that a few retries would not outlast.
import { operations, type OperationId, type Operations } from "./generated/api.ts";
import { type AttestationCache, receiptChecker, type ReceiptPolicy } from "./verifiedRuns.ts";
import { SigilError, SigilNetworkError, SigilTimeoutError } from "./errors.ts";

/** How many times a call is sent again after 503 edge_busy, besides its `retries` (at the edge's Retry-After of 2 s: about half a minute). */
export const BUSY_RETRIES = 10;

/** `X-Wallet-Auth` for billing under a wallet: a header value, or a function that makes a fresh one (walletAuthHeader). */
export type WalletAuth = string | (() => string | Promise<string>);

export type SigilClientOptions = {
  /** The service's origin, e.g. http://127.0.0.1:8787 (a trailing /core/v1 is allowed). */
  baseUrl: string;
  /** An account or usage API key, sent as X-Api-Key. */
  apiKey?: string | undefined;
  /** For billing calls without a key: the X-Wallet-Auth of a ChainSecured account's admin wallet. */
  walletAuth?: WalletAuth | undefined;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Per attempt, in ms (default 120 000: longer than the longest run). */
  timeoutMs?: number;
  /** Attempts after the first, where retrying is safe (default 2). */
  retries?: number;
  /** The longest Retry-After the client waits out, in ms (default 30 000); a longer one is the caller's to handle. */
  maxRetryDelayMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * Every run answer's receipt is verified before the answer is returned (verifiedRuns.ts): its
   * Merkle path, the batch signature, the receipt key's quote binding, its instance and compose hash
   * against `allowedComposeHashes`. A receipt that fails throws SigilReceiptError. `false` turns it off.
   */
  verifyReceipts?: false | ReceiptPolicy;
};

/** What a call's answer said besides its body. */
export type ResponseInfo = { status: number; requestId: string | undefined; headers: Headers };

export type CallOptions = {
  signal?: AbortSignal;
  /** For writes and runs: the Idempotency-Key (default: a random UUID per call, the same on each retry). */
  idempotencyKey?: string;
  /** Echoed by the service as X-Correlation-Id and written in its logs. */
  correlationId?: string;
  timeoutMs?: number;
  retries?: number;
  /** Called with the final answer's status and headers (request id, X-Sigil-Charged-Cents, X-Total-Count…). */
  onResponse?: (info: ResponseInfo) => void;
};

type Input<K extends OperationId> = Operations[K]["input"];
type Output<K extends OperationId> = Operations[K]["output"];

/** The type with no fields (`{}`): `NoFields extends T` holds when every field of T is optional. */
type NoFields = Record<never, never>;
/** A method: its input may be left out when every field of it is optional. */
export type Method<K extends OperationId> =
  NoFields extends Input<K>
    ? (input?: Input<K>, options?: CallOptions) => Promise<Output<K>>
    : (input: Input<K>, options?: CallOptions) => Promise<Output<K>>;

type Op<K extends OperationId> = (typeof operations)[K];
/** The operations `all` iterates: the page_number lists and the cursor-paged ones (the table's `paging`). */
type Paged = { [K in OperationId]: Op<K>["paging"] extends "page" | "cursor" ? K : never }[OperationId];
/** A cursor-paged answer keeps its items in one field (the table's `pageItems`); a page_number list is the array. */
type PageItems<K extends Paged> =
  Op<K> extends { paging: "cursor"; pageItems: infer F extends keyof Output<K> } ? Output<K>[F] : Output<K>;
export type PageItem<K extends Paged> = PageItems<K> extends Array<infer I> ? I : never;
/** What an iteration takes: the list's own filters and a page size (`limit` by cursor, `page_size` by page); by cursor, a `cursor` to resume from. */
type PageInput<K extends Paged> = Op<K>["paging"] extends "cursor"
  ? Omit<Input<K>, "cursor" | "limit"> & { limit?: number; cursor?: string }
  : Omit<Input<K>, "page_number" | "page_size"> & { page_size?: number };

export type SigilClient = { [K in OperationId]: Method<K> } & {
  /**
   * Every item of a list, page after page: `for await (const w of client.all.listWallets())`; for a
   * cursor-paged operation each page's `next_cursor` until it is null (`client.all.audit()`).
   */
  all: {
    [K in Paged]: NoFields extends PageInput<K>
      ? (input?: PageInput<K>, options?: CallOptions) => AsyncIterable<PageItem<K>>
      : (input: PageInput<K>, options?: CallOptions) => AsyncIterable<PageItem<K>>;
  };
  /** Calls an operation by its id (what the named methods do). */
  call<K extends OperationId>(operation: K, input: Input<K>, options?: CallOptions): Promise<Output<K>>;
  /** The service's origin the client calls (a trailing /core/v1 removed). */
  readonly baseUrl: string;
  /** A client like this one with some options changed (another key, say). */
  with(options: Partial<SigilClientOptions>): SigilClient;
};

/** Where a client keeps the attestations it fetched, for the clients made from it (not an option). */
const ATTESTATIONS = Symbol("sigil.attestations");
/** The operations whose answer is a run's, with its receipt. */
const RUNS: ReadonlySet<OperationId> = new Set(["sigilAction"]);
/** POSTs that only compute an answer: safe to repeat without an Idempotency-Key. */
const PURE_POSTS: ReadonlySet<OperationId> = new Set(["getSigilActionIpfsId"]);
const DEFAULT_TIMEOUT_MS = 120_000;
const ITERATION_PAGE_SIZE = 100;

export function createSigilClient(options: SigilClientOptions): SigilClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "").replace(/\/core\/v1$/, "");
  if (!/^https?:\/\/[^/]+/.test(baseUrl))
    throw new TypeError(`baseUrl must be an http(s) URL, not ${JSON.stringify(options.baseUrl)}`);
  const doFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  // The attestations this client has fetched, shared with the clients `with` makes from it (same origin).
  const internal = options as SigilClientOptions & { [ATTESTATIONS]?: AttestationCache };
  const attestations: AttestationCache = internal[ATTESTATIONS] ?? new Map();
  const checkReceipt =
    options.verifyReceipts === false
      ? undefined
      : receiptChecker(
          baseUrl,
          options.verifyReceipts ?? {},
          (instance) => call("getReceiptKey", { instance }),
          attestations,
        );

  async function call<K extends OperationId>(
    operation: K,
    input: Input<K>,
    callOptions: CallOptions = {},
  ): Promise<Output<K>> {
    const op = operations[operation];
    if (!op) throw new TypeError(`unknown operation ${String(operation)}`);
    const { url, body } = requestOf(baseUrl, op, input);
    const headers = await headersOf(op, body !== undefined, options, callOptions);
    const safe =
      headers["idempotency-key"] !== undefined || (op.method === "GET" && !op.idempotent) || PURE_POSTS.has(operation);
    const allowed = callOptions.retries ?? options.retries ?? 2;
    const retries = safe ? allowed : 0;
    let busyRetries = 0;
    const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxDelay = options.maxRetryDelayMs ?? 30_000;

    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await fetchWithTimeout(
          doFetch,
          url,
          { method: op.method, headers, ...(body === undefined ? {} : { body }) },
          timeoutMs,
          callOptions.signal,
        );
      } catch (err) {
        if (err instanceof SigilNetworkError && !(err instanceof SigilTimeoutError) && attempt < retries) {
          await sleep(withJitter(Math.min(maxDelay, 250 * 2 ** attempt), maxDelay), callOptions.signal);
          continue;
        }
        throw err;
      }
      const info: ResponseInfo = {
        status: res.status,
        requestId: res.headers.get("x-request-id") ?? undefined,
        headers: res.headers,
      };
      if (res.ok) {
        const value = await bodyWithin(op.json ? readJson(res, info) : res.text(), url, timeoutMs, callOptions.signal);
        callOptions.onResponse?.(info);
        // A run's answer is returned only with a receipt that verifies.
        if (checkReceipt && RUNS.has(operation)) await checkReceipt(value, info.requestId);
        return value as Output<K>;
      }
      const error = await bodyWithin(errorOf(res, info), url, timeoutMs, callOptions.signal);
      const delay = (error.retryAfter ?? 1) * 1000;
      if (
        error.code === "edge_busy" &&
        allowed > 0 &&
        busyRetries < BUSY_RETRIES &&
        error.retryAfter !== undefined &&
        delay <= maxDelay
      ) {
        busyRetries++;
        await sleep(withJitter(delay, maxDelay), callOptions.signal);
        attempt--; // not one of the call's retries
        continue;
      }
      const waitable = error.status === 429 || error.status === 503 || error.code === "request_in_progress";
      if (
        waitable &&
        attempt < retries &&
        delay <= maxDelay &&
        (error.retryAfter !== undefined || error.status !== 503)
      ) {
        await sleep(withJitter(delay, maxDelay), callOptions.signal);
        continue;
      }
      callOptions.onResponse?.(info);
      throw error;
    }
  }

  const client: Record<string, unknown> = {
    call,
    baseUrl,
    with: (changes: Partial<SigilClientOptions>) =>
      createSigilClient({
        ...options,
        ...changes,
        // Another origin, another cache.
        ...(changes.baseUrl === undefined || changes.baseUrl === options.baseUrl
          ? { [ATTESTATIONS]: attestations }
          : {}),
      }),
    all: Object.fromEntries(
      Object.entries(operations)
        .filter(([, op]) => op.paging !== null)
        .map(([name]) => [name, pagesOf(call as Call, name as Paged)]),
    ),
  };
  for (const name of Object.keys(operations) as OperationId[]) {
    client[name] = (input: unknown, callOptions?: CallOptions) => call(name, input as never, callOptions);
  }
  return client as SigilClient;
}

/** What `pagesOf` calls an operation with: the client's own call. */
type Call = (operation: OperationId, input: unknown, callOptions?: CallOptions) => Promise<unknown>;

/** Every item of a paged operation, page after page (`client.all`). */
function pagesOf(call: Call, operation: Paged) {
  const op = operations[operation];
  if (op.paging === "cursor") return cursorPagesOf(call, operation, op.pageItems as string);
  return (input: Record<string, unknown> = {}, callOptions: CallOptions = {}): AsyncIterable<unknown> => ({
    async *[Symbol.asyncIterator]() {
      const pageSize = Number(input.page_size ?? ITERATION_PAGE_SIZE);
      let seen = 0;
      for (let page = 0; ; page++) {
        let total = Number.POSITIVE_INFINITY;
        const items = (await call(operation, { ...input, page_number: page, page_size: pageSize } as never, {
          ...callOptions,
          onResponse: (info) => {
            const header = info.headers.get("x-total-count");
            if (header !== null && /^\d+$/.test(header)) total = Number(header);
            callOptions.onResponse?.(info);
          },
        })) as unknown[];
        for (const item of items) yield item;
        seen += items.length;
        if (items.length < pageSize || seen >= total) return;
      }
    },
  });
}

/** A cursor-paged operation's items: `limit` per call, each answer's `next_cursor` sent back until it is null. */
function cursorPagesOf(call: Call, operation: Paged, itemsField: string) {
  return (
    { cursor, ...input }: Record<string, unknown> = {},
    callOptions: CallOptions = {},
  ): AsyncIterable<unknown> => ({
    async *[Symbol.asyncIterator]() {
      const limit = Number(input.limit ?? ITERATION_PAGE_SIZE);
      let next = typeof cursor === "string" && cursor !== "" ? cursor : undefined;
      for (;;) {
        const answer = (await call(
          operation,
          { ...input, limit, ...(next === undefined ? {} : { cursor: next }) } as never,
          callOptions,
        )) as unknown as Record<string, unknown>;
        const items = answer[itemsField];
        if (!Array.isArray(items))
          throw new SigilError({
            code: "unexpected_response",
            status: 200,
            message: `the answer has no ${itemsField} list`,
          });
        for (const item of items) yield item;
        if (typeof answer.next_cursor !== "string" || answer.next_cursor === "") return;
        next = answer.next_cursor;
      }
    },
  });
}

/** The headers of a call of `op`: its accept and content types, its credentials, a correlation id, an Idempotency-Key. */
async function headersOf(
  op: OperationEntry,
  hasBody: boolean,
  options: SigilClientOptions,
  callOptions: CallOptions,
): Promise<Record<string, string>> {
  const headers: Record<string, string> = { accept: op.json ? "application/json" : "*/*", ...options.headers };
  if (hasBody) headers["content-type"] = "application/json";
  if (op.auth !== "none" && options.apiKey) headers["x-api-key"] = options.apiKey;
  if (op.auth === "key_or_wallet" && !options.apiKey && options.walletAuth !== undefined) {
    headers["x-wallet-auth"] = typeof options.walletAuth === "string" ? options.walletAuth : await options.walletAuth();
  }
  if (callOptions.correlationId) headers["x-correlation-id"] = callOptions.correlationId;
  // Every operation that takes an Idempotency-Key acts (GET create_wallet too): it always gets one.
  if (op.idempotent) headers["idempotency-key"] = callOptions.idempotencyKey ?? crypto.randomUUID();
  return headers;
}

type OperationEntry = (typeof operations)[OperationId];

/** The URL and JSON body of a call: parameters in the path and query, or the input as the body. */
function requestOf(baseUrl: string, op: OperationEntry, input: unknown): { url: string; body?: string } {
  if (op.input === "body") {
    return {
      url: baseUrl + op.path,
      body: JSON.stringify(input ?? null, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)),
    };
  }
  const params = { ...((input ?? {}) as Record<string, unknown>) };
  let path: string = op.path;
  for (const name of op.pathParams as readonly string[]) {
    const value = params[name];
    if (value === undefined || value === null || value === "") throw new TypeError(`${name} is required`);
    path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
    delete params[name];
  }
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) query.set(k, String(v));
  const q = query.toString();
  return { url: baseUrl + path + (q ? `?${q}` : "") };
}

async function fetchWithTimeout(
  doFetch: typeof globalThis.fetch,
  url: string,
  init: RequestInit,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Response> {
  signal?.throwIfAborted();
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    return await doFetch(url, { ...init, signal: combined });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.aborted)
      throw new SigilTimeoutError({
        code: "timeout",
        status: 0,
        message: `no answer from ${new URL(url).origin} within ${timeoutMs} ms`,
        cause: err,
      });
    throw new SigilNetworkError({
      code: "network_error",
      status: 0,
      message: `could not reach ${new URL(url).origin}: ${messageOf(err)}`,
      cause: err,
    });
  }
}

/**
 * The answer's body, read under the call's timeout as its headers were: the timeout (or the caller's
 * abort) while the body arrives is the call's SigilTimeoutError (or the caller's reason), never the
 * stream's DOMException.
 */
async function bodyWithin<T>(
  read: Promise<T>,
  url: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<T> {
  try {
    return await read;
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
      throw new SigilTimeoutError({
        code: "timeout",
        status: 0,
        message: `the answer from ${new URL(url).origin} did not arrive within ${timeoutMs} ms`,
        cause: err,
      });
    throw err;
  }
}

function messageOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

async function readJson(res: Response, info: ResponseInfo): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new SigilError({
      code: "unexpected_response",
      status: res.status,
      message: `the answer (${res.status}) is not JSON`,
      requestId: info.requestId,
    });
  }
}

/** The service's error body (docs/design/api.md, Errors) as a SigilError; any other answer as unexpected_response. */
async function errorOf(res: Response, info: ResponseInfo): Promise<SigilError> {
  const header = res.headers.get("retry-after");
  const retryAfter = header !== null && /^\d+$/.test(header.trim()) ? Number(header) : undefined;
  let body: unknown;
  try {
    body = JSON.parse(await res.text());
  } catch {
    body = undefined;
  }
  const error = (
    body as { error?: { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } } | undefined
  )?.error;
  if (error && typeof error.code === "string" && typeof error.message === "string") {
    return new SigilError({
      code: error.code,
      message: error.message,
      status: res.status,
      details: error.details,
      requestId: typeof error.request_id === "string" ? error.request_id : info.requestId,
      retryAfter,
    });
  }
  return new SigilError({
    code: "unexpected_response",
    status: res.status,
    message: `the service answered ${res.status} ${res.statusText} without an error body`,
    requestId: info.requestId,
    retryAfter,
  });
}

/**
 * A retry's wait: at least `ms` (a Retry-After is "not before"), plus up to half of it more, at random.
 * Every client told "5 s" by one outage would otherwise come back in the same instant, a burst as
 * large as the whole outage's demand; spread over the half, the service meets it a part at a time.
 */
function withJitter(ms: number, maxDelay: number): number {
  // Callers pass ms ≤ maxDelay: the jitter may shorten nothing, only stop at the cap.
  return Math.min(maxDelay, ms + Math.random() * (ms / 2));
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
