// The host side of a script's `fetch` (docs/design/sandbox.md, Limits). Every hop is checked after DNS
// resolution and the socket is opened to the checked IP itself, so nothing resolves the name a
// second time (no DNS rebinding). Redirects are followed here, one checked hop at a time.
import { Resolver as DnsResolver } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { SigilError } from "../../../shared/errors.ts";
import { classifyAddress, describeAddressClass } from "../../../shared/addressClass.ts";
import type { AddressClass } from "../../../shared/addressClass.ts";

export type FetchPolicy = {
  /** Exact "host:port" (host lowercase, IPv6 in brackets) that may be reached even if not public. */
  allowHosts: ReadonlySet<string>;
  /** Ports never reachable on loopback or unspecified addresses, allow-listed or not (the service's own). */
  denyPorts: ReadonlySet<number>;
  /** The whole fetch, redirects and body included. */
  timeoutMs: number;
  maxResponseBytes: number;
  maxRedirects: number;
};

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export type GuardedRequest = {
  url: string;
  method: string;
  headers: Array<[string, string]>;
  body?: Uint8Array;
  redirect?: "follow" | "manual" | "error";
};

export type GuardedResponse = {
  status: number;
  statusText: string;
  /** Names lowercase, in the order received; repeated names stay separate. */
  headers: Array<[string, string]>;
  url: string;
  redirected: boolean;
  body: Uint8Array;
};

export type FetchErrorCode = "network_refused" | "limit_exceeded" | "timeout" | "network_error" | "invalid_request";

/**
 * A script's fetch that failed, for `reason`. Its `code` is the service's code nearest in meaning:
 * `permission_denied` for a destination the policy refuses, `internal_error` for a far end that
 * failed or timed out, else `invalid_request`. The message is for the script (hostOps turns it into
 * the script's TypeError), never an HTTP answer (`expose` false).
 */
export class FetchError extends SigilError {
  override readonly name = "FetchError";
  readonly reason: FetchErrorCode;
  constructor(reason: FetchErrorCode, message: string) {
    super(
      reason === "network_refused"
        ? "permission_denied"
        : reason === "network_error" || reason === "timeout"
          ? "internal_error"
          : "invalid_request",
      message,
      {
        expose: false,
      },
    );
    this.reason = reason;
  }
}

/** Where one hop may connect: the only address the socket is opened to. */
export type Destination = {
  url: URL;
  /** "host:port" as matched against the allow list. */
  hostPort: string;
  port: number;
  address: string;
  family: 4 | 6;
  addressClass: AddressClass;
  allowListed: boolean;
};

/** How scripts' host names are resolved. */
export type DnsSettings = {
  /** Name servers ("ip" or "ip:port"); the system's (resolv.conf) when empty. */
  servers: string[];
  /** Per query attempt. */
  timeoutMs: number;
  tries: number;
};

export const DEFAULT_DNS: DnsSettings = { servers: [], timeoutMs: 2_000, tries: 2 };

/**
 * A resolver on c-ares (`dns.Resolver`), which queries on the event loop with its own timeout:
 * `dns.lookup` would run getaddrinfo on libuv's small thread pool, where a slow name server holds the
 * threads that WebCrypto, file and zlib work of every run also needs. A and AAAA are asked together;
 * a name with neither is unresolvable. Names are never looked up in the hosts file (only the
 * localhost names are handled, before any resolver).
 */
export function createResolver(settings: DnsSettings = DEFAULT_DNS): Resolver {
  const resolver = new DnsResolver({ timeout: settings.timeoutMs, tries: settings.tries });
  if (settings.servers.length > 0) resolver.setServers(settings.servers);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const answers: Array<{ address: string; family: 4 | 6 }> = [];
    if (v4.status === "fulfilled") for (const address of v4.value) answers.push({ address, family: 4 });
    if (v6.status === "fulfilled") for (const address of v6.value) answers.push({ address, family: 6 });
    if (answers.length === 0 && v4.status === "rejected") throw v4.reason;
    return answers;
  };
}

let defaultResolverInstance: Resolver | undefined;
export const defaultResolver: Resolver = (hostname) => {
  defaultResolverInstance ??= createResolver();
  return defaultResolverInstance(hostname);
};

/**
 * Bytes a run may hold in fetch responses that are not yet in its VM. A successful response's bytes
 * stay taken; the caller gives them back once the body is where it counts otherwise.
 */
