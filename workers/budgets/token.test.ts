// The run's budget token (token.ts): what one edge issued it verifies until it expires; another seed,
// a changed claim or MAC, or a string that is not a token names no ref.
import { describe, expect, it } from "vitest";
import { fromBase64Url, toBase64Url } from "../../shared/channel/channel.ts";
import { budgetAccess, issueBudgetToken, verifyBudgetToken, verifyRunToken } from "./token.ts";

const SEED = "5369676c207465737420656467652069642d6e6f7420612073656372657421ff";
const OTHER = `${"00".repeat(31)}01`;
const NOW = Date.parse("2030-01-01T00:00:00.000Z");

describe("the budget token", () => {
  it("names its ref until it expires, and no longer", async () => {
    const token = await issueBudgetToken(SEED, "req-42", NOW + 60_000);
    expect(await verifyBudgetToken(SEED, token, NOW)).toBe("req-42");
    expect(await verifyBudgetToken(SEED, token, NOW + 60_000)).toBe("req-42");
    expect(await verifyBudgetToken(SEED, token, NOW + 60_001)).toBeUndefined();
    // Every ref round trips, whatever its characters.
    for (const ref of ["a", "é-ref.with.dots", "x".repeat(128)]) {
      expect(await verifyBudgetToken(SEED, await issueBudgetToken(SEED, ref, NOW + 1), NOW)).toBe(ref);
    }
  });

  it("is refused under another seed, both ways", async () => {
    const token = await issueBudgetToken(SEED, "req-1", NOW + 60_000);
    expect(await verifyBudgetToken(OTHER, token, NOW)).toBeUndefined();
    const theirs = await issueBudgetToken(OTHER, "req-1", NOW + 60_000);
    expect(await verifyBudgetToken(SEED, theirs, NOW)).toBeUndefined();
    expect(theirs).not.toBe(token);
  });

  it("is refused when its claim or its MAC was changed", async () => {
    const token = await issueBudgetToken(SEED, "req-1", NOW + 60_000);
    const [claim, mac] = token.split(".") as [string, string];
    // Another ref or a later expiry under the old MAC.
    for (const forged of [
      { ref: "req-2", exp: NOW + 60_000 },
      { ref: "req-1", exp: NOW + 10 ** 12 },
    ]) {
      const other = toBase64Url(new TextEncoder().encode(JSON.stringify(forged)));
      expect(await verifyBudgetToken(SEED, `${other}.${mac}`, NOW)).toBeUndefined();
    }
    // One bit of the MAC, or of the claim, flipped.
    const macBytes = fromBase64Url(mac);
    macBytes[0] = (macBytes[0] as number) ^ 1;
    expect(await verifyBudgetToken(SEED, `${claim}.${toBase64Url(macBytes)}`, NOW)).toBeUndefined();
    const claimBytes = fromBase64Url(claim);
    claimBytes[claimBytes.length - 2] = (claimBytes[claimBytes.length - 2] as number) ^ 1;
    expect(await verifyBudgetToken(SEED, `${toBase64Url(claimBytes)}.${mac}`, NOW)).toBeUndefined();
    // A MAC cut short, or another token's MAC.
    expect(
      await verifyBudgetToken(SEED, `${claim}.${toBase64Url(fromBase64Url(mac).slice(0, 16))}`, NOW),
    ).toBeUndefined();
    const another = await issueBudgetToken(SEED, "req-2", NOW + 60_000);
    expect(await verifyBudgetToken(SEED, `${claim}.${another.split(".")[1]}`, NOW)).toBeUndefined();
  });

  it("is an HMAC-SHA256 of its claim under SHA-256(label ‖ seed); a claim so MACed that is not {ref, exp} names no ref", async () => {
    const token = await issueBudgetToken(SEED, "req-1", NOW + 60_000);
    expect(JSON.parse(new TextDecoder().decode(fromBase64Url(token.split(".")[0] as string)))).toEqual({
      ref: "req-1",
      exp: NOW + 60_000,
    });
    const seed = Uint8Array.from(SEED.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
    const material = await crypto.subtle.digest(
      "SHA-256",
      new Uint8Array([...new TextEncoder().encode("sigil budget token v1"), ...seed]),
    );
    const key = await crypto.subtle.importKey("raw", material, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const sealed = async (claim: string) => {
      const bytes = new TextEncoder().encode(claim);
      return `${toBase64Url(bytes)}.${toBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, bytes)))}`;
    };
    expect(await sealed(JSON.stringify({ ref: "req-1", exp: NOW + 60_000 }))).toBe(token);
    for (const claim of [
      "not json",
      "null",
      "[]",
      JSON.stringify({ ref: 1, exp: NOW + 1 }),
      JSON.stringify({ ref: "r", exp: String(NOW + 1) }),
      JSON.stringify({ ref: "r" }),
      JSON.stringify({ exp: NOW + 1 }),
    ]) {
      expect(await verifyBudgetToken(SEED, await sealed(claim), NOW), claim).toBeUndefined();
    }
  });

  it("refuses strings that are not tokens", async () => {
    const token = await issueBudgetToken(SEED, "req-1", NOW + 60_000);
    for (const bad of [
      "",
      ".",
      "abc",
      `${token}.`,
      `${token}.extra`,
      `.${token.split(".")[1]}`,
      `${token.split(".")[0]}.`,
      "!!!.???",
      "a.b",
      "%%%%.%%%%",
      `Bearer ${token}`,
      token.replace(".", ""),
    ]) {
      expect(await verifyBudgetToken(SEED, bad, NOW), JSON.stringify(bad)).toBeUndefined();
    }
  });
});

describe("budgetAccess", () => {
  const config = (over: { env?: string; budgetUrl?: string; identityKey?: string | undefined } = {}) => ({
    env: over.env ?? "development",
    budgetUrl: over.budgetUrl,
    limits: { maxTimeoutMs: 900_000 } as never,
    channel: { identityKey: "identityKey" in over ? over.identityKey : SEED },
  });

  it("names the run's origin (or SIGIL_BUDGET_URL) and a token for the run that this edge verifies until past the longest run", async () => {
    const access = await budgetAccess(config(), "http://127.0.0.1:8787/core/v1/sigil_action", "req-9", NOW);
    expect(access).toMatchObject({ url: "http://127.0.0.1:8787", ref: "req-9" });
    // Good past the longest run (900 s) by 15 minutes: the enclave's settlement of the run comes after it.
    expect(await verifyBudgetToken(SEED, access!.token, NOW + 900_000 + 900_000)).toBe("req-9");
    expect(await verifyBudgetToken(SEED, access!.token, NOW + 900_000 + 900_001)).toBeUndefined();
    expect(
      (await budgetAccess(config({ budgetUrl: "https://edge.internal" }), "https://api.example/x", "r", NOW))?.url,
    ).toBe("https://edge.internal");
  });

  it("billing on, says what the run may be charged and out of which lease; a token without it, or with it changed, settles nothing", async () => {
    const bill = { account: "ab".repeat(32), key: null, max: 60, lease: "lease-1" };
    const access = await budgetAccess(config(), "http://127.0.0.1:8787/x", "req-10", NOW, bill);
    expect(await verifyRunToken(SEED, access!.token, NOW)).toEqual({ ref: "req-10", bill });
    expect(await verifyBudgetToken(SEED, access!.token, NOW)).toBe("req-10");
    const plain = await budgetAccess(config(), "http://127.0.0.1:8787/x", "req-11", NOW);
    expect(await verifyRunToken(SEED, plain!.token, NOW)).toEqual({ ref: "req-11" });
    // A larger most-it-may-cost under the old MAC.
    const [, mac] = access!.token.split(".") as [string, string];
    const forged = toBase64Url(
      new TextEncoder().encode(JSON.stringify({ ref: "req-10", exp: NOW + 1_800_000, bill: { ...bill, max: 6000 } })),
    );
    expect(await verifyRunToken(SEED, `${forged}.${mac}`, NOW)).toBeUndefined();
  });

  it("gives none without an identity seed, nor in production without https: the token never travels in the clear", async () => {
    expect(await budgetAccess(config({ identityKey: undefined }), "https://api.example/x", "r", NOW)).toBeUndefined();
    expect(await budgetAccess(config({ env: "production" }), "http://api.example/x", "r", NOW)).toBeUndefined();
    expect(await budgetAccess(config({ env: "production" }), "https://api.example/x", "r", NOW)).toMatchObject({
      url: "https://api.example",
    });
  });
});
