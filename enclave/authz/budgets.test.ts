// The enclave's side of budgets (authz/budgets.ts), against a fake edge: askBudgets retries what may
// pass next time (a network error, a 5xx, an attempt that hangs) three times at most, not a 4xx, and
// ends in BudgetUnavailableError (the signature is refused, never released unchecked); RunBudgets
// sends a real run's reservation as the store expects it, and a dry run adds its own would-be
// signatures to the counters it peeked at, so its later requests meet the budgets as a run's would.
import {
  keccak256,
  parseEther,
  serializeTransaction,
  type Address,
  type Hex,
  type TransactionSerializable,
} from "viem";
import { describe, expect, it } from "vitest";
import {
  BUDGET_PATH,
  budgetLimits,
  budgetState,
  countedDigest,
  type BudgetAnswer,
  type BudgetLimit,
  type BudgetRequest,
} from "../../shared/guardrails/budgets.ts";
import type { Budget } from "../../shared/guardrails/schema.ts";
import { askBudgets, BudgetUnavailableError, RunBudgets } from "./budgets.ts";

const ACCESS = { url: "https://edge.example/some/path", token: "tok.en" };
const ACCOUNT = `0x${"11".repeat(32)}` as Hex;
const KEY_HASH = `0x${"22".repeat(32)}` as Hex;
const WALLET = "0x00000000000000000000000000000000000Aa11E" as Address;
const BOB = "0x0000000000000000000000000000000000000b0b";

const LIMIT: BudgetLimit = {
  name: "daily",
  per: "wallet",
  scope: "wallet",
  window_seconds: 86_400,
  max_value_wei: "500000000000000000",
};
const REQUEST: BudgetRequest = {
  op: "reserve",
  account: ACCOUNT,
  wallet: WALLET.toLowerCase(),
  ref: "run-1",
  digest: `0x${"33".repeat(32)}`,
  value_wei: "1",
  budgets: [LIMIT],
};
const GRANTED: BudgetAnswer = {
  granted: true,
  repeated: false,
  before: [budgetState(LIMIT, { count: 0, value: 0n, oldest: null })],
  after: [budgetState(LIMIT, { count: 1, value: 1n, oldest: 0 })],
};

type Call = { url: string; init: RequestInit; body: BudgetRequest };
type Step = Response | Error | ((init: RequestInit) => Promise<Response>);

