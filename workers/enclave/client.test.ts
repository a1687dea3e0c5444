// The edge's enclave client (workers/enclave/client.ts), inside workerd with no enclave: an enclave
// that does not answer is routed around; when none answers, 503 enclave_unavailable with
// Retry-After. Routing does not depend on how a request travels, so these tests give the client a
// plain HTTP transport over a stubbed `fetch` (this vitest-plugin has no fetchMock); the sealed
// channel has its own tests (shared/channel/, and the stack suites run everything through it).
import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ChannelUnavailableError } from "../../shared/channel/client.ts";
import { SigilError } from "../../shared/errors.ts";
import { runLimitsSchema } from "../../shared/limits.ts";
import type { EdgeConfig } from "../config.ts";
import type { OperationName } from "../../shared/operations.ts";
import {
  enclave,
  EnclaveLostError,
  proxyToEnclave,
  type CallContext,
  type EnclaveTransport,
  type Idempotent,
} from "./client.ts";

const ids = { requestId: "9b2f4c1e-0d7a-4e55-8b1a-2f6c3d4e5f60", correlationId: "trace-1" };

function config(enclaveUrls: string[]): EdgeConfig {
  return {
    env: "test",
    version: "0.0.0",
    enclaveUrls,
    channel: {
      identityKey: undefined,
      allowSimulated: false,
      allowedComposeHashes: [],
      pccsUrl: "http://127.0.0.1:1/",
      checkGovernance: false,
    },
    rpcUrl: "",
    publicRpcUrl: "",
    chainId: 31337,
    chainName: "anvil",
    contractAddress: undefined,
    events: { fromBlock: 0n, windowBlocks: 10_000 },
    rateLimits: { perKey: 10, perIp: 10, openPerIp: 10, openWritesPerHour: 10 },
    maxInFlight: 0,
    maxInFlightPerClient: 0,
    bodyTimeoutMs: 10_000,
    keyPollMs: 2_000,
    commitDelayMs: 50,
    billing: false,
    limits: runLimitsSchema.parse({}),
    stripe: { secretKey: "", publishableKey: "", webhookSecret: "", apiBase: undefined },
    webhooks: { local: true, retryBaseMs: 10_000 },
    transactions: { chains: new Map(), followMs: 2_000, dropAfterMs: 300_000 },
  };
}

/** Each test its own made-up hosts, so the client's per-isolate memory of failures does not leak between tests. */
let n = 0;
const host = (name: string) => `http://${name}-${++n}.enclave.test`;

/** The SigilError `p` rejects with (the test fails if it resolves or rejects with something else). */
const failure = (p: Promise<unknown>): Promise<SigilError> =>
  p.then(
    () => expect.unreachable("the call succeeded"),
    (e: unknown) => {
      expect(e).toBeInstanceOf(SigilError);
      return e as SigilError;
    },
  );

/** The stubbed network's "the request went out and no answer came back". */
class LostAnswer extends Error {}

/**
 * A stand-in for the network: `answers` maps a base URL to its answer (or throws LostAnswer: the
 * request was delivered, the answer lost); any other URL fails to connect.
 */
function network(answers: Record<string, () => Response>) {
  const calls: Array<{ url: string; init: RequestInit | undefined }> = [];
  const stub = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    calls.push({ url, init });
    const base = Object.keys(answers).find((b) => url.startsWith(`${b}/`));
    if (base === undefined) throw new ChannelUnavailableError("connection refused");
    return (answers[base] as () => Response)();
  });
  vi.stubGlobal("fetch", stub);
  return calls;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

/**
 * The operation as plain HTTP: what the tests' stubbed network sees (`POST <base>/operation/<op>`,
 * the input as the body, the ids and Idempotency-Key as headers), its answer read back as the
 * enclave's (a 2xx body is the output; otherwise the error body, status and Retry-After). A refused
 * connection is the stub's ChannelUnavailableError (nothing delivered); anything else it throws,
 * the request may have been acted on. The probe is a HEAD of the enclave's /channel.
 */
