// The guardrail store against a fake chain: a document loaded once per hash (concurrent first uses
// share the reads), checked against its hash, and — unreadable, not found, or not a guardrail —
// refusing every signature of its wallet with the reason; a chain that fails is an error, not kept.
import { keccak256, toBytes, type Address, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../shared/canonicalJson.ts";
import { decide, GuardrailStore, type GuardrailSource } from "./guardrails.ts";

const WALLET = "0x00000000000000000000000000000000000000aa" as Address;
const MASTER = 7n;
const DOC = canonicalJson({ version: 1, messages: { pattern: "hi*" } });
const HASH = keccak256(toBytes(DOC));

function source(over: Partial<{ hash: Hex; documents: string[]; fail: boolean }> = {}) {
  const calls = { locate: 0, documents: 0 };
  const s: GuardrailSource = {
    async locate() {
      calls.locate++;
      if (over.fail) throw new Error("rpc down");
      return { hash: over.hash ?? HASH, block: 12n };
    },
    // As shared/guardrails/onChain.ts: the block's documents, the one whose bytes hash to the hash.
    async document({ block, hash }) {
      calls.documents++;
      expect(block).toBe(12n);
      return (over.documents ?? ["not this one", DOC]).findLast((d) => keccak256(toBytes(d)) === hash.toLowerCase());
    },
  };
  return { s, calls };
}

const message = (text: string) => ({ kind: "message", message: text }) as const;

describe("GuardrailStore", () => {
  it("loads a document once per hash, concurrent first uses sharing the reads, and checks with it", async () => {
    const { s, calls } = source();
    const store = new GuardrailStore(s);
    const [a, b] = await Promise.all([
      store.load(MASTER, { wallet: WALLET }, HASH),
      store.load(MASTER, { wallet: WALLET }, HASH),
    ]);
    expect(a).toBe(b);
    await store.load(MASTER, { wallet: WALLET }, HASH);
    expect(calls).toEqual({ locate: 1, documents: 1 });
    expect(decide(a, message("hi there"))).toEqual({ allowed: true, rule: "messages.pattern" });
    expect(decide(a, message("bye"))).toMatchObject({ allowed: false, rule: "messages.pattern" });
    expect(decide(a, undefined)).toMatchObject({ allowed: false, reason: "the request did not say what it signs" });
  });

  it("refuses everything when the bytes are not found, do not parse, or are not a guardrail", async () => {
    for (const documents of [["something else"], []]) {
      const loaded = await new GuardrailStore(source({ documents }).s).load(MASTER, { wallet: WALLET }, HASH);
      expect(decide(loaded, message("hi"))).toMatchObject({
        allowed: false,
        reason: expect.stringContaining("not found"),
      });
    }
    const junk = '{"version":1,"surprise":true}';
    const junkHash = keccak256(toBytes(junk));
    const loaded = await new GuardrailStore(source({ hash: junkHash, documents: [junk] }).s).load(
      MASTER,
      { wallet: WALLET },
      junkHash,
    );
    expect(decide(loaded, message("hi"))).toMatchObject({
      allowed: false,
      rule: "guardrail",
      reason: expect.stringContaining("does not hold together"),
    });
  });

  it("a guardrail changed since the grant was read is refused for now, and nothing is kept of a failed read", async () => {
    const changing = source({ hash: `0x${"11".repeat(32)}` });
    const movedStore = new GuardrailStore(changing.s);
    const moved = await movedStore.load(MASTER, { wallet: WALLET }, HASH);
    expect(decide(moved, message("hi"))).toMatchObject({ allowed: false, reason: expect.stringContaining("changed") });
    // Not kept under the old hash: asked again, the chain is read again.
    await movedStore.load(MASTER, { wallet: WALLET }, HASH);
    expect(changing.calls.locate).toBe(2);
    const failing = source({ fail: true });
    const store = new GuardrailStore(failing.s);
    await expect(store.load(MASTER, { wallet: WALLET }, HASH)).rejects.toThrow("rpc down");
    await expect(store.load(MASTER, { wallet: WALLET }, HASH)).rejects.toThrow("rpc down");
    expect(failing.calls.locate).toBe(2);
  });
});