export type ByteBudget = { take(bytes: number): boolean; give(bytes: number): void; readonly maxBytes: number };

const isLocalhostName = (host: string): boolean => {
  const h = host.endsWith(".") ? host.slice(0, -1) : host;
  return h === "localhost" || h.endsWith(".localhost");
};

/**
 * Checks one URL against the policy and picks the address to connect to. Throws FetchError
 * (network_refused, invalid_request, network_error) when the URL may not be fetched.
 */
export async function checkDestination(
  input: URL | string,
  policy: Pick<FetchPolicy, "allowHosts" | "denyPorts">,
  resolve: Resolver = defaultResolver,
): Promise<Destination> {
  let url: URL;
  try {
    url = typeof input === "string" ? new URL(input) : input;
  } catch {
    throw new FetchError("invalid_request", "fetch needs an absolute http or https URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchError("network_refused", `fetch to a ${url.protocol} URL refused: only http and https are allowed.`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new FetchError("invalid_request", "fetch URL must not contain a user name or password.");
  }
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const host = url.hostname; // lowercase; IPv6 bracketed and compressed by the URL parser
  const hostPort = `${host}:${port}`;
  const allowListed = policy.allowHosts.has(hostPort);

  const literal = host.startsWith("[") ? host.slice(1, -1) : isIP(host) === 4 ? host : null;
  let addresses: string[];
  let viaDns = false;
  if (literal !== null) addresses = [literal];
  else if (isLocalhostName(host))
    addresses = ["127.0.0.1"]; // never asks DNS for these names
  else {
    let answers: Array<{ address: string }>;
    try {
      answers = await resolve(host);
    } catch {
      throw new FetchError("network_error", `fetch to ${hostPort} failed: the host name could not be resolved.`);
    }
    if (answers.length === 0)
      throw new FetchError("network_error", `fetch to ${hostPort} failed: the host name could not be resolved.`);
    addresses = answers.map((a) => a.address);
    viaDns = true;
  }

  // Every answer must pass, not just the one we would use: the resolver's order is not ours to trust.
  let chosen: { address: string; cls: AddressClass } | undefined;
  for (const address of addresses) {
    const cls = classifyAddress(address);
    if (cls === "public") {
      chosen ??= { address, cls };
      continue;
    }
    if ((cls === "loopback" || cls === "unspecified") && policy.denyPorts.has(port)) {
      throw new FetchError(
        "network_refused",
        `fetch to ${hostPort} refused: port ${port} belongs to the service itself.`,
      );
    }
    if (!allowListed) {
      // The resolved address itself is left out: it would let scripts map the host's internal DNS.
      const what = `${describeAddressClass(cls)} address`;
      const reason = viaDns ? `it resolves to ${/^[aeiou]/.test(what) ? "an" : "a"} ${what}` : what;
      throw new FetchError("network_refused", `fetch to ${hostPort} refused: ${reason}.`);
    }
    chosen ??= { address, cls };
  }
  if (chosen === undefined)
    throw new FetchError("network_error", `fetch to ${hostPort} failed: the host name could not be resolved.`);
  const family = isIP(chosen.address);
  if (family !== 4 && family !== 6) {
    throw new FetchError("network_refused", `fetch to ${hostPort} refused: unrecognized address.`);
  }
  return { url, hostPort, port, address: chosen.address, family, addressClass: chosen.cls, allowListed };
}

// Headers the host owns; a script setting them could smuggle requests or confuse framing.
const OWNED_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
const NORMALIZED_METHODS = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH"]);
const METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// Dropped with the body when a redirect turns the request into a GET (fetch spec, "request-body-header name").
const BODY_HEADERS = new Set(["content-type", "content-encoding", "content-language", "content-location"]);
// Dropped when a redirect leaves the origin, as fetch implementations do.
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie"]);

type Hop = { url: URL; method: string; headers: Array<[string, string]>; body: Uint8Array | undefined };

function prepare(request: GuardedRequest): Hop {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new FetchError("invalid_request", "fetch needs an absolute http or https URL.");
  }
  let method = request.method;
  if (!METHOD_TOKEN.test(method))
    throw new FetchError("invalid_request", `fetch method "${method.slice(0, 40)}" is not valid.`);
  if (NORMALIZED_METHODS.has(method.toUpperCase())) method = method.toUpperCase();
  if (FORBIDDEN_METHODS.has(method.toUpperCase()))
    throw new FetchError("invalid_request", `fetch method ${method} is not allowed.`);
  if (request.body !== undefined && (method === "GET" || method === "HEAD")) {
    throw new FetchError("invalid_request", `fetch with method ${method} cannot have a body.`);
  }
  const headers: Array<[string, string]> = [];
  for (const [rawName, value] of request.headers) {
    const name = rawName.toLowerCase();
    if (OWNED_HEADERS.has(name)) continue;
    try {
      http.validateHeaderName(name);
      http.validateHeaderValue(name, value);
    } catch {
      throw new FetchError("invalid_request", `fetch header "${rawName.slice(0, 40)}" has an invalid name or value.`);
    }
    headers.push([name, value]);
  }
  if (!headers.some(([n]) => n === "accept-encoding")) headers.push(["accept-encoding", "identity"]);
  return { url, method, headers, body: request.body };
}