const plain: EnclaveTransport = {
  async send(base, request, timeoutMs, beforeSeal) {
    try {
      await beforeSeal?.(`key of ${base}`);
    } catch (err) {
      throw new ChannelUnavailableError(`${base}: ${String(err)}`);
    }
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-request-id": request.ids.request_id,
    };
    if (request.ids.correlation_id) headers["x-correlation-id"] = request.ids.correlation_id;
    if (request.idempotency_key) headers["idempotency-key"] = request.idempotency_key;
    const res = await fetch(`${base}/operation/${request.op}`, {
      method: "POST",
      headers,
      body: JSON.stringify(request.input),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await res.json()) as { error?: { code: string; message: string; details?: unknown } };
    const replayed = res.headers.get("idempotent-replayed") === "true" ? { replayed: true as const } : {};
    if (res.ok) return { ok: true, output: body, ...replayed };
    const retry = res.headers.get("retry-after");
    return {
      ok: false,
      status: res.status,
      error: { request_id: request.ids.request_id, ...(body.error as { code: string; message: string }) },
      ...(retry === null ? {} : { retry_after: Number(retry) }),
      ...replayed,
    };
  },
  async probe(base) {
    await fetch(`${base}/channel`, { method: "HEAD" });
  },
  async instance(base) {
    return `key of ${base}`;
  },
};

/** `enclave.call` over the plain transport, as the request with ids `ids`. */
const call = (
  c: EdgeConfig,
  op: OperationName,
  input: unknown,
  extra: Omit<CallContext, "config" | "ids"> = {},
): Promise<unknown> => enclave.call(op, input as never, { config: c, ids, transport: plain, ...extra });

describe("enclave.call without a reachable enclave", () => {
  it("with no enclave configured, throws 503 enclave_unavailable with a Retry-After", async () => {
    const err = await failure(call(config([]), "new_account", {}));
    expect(err.code).toBe("enclave_unavailable");
    expect(err.status).toBe(503);
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
  });

  it("with enclaves on closed loopback ports, tries them all and throws 503 enclave_unavailable with a Retry-After", async () => {
    // The edge's own channel client: nothing can be pinned, so nothing was delivered, so each is tried.
    const urls: string[] = [];
    const realFetch = fetch;
    vi.stubGlobal("fetch", (input: RequestInfo | URL, init?: RequestInit) => {
      urls.push(String(input));
      return realFetch(input, init);
    });
    const withIdentity = {
      ...config(["http://127.0.0.1:1", "http://127.0.0.1:9"]),
      channel: { ...config([]).channel, identityKey: "11".repeat(32) },
    };
    const err = await failure(
      enclave.call("new_account", { account_name: "x" }, { config: withIdentity, ids, timeoutMs: 5_000 }),
    );
    expect(err.code).toBe("enclave_unavailable");
    expect(err.status).toBe(503);
    expect(err.retryAfterSeconds).toBe(5);
    expect(urls.sort()).toEqual(["http://127.0.0.1:1/channel", "http://127.0.0.1:9/channel"]);
    // Nothing internal in what the client will read.
    expect(err.message).not.toMatch(/127\.0\.0\.1|refused|ECONN/i);
  });

  it("without a channel identity, the edge's own client refuses with 503 enclave_unavailable rather than send anything", async () => {
    const err = await failure(
      enclave.call("new_account", { account_name: "x" }, { config: config(["http://127.0.0.1:1"]), ids }),
    );
    expect(err.code).toBe("enclave_unavailable");
    expect(err.message).toMatch(/channel identity/);
  });

  it("through the edge: a request that needs an enclave gets 503, the error body and Retry-After", async () => {
    const res = await SELF.fetch("http://edge/core/v1/new_account", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ account_name: "x" }),
    });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await res.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe("enclave_unavailable");
    expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  });
});

