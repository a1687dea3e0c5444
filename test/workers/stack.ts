// What the edge's workerd tests read of the shared test stack (test/workers/globalSetup.ts provides
// it): the chain, for checking the edge's answers against on-chain state, and the enclave's
// internal API, for setting up state the test is not about; and a small client for the edge.
import { createPublicClient, http, type PublicClient } from "viem";
import { expect, inject } from "vitest";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { ok } from "../enclave/client.ts";

// The typed `inject` keys of the shared stack (test/harness/provide.ts).
import type {} from "../harness/provide.ts";

export { ALL_PERMISSIONS, NO_PERMISSIONS } from "../harness/permissions.ts";

export function chain(): PublicClient {
  return createPublicClient({ transport: http(inject("rpcUrl")) }) as PublicClient;
}

export function readContract<T>(functionName: string, args: readonly unknown[] = []): Promise<T> {
  return chain().readContract({
    address: inject("contract"),
    abi: accountConfigAbi,
    functionName,
    args,
  } as never) as Promise<T>;
}

/** A group made through the enclave directly (setup for tests of other endpoints). */
export async function addGroupThroughEnclave(
  apiKey: string,
  wallets: string[],
  cids: Array<string | 0> = [],
): Promise<string> {
  const res = await ok<{ group_id: string }>("add_group", {
    api_key: apiKey,
    group_name: "g",
    group_description: "",
    pkp_ids_permitted: wallets,
    cid_hashes_permitted: cids,
  });
  return res.group_id;
}

export type Reply<T> = { status: number; body: T; headers: Headers };
export type ErrorReply = {
  error: { code: string; message: string; request_id: string; details?: Array<{ path: string; message: string }> };
};
export type EdgeCall = { method?: string; key?: string; body?: unknown; headers?: Record<string, string> };

/**
 * Calls on the edge under test (`SELF` from cloudflare:test, passed in so this file needs no
 * workerd types): `edge` answers status, parsed body and headers; `ok200` insists on 200;
 * `expectError` checks an error answer's status, code and request id.
 */
export function edgeClient(self: { fetch(input: string, init?: RequestInit): Promise<Response> }) {
  async function edge<T = Record<string, unknown>>(path: string, options: EdgeCall = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = {
      ...(options.key === undefined ? {} : { "x-api-key": options.key }),
      ...options.headers,
    };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await self.fetch(`http://edge/core/v1/${path}`, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers,
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
    });
    return { status: res.status, body: (await res.json()) as T, headers: res.headers };
  }

  async function ok200<T = Record<string, unknown>>(path: string, options: EdgeCall = {}): Promise<T> {
    const r = await edge<T>(path, options);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  function expectError(r: Reply<unknown>, status: number, code: string): ErrorReply["error"] {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    const error = (r.body as ErrorReply).error;
    expect(error.code).toBe(code);
    expect(error.request_id).toBe(r.headers.get("x-request-id"));
    return error;
  }

  return { edge, ok200, expectError };
}
