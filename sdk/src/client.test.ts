// The client's own behaviour against a scripted fetch: where it sends what, which answers it
// retries (and with which Idempotency-Key), what each failure becomes, pages, aborts.
import { describe, expect, it, vi } from "vitest";
import { BUSY_RETRIES, createSigilClient } from "./client.ts";
import { SigilError, SigilNetworkError, SigilTimeoutError } from "./errors.ts";
import { operations } from "./generated/api.ts";

type Seen = { url: string; method: string; headers: Record<string, string>; body: string | undefined };

/** A fetch that answers from `answers` in turn (a Response, or an Error to throw) and records each request. */
function scripted(answers: Array<Response | Error | ((seen: Seen) => Response | Promise<Response>)>) {
  const seen: Seen[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const s: Seen = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: Object.fromEntries(
        Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
      ),
      body: init?.body as string | undefined,
    };
    seen.push(s);
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next(s) : next;
  };
  return { fetch: fetch as typeof globalThis.fetch, seen };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": "req-1", ...headers },
  });
const errorAnswer = (status: number, code: string, headers: Record<string, string> = {}) =>
  json(status, { error: { code, message: `${code} happened`, request_id: "req-err", details: { why: 1 } } }, headers);

describe("createSigilClient", () => {
  it("has one method per operation of the table, named by its operationId", () => {
    const client = createSigilClient({ baseUrl: "http://127.0.0.1:1" });
    for (const name of Object.keys(operations))
      expect(typeof (client as unknown as Record<string, unknown>)[name], name).toBe("function");
  });

  it("sends the key, the JSON body and a fresh Idempotency-Key on a write; parameters as the query on a read", async () => {
    const { fetch, seen } = scripted([json(200, { success: true }), json(200, [])]);
    const client = createSigilClient({ baseUrl: "http://h.test/core/v1/", apiKey: "k1", fetch });
    await client.addGroup({
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [],
    } as never);
    await client.listWalletsInGroup({ group_id: 7n, page_size: 5 });
    expect(seen[0]).toMatchObject({ url: "http://h.test/core/v1/add_group", method: "POST" });
    expect(seen[0]!.headers["x-api-key"]).toBe("k1");
    expect(seen[0]!.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(seen[0]!.body!)).toMatchObject({ group_name: "g" });
    expect(seen[1]).toMatchObject({
      url: "http://h.test/core/v1/list_wallets_in_group?group_id=7&page_size=5",
      method: "GET",
    });
    expect(seen[1]!.headers["idempotency-key"]).toBeUndefined();
  });

  it("public operations carry no key; path parameters are filled in", async () => {
    const { fetch, seen } = scripted([new Response("-----BEGIN-----", { status: 200 })]);
    const client = createSigilClient({ baseUrl: "http://h.test", apiKey: "k1", fetch });
    expect(await client.getEvidence({ name: "a b.pem" })).toBe("-----BEGIN-----");
    expect(seen[0]!.url).toBe("http://h.test/evidences/a%20b.pem");
    expect(seen[0]!.headers["x-api-key"]).toBeUndefined();
  });

  it("retries a write after a 429's Retry-After with the same Idempotency-Key", async () => {
    const { fetch, seen } = scripted([
      errorAnswer(429, "rate_limited", { "retry-after": "0" }),
      errorAnswer(409, "request_in_progress", { "retry-after": "0" }),
      json(200, { success: true, wallet_address: "0x1" }),
    ]);
    const client = createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch });
    expect(await client.createWallet({}, { idempotencyKey: "same-key" })).toMatchObject({ wallet_address: "0x1" });
    expect(seen.map((s) => s.headers["idempotency-key"])).toEqual(["same-key", "same-key", "same-key"]);
  });

  it("GET create_wallet acts: it carries an Idempotency-Key too, the same on its retry", async () => {
    const { fetch, seen } = scripted([new TypeError("fetch failed"), json(200, { wallet_address: "0x1" })]);
    await createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch }).createWalletByGet();
    expect(seen).toHaveLength(2);
    expect(seen[0]!.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.headers["idempotency-key"]).toBe(seen[0]!.headers["idempotency-key"]);
  });

  it("does not retry a 503 without Retry-After, nor past the retries allowed; the error keeps code, status, details, request id", async () => {
    const { fetch, seen } = scripted([errorAnswer(503, "enclave_unavailable")]);
    const err = await createSigilClient({ baseUrl: "http://h.test", fetch })
      .getVersion()
      .catch((e: unknown) => e);
    expect(seen).toHaveLength(1);
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "enclave_unavailable", status: 503, details: { why: 1 }, requestId: "req-err" });
    expect(String(err)).toBe("enclave_unavailable: enclave_unavailable happened (request req-err)");

    const again = scripted([
      errorAnswer(429, "rate_limited", { "retry-after": "0" }),
      errorAnswer(429, "rate_limited", { "retry-after": "0" }),
    ]);
    const limited = await createSigilClient({ baseUrl: "http://h.test", fetch: again.fetch, retries: 1 })
      .getVersion()
      .catch((e: unknown) => e);
    expect(again.seen).toHaveLength(2);
    expect(limited).toMatchObject({ code: "rate_limited", status: 429, retryAfter: 0 });
  });

  it("waits a Retry-After and up to half of it more, at random, so clients told alike do not come back in the same instant", async () => {
    const waits: number[] = [];
    const setTimeoutOf = globalThis.setTimeout;
    // The client's waits are recorded and cut short; its request timeout (30 s) is left as it is.
    const timers = vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      if (ms !== undefined && ms < 20_000) waits.push(ms);
      return setTimeoutOf(fn, ms !== undefined && ms < 20_000 ? 0 : ms);
    }) as typeof setTimeout);
    const random = vi.spyOn(Math, "random").mockReturnValueOnce(0).mockReturnValueOnce(0.5).mockReturnValueOnce(0.999);
    try {
      const { fetch } = scripted([
        errorAnswer(503, "enclave_unavailable", { "retry-after": "2" }),
        errorAnswer(503, "enclave_unavailable", { "retry-after": "2" }),
        errorAnswer(429, "executor_busy", { "retry-after": "2" }),
        json(200, { success: true, wallet_address: "0x1" }),
      ]);
      const client = createSigilClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k", fetch, retries: 3 });
      await client.createWallet({});
    } finally {
      timers.mockRestore();
      random.mockRestore();
    }
    expect(waits).toEqual([2000, 2500, 2999]);
  });

  it("retries 503 edge_busy (refused before any work) on a budget of its own, for any call whose caller allows retries", async () => {
    const busy = () => errorAnswer(503, "edge_busy", { "retry-after": "0" });
    // More refusals than `retries`: they do not spend it.
    const a = scripted([busy(), busy(), busy(), json(200, { success: true, wallet_address: "0x1" })]);
    await createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: a.fetch, retries: 1 }).createWallet({});
    expect(a.seen).toHaveLength(4);
    expect(new Set(a.seen.map((s) => s.headers["idempotency-key"])).size).toBe(1);
    // Past BUSY_RETRIES, the call's own retries, then the error.
    const b = scripted(Array.from({ length: BUSY_RETRIES + 2 }, busy));
    const err = await createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: b.fetch, retries: 1 })
      .createWallet({})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SigilError);
    expect((err as SigilError).code).toBe("edge_busy");
    expect(b.seen).toHaveLength(BUSY_RETRIES + 2);
    // A call that is otherwise never retried (a PUT without an Idempotency-Key) is retried on edge_busy
    // — nothing acted on it — and on nothing else.
    const d = scripted([busy(), json(200, { retry_base_ms: 1000 })]);
    const unsafe = createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: d.fetch });
    await unsafe.updateWebhookSettings({} as never);
    expect(d.seen).toHaveLength(2);
    const e = scripted([errorAnswer(503, "enclave_unavailable", { "retry-after": "0" }), json(200, {})]);
    await expect(
      createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: e.fetch }).updateWebhookSettings({} as never),
    ).rejects.toMatchObject({ code: "enclave_unavailable" });
    expect(e.seen).toHaveLength(1);
    // retries: 0 is no retry at all.
    const c = scripted([busy(), json(200, { success: true, wallet_address: "0x1" })]);
    await expect(
      createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: c.fetch, retries: 0 }).createWallet({}),
    ).rejects.toMatchObject({ code: "edge_busy" });
    expect(c.seen).toHaveLength(1);
  });

  it("a Retry-After longer than maxRetryDelayMs is the caller's: the error comes at once", async () => {
    const { fetch, seen } = scripted([errorAnswer(429, "rate_limited", { "retry-after": "120" })]);
    const err = await createSigilClient({ baseUrl: "http://h.test", fetch, maxRetryDelayMs: 1000 })
      .getVersion()
      .catch((e: unknown) => e);
    expect(seen).toHaveLength(1);
    expect(err).toMatchObject({ code: "rate_limited", retryAfter: 120 });
  });

  it("a failed connection: a read is tried again, a POST with no Idempotency-Key is not", async () => {
    const read = scripted([new TypeError("fetch failed"), json(200, { name: "sigil", version: "1" })]);
    expect(await createSigilClient({ baseUrl: "http://h.test", fetch: read.fetch }).getVersion()).toEqual({
      name: "sigil",
      version: "1",
    });
    expect(read.seen).toHaveLength(2);

    const hook = scripted([new TypeError("fetch failed")]);
    const err = await createSigilClient({ baseUrl: "http://h.test", fetch: hook.fetch })
      .stripeWebhook({} as never)
      .catch((e: unknown) => e);
    expect(hook.seen).toHaveLength(1);
    expect(err).toBeInstanceOf(SigilNetworkError);
    expect(err).toMatchObject({ code: "network_error", status: 0 });
  });

  it("a call with no answer within its timeout is a SigilTimeoutError, not retried", async () => {
    let calls = 0;
    const hang = ((_: unknown, init?: RequestInit) => {
      calls++;
      return new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
      );
    }) as typeof globalThis.fetch;
    const err = await createSigilClient({ baseUrl: "http://h.test", fetch: hang, timeoutMs: 50 })
      .getVersion()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SigilTimeoutError);
    expect(err).toBeInstanceOf(SigilNetworkError);
    expect(calls).toBe(1);
  });

  it("an answer whose body does not arrive within the timeout is a SigilTimeoutError too, not the stream's DOMException", async () => {
    // The headers come at once; the body never does, and the call's signal ends its stream.
    const slowBody = ((_: unknown, init?: RequestInit) => {
      const body = new ReadableStream({
        start(controller) {
          init?.signal?.addEventListener("abort", () => controller.error(init.signal?.reason));
        },
      });
      return Promise.resolve(new Response(body, { status: 200, headers: { "content-type": "application/json" } }));
    }) as typeof globalThis.fetch;
    const err = await createSigilClient({ baseUrl: "http://h.test", fetch: slowBody, timeoutMs: 50 })
      .getVersion()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SigilTimeoutError);
    expect(err).toMatchObject({ code: "timeout", status: 0 });
  });

  it("the caller's abort rejects with the signal's reason, also while waiting to retry", async () => {
    const controller = new AbortController();
    const { fetch } = scripted([errorAnswer(429, "rate_limited", { "retry-after": "5" })]);
    const pending = createSigilClient({ baseUrl: "http://h.test", fetch }).getVersion(undefined, {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error("stop")), 20);
    await expect(pending).rejects.toThrow("stop");
  });

  it("an answer that is not the service's (no error body, not JSON) is unexpected_response", async () => {
    const { fetch } = scripted([
      new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }),
      new Response("not json", { status: 200 }),
    ]);
    const client = createSigilClient({ baseUrl: "http://h.test", fetch, retries: 0 });
    await expect(client.getVersion()).rejects.toMatchObject({ code: "unexpected_response", status: 502 });
    await expect(client.getVersion()).rejects.toMatchObject({ code: "unexpected_response", status: 200 });
  });

  it("all.<list> yields every item, page after page, until X-Total-Count", async () => {
    const page = (items: number[], total: number) =>
      json(
        200,
        items.map((i) => ({ id: String(i) })),
        { "x-total-count": String(total) },
      );
    const { fetch, seen } = scripted([page([0, 1], 5), page([2, 3], 5), page([4], 5)]);
    const ids: string[] = [];
    for await (const w of createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch }).all.listWallets({
      page_size: 2,
    }))
      ids.push(w.id);
    expect(ids).toEqual(["0", "1", "2", "3", "4"]);
    expect(seen.map((s) => new URL(s.url).searchParams.get("page_number"))).toEqual(["0", "1", "2"]);
  });

  it("all.<cursor-paged> (the table's paging: cursor) sends limit, then each next_cursor, until it is null; the items are the answer's pageItems field", async () => {
    expect(operations.audit).toMatchObject({ paging: "cursor", pageItems: "events" });
    expect(operations.listWallets).toMatchObject({ paging: "page", pageItems: null });
    const event = (n: number) => ({
      block_number: n,
      block_time: null,
      tx_hash: "0x",
      log_index: 0,
      event: "GroupAdded",
      actor: null,
      summary: `group ${n} added`,
      args: {},
    });
    const { fetch, seen } = scripted([
      json(200, { events: [event(9), event(8)], next_cursor: "c1" }),
      json(200, { events: [event(7)], next_cursor: "c2" }),
      json(200, { events: [], next_cursor: null }),
    ]);
    const blocks: number[] = [];
    for await (const e of createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch }).all.audit({
      limit: 2,
      from_block: 5,
    }))
      blocks.push(e.block_number);
    expect(blocks).toEqual([9, 8, 7]);
    expect(seen.map((s) => [...new URL(s.url).searchParams].sort())).toEqual([
      [
        ["from_block", "5"],
        ["limit", "2"],
      ],
      [
        ["cursor", "c1"],
        ["from_block", "5"],
        ["limit", "2"],
      ],
      [
        ["cursor", "c2"],
        ["from_block", "5"],
        ["limit", "2"],
      ],
    ]);
    // Resuming from a cursor, with the default page size.
    const resumed = scripted([json(200, { events: [event(1)], next_cursor: null })]);
    for await (const e of createSigilClient({ baseUrl: "http://h.test", apiKey: "k", fetch: resumed.fetch }).all.audit({
      cursor: "c9",
    }))
      blocks.push(e.block_number);
    expect(new URL(resumed.seen[0]!.url).search).toBe("?limit=100&cursor=c9");
  });

  it("billing without a key sends a fresh X-Wallet-Auth from the function it is given", async () => {
    let n = 0;
    const { fetch, seen } = scripted([json(200, { balance_cents: 1 }), json(200, { balance_cents: 1 }), json(200, [])]);
    const client = createSigilClient({ baseUrl: "http://h.test", walletAuth: () => `auth-${++n}`, fetch });
    await client.getBalance();
    await client.getBalance();
    await client.listWallets();
    expect(seen.map((s) => s.headers["x-wallet-auth"])).toEqual(["auth-1", "auth-2", undefined]);
  });

  it("refuses a base URL that is not http(s)", () => {
    expect(() => createSigilClient({ baseUrl: "127.0.0.1:8787" })).toThrow(/http/);
  });
});
