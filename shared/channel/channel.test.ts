// The channel's sessions, sealing and opening (docs/design/attestation.md, Channel): a request
// opens only at the enclave whose key its session was opened to, in a session an allowed edge
// signed, once, within the window; the answer opens only for that request and not after any change.
import { sha256 } from "@noble/hashes/sha2";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { describe, expect, it } from "vitest";
import {
  ChannelError,
  ChannelRecipient,
  ChannelSession,
  channelKeyId,
  edgeIdentityFromSeed,
  fromBase64Url,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
  sealRequest,
  toBase64Url,
  type ChannelRefusal,
} from "./channel.ts";
import { junkOpening } from "../../test/harness/channel.ts";

const REQUEST = {
  op: "sigil_action",
  ids: { request_id: "r-1", correlation_id: "order-1" },
  input: { api_key: "k", code: "x" },
  idempotency_key: "idem-1",
};

async function setup(
  options: { now?: () => number; maxSessions?: number; openings?: { capacity: number; perSecond: number } } = {},
) {
  const key = await generateChannelKeyPair();
  const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
  const recipient = new ChannelRecipient({
    key,
    allowedEdgeKeys: [edge.publicKey],
    ...(options.now ? { now: options.now } : {}),
    ...(options.maxSessions ? { maxSessions: options.maxSessions } : {}),
    ...(options.openings ? { openings: options.openings } : {}),
  });
  return { key, edge, recipient };
}

/** Why `promise` was refused; `what` names the request in the failure when it was not. */
async function refusal(promise: Promise<unknown>, what = "the request"): Promise<ChannelRefusal> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ChannelError) return err.reason;
    throw err;
  }
  throw new Error(`expected a ChannelError, but it opened: ${what}`);
}

