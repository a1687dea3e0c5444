// Node's AES-128-GCM for the channel says exactly what WebCrypto's says: the edge (WebCrypto, in
// workerd) and the enclave (Node's cipher) open each other's seals, and neither opens a changed one.
import { describe, expect, it } from "vitest";
import {
  ChannelRecipient,
  ChannelSession,
  edgeIdentityFromSeed,
  generateChannelKeyPair,
  newEdgeIdentitySeed,
  webCryptoAead,
  type Aead,
} from "../../shared/channel/channel.ts";
import { nodeAead } from "./nodeAead.ts";

const raw = crypto.getRandomValues(new Uint8Array(16));
const iv = crypto.getRandomValues(new Uint8Array(12));
const aad = new TextEncoder().encode("sigil aad");
const text = new TextEncoder().encode(JSON.stringify({ hello: "world", padding: "x".repeat(3000) }));

describe("nodeAead", () => {
  for (const [from, to] of [
    ["node", "webcrypto"],
    ["webcrypto", "node"],
  ] as const) {
    it(`what ${from} seals, ${to} opens; a changed byte, a wrong IV or wrong additional data does not`, async () => {
      const seal: Aead = from === "node" ? nodeAead : webCryptoAead;
      const open: Aead = to === "node" ? nodeAead : webCryptoAead;
      const ct = await seal.seal(await seal.key(raw), iv, text, aad);
      expect(ct.length).toBe(text.length + 16);
      const key = await open.key(raw);
      expect(new TextDecoder().decode(await open.open(key, iv, ct, aad))).toBe(new TextDecoder().decode(text));
      const changed = Uint8Array.from(ct);
      changed[changed.length - 1] = (changed[changed.length - 1] as number) ^ 1;
      await expect(open.open(key, iv, changed, aad)).rejects.toThrow();
      await expect(open.open(key, crypto.getRandomValues(new Uint8Array(12)), ct, aad)).rejects.toThrow();
      await expect(open.open(key, iv, ct, new TextEncoder().encode("other"))).rejects.toThrow();
      await expect(open.open(key, iv, ct.subarray(0, 8), aad)).rejects.toThrow();
    });
  }

  it("carries a session between an edge on WebCrypto and an enclave on Node's cipher, both ways", async () => {
    const key = await generateChannelKeyPair();
    const edge = await edgeIdentityFromSeed(newEdgeIdentitySeed());
    const recipient = new ChannelRecipient({ key, allowedEdgeKeys: [edge.publicKey], aead: nodeAead });
    const session = await ChannelSession.open({ enclavePublicKey: key.publicKey, identity: edge });
    for (const body of ["first", "second"]) {
      const call = await session.seal({ op: "sigil_action", ids: { request_id: "r-1" }, input: { code: body } });
      const opened = await recipient.open(JSON.parse(JSON.stringify(call.sealed)));
      expect(opened.request.input).toEqual({ code: body });
      expect(await call.openResponse(JSON.parse(JSON.stringify(await opened.sealResponse(`answer to ${body}`))))).toBe(
        `answer to ${body}`,
      );
    }
  });
});