/** The request for the next hop, or undefined if the response is not a redirect to follow. */
function nextHop(hop: Hop, status: number, location: string | undefined): Hop | undefined {
  if (!REDIRECT_STATUSES.has(status) || location === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new FetchError("network_error", `fetch to ${hop.url.host} failed: the redirect location is not a valid URL.`);
  }
  let { method, body, headers } = hop;
  if ((status === 303 && method !== "HEAD") || ((status === 301 || status === 302) && method === "POST")) {
    method = "GET";
    body = undefined;
    headers = headers.filter(([n]) => !BODY_HEADERS.has(n));
  }
  if (url.origin !== hop.url.origin) headers = headers.filter(([n]) => !CREDENTIAL_HEADERS.has(n));
  return { url, method, headers, body };
}

/** Rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connection timed out",
  EPIPE: "connection closed",
  HPE_INVALID_CONSTANT: "invalid HTTP response",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS certificate does not match the host name",
  CERT_HAS_EXPIRED: "TLS certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS certificate chain is not trusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS certificate chain is not trusted",
};

function networkError(dest: Destination, err: unknown): FetchError {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  const reason =
    SOCKET_ERRORS[code] ??
    (code.startsWith("HPE_")
      ? "invalid HTTP response"
      : code.includes("CERT")
        ? "TLS certificate check failed"
        : "network error");
  return new FetchError("network_error", `fetch to ${dest.hostPort} failed: ${reason}.`);
}

type RawResponse = {
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  location: string | undefined;
  res: http.IncomingMessage;
  req: http.ClientRequest;
};

/** Sends one hop to dest.address only and resolves when the response head arrives. */
function send(dest: Destination, hop: Hop, signal: AbortSignal): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const headers: string[] = ["host", dest.url.host];
    for (const [n, v] of hop.headers) headers.push(n, v);
    if (hop.body !== undefined) headers.push("content-length", String(hop.body.byteLength));
    else if (!["GET", "HEAD", "DELETE", "OPTIONS"].includes(hop.method)) headers.push("content-length", "0");

    // Used only if Node ever resolves despite the IP host: it can only yield the checked address.
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, [{ address: dest.address, family: dest.family }]);
      else callback(null, dest.address, dest.family);
    };
    const isHttps = dest.url.protocol === "https:";
    // SNI and the certificate check use the name the script asked for; IP literals send no SNI.
    const name = dest.url.hostname.replace(/\.$/, "");
    const servername = dest.url.hostname.startsWith("[") || isIP(name) !== 0 ? undefined : name;
    const options: https.RequestOptions = {
      host: dest.address,
      family: dest.family,
      port: dest.port,
      method: hop.method,
      path: dest.url.pathname + dest.url.search,
      headers,
      lookup: pinned,
      agent: false, // fresh socket, no pooling and no environment proxy
      setHost: false,
      ...(isHttps && servername !== undefined ? { servername } : {}),
    };

    let settled = false;
    let req: http.ClientRequest;
    const onAbort = () => {
      settled = true;
      req.destroy();
      reject(signal.reason);
    };
    try {
      req = (isHttps ? https : http).request(options);
    } catch (err) {
      return reject(networkError(dest, err));
    }
    signal.addEventListener("abort", onAbort, { once: true });
    const done = () => signal.removeEventListener("abort", onAbort);
    req.on("error", (err) => {
      done();
      if (settled) return;
      settled = true;
      reject(networkError(dest, err));
    });
    req.on("response", (res) => {
      done();
      if (settled) {
        res.destroy();
        return;
      }
      settled = true;
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
        pairs.push([(res.rawHeaders[i] ?? "").toLowerCase(), res.rawHeaders[i + 1] ?? ""]);
      const location = res.headers.location;
      resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", headers: pairs, location, res, req });
    });
    req.end(
      hop.body === undefined ? undefined : Buffer.from(hop.body.buffer, hop.body.byteOffset, hop.body.byteLength),
    );
  });
}

