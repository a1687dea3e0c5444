// The channel's crypto inside workerd, where the edge seals: X25519 (HPKE), Ed25519 and AES-GCM
// from the runtime's WebCrypto, the same code the enclave opens with in Node.
import { describe, expect, it } from "vitest";
import { ChannelRecipient, edgeIdentityFromSeed, generateChannelKeyPair, newEdgeIdentitySeed, sealRequest } from "../../shared/channel/channel.ts";

describe("the channel in workerd", () => {
  it("seals a request, opens it, and carries the answer back", async () => {
    const key = await generateChannelKeyPair();
    const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    const recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
    const call = await sealRequest({ enclavePublicKey: key.publicKey, identity: edge, request: { method: "GET", path: "/health", headers: {}, body: "" } });
    const opened = await recipient.open(call.sealed);
    expect(opened.request.path).toBe("/health");
    expect(await call.openResponse(await opened.sealResponse("pong"))).toBe("pong");
  });
});
