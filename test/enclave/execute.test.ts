// `execute` at its edges: code from IPFS (verified by its CID), requests the enclave must refuse
// before running anything, and 10 000 runs in a row that must leak no QuickJS handles (the process
// stays up and its memory flat).
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { createPublicClient, http } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import { callEnclave, ok, run } from "./client.ts";

let apiKey: string;

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "execute edges" })).api_key;
  // "0" lists every action: these tests are about the runtime, not about groups.
  await ok("add_group", { api_key: apiKey, group_name: "any", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0"] });
});

async function addToGateway(content: string, asCid?: string): Promise<string> {
  const res = await fetch(`${inject("gatewayUrl")}/add${asCid ? `?cid=${asCid}` : ""}`, { method: "POST", body: content });
  return ((await res.json()) as { cid: string }).cid;
}

function errorCode(body: unknown): string | undefined {
  return (body as { error?: { code?: string } }).error?.code;
}

describe("code by ipfs_id", () => {
  it("fetches the code through the gateway, checks its CID and runs it", async () => {
    const code = `async function main(p) { return { from: "ipfs", p } }`;
    const cid = await addToGateway(code);
    expect(cid).toBe(await computeCid(code));
    const r = await callEnclave("execute", { api_key: apiKey, ipfs_id: cid, js_params: 7 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ response: { from: "ipfs", p: 7 }, cid, has_error: false });
  });

  it("refuses content that does not hash to the requested CID", async () => {
    const genuine = `async function main() { return "genuine" }`;
    const cid = await computeCid(genuine);
    await addToGateway(`async function main() { return "tampered" }`, cid);
    const r = await callEnclave("execute", { api_key: apiKey, ipfs_id: cid });
    expect(r.status).toBe(400);
    expect(errorCode(r.body)).toBe("invalid_request");
  });

  it("answers 404 when the gateway has no such content, and 400 for a malformed CID", async () => {
    const missing = await callEnclave("execute", { api_key: apiKey, ipfs_id: await computeCid("never added") });
    expect(missing.status).toBe(404);
    const malformed = await callEnclave("execute", { api_key: apiKey, ipfs_id: "not-a-cid" });
    expect(malformed.status).toBe(400);
  });
});