describe("the channel", () => {
  it("carries an operation ({op, ids, input}, no HTTP envelope) to the enclave and its answer back", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect(JSON.stringify(call.sealed)).not.toContain("api_key");
    const opened = await recipient.open(JSON.parse(JSON.stringify(call.sealed)));
    expect(opened.request).toMatchObject(REQUEST);
    expect(Object.keys(opened.request).sort()).toEqual(["idempotency_key", "ids", "input", "nonce", "op", "ts"]);
    expect(opened.bytes).toBeGreaterThan(JSON.stringify(REQUEST).length);
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

  // Issue 26: every other replay test replays at once, so an enclave that forgot a nonce after a
  // second would pass them all — and a request captured on the wire could then be sent again for the
  // rest of the minute its timestamp is accepted. The enclave's clock is injected: no test waits.
  it("refuses a replay at any moment its timestamp still passes the time check, and after that as stale: a nonce is kept as long as the window", async () => {
    const t0 = 1_000_000_000_000;
    let now = t0;
    const { key, edge, recipient } = await setup({ now: () => now });
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge, now: t0 });
    const first = await session.seal(REQUEST, t0);
    await first.openResponse(await (await recipient.open(first.sealed)).sealResponse("ok"));
    const { init: _init, ...later } = (await session.seal(REQUEST, t0)).sealed;
    await recipient.open(later);
    // A request stamped at the window's far edge, ahead of the enclave's clock, stays replayable for twice as long.
    const ahead = (await session.seal(REQUEST, t0 + 60_000)).sealed;
    await recipient.open(ahead);
    for (const at of [1_001, 2_000, 30_000, 59_999, 60_000]) {
      now = t0 + at;
      // Other traffic meanwhile, each request of which makes the enclave forget what it may.
      await recipient.open((await session.seal(REQUEST, now)).sealed);
      expect(await refusal(recipient.open(first.sealed), `the first request, replayed ${at} ms after`)).toBe(
        "replayed",
      );
      expect(await refusal(recipient.open(later), `a later request, replayed ${at} ms after`)).toBe("replayed");
      expect(await refusal(recipient.open(ahead), `a request stamped 60 s ahead, replayed ${at} ms after`)).toBe(
        "replayed",
      );
    }
    now = t0 + 60_001;
    expect(await refusal(recipient.open(later))).toBe("stale");
    for (const at of [61_000, 119_999, 120_000]) {
      now = t0 + at;
      await recipient.open((await session.seal(REQUEST, now)).sealed);
      expect(await refusal(recipient.open(ahead), `a request stamped 60 s ahead, replayed ${at} ms after`)).toBe(
        "replayed",
      );
    }
    now = t0 + 120_001;
    expect(await refusal(recipient.open(ahead))).toBe("stale");
  });

  it("refuses a request outside ±60 s of the enclave's clock, either way", async () => {
    const now = 1_000_000_000_000;
    const { key, edge, recipient } = await setup({ now: () => now });
    const old = await sealRequest({
      enclavePublicKey: key.publicKey,
      identity: edge,
      request: REQUEST,
      now: now - 61_000,
    });
    const future = await sealRequest({
      enclavePublicKey: key.publicKey,
      identity: edge,
      request: REQUEST,
      now: now + 61_000,
    });
    const edgeOfWindow = await sealRequest({
      enclavePublicKey: key.publicKey,
      identity: edge,
      request: REQUEST,
      now: now - 59_000,
    });
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

  it("refuses a session whose signature does not cover it, and one whose id is not its own", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    const init = call.sealed.init!;
    const sig = fromBase64Url(init.sig);
    sig[0] = (sig[0] as number) ^ 1;
    expect(await refusal(recipient.open({ ...call.sealed, init: { ...init, sig: toBase64Url(sig) } }))).toBe(
      "bad_signature",
    );
    // The edge's own valid signatures, but over what does not name this enclave's key: the enc alone,
    // or another key's id with it (a session meant for another enclave).
    const enc = fromBase64Url(init.enc);
    const signed = async (digest: Uint8Array) =>
      toBase64Url(
        new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, edge.privateKey, new Uint8Array(digest))),
      );
    const otherKey = await generateChannelKeyPair();
    for (const digest of [sha256(enc), sha256(concatBytes(utf8ToBytes(channelKeyId(otherKey.publicKey)), enc))]) {
      expect(await refusal(recipient.open({ ...call.sealed, init: { ...init, sig: await signed(digest) } }))).toBe(
        "bad_signature",
      );
    }
    const other = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect(await refusal(recipient.open({ ...call.sealed, init: other.sealed.init }))).toBe("malformed");
    expect(await refusal(recipient.open({ nonsense: true }))).toBe("malformed");
    // None of those refusals left a session behind: the genuine request still opens.
    expect((await recipient.open(call.sealed)).request.op).toBe(REQUEST.op);
  });

  it("refuses a ciphertext changed in transit", async () => {
    const { key, edge, recipient } = await setup();
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    const ct = fromBase64Url(call.sealed.ct);
    ct[0] = (ct[0] as number) ^ 1;
    expect(await refusal(recipient.open({ ...call.sealed, ct: toBase64Url(ct) }))).toBe("undecryptable");
  });

  it("carries a session's later requests without its init, each opening once", async () => {
    const { key, edge, recipient } = await setup();
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    const first = await session.seal(REQUEST);
    expect(first.sealed.init).toBeDefined();
    const opened = await recipient.open(first.sealed);
    expect(opened.sid).toBe(session.sid);
    await first.openResponse(await opened.sealResponse("one"));
    const second = await session.seal({ ...REQUEST, input: "two" });
    expect(second.sealed.init).toBeUndefined();
    expect(second.sealed.sid).toBe(first.sealed.sid);
    const openedSecond = await recipient.open(second.sealed);
    expect(openedSecond.request.input).toBe("two");
    expect(openedSecond.request.nonce).not.toBe(opened.request.nonce);
    expect(await second.openResponse(await openedSecond.sealResponse("2"))).toBe("2");
    expect(await refusal(recipient.open(second.sealed))).toBe("replayed");
    expect(recipient.sessions).toBe(1);
  });

  it("refuses a request in a session it does not hold, saying so, so the edge opens a new one", async () => {
    const { key, edge, recipient } = await setup();
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    const first = await session.seal(REQUEST);
    const { sealed } = await session.seal(REQUEST);
    const { init: _init, ...withoutInit } = sealed;
    expect(await refusal(recipient.open(withoutInit))).toBe("unknown_session");
    await recipient.open(first.sealed);
    expect((await recipient.open(withoutInit)).request.op).toBe(REQUEST.op);
  });

  it("dropSessions forgets every session it holds, so each edge's next request is refused unknown_session, and still refuses a replay", async () => {
    const { key, edge, recipient } = await setup();
    const sessions = await Promise.all(
      [0, 1].map(() => ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge })),
    );
    const inits = [];
    for (const s of sessions) {
      const first = await s.seal(REQUEST);
      inits.push(first.sealed.init);
      await first.openResponse(await (await recipient.open(first.sealed)).sealResponse("ok"));
    }
    const confirmed = await sessions[0]!.seal(REQUEST);
    expect(confirmed.sealed.init).toBeUndefined();
    await recipient.open(confirmed.sealed);
    expect(recipient.dropSessions()).toBe(2);
    expect(recipient.sessions).toBe(0);
    expect(await refusal(recipient.open((await sessions[1]!.seal(REQUEST)).sealed))).toBe("unknown_session");
    // The nonces seen are kept: a request opened before the drop, sent again with its session's
    // init (which re-opens that session), is still a replay.
    expect(await refusal(recipient.open({ ...confirmed.sealed, init: inits[0] }))).toBe("replayed");
    // A new session opens as before.
    const fresh = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    expect((await recipient.open((await fresh.seal(REQUEST)).sealed)).sid).toBe(fresh.sid);
  });

  it("drops its least recently used session when it holds too many, and sessions past their lifetime", async () => {
    let now = 1_000_000_000_000;
    const { key, edge, recipient } = await setup({ maxSessions: 2, now: () => now });
    const sessions = await Promise.all(
      [0, 1, 2].map(() => ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge, now })),
    );
    const later = async (s: ChannelSession) => {
      const { init: _init, ...sealed } = (await s.seal(REQUEST, now)).sealed;
      return sealed;
    };
    for (const s of sessions) await recipient.open((await s.seal(REQUEST, now)).sealed);
    expect(recipient.sessions).toBe(2);
    expect(await refusal(recipient.open(await later(sessions[0]!)))).toBe("unknown_session");
    await recipient.open(await later(sessions[2]!));
    now += 61 * 60_000;
    expect(await refusal(recipient.open(await later(sessions[2]!)))).toBe("unknown_session");
    expect(sessions[2]!.usable(now)).toBe(false);
  });

  it("an answer changed in transit, or opened as the answer to another request, does not open", async () => {
    const { key, edge, recipient } = await setup();
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    const first = await session.seal(REQUEST);
    const second = await session.seal(REQUEST);
    const answer = await (await recipient.open(first.sealed)).sealResponse('{"ok":true}');
    const ct = fromBase64Url(answer.ct);
    ct[ct.length - 1] = (ct[ct.length - 1] as number) ^ 1;
    expect(await refusal(first.openResponse({ ...answer, ct: toBase64Url(ct) }))).toBe("undecryptable");
    // The same session's keys, another request: the answer is bound to the request it answers.
    expect(await refusal(second.openResponse(answer))).toBe("undecryptable");
    const stranger = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect(await refusal(stranger.openResponse(answer))).toBe("undecryptable");
    expect(await refusal(first.openResponse({ v: 1 }))).toBe("malformed");
    expect(await first.openResponse(answer)).toBe('{"ok":true}');
  });
});

