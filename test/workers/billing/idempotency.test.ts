// Idempotency-Key on managed writes and sigil_action (docs/design/api.md; Stripe's semantics), through the edge
// in workerd against the real chain and enclave with billing on: a repeat replays the first answer
// without a second transaction or charge; another body is 422; a repeat while the first is in
// flight is 409 with Retry-After; answers that did nothing leave the key free; a malformed key is
// 400. Every test ends with the audit of every ledger (ledgers.ts). Retries across an edge or an
// enclave killed mid-request are test/e2e/retries.test.ts's.
import {
  createExecutionContext,
  env,
  listDurableObjectIds,
  runInDurableObject,
  SELF,
  waitOnExecutionContext,
} from "cloudflare:test";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../../shared/cid.ts";
import { apiKeyHash } from "../../../shared/hashing.ts";
import { SigilError, sentTransactionError } from "../../../shared/errors.ts";
import { requestLog } from "../../../workers/log.ts";
import type { Env } from "../../../workers/env.ts";
import { errorResponse } from "../../../workers/errors.ts";
import { idempotent, type KeyHolder } from "../../../workers/idempotency/index.ts";
import type { EdgeEnv } from "../../../workers/router.ts";
import { edgeClient, NO_PERMISSIONS } from "../stack.ts";
import { billingLedgers, ledgerRows } from "./ledgers.ts";

const { edge, ok200, expectError } = edgeClient(SELF);
const namespace = (env as unknown as Env).LEDGER!;
const idempotency = (env as unknown as Env).IDEMPOTENCY!;
const { newAccount, credit, ledgerOf } = billingLedgers({
  self: SELF,
  namespace,
  listIds: () => listDurableObjectIds(namespace),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});

/** The account's free balance as its client reads it: through the edge, which first commits the charges it made (lease.ts). */
const free = async (key: string) => (await ok200<{ balance_cents: number }>("billing/balance", { key })).balance_cents;
const QUICK = "async function main({ n }) { return n * 2 }";
const SLOW = "async function main() { await new Promise((r) => setTimeout(r, 1500)); return 'slow' }";
let cids: string[];
let n = 0;
const idem = () => `idem-${Date.now()}-${n++}`;

beforeAll(async () => {
  cids = await Promise.all([QUICK, SLOW].map((c) => computeCid(c)));
});

const groupBody = (name: string) => ({
  group_name: name,
  group_description: "",
  pkp_ids_permitted: [],
  cid_hashes_permitted: [],
});

async function groupsNamed(key: string, name: string): Promise<number> {
  const groups = await ok200<Array<{ group_name: string }>>("list_groups?page_size=100", { key });
  return groups.filter((g) => g.group_name === name).length;
}

