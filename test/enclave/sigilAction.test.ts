// `execute` at its edges: code from IPFS (verified by its CID), and requests the enclave must refuse
// before running anything. (10 000 runs in a row that must leak nothing: leak.test.ts, on an enclave
// of its own, in the long tests' lane.)
import { connect } from "node:net";
import { createPublicClient, http } from "viem";
import { CID } from "multiformats/cid";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { computeCid } from "../../shared/cid.ts";
import { ENDLESS_CAP_BYTES, type GatewayLog } from "../../emulators/ipfsGateway.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import { callEnclave, ok, run } from "./client.ts";
import { callAt, startOwnEnclave } from "./ownEnclave.ts";

let apiKey: string;

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "execute edges" })).api_key;
  // "0" lists every action: these tests are about the runtime, not about groups.
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: ["0"],
  });
});

async function addToGateway(content: string, asCid?: string): Promise<string> {
  const res = await fetch(`${inject("gatewayUrl")}/add${asCid ? `?cid=${asCid}` : ""}`, {
    method: "POST",
    body: content,
  });
  return ((await res.json()) as { cid: string }).cid;
}

/** Makes the test gateway fail for `cid` (emulators/ipfsGateway.ts, `/misbehave`). */
async function misbehave(cid: string, how: "503" | "500" | "429" | "reset" | "hang" | "endless"): Promise<void> {
  await fetch(`${inject("gatewayUrl")}/misbehave?cid=${cid}&as=${how}`, { method: "POST" });
}

/** What the test gateway saw of `cid`: one entry per request for it. */
async function gatewayLog(cid: string): Promise<GatewayLog["requests"]> {
  return ((await (await fetch(`${inject("gatewayUrl")}/log?cid=${cid}`)).json()) as GatewayLog).requests;
}

function errorCode(body: unknown): string | undefined {
  return (body as { error?: { code?: string } }).error?.code;
}

describe("code by ipfs_id", () => {
  it("fetches the code through the gateway, checks its CID and runs it", async () => {
    const code = `async function main(p) { return { from: "ipfs", p } }`;
    const cid = await addToGateway(code);
    expect(cid).toBe(await computeCid(code));
    const r = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid, js_params: 7 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ response: { from: "ipfs", p: 7 }, cid, has_error: false });
  });

  it("refuses content that does not hash to the requested CID", async () => {
    const genuine = `async function main() { return "genuine" }`;
    const cid = await computeCid(genuine);
    await addToGateway(`async function main() { return "tampered" }`, cid);
    const r = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid });
    expect(r.status).toBe(400);
    expect(errorCode(r.body)).toBe("invalid_request");
  });

  it("answers 404 when the gateway has no such content, and 400 for a malformed CID", async () => {
    const missing = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: await computeCid("never added") });
    expect(missing.status).toBe(404);
    const malformed = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: "not-a-cid" });
    expect(malformed.status).toBe(400);
  });

  it("refuses (403) a key that may not run the CID before asking the gateway for it, in either CID form", async () => {
    const stranger = (await ok<{ api_key: string }>("new_account", { account_name: "no groups" })).api_key;
    const code = `async function main() { return "not for strangers" }`;
    const cid = await addToGateway(code);
    for (const ipfsId of [cid, CID.parse(cid).toV1().toString()]) {
      const r = await callEnclave("sigil_action", { api_key: stranger, ipfs_id: ipfsId });
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(errorCode(r.body)).toBe("permission_denied");
    }
    expect(await gatewayLog(cid)).toEqual([]);
    // The same request from a key that may run it does reach the gateway (the log works).
    expect((await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid })).status).toBe(200);
    expect(await gatewayLog(cid)).toHaveLength(1);
  });

  it("a gateway that answers 5xx or 429, or drops the connection, is 503 ipfs_unavailable with Retry-After; its 404 stays 404", async () => {
    for (const how of ["503", "500", "429", "reset"] as const) {
      const cid = await computeCid(`async function main() { return "gateway ${how}" }`);
      await misbehave(cid, how);
      const r = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid });
      expect(r.status, `${how}: ${JSON.stringify(r.body)}`).toBe(503);
      expect(errorCode(r.body)).toBe("ipfs_unavailable");
      expect(r.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(await gatewayLog(cid)).toHaveLength(1);
    }
    const missing = await callEnclave("sigil_action", {
      api_key: apiKey,
      ipfs_id: await computeCid("never added either"),
    });
    expect(missing.status).toBe(404);
    expect(errorCode(missing.body)).toBe("not_found");
  });

  it("stops reading a gateway's endless body as soon as it passes max_code_bytes: 413, and the enclave hangs up long before the gateway has sent all it would", async () => {
    const cid = await computeCid(`async function main() { return "endless" }`);
    await misbehave(cid, "endless");
    const r = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid });
    expect(r.status, JSON.stringify(r.body)).toBe(413);
    expect(errorCode(r.body)).toBe("payload_too_large");
    // A read of the whole body would have taken all ENDLESS_CAP_BYTES (16 times the limit) and
    // then waited for an end that never comes.
    await vi.waitFor(async () => expect((await gatewayLog(cid))[0]?.closed_before_end).toBe(true), {
      timeout: 10_000,
      interval: 100,
    });
    expect((await gatewayLog(cid))[0]?.bytes_sent).toBeLessThan(ENDLESS_CAP_BYTES);
  });

  it("refuses code over max_code_bytes that the gateway declares with its Content-Length: 413", async () => {
    const cid = await addToGateway(`async function main() {}//${"x".repeat(4 << 20)}`);
    const r = await callEnclave("sigil_action", { api_key: apiKey, ipfs_id: cid });
    expect(r.status).toBe(413);
    expect(errorCode(r.body)).toBe("payload_too_large");
  });
});