/** A fetch that answers each call with the next step (the last one repeated), recording the calls. */
function fakeFetch(...steps: Step[]) {
  const calls: Call[] = [];
  const impl = (async (input: URL | RequestInfo, init?: RequestInit) => {
    calls.push({ url: String(input), init: init ?? {}, body: JSON.parse(String(init?.body)) as BudgetRequest });
    const step = steps[Math.min(calls.length - 1, steps.length - 1)] as Step;
    if (step instanceof Error) throw step;
    if (typeof step === "function") return step(init ?? {});
    return step.clone();
  }) as typeof fetch;
  return { impl, calls };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

describe("askBudgets", () => {
  it("POSTs the request as JSON to the edge's budget path with the run's token, and answers the store's answer", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    expect(await askBudgets(ACCESS, REQUEST, impl)).toEqual(GRANTED);
    expect(calls).toHaveLength(1);
    const call = calls[0] as Call;
    expect(call.url).toBe(`https://edge.example${BUDGET_PATH}`);
    expect(call.init.method).toBe("POST");
    expect(call.init.headers).toMatchObject({ "content-type": "application/json", authorization: "Bearer tok.en" });
    expect(call.body).toEqual(REQUEST);
    expect(call.init.signal).toBeInstanceOf(AbortSignal);
  });

  it("retries after a network error and a 5xx, and answers the third attempt", async () => {
    const { impl, calls } = fakeFetch(new TypeError("fetch failed"), json({ error: {} }, 503), json(GRANTED));
    expect(await askBudgets(ACCESS, REQUEST, impl)).toEqual(GRANTED);
    expect(calls).toHaveLength(3);
    // Each attempt is the same request (the store counts its digest once).
    expect(calls.map((c) => c.body)).toEqual([REQUEST, REQUEST, REQUEST]);
  });

  it("gives up after 3 attempts with BudgetUnavailableError naming the last failure", async () => {
    const errors = fakeFetch(new TypeError("connection refused"));
    const failure = await askBudgets(ACCESS, REQUEST, errors.impl).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(BudgetUnavailableError);
    expect((failure as Error).message).toContain("connection refused");
    expect(errors.calls).toHaveLength(3);

    const fives = fakeFetch(json({}, 502), json({}, 500));
    const refused = await askBudgets(ACCESS, REQUEST, fives.impl).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BudgetUnavailableError);
    expect((refused as Error).message).toContain("the edge answered 500");
    expect(fives.calls).toHaveLength(3);
  });

  it("does not retry a 4xx: the same request would be refused again", async () => {
    for (const status of [400, 401, 403, 404, 429]) {
      const { impl, calls } = fakeFetch(json({ error: { code: "x" } }, status), json(GRANTED));
      const failure = await askBudgets(ACCESS, REQUEST, impl).catch((e: unknown) => e);
      expect(failure, String(status)).toBeInstanceOf(BudgetUnavailableError);
      expect((failure as Error).message).toContain(`the edge answered ${status}`);
      expect(calls, String(status)).toHaveLength(1);
    }
    // A 4xx after a 5xx ends it there.
    const { impl, calls } = fakeFetch(json({}, 502), json({}, 401), json(GRANTED));
    await expect(askBudgets(ACCESS, REQUEST, impl)).rejects.toBeInstanceOf(BudgetUnavailableError);
    expect(calls).toHaveLength(2);
  });

  it("a garbled 200 is not an answer: it is retried, never taken as granted", async () => {
    const { impl, calls } = fakeFetch(new Response("<html>", { status: 200 }), json(GRANTED));
    expect(await askBudgets(ACCESS, REQUEST, impl)).toEqual(GRANTED);
    expect(calls).toHaveLength(2);
    const garbled = fakeFetch(new Response("not json", { status: 200 }));
    await expect(askBudgets(ACCESS, REQUEST, garbled.impl)).rejects.toBeInstanceOf(BudgetUnavailableError);
  });

  it("abandons an attempt that hangs at its timeout and tries again", async () => {
    const hang = (init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      });
    const { impl, calls } = fakeFetch(hang, json(GRANTED));
    const started = Date.now();
    expect(await askBudgets(ACCESS, REQUEST, impl)).toEqual(GRANTED);
    expect(calls).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - started).toBeLessThan(4_000);
  }, 10_000);

  it("the last attempt waits until the run's deadline (a slow store may have committed it), the others 2 s", async () => {
    const hang = (init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      });
    const { impl, calls } = fakeFetch(new TypeError("fetch failed"), new TypeError("fetch failed"), hang);
    const started = Date.now();
    const failure = await askBudgets(ACCESS, REQUEST, impl, started + 3_500).catch((e: unknown) => e);
    const waited = Date.now() - started;
    expect(failure).toBeInstanceOf(BudgetUnavailableError);
    expect(calls).toHaveLength(3);
    expect(waited).toBeGreaterThanOrEqual(3_300);
    expect(waited).toBeLessThan(5_000);
    // A deadline already past: the last attempt still gets 2 s.
    const late = fakeFetch(new TypeError("fetch failed"), new TypeError("fetch failed"), hang);
    const t = Date.now();
    await expect(askBudgets(ACCESS, REQUEST, late.impl, t - 1_000)).rejects.toBeInstanceOf(BudgetUnavailableError);
    expect(Date.now() - t).toBeGreaterThanOrEqual(1_900);
  }, 15_000);

  it("RunBudgets passes the run's deadline to the last attempt", async () => {
    const hang = (init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      });
    const { impl } = fakeFetch(new TypeError("x"), new TypeError("x"), hang);
    const started = Date.now();
    const budgets = new RunBudgets({
      access: { ...ACCESS, ref: "run-d" },
      runner: { account: ACCOUNT, keyHash: KEY_HASH, cid: "QmAction" },
      dry: false,
      fetchImpl: impl,
      deadline: started + 3_000,
    });
    await expect(
      budgets.reserve(WALLET, WALLET, [{ name: "n", window_seconds: 60, max_signatures: 1 }], {
        kind: "hash",
        digest: `0x${"11".repeat(32)}`,
      }),
    ).rejects.toBeInstanceOf(BudgetUnavailableError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_800);
  }, 15_000);

  it("refuses an edge URL that is not http(s) without fetching", async () => {
    for (const url of ["ftp://edge.example", "file:///etc/passwd", "ws://edge.example"]) {
      const { impl, calls } = fakeFetch(json(GRANTED));
      const failure = await askBudgets({ url, token: "t" }, REQUEST, impl).catch((e: unknown) => e);
      expect(failure, url).toBeInstanceOf(BudgetUnavailableError);
      expect(calls, url).toHaveLength(0);
    }
    // http is allowed (a local edge).
    const { impl } = fakeFetch(json(GRANTED));
    expect(await askBudgets({ url: "http://127.0.0.1:8787", token: "t" }, REQUEST, impl)).toEqual(GRANTED);
  });

  it("in production, only https: the token is never sent over plain http, nor after a redirect", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    await expect(
      askBudgets({ url: "http://edge.example", token: "t" }, REQUEST, impl, Date.now() + 5_000, false),
    ).rejects.toBeInstanceOf(BudgetUnavailableError);
    expect(calls).toHaveLength(0);
    expect(
      await askBudgets({ url: "https://edge.example", token: "t" }, REQUEST, impl, Date.now() + 5_000, false),
    ).toEqual(GRANTED);
    expect(calls[0]?.init.redirect).toBe("error");
  });

  // A URL that is no base for a path (mailto:, data:, javascript: — all pass budgetAccessSchema's
  // z.url()) is refused as the store's absence is, not thrown past reserveBudgets.
  it("refuses a URL that cannot be a base with BudgetUnavailableError", async () => {
    for (const url of ["mailto:ops@edge.example", "data:text/plain,x"]) {
      const { impl, calls } = fakeFetch(json(GRANTED));
      await expect(askBudgets({ url, token: "t" }, REQUEST, impl), url).rejects.toBeInstanceOf(BudgetUnavailableError);
      expect(calls).toHaveLength(0);
    }
  });
});