describe("a managed write with an Idempotency-Key", () => {
  it("sent again with the same body replays the first answer: one group on chain, one cent, Idempotent-Replayed and the first request's id", async () => {
    const key = await newAccount("idem writes", { cents: 10 });
    const k = idem();
    const first = await edge<{ group_id: string }>("add_group", {
      key,
      body: groupBody("once"),
      headers: { "idempotency-key": k },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get("x-sigil-charged-cents")).toBe("1");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    // The same body with its fields in another order is the same request.
    const { cid_hashes_permitted, ...rest } = groupBody("once");
    for (const again of [
      await edge<{ group_id: string }>("add_group", {
        key,
        body: { cid_hashes_permitted, ...rest },
        headers: { "idempotency-key": k },
      }),
      await edge<{ group_id: string }>("add_group", {
        key,
        body: groupBody("once"),
        headers: { "idempotency-key": k },
      }),
    ]) {
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.headers.get("original-request")).toBe(first.headers.get("x-request-id"));
      expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
      expect(again.headers.get("x-sigil-charged-cents")).toBe("1");
    }
    expect(await groupsNamed(key, "once")).toBe(1);
    expect(await free(key)).toBe(9);
    // Without a key, the same body is a new write.
    expect((await edge("add_group", { key, body: groupBody("once") })).status).toBe(200);
    expect(await groupsNamed(key, "once")).toBe(2);
  });

  it("sent again under another spelling of its path (add%5Fgroup) is the same request: replayed, not 422", async () => {
    const key = await newAccount("idem spelling", { cents: 10 });
    const k = idem();
    const first = await ok200<{ group_id: string }>("add_group", {
      key,
      body: groupBody("spelled"),
      headers: { "idempotency-key": k },
    });
    const again = await edge<{ group_id: string }>("add%5Fgroup", {
      key,
      body: groupBody("spelled"),
      headers: { "idempotency-key": k },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual(first);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await groupsNamed(key, "spelled")).toBe(1);
    expect(await free(key)).toBe(9);
  });

  it("sent again with another body is 422 idempotency_key_reused, acts on nothing and charges nothing", async () => {
    const key = await newAccount("idem reused", { cents: 10 });
    const k = idem();
    await ok200("add_group", { key, body: groupBody("a"), headers: { "idempotency-key": k } });
    expectError(
      await edge("add_group", { key, body: groupBody("b"), headers: { "idempotency-key": k } }),
      422,
      "idempotency_key_reused",
    );
    // Another endpoint with the key is another request too.
    expectError(
      await edge("create_wallet", { key, method: "POST", body: {}, headers: { "idempotency-key": k } }),
      422,
      "idempotency_key_reused",
    );
    expect(await groupsNamed(key, "b")).toBe(0);
    expect(await free(key)).toBe(9);
  });

  it("keeps the enclave's refusal as the key's answer (it did run); the key's refused answer is replayed", async () => {
    const key = await newAccount("idem refusal", { cents: 3 });
    const k = idem();
    const first = expectError(
      await edge("remove_group", { key, body: { group_id: "999" }, headers: { "idempotency-key": k } }),
      404,
      "group_not_found",
    );
    const again = await edge("remove_group", { key, body: { group_id: "999" }, headers: { "idempotency-key": k } });
    expectError({ ...again, headers: new Headers({ "x-request-id": first.request_id }) }, 404, "group_not_found");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await free(key)).toBe(3);
  });

  it("refused before anything was done (402: no credit) leaves the key free: after a top-up the same key makes the write, once", async () => {
    const key = await newAccount("idem broke");
    const k = idem();
    expectError(
      await edge("add_group", { key, body: groupBody("later"), headers: { "idempotency-key": k } }),
      402,
      "insufficient_credits",
    );
    await credit(key, 2);
    const made = await edge("add_group", { key, body: groupBody("later"), headers: { "idempotency-key": k } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.headers.get("idempotent-replayed")).toBeNull();
    expect(
      (await edge("add_group", { key, body: groupBody("later"), headers: { "idempotency-key": k } })).headers.get(
        "idempotent-replayed",
      ),
    ).toBe("true");
    expect(await groupsNamed(key, "later")).toBe(1);
    expect(await free(key)).toBe(1);
  });

  it("is the caller key's own: a usage key using the same Idempotency-Key as its master makes its own write", async () => {
    const key = await newAccount("idem scope", { cents: 10 });
    const { usage_api_key: usage } = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body: { name: "u", description: "", ...NO_PERMISSIONS, can_create_groups: true },
    });
    const k = idem();
    const mine = await ok200<{ group_id: string }>("add_group", {
      key,
      body: groupBody("shared key"),
      headers: { "idempotency-key": k },
    });
    const theirs = await edge<{ group_id: string }>("add_group", {
      key: usage,
      body: groupBody("shared key"),
      headers: { "idempotency-key": k },
    });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body.group_id).not.toBe(mine.group_id);
    expect(await free(key)).toBe(10 - 3);
  });

  it("keeps no answer readable: add_usage_api_key's new key is replayed to its caller but is nowhere in the stored record", async () => {
    const key = await newAccount("idem secret", { cents: 5 });
    const k = idem();
    const body = { name: "u", description: "", ...NO_PERMISSIONS };
    const first = await ok200<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body,
      headers: { "idempotency-key": k },
    });
    const again = await edge<{ usage_api_key: string }>("add_usage_api_key", {
      key,
      body,
      headers: { "idempotency-key": k },
    });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.usage_api_key).toBe(first.usage_api_key);
    const store = idempotency.get(idempotency.idFromName(apiKeyHash(key).toString(16).padStart(64, "0")));
    const stored = await runInDurableObject(store, (_o, state) =>
      JSON.stringify([
        state.storage.sql.exec("SELECT * FROM records").toArray(),
        state.storage.sql.exec("SELECT * FROM answer_chunks").toArray(),
      ]),
    );
    expect(stored).toContain(k);
    expect(stored).not.toContain(first.usage_api_key);
    expect(stored).not.toContain(key);
    expect(await free(key)).toBe(4);
  });

  it("applies to every managed write route: POST and GET create_wallet", async () => {
    const key = await newAccount("idem wallets", { cents: 10 });
    for (const call of [{ method: "POST", body: { name: "w" } }, { method: "GET" }] as const) {
      const k = idem();
      const first = await edge<{ wallet_address: string }>("create_wallet", {
        key,
        ...call,
        headers: { "idempotency-key": k },
      });
      const again = await edge<{ wallet_address: string }>("create_wallet", {
        key,
        ...call,
        headers: { "idempotency-key": k },
      });
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      if (call.method === "GET") expect(again.headers.get("deprecation")).toBe("true");
    }
    expect((await ok200<unknown[]>("list_wallets", { key })).length).toBe(3);
    expect(await free(key)).toBe(8);
  });

  it("a malformed key is 400 invalid_request and does nothing: empty, over 255 characters, a space or a control character", async () => {
    const key = await newAccount("idem malformed", { cents: 5 });
    for (const bad of ["", "x".repeat(256), "two words", "tab\there", "del\x7f"]) {
      expectError(
        await edge("add_group", { key, body: groupBody("bad"), headers: { "idempotency-key": bad } }),
        400,
        "invalid_request",
      );
    }
    expectError(
      await edge("sigil_action", { key, body: { code: QUICK }, headers: { "idempotency-key": "" } }),
      400,
      "invalid_request",
    );
    expect(await groupsNamed(key, "bad")).toBe(0);
    expect(await free(key)).toBe(5);
    // At the limit it is accepted.
    expect(
      (await edge("add_group", { key, body: groupBody("long key"), headers: { "idempotency-key": "k".repeat(255) } }))
        .status,
    ).toBe(200);
  });
});