describe("code by ipfs_id, on an enclave whose IPFS fetches time out after 1 s", () => {
  let enclave: EnclaveProcess;

  beforeAll(async () => {
    enclave = await startOwnEnclave({
      instanceIndex: 21,
      env: { SIGIL_IPFS_GATEWAY: inject("gatewayUrl"), SIGIL_IPFS_TIMEOUT_MS: "1000" },
    });
  });

  afterAll(async () => {
    await enclave?.stop();
  });

  it("a gateway that never answers is 503 ipfs_unavailable with Retry-After, not 404", async () => {
    const cid = await computeCid(`async function main() { return "gateway hangs" }`);
    await misbehave(cid, "hang");
    const r = await callAt(enclave.url, "sigil_action", { api_key: apiKey, ipfs_id: cid });
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(errorCode(r.body)).toBe("ipfs_unavailable");
    expect(r.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  });
});

describe("requests refused before anything runs", () => {
  it("code over 4 MiB → 413, js_params over 1 MiB → 413", async () => {
    const big = await callEnclave("sigil_action", {
      api_key: apiKey,
      code: `async function main(){}//${"x".repeat(4 << 20)}`,
    });
    expect(big.status).toBe(413);
    expect(errorCode(big.body)).toBe("payload_too_large");
    const params = await callEnclave("sigil_action", {
      api_key: apiKey,
      code: "async function main(){}",
      js_params: "x".repeat((1 << 20) + 10),
    });
    expect(params.status).toBe(413);
  });

  it("a sealed request over its 9 MiB bound → 413 on its declared length, and the enclave closes that connection (the unread rest of the body would corrupt the next request on it)", async () => {
    // A raw connection that declares 10 MiB and sends only the start of it: the answer must come
    // from the declared length alone, and the enclave must end the connection after it. (Sending
    // the whole body races the enclave's close: the client's write fails and the answer is lost.)
    const url = new URL(`${inject("enclaveUrl")}/channel/v1`);
    const socket = connect(Number(url.port), url.hostname);
    socket.write(
      `POST /channel/v1 HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${10 << 20}\r\n\r\n{"v":2,"ct":"xxxx`,
    );
    const text = await new Promise<string>((resolve, reject) => {
      let received = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (received += chunk));
      socket.on("end", () => resolve(received));
      socket.on("error", reject);
      setTimeout(
        () => reject(new Error(`the enclave kept the connection open; it answered: ${received}`)),
        10_000,
      ).unref();
    });
    socket.destroy();
    const [head = "", body = ""] = text.split("\r\n\r\n");
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
    expect(head.toLowerCase()).toContain("connection: close");
    expect(errorCode(JSON.parse(body))).toBe("payload_too_large");
  });

  it("an input that is not an object → 400 invalid_request; unknown or missing fields → 400 invalid_request with details", async () => {
    expect(errorCode((await callEnclave("sigil_action", "{not json")).body)).toBe("invalid_request");
    const unknown = await callEnclave("sigil_action", {
      api_key: apiKey,
      code: "async function main(){}",
      colour: "blue",
    });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain("colour");
    const both = await callEnclave("sigil_action", { api_key: apiKey, code: "x", ipfs_id: "y" });
    expect(both.status).toBe(400);
    const neither = await callEnclave("sigil_action", { api_key: apiKey });
    expect(neither.status).toBe(400);
  });

  it("a malformed key → 400 (never hashed), an unknown well-formed key → 401", async () => {
    const malformed = await callEnclave("sigil_action", { api_key: "0x1234", code: "async function main(){}" });
    expect(malformed.status).toBe(400);
    const unknown = await callEnclave("sigil_action", {
      api_key: btoa("k".repeat(32)),
      code: "async function main(){}",
    });
    expect(unknown.status).toBe(401);
    expect(errorCode(unknown.body)).toBe("invalid_api_key");
  });

  it("the internal API refuses anything that did not come through the channel, and error bodies never echo the key", async () => {
    const res = await fetch(`${inject("enclaveUrl")}/internal/v1/execute`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: apiKey, code: "async function main(){}" }),
    });
    expect(res.status).toBe(403);
    const text = await res.text();
    expect(text).not.toContain(apiKey);
    expect(JSON.parse(text).error.code).toBe("permission_denied");
    const unknownOp = await callEnclave("no_such_op", {});
    expect(unknownOp.status).toBe(404);
  });

  it("its internal health report, through the channel, gives the listener lag, the chain and funded payers", async () => {
    const health = await internalHealthOf<
      Record<string, unknown> & {
        payers: Array<{ address: string; balance_wei: string; low: boolean }>;
        listener: { last_block: string; chain_head: string };
      }
    >(inject("enclaveUrl"));
    expect(health.status).toBe("ok");
    expect(typeof health.account_event_listener_lag_seconds).toBe("number");
    expect(health.payers.length).toBeGreaterThan(0);
    expect(health.payers.every((p) => !p.low && BigInt(p.balance_wei) > 0n)).toBe(true);
    expect(BigInt(health.listener.chain_head)).toBeGreaterThanOrEqual(BigInt(health.listener.last_block));
  });
});

describe("usage-key expiry", () => {
  it("a usage key past its expiration is refused (401) by the clock, although no block has been mined since", async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const { usage_api_key: key } = await ok<{ usage_api_key: string }>("add_usage_api_key", {
      api_key: apiKey,
      name: "short-lived",
      description: "",
      ...NO_PERMISSIONS,
      execute_in_groups: [0],
      expires_at: expiresAt,
    });
    const code = "async function main() { return 'ran' }";
    expect((await run(key, code)).body.response).toBe("ran");
    const head = await createPublicClient({ transport: http(inject("rpcUrl")) }).getBlockNumber();
    await new Promise((resolve) => setTimeout(resolve, (expiresAt + 1) * 1000 - Date.now()));
    const late = await run(key, code);
    expect(late.status).toBe(401);
    expect(errorCode(late.body)).toBe("invalid_api_key");
    // The point of the test: the chain's time has not moved (anvil mines only on a transaction).
    expect(await createPublicClient({ transport: http(inject("rpcUrl")) }).getBlockNumber()).toBe(head);
  });
});