/** A session the enclave holds: its first request (with the init) has been answered. */
async function liveSession(
  recipient: ChannelRecipient,
  key: { publicKey: Uint8Array },
  edge: Awaited<ReturnType<typeof edgeIdentityFromSeed>>,
  source = "edge",
) {
  const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
  const first = await session.seal(REQUEST);
  await first.openResponse(await (await recipient.open(first.sealed, { source })).sealResponse("ok"));
  /** A later request of the session: no init, so it opens only while the enclave still holds the session. */
  const next = async () => {
    const { sealed } = await session.seal(REQUEST);
    expect(sealed.init).toBeUndefined();
    return recipient.open(sealed, { source });
  };
  return { session, next };
}

describe("the session flood (issue 11, point 6)", () => {
  it("4096+ junk openings at once, all refused as edge_not_allowed, store nothing and leave an edge's live session working without reopening", async () => {
    const { key, edge, recipient } = await setup();
    const live = await liveSession(recipient, key, edge);
    const stranger = toBase64Url((await edgeIdentityFromSeed(newEdgeIdentitySeed())).publicKey);
    // All in flight together, as a flood over many connections arrives, each a new session id.
    const refusals = await Promise.all(
      Array.from({ length: 4200 }, () =>
        refusal(recipient.open(junkOpening(key.publicKey, stranger), { source: "junk" })),
      ),
    );
    expect(new Set(refusals)).toEqual(new Set(["edge_not_allowed"]));
    expect(recipient.sessions).toBe(1);
    expect((await live.next()).request.op).toBe(REQUEST.op);
  });

  it("bounds the openings each source may attempt: over its budget, too_many_openings with Retry-After; other sources and live sessions are untouched", async () => {
    let now = Date.now();
    const { key, edge, recipient } = await setup({ now: () => now, openings: { capacity: 5, perSecond: 1 } });
    const live = await liveSession(recipient, key, edge, "edge");
    // Valid-looking openings from one source: the allowed edge's public key, forged signatures.
    const forged = async () => {
      const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
      const sig = fromBase64Url(call.sealed.init!.sig);
      sig[0] = (sig[0] as number) ^ 1;
      return { ...call.sealed, init: { ...call.sealed.init!, sig: toBase64Url(sig) } };
    };
    const flood = await Promise.all(Array.from({ length: 40 }, forged));
    const errors = await Promise.all(
      flood.map((sealed) =>
        recipient.open(sealed, { source: "attacker" }).then(
          () => undefined,
          (err: unknown) => err as ChannelError,
        ),
      ),
    );
    expect(errors.filter((e) => e?.reason === "bad_signature")).toHaveLength(5);
    const limited = errors.filter((e) => e?.reason === "too_many_openings");
    expect(limited).toHaveLength(35);
    expect(limited[0]?.retryAfterSeconds).toBe(1);
    // An opening with a key that is not allowed costs the source nothing (it is refused first).
    const stranger = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    expect(
      await refusal(
        recipient.open(
          (await sealRequest({ enclavePublicKey: key.publicKey, identity: stranger, request: REQUEST })).sealed,
          { source: "attacker" },
        ),
      ),
    ).toBe("edge_not_allowed");
    // Another source opens a session; the live one goes on; nothing of the flood was stored.
    const other = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect((await recipient.open(other.sealed, { source: "another edge" })).request.op).toBe(REQUEST.op);
    expect((await live.next()).request.op).toBe(REQUEST.op);
    expect(recipient.sessions).toBe(2);
    // The source's budget refills with time.
    now += 1_000;
    expect(await refusal(recipient.open(await forged(), { source: "attacker" }))).toBe("bad_signature");
  });

  it("never refuses an allowed edge's own opening for the junk others sent from the same address (behind dstack-ingress every peer is the ingress)", async () => {
    const { key, edge, recipient } = await setup({ openings: { capacity: 2, perSecond: 0.001 } });
    const forged = async () => {
      const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
      const sig = fromBase64Url(call.sealed.init!.sig);
      sig[0] = (sig[0] as number) ^ 1;
      return { ...call.sealed, init: { ...call.sealed.init!, sig: toBase64Url(sig) } };
    };
    for (let i = 0; i < 10; i++) await refusal(recipient.open(await forged(), { source: "ingress" }));
    expect(await refusal(recipient.open(await forged(), { source: "ingress" }))).toBe("too_many_openings");
    const real = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: REQUEST });
    expect((await recipient.open(real.sealed, { source: "ingress" })).request.op).toBe(REQUEST.op);
    expect(recipient.sessions).toBe(1);
  });
});

describe("base64url", () => {
  it("encodes every length as Node's base64url does (no padding), and decodes it back", () => {
    for (let n = 0; n < 100; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      const text = toBase64Url(bytes);
      expect(text).toBe(Buffer.from(bytes).toString("base64url"));
      expect(fromBase64Url(text)).toEqual(bytes);
    }
  });
});