describe("sigil_action with an Idempotency-Key", () => {
  it("sent again replays the first run's answer and charges it once", async () => {
    const key = await newAccount("idem runs", { cents: 20 });
    await ok200("add_group", { key, body: { ...groupBody("runs"), cid_hashes_permitted: cids } });
    const k = idem();
    const first = await edge<{ response: number; charged_cents: number }>("sigil_action", {
      key,
      body: { code: QUICK, js_params: { n: 21 } },
      headers: { "idempotency-key": k },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ response: 42, charged_cents: 1 });
    expect(first.body).not.toHaveProperty("first_attempt");
    const again = await edge("sigil_action", {
      key,
      body: { code: QUICK, js_params: { n: 21 } },
      headers: { "idempotency-key": k },
    });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expectError(
      await edge("sigil_action", {
        key,
        body: { code: QUICK, js_params: { n: 1 } },
        headers: { "idempotency-key": k },
      }),
      422,
      "idempotency_key_reused",
    );
    expect(await free(key)).toBe(20 - 1 - 1);
  });

  it("sent again while the first is still running is 409 request_in_progress with Retry-After; the first is answered and charged once", async () => {
    const key = await newAccount("idem in flight", { cents: 20 });
    await ok200("add_group", { key, body: { ...groupBody("runs"), cid_hashes_permitted: cids } });
    // The group's charge is in the Ledger (the answer went out before it): what is held next is the run's.
    await free(key);
    const k = idem();
    const first = edge<{ response: string; charged_cents: number }>("sigil_action", {
      key,
      body: { code: SLOW },
      headers: { "idempotency-key": k },
    });
    // The first holds its credit: it is in flight.
    for (let i = 0; (await ledgerOf(key).balance()).heldCents === 0; i++) {
      if (i > 400) throw new Error("the first run never held its credit");
      await new Promise((r) => setTimeout(r, 25));
    }
    const busy = await edge("sigil_action", { key, body: { code: SLOW }, headers: { "idempotency-key": k } });
    expectError(busy, 409, "request_in_progress");
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThan(0);
    const done = await first;
    expect(done.body).toMatchObject({ response: "slow", charged_cents: 2 });
    const replayed = await edge("sigil_action", { key, body: { code: SLOW }, headers: { "idempotency-key": k } });
    expect(replayed.body).toEqual(done.body);
    expect(await free(key)).toBe(20 - 1 - 2);
  });
});

/**
 * The Idempotency record a first attempt leaves when its edge died after sending it to `enclave`
 * under the channel key `instance`: made beside the record of a request with the same body
 * (`model`, the key it was sent with), so it has the fingerprint the edge computes, under `key`.
 */