describe("enclave.call routing (stubbed network)", () => {
  it("routes around a dead enclave to a live one, sending the request and both request ids", async () => {
    const dead = host("dead");
    const live = host("live");
    const calls = network({ [live]: () => Response.json({ ok: 1 }) });
    // The list rotates from call to call: of two calls, one starts at the dead enclave.
    expect(await call(config([dead, live]), "new_account", { account_name: "x" })).toEqual({ ok: 1 });
    expect(await call(config([dead, live]), "new_account", { account_name: "x" })).toEqual({ ok: 1 });
    expect(calls.some((c) => c.url.startsWith(dead))).toBe(true);
    const sent = calls.find((c) => c.url.startsWith(live));
    expect(sent?.url).toBe(`${live}/operation/new_account`);
    expect(sent?.init?.method).toBe("POST");
    expect(JSON.parse(String(sent?.init?.body))).toEqual({ account_name: "x" });
    const headers = new Headers(sent?.init?.headers);
    expect(headers.get("x-request-id")).toBe(ids.requestId);
    expect(headers.get("x-correlation-id")).toBe("trace-1");
  });

  it("treats an enclave's 503 like a dead one and tries the next", async () => {
    const busy = host("busy");
    const live = host("live");
    network({
      [busy]: () => Response.json({ error: { code: "enclave_unavailable", message: "starting" } }, { status: 503 }),
      [live]: () => Response.json({ ok: 2 }),
    });
    expect(await call(config([busy, live]), "add_group", {})).toEqual({ ok: 2 });
    expect(await call(config([live, busy]), "add_group", {})).toEqual({ ok: 2 });
  });

  it("skips a recently failed enclave: the healthy one is asked first on the next calls, whatever the rotation", async () => {
    const dead = host("dead");
    const live = host("live");
    const calls = network({ [live]: () => Response.json({ ok: 3 }) });
    // Fails alone first (the order of a two-enclave list rotates from call to call).
    await failure(call(config([dead]), "add_group", {}));
    calls.length = 0;
    for (let i = 0; i < 4; i++) await call(config([dead, live]), "add_group", {});
    expect(calls.every((c) => c.url.startsWith(live))).toBe(true);
    expect(calls).toHaveLength(4);
  });

  it("passes an enclave's 4xx error through as it is (code, message, details, Retry-After) without asking another enclave", async () => {
    const a = host("a");
    const b = host("b");
    const calls = network({
      [a]: () =>
        Response.json(
          { error: { code: "executor_busy", message: "all sandboxes are busy", details: { queue: 3 } } },
          { status: 429, headers: { "retry-after": "7" } },
        ),
      [b]: () =>
        Response.json(
          { error: { code: "executor_busy", message: "all sandboxes are busy", details: { queue: 3 } } },
          { status: 429, headers: { "retry-after": "7" } },
        ),
    });
    const err = await failure(call(config([a, b]), "sigil_action", {}));
    expect(err.code).toBe("executor_busy");
    expect(err.status).toBe(429);
    expect(err.message).toBe("all sandboxes are busy");
    expect(err.details).toEqual({ queue: 3 });
    expect(err.retryAfterSeconds).toBe(7);
    expect(calls).toHaveLength(1);
  });

  it("hides what the client must not see: an unknown code or a 500 becomes internal_error with a generic message", async () => {
    const odd = host("odd");
    network({
      [odd]: () =>
        Response.json(
          { error: { code: "revert_0xdeadbeef", message: "execution reverted: secret detail" } },
          { status: 500 },
        ),
    });
    const err = await failure(call(config([odd]), "add_group", {}));
    expect(err.code).toBe("internal_error");
    expect(err.message).not.toMatch(/revert|secret/);
  });

  it("sends a write to no second enclave once the first may have acted on it: 503 enclave_unavailable, the other enclave never asked", async () => {
    const lost = host("lost");
    const live = host("live");
    const calls = network({
      [lost]: () => {
        throw new LostAnswer("the connection dropped after the request was sent");
      },
      [live]: () => Response.json({ ok: 4 }),
    });
    const err = await failure(call(config([lost, live]), "add_group", {}));
    expect(err.code).toBe("enclave_unavailable");
    expect(err.retryAfterSeconds).toBe(5);
    expect(calls.map((c) => c.url)).toEqual([`${lost}/operation/add_group`]);
  });

  it("says that a delivered write got no answer (EnclaveLostError, naming the enclave), unlike one that reached no enclave", async () => {
    const lost = host("lost");
    network({
      [lost]: () => {
        throw new LostAnswer("the enclave died mid-request");
      },
    });
    const delivered = await failure(call(config([lost]), "sigil_action", {}));
    expect(delivered).toBeInstanceOf(EnclaveLostError);
    expect((delivered as EnclaveLostError).enclave).toBe(lost);
    const nowhere = await failure(call(config([host("dead")]), "sigil_action", {}));
    expect(nowhere).not.toBeInstanceOf(EnclaveLostError);
    expect(nowhere.code).toBe("enclave_unavailable");
  });

  it("under an Idempotency-Key: sends the key, tells which enclave and channel key it goes to before sending, goes only where told, and reports an answer from the enclave's memory", async () => {
    const a = host("a");
    const b = host("b");
    const calls = network({
      [a]: () => Response.json({ ok: "a" }),
      [b]: () => Response.json({ ok: "b" }, { headers: { "idempotent-replayed": "true" } }),
    });
    const targets: string[] = [];
    const sent = {
      key: "order-7",
      beforeSend: async (base: string, instance: string) => void targets.push(`${base} ${instance}`),
    };
    const onlyB = { base: b, instance: `key of ${b}` };
    for (let i = 0; i < 3; i++)
      expect(await call(config([a, b]), "add_group", {}, { idempotent: { ...sent, only: onlyB } })).toEqual({
        ok: "b",
      });
    expect(calls.map((c) => c.url)).toEqual(Array(3).fill(`${b}/operation/add_group`));
    expect(new Headers(calls[0]?.init?.headers).get("idempotency-key")).toBe("order-7");
    expect(targets).toEqual(Array(3).fill(`${b} key of ${b}`));
    const once: Idempotent = { ...sent, only: onlyB };
    await call(config([a, b]), "add_group", {}, { idempotent: once });
    expect(once.replayed).toBe(true);
    const fresh: Idempotent = { ...sent, only: { base: a, instance: `key of ${a}` } };
    await call(config([a, b]), "add_group", {}, { idempotent: fresh });
    expect(fresh.replayed).toBeUndefined();
  });

  it("under an Idempotency-Key bound to one enclave process: sends nothing to that enclave once it holds another channel key (503, not delivered)", async () => {
    const a = host("a");
    const calls = network({ [a]: () => Response.json({ ok: "a" }) });
    let told = 0;
    const err = await failure(
      call(
        config([a]),
        "add_group",
        {},
        {
          idempotent: {
            key: "order-8",
            only: { base: a, instance: "the key it had before it restarted" },
            beforeSend: async () => void told++,
          },
        },
      ),
    );
    expect(err.code).toBe("enclave_unavailable");
    expect(err).not.toBeInstanceOf(EnclaveLostError);
    expect(calls).toEqual([]);
    expect(told).toBe(0);
  });

  it("a nonce quote whose operation fails comes back as the error it names, an internal one with nothing of the enclave's message", async () => {
    const odd = host("odd");
    network({
      [odd]: () => Response.json({ error: { code: "revert_0xdeadbeef", message: "secret detail" } }, { status: 500 }),
    });
    const err = await failure(
      proxyToEnclave(
        config([odd]),
        ids,
        new URL("http://edge/attestation?nonce=ab"),
        { clientIp: "198.51.100.7" },
        plain,
      ),
    );
    expect(err.code).toBe("internal_error");
    expect(err.message).not.toMatch(/secret/);
    const busy = host("busy");
    network({
      [busy]: () =>
        Response.json(
          { error: { code: "rate_limited", message: "too many nonce quotes" } },
          { status: 429, headers: { "retry-after": "3" } },
        ),
    });
    const limited = await failure(
      proxyToEnclave(config([busy]), ids, new URL("http://edge/attestation?nonce=ab"), {}, plain),
    );
    expect(limited).toMatchObject({ code: "rate_limited", message: "too many nonce quotes", retryAfterSeconds: 3 });
  });

  it("sends a read on to the next enclave even when the first may have received it", async () => {
    const lost = host("lost");
    const live = host("live");
    network({
      [lost]: () => {
        throw new LostAnswer("no answer");
      },
      [live]: () => Response.json({ timeout_ms: 5 }),
    });
    expect(await call(config([lost, live]), "health", {})).toEqual({ timeout_ms: 5 });
  });

  it("passes a 503 that says a transaction was sent to the client, without asking another enclave", async () => {
    const sent = host("sent");
    const live = host("live");
    const tx = `0x${"ab".repeat(32)}`;
    const calls = network({
      [sent]: () =>
        Response.json(
          { error: { code: "chain_unavailable", message: "no receipt yet", details: { transaction_hash: tx } } },
          { status: 503, headers: { "retry-after": "3" } },
        ),
      [live]: () => Response.json({ ok: 5 }),
    });
    const err = await failure(call(config([sent, live]), "add_group", {}));
    expect(err.code).toBe("chain_unavailable");
    expect(err.details).toEqual({ transaction_hash: tx });
    expect(calls).toHaveLength(1);
  });

  it("passes a run's 503 ipfs_unavailable (the enclave's IPFS gateway is down) to the client with its Retry-After, and keeps that enclave in rotation", async () => {
    const gatewayDown = host("gateway-down");
    const other = host("other");
    const calls = network({
      [gatewayDown]: () =>
        Response.json(
          { error: { code: "ipfs_unavailable", message: "the IPFS gateway answered 503; try again shortly" } },
          { status: 503, headers: { "retry-after": "5" } },
        ),
      [other]: () => Response.json({ ok: 6 }),
    });
    const err = await failure(call(config([gatewayDown]), "sigil_action", {}));
    expect(err.code).toBe("ipfs_unavailable");
    expect(err.status).toBe(503);
    expect(err.retryAfterSeconds).toBe(5);
    // Not skipped: with a healthy neighbour, each of two calls (the order rotates) starts where it
    // would have, so one of them is answered by the enclave whose gateway is down.
    calls.length = 0;
    const answers = await Promise.allSettled([0, 1].map(() => call(config([gatewayDown, other]), "sigil_action", {})));
    expect(calls.map((c) => c.url).filter((u) => u.startsWith(gatewayDown))).toHaveLength(1);
    expect(calls.some((c) => c.url.startsWith(`${gatewayDown}/channel`))).toBe(false);
    expect(answers.filter((a) => a.status === "rejected")).toHaveLength(1);
  });

  it("an enclave's 503 chain_unavailable (the chain unreachable from it, nothing sent): another enclave is asked, and when none does better the client gets chain_unavailable with its Retry-After, the enclave kept in rotation", async () => {
    const chainDown = host("chain-down");
    const other = host("other");
    const answer = () =>
      Response.json(
        { error: { code: "chain_unavailable", message: "the chain could not be reached; try again shortly" } },
        { status: 503, headers: { "retry-after": "5" } },
      );
    const calls = network({ [chainDown]: answer, [other]: () => Response.json({ ok: 7 }) });
    // Alone, its answer is the client's: the chain is down, not the enclave.
    for (const op of ["sigil_action", "add_group", "health"] as const) {
      const err = await failure(call(config([chainDown]), op, {}));
      expect(err.code).toBe("chain_unavailable");
      expect(err.status).toBe(503);
      expect(err.retryAfterSeconds).toBe(5);
    }
    // Not skipped nor made suspect: the next request is sent to it at once, with no probe first.
    calls.length = 0;
    await failure(call(config([chainDown]), "sigil_action", {}));
    expect(calls.map((c) => c.url)).toEqual([`${chainDown}/operation/sigil_action`]);
    // With a neighbour that reaches the chain, the request goes on to it.
    expect(await call(config([chainDown, other]), "add_group", {})).toEqual({ ok: 7 });
    expect(await call(config([other, chainDown]), "add_group", {})).toEqual({ ok: 7 });
  });

  it("probes an enclave that failed before sending it a write, and skips it while the probe fails", async () => {
    const flaky = host("flaky");
    const live = host("live");
    let up = false;
    const calls = network({
      [flaky]: () => {
        if (!up) throw new ChannelUnavailableError("connection refused");
        return Response.json({ ok: "flaky" });
      },
      [live]: () => Response.json({ ok: "live" }),
    });
    // It fails once (nothing delivered): a write that finds it first goes on to the live one.
    calls.length = 0;
    await failure(call(config([flaky]), "add_group", {}));
    expect(calls.map((c) => c.url)).toEqual([`${flaky}/operation/add_group`]);
    expect(await call(config([live, flaky]), "add_group", {})).toEqual({ ok: "live" });
    // Alone in the list and still down: its probe fails, so the write itself is never sent to it.
    calls.length = 0;
    await failure(call(config([flaky]), "add_group", {}));
    expect(calls.map((c) => c.url)).toEqual([`${flaky}/channel`]);
    // Back up: the probe answers, then the write is sent, and it is trusted again (no probe next time).
    up = true;
    calls.length = 0;
    expect(await call(config([flaky]), "add_group", {})).toEqual({ ok: "flaky" });
    expect(calls.map((c) => c.url)).toEqual([`${flaky}/channel`, `${flaky}/operation/add_group`]);
    calls.length = 0;
    await call(config([flaky]), "add_group", {});
    expect(calls.map((c) => c.url)).toEqual([`${flaky}/operation/add_group`]);
  });
});