/** Reads the body, destroying the socket as soon as it passes the cap or the budget, or the signal aborts. */
function readBody(
  dest: Destination,
  raw: RawResponse,
  maxBytes: number,
  signal: AbortSignal,
  budget: ByteBudget | undefined,
): Promise<Uint8Array> {
  const { res, req } = raw;
  const tooBig = () =>
    new FetchError("limit_exceeded", `fetch to ${dest.hostPort}: the response is larger than ${maxBytes} bytes.`);
  const overBudget = () =>
    new FetchError(
      "limit_exceeded",
      `fetch to ${dest.hostPort}: the run's fetch responses in flight would pass its memory limit of ${budget?.maxBytes} bytes.`,
    );
  return new Promise((resolve, reject) => {
    let settled = false;
    let taken = 0;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      req.destroy();
      budget?.give(taken);
      reject(err);
    };
    const onAbort = () => fail(signal.reason);
    if (signal.aborted) return fail(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const declared = Number(res.headers["content-length"]);
    if (Number.isFinite(declared) && declared > maxBytes) return fail(tooBig());
    const chunks: Buffer[] = [];
    let total = 0;
    res.on("data", (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > maxBytes) return fail(tooBig());
      if (budget && !budget.take(chunk.length)) return fail(overBudget());
      taken += chunk.length;
      chunks.push(chunk);
    });
    res.on("end", () => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      resolve(new Uint8Array(Buffer.concat(chunks, total)));
    });
    res.on("error", (err) => fail(networkError(dest, err)));
    res.on("close", () => {
      if (!res.complete)
        fail(
          new FetchError(
            "network_error",
            `fetch to ${dest.hostPort} failed: the connection closed before the response ended.`,
          ),
        );
    });
  });
}

/** Performs a script's fetch under the policy. Every failure is a FetchError with a short, script-facing message. */
export async function guardedFetch(
  request: GuardedRequest,
  policy: FetchPolicy,
  options: { resolve?: Resolver; signal?: AbortSignal; budget?: ByteBudget } = {},
): Promise<GuardedResponse> {
  const resolve = options.resolve ?? defaultResolver;
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new FetchError("timeout", `fetch timed out after ${policy.timeoutMs} ms.`)),
    policy.timeoutMs,
  );
  const outer = options.signal;
  const onOuterAbort = () => controller.abort(new FetchError("network_error", "fetch was aborted."));
  if (outer?.aborted) onOuterAbort();
  outer?.addEventListener("abort", onOuterAbort, { once: true });
  const signal = controller.signal;
  try {
    let hop = prepare(request);
    const mode = request.redirect ?? "follow";
    for (let redirects = 0; ; redirects++) {
      const dest = await raceAbort(checkDestination(hop.url, policy, resolve), signal);
      const raw = await send(dest, hop, signal);
      const next = mode === "manual" ? undefined : nextHop(hop, raw.status, raw.location);
      if (next === undefined) {
        const body = await readBody(dest, raw, policy.maxResponseBytes, signal, options.budget);
        raw.req.destroy();
        return {
          status: raw.status,
          statusText: raw.statusText,
          headers: raw.headers,
          url: hop.url.href,
          redirected: redirects > 0,
          body,
        };
      }
      raw.req.destroy(); // the redirect's own body is never read
      if (mode === "error")
        throw new FetchError("network_error", `fetch to ${dest.hostPort} was redirected, and redirect is "error".`);
      if (redirects >= policy.maxRedirects)
        throw new FetchError("limit_exceeded", `fetch followed more than ${policy.maxRedirects} redirects.`);
      hop = next;
    }
  } catch (err) {
    if (err instanceof FetchError) throw err;
    throw new FetchError("network_error", "fetch failed: network error.");
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuterAbort);
  }
}