async function deadAttempt(
  apiKey: string,
  model: string,
  key: string,
  sentTo: { enclave: string | null; instance: string | null },
): Promise<void> {
  const store = idempotency.get(idempotency.idFromName(apiKeyHash(apiKey).toString(16).padStart(64, "0")));
  await runInDurableObject(store, (_o, state) => {
    const sql = state.storage.sql;
    const row = sql
      .exec<{ scope: string; fingerprint: string }>(
        "SELECT scope, fingerprint FROM records WHERE scope LIKE ?",
        `%:${model}`,
      )
      .one();
    const scope = `${row.scope.slice(0, row.scope.indexOf(":"))}:${key}`;
    sql.exec(
      "INSERT INTO records (scope, fingerprint, ref, state, owner, lease_until, enclave, instance, created_at) VALUES (?, ?, 'the-dead-attempt', 'in_progress', 'the-dead-attempt', 0, ?, ?, ?)",
      scope,
      row.fingerprint,
      sentTo.enclave,
      sentTo.instance,
      Date.now(),
    );
  });
}

/** The enclave and channel key the edge noted for the attempt under `key`. */
async function sentTo(apiKey: string, key: string): Promise<{ enclave: string; instance: string }> {
  const store = idempotency.get(idempotency.idFromName(apiKeyHash(apiKey).toString(16).padStart(64, "0")));
  return runInDurableObject(store, (_o, state) =>
    state.storage.sql
      .exec<{ enclave: string; instance: string }>(
        "SELECT enclave, instance FROM records WHERE scope LIKE ?",
        `%:${key}`,
      )
      .one(),
  );
}

