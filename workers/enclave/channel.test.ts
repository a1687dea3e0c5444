// The channel's crypto inside workerd, where the edge seals: X25519 (HPKE), Ed25519 and AES-GCM
// from the runtime's WebCrypto, the same code the enclave opens with in Node.
import { describe, expect, it } from "vitest";
import {
  ChannelRecipient,
  ChannelSession,
  edgeIdentityFromSeed,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
} from "../../shared/channel/channel.ts";

describe("the channel in workerd", () => {
  it("opens a session, seals operations in it, opens them, and carries each answer back", async () => {
    const key = await generateChannelKeyPair();
    const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    const recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey] });
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    for (const op of ["health", "sigil_action"]) {
      const call = await session.seal({ op, ids: { request_id: "r-1" }, input: { n: 1 } });
      // The first request carries the session's signed init; once answered, the rest do not.
      expect(call.sealed.init !== undefined).toBe(op === "health");
      const opened = await recipient.open(call.sealed);
      expect(opened.request).toMatchObject({ op, ids: { request_id: "r-1" }, input: { n: 1 } });
      expect(await call.openResponse(await opened.sealResponse(`pong ${op}`))).toBe(`pong ${op}`);
    }
  });
});
