// The edge's end of the channel (client.ts) against an in-process enclave end: what each failure
// means for the request. Nothing reached the enclave → ChannelUnavailableError (the edge may ask
// another enclave); the request was sent and no answer that opens came back → ChannelDeliveryError
// (the enclave may have acted on it: no second enclave for a write). Refusals that the client mends
// by itself are retried once.
import { describe, expect, it } from "vitest";
import {
  ChannelError,
  ChannelRecipient,
  edgeIdentityFromSeed,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
  toBase64Url,
} from "./channel.ts";
import { ChannelClient, ChannelDeliveryError, ChannelUnavailableError } from "./client.ts";

const BASE = "http://enclave.test";
const REQUEST = { op: "add_group", ids: { request_id: "r-1" }, input: {} };

/** A client and the enclave end it talks to through `fetch`; `post` may replace how POST /channel/v1 is answered. */
async function setup(
  options: {
    post?: (sealed: unknown, enclave: (sealed: unknown) => Promise<Response>) => Promise<Response>;
    verify?: () => Promise<void>;
  } = {},
) {
  const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
  let key = await generateChannelKeyPair();
  let recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
  const seen = { channelFetches: 0, posts: [] as Array<{ init?: unknown; key_id: string }> };
  const enclave = async (sealed: unknown): Promise<Response> => {
    try {
      const opened = await recipient.open(sealed);
      return Response.json(await opened.sealResponse(JSON.stringify({ ok: true, output: { op: opened.request.op } })));
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      return Response.json(
        { channel_error: err.reason },
        { status: err.reason === "unknown_channel_key" || err.reason === "unknown_session" ? 409 : 401 },
      );
    }
  };
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    if (url === `${BASE}/channel`) {
      seen.channelFetches++;
      return Response.json({ public_key: toBase64Url(key.publicKey), quote: "00", event_log: "" });
    }
    if (url === `${BASE}/channel/v1`) {
      const sealed = JSON.parse(String(init?.body)) as { init?: unknown; key_id: string };
      seen.posts.push(sealed);
      return options.post ? options.post(sealed, enclave) : enclave(sealed);
    }
    throw new Error(`unexpected ${url}`);
  }) as typeof globalThis.fetch;
  const client = new ChannelClient({ identity: edge, verify: options.verify ?? (async () => {}), fetch });
  return {
    client,
    seen,
    /** The enclave restarts: a new channel key, no sessions. */
    async restart() {
      key = await generateChannelKeyPair();
      recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
    },
    /** The enclave forgets its sessions (same key). */
    forgetSessions() {
      recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
    },
  };
}

async function thrown(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected it to throw");
}