describe("requests refused before anything runs", () => {
  it("code over 4 MiB → 413, js_params over 1 MiB → 413", async () => {
    const big = await callEnclave("execute", { api_key: apiKey, code: `async function main(){}//${"x".repeat(4 << 20)}` });
    expect(big.status).toBe(413);
    expect(errorCode(big.body)).toBe("payload_too_large");
    const params = await callEnclave("execute", { api_key: apiKey, code: "async function main(){}", js_params: "x".repeat((1 << 20) + 10) });
    expect(params.status).toBe(413);
  });

  it("a sealed request over its 9 MiB bound → 413 on its declared length, and the enclave closes that connection (the unread rest of the body would corrupt the next request on it)", async () => {
    // A raw connection that declares 10 MiB and sends only the start of it: the answer must come
    // from the declared length alone, and the enclave must end the connection after it. (Sending
    // the whole body races the enclave's close: the client's write fails and the answer is lost.)
    const url = new URL(`${inject("enclaveUrl")}/channel/v1`);
    const socket = connect(Number(url.port), url.hostname);
    socket.write(`POST /channel/v1 HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${10 << 20}\r\n\r\n{"v":2,"ct":"xxxx`);
    const text = await new Promise<string>((resolve, reject) => {
      let received = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (received += chunk));
      socket.on("end", () => resolve(received));
      socket.on("error", reject);
      setTimeout(() => reject(new Error(`the enclave kept the connection open; it answered: ${received}`)), 10_000).unref();
    });
    socket.destroy();
    const [head = "", body = ""] = text.split("\r\n\r\n");
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
    expect(head.toLowerCase()).toContain("connection: close");
    expect(errorCode(JSON.parse(body))).toBe("payload_too_large");
  });

  it("malformed JSON → 400 invalid_json; unknown or missing fields → 400 invalid_request with details", async () => {
    expect(errorCode((await callEnclave("execute", "{not json")).body)).toBe("invalid_json");
    const unknown = await callEnclave("execute", { api_key: apiKey, code: "async function main(){}", colour: "blue" });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain("colour");
    const both = await callEnclave("execute", { api_key: apiKey, code: "x", ipfs_id: "y" });
    expect(both.status).toBe(400);
    const neither = await callEnclave("execute", { api_key: apiKey });
    expect(neither.status).toBe(400);
  });

  it("a malformed key → 400 (never hashed), an unknown well-formed key → 401", async () => {
    const malformed = await callEnclave("execute", { api_key: "0x1234", code: "async function main(){}" });
    expect(malformed.status).toBe(400);
    const unknown = await callEnclave("execute", { api_key: btoa("k".repeat(32)), code: "async function main(){}" });
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
      Record<string, unknown> & { payers: Array<{ address: string; balance_wei: string; low: boolean }>; listener: { last_block: string; chain_head: string } }
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

describe("10 000 sequential executions", () => {
  it("leak no QuickJS handles: every run answers, the process stays up, and its RSS grows by less than 288 MiB from run 1 000 to run 10 000", { timeout: 600_000 }, async () => {
    const pid = inject("enclavePid");
    // The whole process: the service thread and the sandbox workers (threads of this process).
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
    const heap = async () => (await internalHealthOf<{ memory: { heap_used_mb: number } }>(inject("enclaveUrl"))).memory.heap_used_mb;
    // Each run exercises the paths that create handles: host calls, promises, timers, logs, errors.
    const code = `async function main(i) {
      await new Promise((r) => setTimeout(r, 0));
      const h = Sigil.Actions.keccak256("run " + i);
      console.log("run", i, { h: h.slice(0, 10) });
      if (i % 5 === 0) throw new Error("planned failure " + i);
      return { i, h };
    }`;
    const runs = 10_000;
    const every = 500;
    const samples = new Map<number, { rss: number; heap: number }>();
    let failures = 0;
    for (let i = 0; i < runs; i++) {
      const r = await run(apiKey, code, i);
      if (r.status !== 200) throw new Error(`run ${i} answered ${r.status}: ${JSON.stringify(r.body)}`);
      if (i % 5 === 0) {
        if (r.body.error?.code !== "script_error") throw new Error(`run ${i}: ${JSON.stringify(r.body)}`);
        failures++;
      } else if ((r.body.response as { i: number }).i !== i) {
        throw new Error(`run ${i} answered ${JSON.stringify(r.body.response)}`);
      }
      if ((i + 1) % every === 0) samples.set(i + 1, { rss: rss(), heap: await heap() });
    }
    const at = (n: number) => (samples.get(n) as { rss: number; heap: number }).rss;
    // Warming up lasts most of the 10 000 runs: the workers' heaps and compiled code grow for about
    // 4 000, and the service thread's heap grows to about 140 MiB until its first full collection
    // (5 000-8 000 runs), after which RSS may or may not drop by 100 MiB and grow back. So a window
    // late in the run says little either way (without a leak, runs 5 000-10 000 added -71 to +41
    // MiB, and could add more after an early drop), and the check is the whole growth after the first
    // 1 000 runs — before any full collection — against a fixed bound. Without a leak that was
    // 102-218 MiB in six runs here (RSS peaked at 552-578 MiB); with a steady leak of 16 KiB per run
    // put into the service thread, 303-332 MiB (so that is about the smallest leak this catches). A
    // leaked QuickJS runtime is about 175 KiB per run. The heap is printed, not judged: one sample
    // of it says little.
    const warm = 1_000;
    const bound = 288;
    const growth = at(runs) - at(warm);
    console.log(
      `enclave memory after N runs (RSS / service-thread heap, MiB): ${[...samples].map(([n, m]) => `${n}: ${m.rss.toFixed(0)}/${m.heap.toFixed(0)}`).join(", ")}; ` +
        `RSS growth over runs ${warm}-${runs}: ${growth.toFixed(1)} MiB (bound ${bound})`,
    );
    expect(failures).toBe(runs / 5);
    expect(() => process.kill(pid, 0)).not.toThrow();
    // (A leaked QuickJS handle would abort the worker at once.)
    expect(growth).toBeLessThan(bound);
  });
});