describe("a retry of an attempt that gave no answer (its record as the dead edge left it)", () => {
  it("a run whose enclave process is gone is run again under the first attempt's ref, charged once, and says the first was abandoned", async () => {
    const key = await newAccount("idem abandoned run", { cents: 20 });
    await ok200("add_group", { key, body: { ...groupBody("runs"), cid_hashes_permitted: cids } });
    const run = { code: QUICK, js_params: { n: 4 } };
    await ok200("sigil_action", { key, body: run, headers: { "idempotency-key": "model-run" } });
    const { enclave } = await sentTo(key, "model-run");
    await deadAttempt(key, "model-run", "retried-run", { enclave, instance: "the channel key of a process that died" });
    const r = await edge<{ response: number; charged_cents: number; first_attempt: unknown }>("sigil_action", {
      key,
      body: run,
      headers: { "idempotency-key": "retried-run" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      response: 8,
      charged_cents: 1,
      first_attempt: { request_id: "the-dead-attempt", outcome: "abandoned" },
    });
    expect(r.headers.get("original-request")).toBe("the-dead-attempt");
    expect(r.headers.get("idempotent-replayed")).toBeNull();
    expect(await free(key)).toBe(20 - 1 - 1 - 1);
  });

  it("a run whose enclave process is still the same gets that process's answer: resumed, charged once in all", async () => {
    const key = await newAccount("idem resumed run", { cents: 20 });
    await ok200("add_group", { key, body: { ...groupBody("runs"), cid_hashes_permitted: cids } });
    const run = { code: QUICK, js_params: { n: 5 } };
    const first = await ok200<{ response: number }>("sigil_action", {
      key,
      body: run,
      headers: { "idempotency-key": "resumed-run" },
    });
    // As if the edge had died before it could keep that answer.
    const store = idempotency.get(idempotency.idFromName(apiKeyHash(key).toString(16).padStart(64, "0")));
    await runInDurableObject(
      store,
      (_o, state) =>
        void state.storage.sql.exec(
          "UPDATE records SET state = 'in_progress', owner = 'gone', lease_until = 0 WHERE scope LIKE '%:resumed-run'",
        ),
    );
    const r = await edge<{ response: number; charged_cents: number; first_attempt: { outcome: string } }>(
      "sigil_action",
      { key, body: run, headers: { "idempotency-key": "resumed-run" } },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ response: first.response, charged_cents: 1, first_attempt: { outcome: "resumed" } });
    expect(r.headers.get("idempotent-replayed")).toBe("true");
    expect(await free(key)).toBe(20 - 1 - 1);
  });

  it("a write whose attempt reached the same enclave process, which never got it, is made once under the first attempt's ref", async () => {
    const key = await newAccount("idem same process", { cents: 10 });
    await ok200("add_group", { key, body: groupBody("model"), headers: { "idempotency-key": "model-write" } });
    await deadAttempt(key, "model-write", "retried-write", await sentTo(key, "model-write"));
    const r = await edge<{ group_id: string }>("add_group", {
      key,
      body: groupBody("model"),
      headers: { "idempotency-key": "retried-write" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get("original-request")).toBe("the-dead-attempt");
    expect(await groupsNamed(key, "model")).toBe(2);
    expect(await free(key)).toBe(8);
  });

  it("a write whose enclave process is gone is not sent again: 409 write_outcome_unknown for good, nothing made, its hold released", async () => {
    const key = await newAccount("idem unknown write", { cents: 10 });
    await ok200("add_group", { key, body: groupBody("maybe"), headers: { "idempotency-key": "model-write" } });
    const { enclave } = await sentTo(key, "model-write");
    await deadAttempt(key, "model-write", "lost-write", {
      enclave,
      instance: "the channel key of a process that died",
    });
    // The dead attempt had held its cent, as a write does before it is sent.
    await ledgerOf(key).hold("the-dead-attempt", 1, 5 * 60_000);
    expect(await free(key)).toBe(8);
    const unknown = await edge<{ error: { details: { original_request_id: string } } }>("add_group", {
      key,
      body: groupBody("maybe"),
      headers: { "idempotency-key": "lost-write" },
    });
    expect(expectError(unknown, 409, "write_outcome_unknown").details).toEqual({
      original_request_id: "the-dead-attempt",
    });
    const again = await edge("add_group", {
      key,
      body: groupBody("maybe"),
      headers: { "idempotency-key": "lost-write" },
    });
    expect(again.status).toBe(409);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await groupsNamed(key, "maybe")).toBe(1);
    expect(await free(key)).toBe(9);
  });

  it("a write whose first attempt never reached an enclave (its edge died before sending) is made, once", async () => {
    const key = await newAccount("idem never sent", { cents: 10 });
    await ok200("add_group", { key, body: groupBody("late"), headers: { "idempotency-key": "model-write" } });
    await deadAttempt(key, "model-write", "unsent-write", { enclave: null, instance: null });
    const r = await edge("add_group", { key, body: groupBody("late"), headers: { "idempotency-key": "unsent-write" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get("original-request")).toBe("the-dead-attempt");
    expect(await groupsNamed(key, "late")).toBe(2);
    expect(await free(key)).toBe(8);
  });
});

describe("an answer kept under an Idempotency-Key", () => {
  it("a 503 that names the transaction it sent is kept with its Retry-After, and replayed with it: the work is done once", async () => {
    // The idempotent stage itself, in a route of its own: the enclave cannot be made to lose the chain
    // between sending a write and learning its fate here, which is when it answers this.
    let done = 0;
    const app = new Hono<EdgeEnv>();
    app.use(async (c, next) => {
      c.set("ids", { requestId: crypto.randomUUID(), correlationId: null });
      c.set("log", requestLog({ requestId: c.get("ids").requestId, correlationId: null }));
      await next();
    });
    app.onError((err, c) => errorResponse(c, err));
    const holder = async (_c: unknown, key: string): Promise<KeyHolder> => ({
      object: "kept-503-test",
      scope: `test:${key}`,
      secret: "the holder's secret",
    });
    app.post("/write", idempotent({ holder }), async () => {
      done++;
      throw sentTransactionError(
        new SigilError(
          "chain_unavailable",
          "the chain could not be reached to tell whether the transaction was sent; try again shortly",
          { retryAfterSeconds: 5 },
        ),
        `0x${"ab".repeat(32)}`,
      );
    });
    const k = idem();
    const send = async () => {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request("http://edge/write", {
          method: "POST",
          body: JSON.stringify({ x: 1 }),
          headers: { "idempotency-key": k, "content-type": "application/json" },
        }),
        env,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    const first = await send();
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("5");
    const again = await send();
    expect(again.status).toBe(503);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("retry-after")).toBe("5");
    expect(await again.json()).toMatchObject({
      error: { code: "chain_unavailable", details: { transaction_hash: `0x${"ab".repeat(32)}` } },
    });
    expect(done).toBe(1);
  });
});
