// The channel's sealing and opening (attestation.md, the edge↔enclave channel): a request opens
// only at the enclave whose key it was sealed to, from an allowed edge, once, within the window;
// the answer opens only for the request's sender and not after any change.
import { describe, expect, it } from "vitest";
import {
  ChannelError,
  ChannelRecipient,
  channelKeyId,
  edgeIdentityFromSeed,
  fromBase64Url,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
  sealRequest,
  toBase64Url,
  type ChannelRefusal,
} from "./channel.ts";

const REQUEST = { method: "POST", path: "/internal/v1/execute", headers: { "x-request-id": "r-1" }, body: JSON.stringify({ api_key: "k", code: "x" }) };

async function setup(options: { now?: () => number } = {}) {
  const key = await generateChannelKeyPair();
  const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
  const recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey], ...(options.now ? { now: options.now } : {}) });
  return { key, edge, recipient };
}

async function refusal(promise: Promise<unknown>): Promise<ChannelRefusal> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ChannelError) return err.reason;
    throw err;
  }
  throw new Error("expected a ChannelError");
}

describe("the channel", () => {
  it("carries a request to the enclave and its answer back", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect(JSON.stringify(call.sealed)).not.toContain("api_key");
    const opened = await recipient.open(JSON.parse(JSON.stringify(call.sealed)));
    expect(opened.request).toMatchObject(REQUEST);
    expect(opened.request.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(opened.edgeKey).toBe(toBase64Url(edge.publicKey));
    const answer = await opened.sealResponse('{"status":200}');
    expect(await call.openResponse(JSON.parse(JSON.stringify(answer)))).toBe('{"status":200}');
  });

  it("derives the edge's public key from its seed, the same every time", async () => {
    const seed = newEdgeIdentitySeed();
    const a = await edgeIdentityFromSeed(seed);
    const b = await edgeIdentityFromSeed(`0x${seed}`);
    expect(a.publicKey).toHaveLength(32);
    expect(toBase64Url(a.publicKey)).toBe(toBase64Url(b.publicKey));
    await expect(edgeIdentityFromSeed("abcd")).rejects.toThrow(/32 bytes/);
  });

  it("refuses an edge key that is not on the allow-list", async () => {
    const { key, recipient } = await setup();
    const stranger = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: stranger, request: REQUEST });
    expect(await refusal(recipient.open(call.sealed))).toBe("edge_not_allowed");
  });

  it("refuses a replayed request", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    await recipient.open(call.sealed);
    expect(await refusal(recipient.open(call.sealed))).toBe("replayed");
  });

  it("refuses a request outside ±60 s of the enclave's clock, either way", async () => {
    const now = 1_000_000_000_000;
    const { key, edge, recipient } = await setup({ now: () => now });
    const old = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST, now: now - 61_000 });
    const future = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST, now: now + 61_000 });
    const edgeOfWindow = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST, now: now - 59_000 });
    expect(await refusal(recipient.open(old.sealed))).toBe("stale");
    expect(await refusal(recipient.open(future.sealed))).toBe("stale");
    await recipient.open(edgeOfWindow.sealed);
  });

  it("refuses a request sealed to another (stale) key, saying so, so the edge fetches the key again", async () => {
    const { edge, recipient } = await setup();
    const stale = await generateChannelKeyPair();
    const call = await sealRequest({ enclavePublicKey: stale.publicKey, identity: edge, request: REQUEST });
    expect(call.sealed.key_id).toBe(channelKeyId(stale.publicKey));
    expect(await refusal(recipient.open(call.sealed))).toBe("unknown_channel_key");
  });

  it("refuses a signature that does not cover the request, and a ciphertext changed and re-signed", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    const ct = fromBase64Url(call.sealed.ct);
    ct[0] = (ct[0] as number) ^ 1;
    expect(await refusal(recipient.open({ ...call.sealed, ct: toBase64Url(ct) }))).toBe("bad_signature");
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array([...fromBase64Url(call.sealed.enc), ...ct])));
    const sig = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, edge.privateKey, digest));
    expect(await refusal(recipient.open({ ...call.sealed, ct: toBase64Url(ct), sig: toBase64Url(sig) }))).toBe("undecryptable");
    expect(await refusal(recipient.open({ nonsense: true }))).toBe("malformed");
  });

  it("an answer changed in transit, or opened by another request's sender, does not open", async () => {
    const { key, edge, recipient } = await setup();
    const first = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    const second = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    const answer = await (await recipient.open(first.sealed)).sealResponse('{"ok":true}');
    const ct = fromBase64Url(answer.ct);
    ct[ct.length - 1] = (ct[ct.length - 1] as number) ^ 1;
    expect(await refusal(first.openResponse({ ...answer, ct: toBase64Url(ct) }))).toBe("undecryptable");
    expect(await refusal(second.openResponse(answer))).toBe("undecryptable");
    expect(await refusal(first.openResponse({ v: 2 }))).toBe("malformed");
  });
});
