// The attested channel against real enclave processes (docs/design/attestation.md, Channel): what the
// enclave refuses — an edge key not on its allow-list, a forged session, a replayed request, one
// outside its ±60 s window, one sealed to a key or in a session it does not hold, anything sent to
// the internal API directly — what
// the edge refuses (an answer altered in transit), and an enclave that restarts with a new key,
// which the edge's client follows without an error.
import { Agent, request as httpRequest } from "node:http";
import { afterAll, describe, expect, inject, it } from "vitest";
import { spawnEnclave, type EnclaveProcess } from "../../bin/stack/enclave.ts";
import { freePort } from "../../bin/stack/edge.ts";
import { parseQuote } from "../../shared/attestation/index.ts";
import {
  channelKeyId,
  channelReportData,
  edgeIdentityFromSeed,
  fromBase64Url,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
  ChannelSession,
  sealRequest,
  toBase64Url,
  type SealedRequest,
} from "../../shared/channel/channel.ts";
import { ChannelClient, channelDocumentSchema } from "../../shared/channel/client.ts";
import { junkOpening, testChannel } from "../harness/channel.ts";
import { TEST_EDGE_IDENTITY_SEED, TEST_ROOT_KEY } from "./constants.ts";

/** The enclave's health operation: a read any enclave answers. */
const HEALTH = { op: "health", ids: { request_id: "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d" }, input: {} };
/** What the health operation answers, opened. */
const healthAnswer = { ok: true, output: { sandbox: expect.any(Object) } };

async function channelKey(base: string): Promise<Uint8Array> {
  const doc = channelDocumentSchema.parse(await (await fetch(`${base}/channel`)).json());
  return fromBase64Url(doc.public_key);
}

async function send(base: string, sealed: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/channel/v1`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(sealed),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function sealed(base: string, options: { seed?: string; now?: number; publicKey?: Uint8Array } = {}) {
  return sealRequest({
    enclavePublicKey: options.publicKey ?? (await channelKey(base)),
    identity: await edgeIdentityFromSeed(options.seed ?? TEST_EDGE_IDENTITY_SEED),
    request: HEALTH,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
}

describe("the enclave's end of the channel", () => {
  const base = () => inject("enclaveUrl");

  it("serves its channel key with a quote that binds it", async () => {
    const doc = channelDocumentSchema.parse(await (await fetch(`${base()}/channel`)).json());
    const expected = Buffer.from(await channelReportData(fromBase64Url(doc.public_key))).toString("hex");
    expect(parseQuote(doc.quote).reportData).toBe(expected);
    expect(doc.simulated).toBe(true);
  });

  it("answers an allowed edge's sealed request, sealed for it alone", async () => {
    const call = await sealed(base());
    const answer = await send(base(), call.sealed);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).not.toContain("sandbox");
    expect(JSON.parse(await call.openResponse(answer.body))).toMatchObject(healthAnswer);
  });

  it("refuses an edge key that is not on its allow-list", async () => {
    const answer = await send(base(), (await sealed(base(), { seed: newEdgeIdentitySeed() })).sealed);
    expect(answer).toEqual({ status: 401, body: { channel_error: "edge_not_allowed" } });
  });

  it("refuses a replayed request", async () => {
    const call = await sealed(base());
    expect((await send(base(), call.sealed)).status).toBe(200);
    expect(await send(base(), call.sealed)).toEqual({ status: 401, body: { channel_error: "replayed" } });
  });

  it("refuses a request from outside its ±60 s window", async () => {
    const old = await sealed(base(), { now: Date.now() - 90_000 });
    expect(await send(base(), old.sealed)).toEqual({ status: 401, body: { channel_error: "stale" } });
  });

  it("refuses a request sealed to a key it does not hold with 409 unknown_channel_key", async () => {
    const stale = await generateChannelKeyPair();
    const call = await sealed(base(), { publicKey: stale.publicKey });
    expect(call.sealed.key_id).toBe(channelKeyId(stale.publicKey));
    expect(await send(base(), call.sealed)).toEqual({ status: 409, body: { channel_error: "unknown_channel_key" } });
  });

  it("refuses a session whose signature does not cover it", async () => {
    const call = await sealed(base());
    const init = call.sealed.init!;
    const sig = fromBase64Url(init.sig);
    sig[5] = (sig[5] as number) ^ 0xff;
    const forged: SealedRequest = { ...call.sealed, init: { ...init, sig: toBase64Url(sig) } };
    expect(await send(base(), forged)).toEqual({ status: 401, body: { channel_error: "bad_signature" } });
  });

  it("refuses a request in a session it does not hold with 409 unknown_session", async () => {
    const { init: _init, ...withoutInit } = (await sealed(base())).sealed;
    expect(await send(base(), withoutInit)).toEqual({ status: 409, body: { channel_error: "unknown_session" } });
  });

  it("serves nothing of the internal API to a direct request", async () => {
    const res = await fetch(`${base()}/internal/v1/health`);
    expect(res.status).toBe(403);
  });

  it("an answer altered in transit does not open at the edge", async () => {
    const call = await sealed(base());
    const answer = await send(base(), call.sealed);
    const ct = fromBase64Url(String(answer.body.ct));
    ct[0] = (ct[0] as number) ^ 1;
    await expect(call.openResponse({ ...answer.body, ct: toBase64Url(ct) })).rejects.toThrow(/does not open/);
  });
});

/** POST /channel/v1 from the local address `from` (the whole of 127.0.0.0/8 is loopback): another peer, as the enclave sees it. */
function sendFrom(
  agent: Agent,
  base: string,
  sealed: unknown,
): Promise<{ status: number; retryAfter: string | undefined; body: Record<string, unknown> }> {
  const body = JSON.stringify(sealed);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}/channel/v1`,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const retry = res.headers["retry-after"];
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: Array.isArray(retry) ? retry[0] : retry,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>,
          });
        });
      },
    );
    req.once("error", reject);
    req.end(body);
  });
}