describe("ChannelClient", () => {
  it("sends a request and opens its answer; later requests reuse the pin and the session, without its init", async () => {
    const { client, seen } = await setup();
    expect(await client.call(BASE, REQUEST)).toEqual({ ok: true, output: { op: "add_group" } });
    await client.call(BASE, REQUEST);
    expect(seen.channelFetches).toBe(1);
    expect(seen.posts.map((p) => p.init !== undefined)).toEqual([true, false]);
  });

  it("a request sent that gets no answer is a ChannelDeliveryError: the enclave may have acted on it", async () => {
    const { client } = await setup({
      post: async () => {
        throw new TypeError("Network connection lost.");
      },
    });
    expect(await thrown(client.call(BASE, REQUEST))).toBeInstanceOf(ChannelDeliveryError);
  });

  it("an answer that does not open, or is not JSON, or fails outside the seal, is a ChannelDeliveryError", async () => {
    const tampered = await setup({
      post: async (sealed, enclave) => {
        const answer = (await (await enclave(sealed)).json()) as { ct: string };
        return Response.json({ ...answer, ct: (answer.ct[0] === "A" ? "B" : "A") + answer.ct.slice(1) });
      },
    });
    expect(await thrown(tampered.client.call(BASE, REQUEST))).toBeInstanceOf(ChannelDeliveryError);
    const notJson = await setup({ post: async () => new Response("<html>bad gateway</html>", { status: 502 }) });
    expect(await thrown(notJson.client.call(BASE, REQUEST))).toBeInstanceOf(ChannelDeliveryError);
    const failed = await setup({
      post: async () => Response.json({ error: { code: "internal_error" } }, { status: 500 }),
    });
    expect(await thrown(failed.client.call(BASE, REQUEST))).toBeInstanceOf(ChannelDeliveryError);
  });

  it("nothing delivered is a ChannelUnavailableError: a 503 outside the seal (not ready), a key that cannot be fetched or verified", async () => {
    const starting = await setup({
      post: async () => Response.json({ error: { code: "enclave_unavailable" } }, { status: 503 }),
    });
    expect(await thrown(starting.client.call(BASE, REQUEST))).toBeInstanceOf(ChannelUnavailableError);
    const unverified = await setup({
      verify: async () => {
        throw new Error("the quote does not verify");
      },
    });
    const err = await thrown(unverified.client.call(BASE, REQUEST));
    expect(err).toBeInstanceOf(ChannelUnavailableError);
    expect(unverified.seen.posts).toHaveLength(0);
    const unreachable = new ChannelClient({
      identity: await edgeIdentityFromSeed(newEdgeIdentitySeed()),
      verify: async () => {},
      fetch: (async () => {
        throw new TypeError("connection refused");
      }) as typeof fetch,
    });
    expect(await thrown(unreachable.call(BASE, REQUEST))).toBeInstanceOf(ChannelUnavailableError);
  });

  it("an enclave restarted with a new key: the key is fetched again and the request sent once more, in a new session", async () => {
    const { client, seen, restart } = await setup();
    await client.call(BASE, REQUEST);
    await restart();
    expect((await client.call(BASE, REQUEST)).ok).toBe(true);
    expect(seen.channelFetches).toBe(2);
    expect(seen.posts).toHaveLength(3);
    expect(seen.posts[2]!.key_id).not.toBe(seen.posts[1]!.key_id);
    expect(seen.posts[2]!.init).toBeDefined();
  });

  it("an enclave that dropped the session: the request is sent once more in a new session, with the same key", async () => {
    const { client, seen, forgetSessions } = await setup();
    await client.call(BASE, REQUEST);
    await client.call(BASE, REQUEST);
    forgetSessions();
    expect((await client.call(BASE, REQUEST)).ok).toBe(true);
    expect(seen.channelFetches).toBe(1);
    expect(seen.posts.map((p) => p.init !== undefined)).toEqual([true, false, false, true]);
  });

  it("a refusal it cannot mend (an edge key not allowed) is a ChannelError with the reason, not retried", async () => {
    const { client, seen } = await setup({
      post: async () => Response.json({ channel_error: "edge_not_allowed" }, { status: 401 }),
    });
    const err = await thrown(client.call(BASE, REQUEST));
    expect(err).toBeInstanceOf(ChannelError);
    expect((err as ChannelError).reason).toBe("edge_not_allowed");
    expect(seen.posts).toHaveLength(1);
  });
  it("currentKey asks the enclave afresh, so a restart shows as a new key even while the old one is still pinned", async () => {
    const { client, seen, restart } = await setup();
    await client.call(BASE, REQUEST);
    const before = await client.currentKey(BASE);
    expect(before).toBe(await client.currentKey(BASE));
    await restart();
    expect(await client.currentKey(BASE)).not.toBe(before);
    expect(seen.channelFetches).toBe(4);
  });

  it("beforeSeal hears each key a request is sealed to, the new one after a restart too; if it throws, nothing is sent (ChannelUnavailableError)", async () => {
    const { client, seen, restart } = await setup();
    const keys: string[] = [];
    await client.call(BASE, REQUEST, { beforeSeal: async (k) => void keys.push(k) });
    await restart();
    await client.call(BASE, REQUEST, { beforeSeal: async (k) => void keys.push(k) });
    expect(keys).toHaveLength(3);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).not.toBe(keys[1]);
    const posts = seen.posts.length;
    const err = await thrown(
      client.call(BASE, REQUEST, {
        beforeSeal: async () => {
          throw new Error("not the process the first attempt reached");
        },
      }),
    );
    expect(err).toBeInstanceOf(ChannelUnavailableError);
    expect(seen.posts).toHaveLength(posts);
  });
});
