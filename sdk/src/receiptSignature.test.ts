// The SDK's check of a batch signature against the attested key (receiptSignature.ts): the same
// verdict as recovering the signer with viem and comparing, for the key's signatures, another key's,
// another message, the other recovery id, and malformed input.
import { randomBytes } from "node:crypto";
import { bytesToHex, recoverMessageAddress, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { signedBy } from "./receiptSignature.ts";

const key = privateKeyToAccount(generatePrivateKey());
const other = privateKeyToAccount(generatePrivateKey());
const heads = Array.from({ length: 40 }, () => bytesToHex(randomBytes(32)));
const flipV = (sig: Hex) => `${sig.slice(0, 130)}${sig.endsWith("1b") ? "1c" : "1b"}` as Hex;

describe("signedBy (receiptSignature.ts)", () => {
  it("agrees with viem's recovery for the key's signatures, and with v as 0/1", async () => {
    for (const head of heads) {
      const sig = await key.signMessage({ message: { raw: head } });
      expect(await recoverMessageAddress({ message: { raw: head }, signature: sig })).toBe(key.address);
      expect(signedBy(key.publicKey, head, sig)).toBe(true);
      const v01 = `${sig.slice(0, 130)}${sig.endsWith("1b") ? "00" : "01"}` as Hex;
      expect(signedBy(key.publicKey, head, v01)).toBe(true);
    }
  });

  it("refuses another key's signature, another message, the other recovery id, and malformed input", async () => {
    const [head, another] = heads as [Hex, Hex];
    const sig = await key.signMessage({ message: { raw: head } });
    expect(signedBy(other.publicKey, head, sig)).toBe(false);
    expect(signedBy(key.publicKey, another, sig)).toBe(false);
    // The other v recovers another address (ecrecover would say so): not this key's signature.
    expect(await recoverMessageAddress({ message: { raw: head }, signature: flipV(sig) })).not.toBe(key.address);
    expect(signedBy(key.publicKey, head, flipV(sig))).toBe(false);
    expect(signedBy(key.publicKey, head, `${sig.slice(0, 130)}05` as Hex)).toBe(false);
    expect(signedBy(key.publicKey, head, sig.slice(0, 128) as Hex)).toBe(false);
    expect(signedBy(key.publicKey, head, `0x${"00".repeat(65)}`)).toBe(false);
    expect(signedBy(key.publicKey, head, `0x${"ff".repeat(65)}`)).toBe(false);
    expect(signedBy(`0x04${"00".repeat(64)}`, head, sig)).toBe(false);
  });
});