const eth = (s: string) => parseEther(s);
const BUDGETS: Budget[] = [{ name: "daily", window_seconds: 86_400, max_value_wei: eth("0.5").toString() }];
const transfer = (nonce: number, value = eth("0.2")): TransactionSerializable => ({
  chainId: 1,
  to: BOB,
  value,
  nonce,
  gas: 21_000n,
  maxFeePerGas: 1n,
  maxPriorityFeePerGas: 1n,
  type: "eip1559",
});
const runner = { account: ACCOUNT, keyHash: KEY_HASH, cid: "QmAction" };

/** A store that answers every peek with the same counters (`used` wei and `count` signatures already counted). */
function peekingStore(used: bigint, count: number, repeated = false) {
  const limits = budgetLimits(BUDGETS, runner);
  const at = Date.parse("2030-01-01T00:00:00.000Z");
  const before = limits.map((l) => budgetState(l, { count, value: used, oldest: count > 0 ? at : null }));
  const answer: BudgetAnswer = { granted: true, repeated, before, after: before };
  return fakeFetch(json(answer));
}

describe("RunBudgets", () => {
  it("without the edge's access, every budgeted signature is refused with BudgetUnavailableError", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    for (const dry of [false, true]) {
      const budgets = new RunBudgets({ access: undefined, runner, dry, fetchImpl: impl });
      await expect(
        budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(0) }),
      ).rejects.toBeInstanceOf(BudgetUnavailableError);
    }
    expect(calls).toHaveLength(0);
  });

  it("a real run reserves: op reserve, the account, the wallet lowercase, its ref, the payload's digest and value, the limits in their scopes", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "run-7" }, runner, dry: false, fetchImpl: impl });
    const perKey: Budget[] = [
      ...BUDGETS,
      { name: "per-key", per: "key", window_seconds: 3600, max_signatures: 3 },
      { name: "per-action", per: "action", window_seconds: 60, max_signatures: 1 },
    ];
    const tx = transfer(4);
    expect(await budgets.reserve(WALLET, WALLET, perKey, { kind: "transaction", transaction: tx })).toEqual(GRANTED);
    expect(calls).toHaveLength(1);
    const call = calls[0] as Call;
    expect(call.url).toBe(`https://edge.example${BUDGET_PATH}`);
    expect(call.init.headers).toMatchObject({ authorization: "Bearer tok.en" });
    expect(call.body).toEqual({
      op: "reserve",
      account: ACCOUNT,
      wallet: WALLET.toLowerCase(),
      ref: "run-7",
      digest: countedDigest(WALLET, keccak256(serializeTransaction(tx))),
      value_wei: eth("0.2").toString(),
      budgets: [
        { name: "daily", per: "wallet", scope: "wallet", window_seconds: 86_400, max_value_wei: eth("0.5").toString() },
        { name: "per-key", per: "key", scope: `key:${KEY_HASH}`, window_seconds: 3600, max_signatures: 3 },
        { name: "per-action", per: "action", scope: "action:QmAction", window_seconds: 60, max_signatures: 1 },
      ],
    });
    // The token's ref is not sent as part of the access (only in the body).
    expect(JSON.stringify(call.init.headers)).not.toContain("run-7");
  });

  it("a key's own counters: the body names them, and the digest is the signer's", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "run-10" }, runner, dry: false, fetchImpl: impl });
    const counters = `key:0x${"CD".repeat(32)}`;
    const tx = transfer(5);
    await budgets.reserve(counters, WALLET, BUDGETS, { kind: "transaction", transaction: tx });
    expect(calls[0]?.body).toMatchObject({
      wallet: counters.toLowerCase(),
      digest: countedDigest(WALLET, keccak256(serializeTransaction(tx))),
    });
  });

  it("a real run sends a raw digest's counted digest in lowercase with value 0, and answers the store's refusal as it is", async () => {
    const refusal: BudgetAnswer = {
      granted: false,
      budget: "daily",
      reason: "no room",
      observed: "1 of 1 signatures used",
      before: [],
      notify: true,
    };
    const { impl, calls } = fakeFetch(json(refusal));
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "run-8" }, runner, dry: false, fetchImpl: impl });
    const digest = `0x${"AB".repeat(32)}` as Hex;
    expect(await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "hash", digest })).toEqual(refusal);
    expect(calls[0]?.body).toMatchObject({
      op: "reserve",
      digest: countedDigest(WALLET, digest.toLowerCase() as Hex),
      value_wei: "0",
    });
    expect(calls[0]?.body.digest).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it("counts the digest the worker will sign when given it, not one hashed again here; the value from the transaction", async () => {
    const { impl, calls } = fakeFetch(json(GRANTED));
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "run-10" }, runner, dry: false, fetchImpl: impl });
    const signed = `0x${"cd".repeat(32)}` as Hex;
    await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(1) }, signed);
    expect(calls[0]?.body).toMatchObject({
      digest: countedDigest(WALLET, signed),
      value_wei: eth("0.2").toString(),
    });
  });

  it("a real run adds nothing itself: each reservation is the store's answer", async () => {
    const { impl, calls } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "run-9" }, runner, dry: false, fetchImpl: impl });
    for (let i = 0; i < 4; i++) {
      const outcome = await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(i) });
      expect(outcome.granted).toBe(true);
    }
    expect(calls.map((c) => c.body.op)).toEqual(["reserve", "reserve", "reserve", "reserve"]);
  });

  it("a dry run peeks and adds its own would-be signatures: three of 0.2 ETH against 0.5 ETH, the third refused", async () => {
    const { impl, calls } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-1" }, runner, dry: true, fetchImpl: impl });
    const reserve = (nonce: number) =>
      budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(nonce) });

    const first = await reserve(0);
    expect(first.granted).toBe(true);
    expect(first.before[0]).toMatchObject({ used_value_wei: "0", used_signatures: 0 });
    expect(first.granted && first.after[0]).toMatchObject({
      used_value_wei: eth("0.2").toString(),
      used_signatures: 1,
      left_value_wei: eth("0.3").toString(),
    });
    const second = await reserve(1);
    expect(second.before[0]).toMatchObject({ used_value_wei: eth("0.2").toString(), used_signatures: 1 });
    expect(second.granted && second.after[0]).toMatchObject({
      used_value_wei: eth("0.4").toString(),
      used_signatures: 2,
    });
    const third = await reserve(2);
    expect(third).toMatchObject({
      granted: false,
      budget: "daily",
      observed: `${eth("0.2")} wei asked, ${eth("0.1")} wei left`,
    });
    expect(third.before[0]).toMatchObject({ used_value_wei: eth("0.4").toString(), used_signatures: 2 });
    // A refused one is not added: 0.1 ETH still fits.
    const fourth = await budgets.reserve(WALLET, WALLET, BUDGETS, {
      kind: "transaction",
      transaction: transfer(3, eth("0.1")),
    });
    expect(fourth.granted).toBe(true);
    expect(fourth.granted && fourth.after[0]).toMatchObject({ used_value_wei: eth("0.5").toString() });
    // Nothing was reserved: every request was a peek.
    expect(calls.map((c) => c.body.op)).toEqual(["peek", "peek", "peek", "peek"]);
  });

  it("a dry run starts from the store's counters", async () => {
    const { impl } = peekingStore(eth("0.3"), 1);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-2" }, runner, dry: true, fetchImpl: impl });
    const first = await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(0) });
    expect(first.granted && first.after[0]).toMatchObject({
      used_value_wei: eth("0.5").toString(),
      used_signatures: 2,
    });
    const second = await budgets.reserve(WALLET, WALLET, BUDGETS, {
      kind: "transaction",
      transaction: transfer(1, 1n),
    });
    expect(second).toMatchObject({ granted: false, observed: "1 wei asked, 0 wei left" });
  });

  it("a dry run counts the same digest once, and one the store has counted not at all", async () => {
    const { impl } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-3" }, runner, dry: true, fetchImpl: impl });
    const same = { kind: "transaction", transaction: transfer(0) } as const;
    const first = await budgets.reserve(WALLET, WALLET, BUDGETS, same);
    const again = await budgets.reserve(WALLET, WALLET, BUDGETS, same);
    expect(first.granted).toBe(true);
    expect(again.granted).toBe(true);
    expect(again.granted && again.after).toEqual(again.before);
    expect(again.before[0]).toMatchObject({ used_value_wei: eth("0.2").toString(), used_signatures: 1 });
    expect(again.before[0]?.left_value_wei).toBe(first.granted ? first.after[0]?.left_value_wei : "");
    // Two more distinct ones: 0.6 ETH would pass the cap; the repeat did not count toward it.
    expect(
      (await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(1) })).granted,
    ).toBe(true);
    expect(
      (await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(2) })).granted,
    ).toBe(false);

    // The store says the digest is counted already (repeated): the dry run adds nothing, even at the cap.
    const counted = peekingStore(eth("0.5"), 2, true);
    const repeat = new RunBudgets({ access: { ...ACCESS, ref: "dry-4" }, runner, dry: true, fetchImpl: counted.impl });
    const outcome = await repeat.reserve(WALLET, WALLET, BUDGETS, same);
    expect(outcome.granted).toBe(true);
    expect(outcome.granted && outcome.after[0]).toMatchObject({
      used_value_wei: eth("0.5").toString(),
      used_signatures: 2,
    });
  });

  // Product bug (reported): a dry run keeps no `oldest` for its own would-be signatures, so once the
  // store had nothing counted, the next request's `before` says frees_at: null beside
  // used_signatures: 1 (budgetStateSchema: null only "when nothing is counted"), and each `after`
  // takes a new `now`. Flip to `it` once RunBudgets#addPending keeps the pending entries' oldest.
  it("a dry run's counters say when its own first would-be signature leaves the window", async () => {
    const { impl } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-7" }, runner, dry: true, fetchImpl: impl });
    const first = await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(0, 1n) });
    const freesAt = first.granted ? first.after[0]?.frees_at : undefined;
    expect(freesAt).toEqual(expect.any(String));
    await new Promise((r) => setTimeout(r, 5));
    const second = await budgets.reserve(WALLET, WALLET, BUDGETS, {
      kind: "transaction",
      transaction: transfer(1, 1n),
    });
    expect(second.before[0]?.frees_at).toBe(freesAt);
    expect(second.granted && second.after[0]?.frees_at).toBe(freesAt);
  });

  it("a dry run keeps each wallet's would-be signatures apart", async () => {
    const { impl } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-5" }, runner, dry: true, fetchImpl: impl });
    const other = "0x0000000000000000000000000000000000000cafe" as Address;
    for (const nonce of [0, 1])
      await budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(nonce) });
    const elsewhere = await budgets.reserve(other, other, BUDGETS, { kind: "transaction", transaction: transfer(2) });
    expect(elsewhere.granted).toBe(true);
    expect(elsewhere.before[0]).toMatchObject({ used_value_wei: "0", used_signatures: 0 });
  });

  it("a dry run on a key's own counters counts one payload signed by two wallets twice", async () => {
    const { impl } = peekingStore(0n, 0);
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-8" }, runner, dry: true, fetchImpl: impl });
    const counters = `key:0x${"cd".repeat(32)}`;
    const other = "0x0000000000000000000000000000000000000cafe" as Address;
    const same = { kind: "transaction", transaction: transfer(0) } as const;
    await budgets.reserve(counters, WALLET, BUDGETS, same);
    const second = await budgets.reserve(counters, other, BUDGETS, same);
    expect(second.granted && second.after[0]).toMatchObject({
      used_value_wei: eth("0.4").toString(),
      used_signatures: 2,
    });
    const again = await budgets.reserve(counters, other, BUDGETS, same);
    expect(again.granted && again.after[0]).toMatchObject({ used_signatures: 2 });
  });

  it("a dry run whose peek finds no answer is refused with BudgetUnavailableError", async () => {
    const { impl } = fakeFetch(json({}, 503));
    const budgets = new RunBudgets({ access: { ...ACCESS, ref: "dry-6" }, runner, dry: true, fetchImpl: impl });
    await expect(
      budgets.reserve(WALLET, WALLET, BUDGETS, { kind: "transaction", transaction: transfer(0) }),
    ).rejects.toBeInstanceOf(BudgetUnavailableError);
  });
});
