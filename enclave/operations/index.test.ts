// The enclave's dispatcher (operations/index.ts), with no chain behind it: it refuses what names no
// operation, what is over the operation's body limit and what its input schema refuses, before any
// operation runs; it serves the reads of the table (health, attestation) from the parts it is given;
// and it remembers under an Idempotency-Key only operations that act.
import { describe, expect, it } from "vitest";
import { SigilError } from "../../shared/errors.ts";
import { createLogger } from "../../shared/log.ts";
import type { Enclave } from "./context.ts";
import { createDispatcher } from "./index.ts";

const enclave = { log: createLogger("silent") } as unknown as Enclave;
const ids = { request_id: "4f0c7b2a-9d1e-4c3b-8a5f-6e7d8c9b0a1f" };

function setup() {
  const asked = { health: 0, attestation: [] as Array<{ query: string; client: string; ids: Record<string, string> }> };
  const dispatch = createDispatcher(enclave, {
    health: async () => {
      asked.health++;
      return { status: "ok", sandbox: { workers: 1 } };
    },
    attestation: async (query, client, requestIds) => {
      asked.attestation.push({ query, client, ids: requestIds });
      return new Response('{"quote":"00"}', {
        status: 200,
        headers: { "content-type": "application/json", "cache-control": "no-store", "set-cookie": "x=1" },
      });
    },
  });
  return { dispatch, asked };
}

describe("the dispatcher", () => {
  it("answers 404 not_found for a name that is not in the table (an inherited property name included)", async () => {
    const { dispatch } = setup();
    for (const op of ["client_config", "toString", "execute"]) {
      expect(await dispatch({ op, ids, input: {} }, 100), op).toMatchObject({
        ok: false,
        status: 404,
        error: { code: "not_found", request_id: ids.request_id },
      });
    }
  });

  it("answers 413 for a request over its operation's body limit, before parsing it", async () => {
    const { dispatch, asked } = setup();
    expect(await dispatch({ op: "health", ids, input: {} }, (256 << 10) + (8 << 10))).toMatchObject({
      ok: false,
      status: 413,
      error: { code: "payload_too_large" },
    });
    expect(asked.health).toBe(0);
    // sigil_action's limit is a script's: the same size is no refusal there (it is refused for its input instead).
    expect(await dispatch({ op: "sigil_action", ids, input: {} }, (256 << 10) + (8 << 10))).toMatchObject({
      ok: false,
      status: 400,
      error: { code: "invalid_request" },
    });
  });

  it("answers 400 invalid_request with details when the input does not fit the operation's schema", async () => {
    const { dispatch } = setup();
    const answer = await dispatch({ op: "add_group", ids, input: { api_key: "nope", colour: "blue" } }, 100);
    expect(answer).toMatchObject({ ok: false, status: 400, error: { code: "invalid_request" } });
    expect(JSON.stringify(answer)).toContain("colour");
    expect(await dispatch({ op: "health", ids, input: "{not json" }, 100)).toMatchObject({ ok: false, status: 400 });
  });

  it("serves health and attestation from its parts; the attestation answer passes through with its own headers only, for the client the edge named", async () => {
    const { dispatch, asked } = setup();
    expect(await dispatch({ op: "health", ids, input: {} }, 100)).toEqual({
      ok: true,
      output: { status: "ok", sandbox: { workers: 1 } },
    });
    const attested = await dispatch(
      {
        op: "attestation",
        ids: { ...ids, correlation_id: "c-1" },
        input: { query: "?nonce=ab", client: "198.51.100.7" },
      },
      100,
    );
    expect(attested).toEqual({
      ok: true,
      output: {
        status: 200,
        headers: { "content-type": "application/json", "cache-control": "no-store" },
        body: '{"quote":"00"}',
      },
    });
    expect(asked.attestation).toEqual([
      {
        query: "?nonce=ab",
        client: "edge:198.51.100.7",
        ids: { "x-request-id": ids.request_id, "x-correlation-id": "c-1" },
      },
    ]);
  });

  it("logs a warning when an operation answers a code its table entry does not list, and answers it all the same", async () => {
    const lines: string[] = [];
    const logged = { log: createLogger("info", {}, (line) => lines.push(line)) } as unknown as Enclave;
    const dispatch = createDispatcher(logged, {
      health: async () => {
        throw new SigilError("payment_not_found", "not a health answer");
      },
      attestation: async () => new Response("{}"),
    });
    expect(await dispatch({ op: "health", ids, input: {} }, 100)).toMatchObject({
      ok: false,
      status: 404,
      error: { code: "payment_not_found" },
    });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "an operation answered a code its table entry does not list",
        op: "health",
        code: "payment_not_found",
        requestId: ids.request_id,
      }),
    );
    // A listed code is no warning.
    lines.length = 0;
    await dispatch({ op: "health", ids, input: "x" }, 100);
    expect(lines.filter((l) => l.includes('"warn"'))).toEqual([]);
  });

  it("does not remember a read sent under an Idempotency-Key: each is answered afresh", async () => {
    const { dispatch, asked } = setup();
    for (let i = 0; i < 2; i++)
      expect((await dispatch({ op: "health", ids, input: {}, idempotency_key: "k" }, 100)).ok).toBe(true);
    expect(asked.health).toBe(2);
  });
});