describe("the session flood (issue 11, point 6)", () => {
  const base = () => inject("enclaveUrl");

  it("4096+ junk openings from another peer are all refused — unknown edge keys at once, forged signatures until that peer's budget of openings is spent, then 429 with Retry-After — and the edge's live session works on without reopening", async () => {
    const publicKey = await channelKey(base());
    const edge = await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED);
    const live = await ChannelSession.open({ enclavePublicKey: publicKey, identity: edge });
    const first = await live.seal(HEALTH);
    await first.openResponse((await send(base(), first.sealed)).body);

    const stranger = toBase64Url((await edgeIdentityFromSeed(newEdgeIdentitySeed())).publicKey);
    const allowed = toBase64Url(edge.publicKey);
    const agent = new Agent({ keepAlive: true, maxSockets: 128, localAddress: "127.0.0.2" });
    try {
      const answers = await Promise.all(
        Array.from({ length: 4400 }, (_, i) =>
          sendFrom(agent, base(), junkOpening(publicKey, i % 22 === 0 ? allowed : stranger)),
        ),
      );
      const byReason = new Map<string, number>();
      for (const a of answers)
        byReason.set(String(a.body.channel_error), (byReason.get(String(a.body.channel_error)) ?? 0) + 1);
      expect([...byReason.keys()].sort()).toEqual(["bad_signature", "edge_not_allowed", "too_many_openings"]);
      expect(byReason.get("edge_not_allowed")).toBe(4200);
      for (const a of answers)
        expect(a.status, String(a.body.channel_error)).toBe(a.body.channel_error === "too_many_openings" ? 429 : 401);
      expect(Number(answers.find((a) => a.status === 429)?.retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      agent.destroy();
    }

    // The live session, with no init: it opens only because the enclave still holds it.
    const later = await live.seal(HEALTH);
    expect(later.sealed.init).toBeUndefined();
    const answer = await send(base(), later.sealed);
    expect(answer.status).toBe(200);
    expect(JSON.parse(await later.openResponse(answer.body))).toMatchObject(healthAnswer);
    // This peer's own budget is its own: a new session from here opens.
    expect((await send(base(), (await sealed(base())).sealed)).status).toBe(200);
  });
});

describe("an enclave that restarts with a new channel key", () => {
  let enclave: EnclaveProcess | undefined;
  afterAll(async () => {
    await enclave?.stop();
  });

  it("is followed by the edge's client: the request sealed to the old key is sent once more to the new one, with no error", async () => {
    const port = await freePort();
    const start = async () =>
      spawnEnclave({
        SIGIL_ENV: "test",
        SIGIL_ENCLAVE_PORT: String(port),
        SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED)).publicKey),
        SIGIL_RPC_URL: inject("rpcUrl"),
        SIGIL_CONTRACT_ADDRESS: inject("contract"),
        SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
        SIGIL_INSTANCE_INDEX: "7",
        SIGIL_SANDBOX_WORKERS: "1",
        SIGIL_LOG_LEVEL: "warn",
      });
    enclave = await start();
    const base = enclave.url;
    // A client of its own: it has pinned nothing of this enclave yet.
    const pins: string[] = [];
    const client = new ChannelClient({
      identity: edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED),
      verify: async (doc) => {
        pins.push(doc.public_key);
      },
    });
    const before = await client.call(base, HEALTH);
    expect(before.ok).toBe(true);
    const firstKey = await channelKey(base);

    await enclave.stop();
    enclave = await start();
    const secondKey = await channelKey(base);
    expect(toBase64Url(secondKey)).not.toBe(toBase64Url(firstKey));

    const after = await client.call(base, HEALTH);
    expect(after).toMatchObject(healthAnswer);
    // Verified twice: the first key, then the new one after the enclave said it no longer held it.
    expect(pins).toEqual([toBase64Url(firstKey), toBase64Url(secondKey)]);
    // The shared stand-in edge, pinned to the suite's enclave, is untouched by all this.
    expect((await testChannel().call(inject("enclaveUrl"), HEALTH)).ok).toBe(true);
  });
});
