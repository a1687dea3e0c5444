// The channel's crypto inside workerd, where the edge seals: X25519 (HPKE), Ed25519 and AES-GCM
// from the runtime's WebCrypto, the same code the enclave opens with in Node.
import { describe, expect, it } from "vitest";
import { ChannelRecipient, ChannelSession, edgeIdentityFromSeed, generateChannelKeyPair, newEdgeIdentitySeed } from "../../shared/channel/channel.ts";

describe("the channel in workerd", () => {
  it("opens a session, seals requests in it, opens them, and carries each answer back", async () => {
    const key = await generateChannelKeyPair();
    const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    const recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    for (const path of ["/health", "/again"]) {
      const call = await session.seal({ method: "GET", path, headers: {}, body: "" });
      // The first request carries the session's signed init; once answered, the rest do not.
      expect(call.sealed.init !== undefined).toBe(path === "/health");
      const opened = await recipient.open(call.sealed);
      expect(opened.request.path).toBe(path);
      expect(await call.openResponse(await opened.sealResponse(`pong ${path}`))).toBe(`pong ${path}`);
    }
  });
});
