// `sigil_action` through the edge in workerd, against the real chain and enclave: a script signs
// with an account wallet, by code and by ipfs_id; the edge's own answers for what never reaches
// the enclave (no key, bad JSON, a body over 6 MiB).
import { SELF } from "cloudflare:test";
import { CID } from "multiformats/cid";
import { getAddress, recoverMessageAddress, type Hex } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { edgeClient, type Reply } from "./stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
  }
}

const BASE = "http://edge/core/v1";

const SIGN = `async function main({ wallet, message }) {
  const signature = await Sigil.Actions.signMessage({ pkpId: wallet, message });
  console.log("signed", message);
  return { signature };
}`;

type Run = {
  response: unknown;
  logs: string;
  has_error: boolean;
  error?: { code: string; message: string };
  cid: string;
  duration_ms: number;
  charged_cents: number;
};

const { edge, expectError } = edgeClient(SELF);

/** A POST with the key in `Authorization: Bearer` (the other header form than most suites use). */
function post<T = Record<string, unknown>>(path: string, key: string | undefined, body: unknown): Promise<Reply<T>> {
  return edge<T>(path.slice(1), {
    method: "POST",
    body,
    ...(key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } }),
  });
}

async function ok<T = Record<string, unknown>>(path: string, key: string | undefined, body: unknown): Promise<T> {
  const r = await post<T>(path, key, body);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

describe("sigil_action", () => {
  let key: string;
  let wallet: string;
  let signCid: string;

  beforeAll(async () => {
    key = (await ok<{ api_key: string }>("/new_account", undefined, { account_name: "execution" })).api_key;
    wallet = (await ok<{ wallet_address: string }>("/create_wallet", key, {})).wallet_address;
    signCid = await computeCid(SIGN);
    await ok("/add_group", key, {
      group_name: "signers",
      group_description: "",
      pkp_ids_permitted: [wallet],
      cid_hashes_permitted: [signCid],
    });
  });

  it("runs a script that signs with the wallet: the signature recovers to it; nothing is charged while billing is off", async () => {
    const r = await post<Run>("/sigil_action", key, {
      code: SIGN,
      js_params: { wallet, message: "hello from the edge" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      has_error: false,
      cid: signCid,
      logs: "signed hello from the edge\n",
      charged_cents: 0,
    });
    // The signed receipt says so too (billing off: 0), and lists the wallet with the message it signed.
    expect((r.body as Run & { receipt: unknown }).receipt).toMatchObject({
      charged_cents: 0,
      cid: signCid,
      wallets: [{ address: wallet.toLowerCase(), signed: [{ kind: "message" }] }],
    });
    expect(r.body.duration_ms).toBeGreaterThanOrEqual(0);
    expect(r.headers.get("x-sigil-charged-cents")).toBe("0");
    const { signature } = r.body.response as { signature: Hex };
    expect(await recoverMessageAddress({ message: "hello from the edge", signature })).toBe(getAddress(wallet));
  });

  it("a script failure is a 200 with has_error, the error's code and the logs so far", async () => {
    const code = `async function main() { console.log("before"); throw new Error("boom"); }`;
    await ok("/add_group", key, {
      group_name: "failing",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [await computeCid(code)],
    });
    const r = await post<Run>("/sigil_action", key, { code, js_params: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ has_error: true, logs: "before\n", error: { code: "script_error" } });
    expect(r.body.error?.message).toContain("boom");
  });

  it("code whose CID no group of the key lists is 403 permission_denied, before it runs", async () => {
    const error = expectError(
      await post("/sigil_action", key, { code: `async function main() { return 1 }` }),
      403,
      "permission_denied",
    );
    expect(error.details).toMatchObject({ scope: "execute" });
  });

  it("runs code by ipfs_id, fetched from the gateway and checked against its CID", async () => {
    const added = (await (await fetch(`${inject("gatewayUrl")}/add`, { method: "POST", body: SIGN })).json()) as {
      cid: string;
    };
    expect(added.cid).toBe(signCid);
    const r = await post<Run>("/sigil_action", key, { ipfs_id: signCid, js_params: { wallet, message: "by cid" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ has_error: false, cid: signCid });
    const { signature } = r.body.response as { signature: Hex };
    expect(await recoverMessageAddress({ message: "by cid", signature })).toBe(getAddress(wallet));
  });

  it("a grant of the script's CIDv1 (bafy…) authorizes its run by code and by ipfs_id in either form; the run reports the canonical Qm CID", async () => {
    const code = `async function main() { return "granted as bafy" }`;
    const added = (await (await fetch(`${inject("gatewayUrl")}/add`, { method: "POST", body: code })).json()) as {
      cid: string;
    };
    const bafy = CID.parse(added.cid).toV1().toString();
    expectError(await post("/sigil_action", key, { code }), 403, "permission_denied");
    await ok("/add_group", key, {
      group_name: "bafy",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [bafy],
    });
    for (const body of [{ code }, { ipfs_id: added.cid }, { ipfs_id: bafy }]) {
      const r = await post<Run>("/sigil_action", key, body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ response: "granted as bafy", has_error: false, cid: added.cid });
    }
  });

  it("ipfs_id whose gateway answers 503 is 503 ipfs_unavailable with Retry-After, and the enclave stays in service", async () => {
    const cid = await computeCid(`async function main() { return "the gateway is down" }`);
    await fetch(`${inject("gatewayUrl")}/misbehave?cid=${cid}&as=503`, { method: "POST" });
    await ok("/add_group", key, {
      group_name: "gateway down",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [cid],
    });
    const r = await post("/sigil_action", key, { ipfs_id: cid });
    expectError(r, 503, "ipfs_unavailable");
    expect(r.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    const after = await post<Run>("/sigil_action", key, { code: SIGN, js_params: { wallet, message: "still here" } });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
  });

  it("ipfs_id that is a CID with no CIDv0 form (raw codec) is 400 invalid_request at the edge, naming ipfs_id", async () => {
    const raw = CID.createV1(0x55, CID.parse(signCid).multihash).toString();
    const error = expectError(await post("/sigil_action", key, { ipfs_id: raw }), 400, "invalid_request");
    expect(error.details).toEqual([{ path: "ipfs_id", message: expect.stringMatching(/cannot name a script/) }]);
  });

  it("both code and ipfs_id, or neither, is 400 invalid_request; so is an unknown field", async () => {
    expectError(await post("/sigil_action", key, { code: SIGN, ipfs_id: signCid }), 400, "invalid_request");
    expectError(await post("/sigil_action", key, { js_params: {} }), 400, "invalid_request");
    expectError(await post("/sigil_action", key, { code: SIGN, timeout_ms: 5 }), 400, "invalid_request");
  });

  it("js_params is a JSON object or null (the specification's): an array, a string, a number or a boolean is 400 invalid_request naming js_params; an object, null or none runs", async () => {
    const code = "async function main(p) { return p }";
    await ok("/add_group", key, {
      group_name: "echo",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [await computeCid(code)],
    });
    for (const js_params of [[1, 2], "a string", 7, true]) {
      const error = expectError(await post("/sigil_action", key, { code, js_params }), 400, "invalid_request");
      expect(error.details, JSON.stringify(js_params)).toEqual([
        { path: "js_params", message: "must be a JSON object or null" },
      ]);
    }
    for (const [body, response] of [
      [{ code, js_params: { n: [1, 2] } }, { n: [1, 2] }],
      [{ code, js_params: null }, null],
      [{ code }, null],
    ] as const) {
      const r = await ok<Run>("/sigil_action", key, body);
      expect(r.response).toEqual(response);
    }
  });

  it("a body over 6 MiB is 413 payload_too_large with the error body, whether its length is declared or streamed", async () => {
    const body = JSON.stringify({ code: `// ${"x".repeat(6 << 20)}\nasync function main() { return 1 }` });
    const declared = expectError(await post("/sigil_action", key, body), 413, "payload_too_large");
    expect(declared.message).toContain(String(6 << 20));
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1 << 20) controller.enqueue(bytes.slice(i, i + (1 << 20)));
        controller.close();
      },
    });
    const res = await SELF.fetch(`${BASE}/sigil_action`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: stream,
    });
    const streamed = expectError(
      { status: res.status, body: await res.json(), headers: res.headers },
      413,
      "payload_too_large",
    );
    expect(streamed.message).toContain(String(6 << 20));
  });

  it("a body under 6 MiB with code over the 4 MiB code limit is 413 from the enclave", async () => {
    const code = `// ${"x".repeat((4 << 20) + 16)}\nasync function main() { return 1 }`;
    const error = expectError(await post("/sigil_action", key, { code }), 413, "payload_too_large");
    expect(error.message).toMatch(/code must be at most/);
  });

  it("a body that is not JSON is 400 invalid_json", async () => {
    expectError(await post("/sigil_action", key, `{"code": "async function main() {}"`), 400, "invalid_json");
  });

  it("no key is 401 missing_api_key; a malformed one 401 invalid_api_key", async () => {
    expectError(await post("/sigil_action", undefined, { code: SIGN }), 401, "missing_api_key");
    expectError(await post("/sigil_action", "not-a-key", { code: SIGN }), 401, "invalid_api_key");
  });

  it("a well-formed key no account has is 401 invalid_api_key", async () => {
    expectError(await post("/sigil_action", `${"A".repeat(43)}=`, { code: SIGN }), 401, "invalid_api_key");
  });

  it("the route is in the OpenAPI document", async () => {
    const doc = (await (await SELF.fetch(`${BASE}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(doc.paths).toHaveProperty(["/core/v1/sigil_action"]);
  });
});
