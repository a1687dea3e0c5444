// The Delegations Durable Object in workerd, called directly (docs/design/delegation.md): a chain's use
// counted against every block, all or nothing; a block used up or revoked refuses every chain holding
// it; a peek counts nothing; a block's uses are kept until a day after its own expiry — one chain's
// short expiry never lets another chain's block of no expiry be forgotten (its uses reset).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DelegationUseRequest } from "../../shared/delegation.ts";
import type { Env } from "../env.ts";
import type { Delegations } from "./store.ts";

const namespace = (env as unknown as Env).DELEGATIONS as DurableObjectNamespace<Delegations>;
let n = 0;
const store = (): DurableObjectStub<Delegations> => namespace.get(namespace.idFromName(`delegations-test-${n++}`));

const ACCOUNT = `0x${"11".repeat(32)}`;
const id = (c: string) => c.repeat(32);
const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const S0 = T0 / 1000;
const use = (blocks: DelegationUseRequest["blocks"], op: "use" | "peek" = "use"): DelegationUseRequest => ({
  op,
  ref: "run",
  account: ACCOUNT,
  blocks,
});

describe("the Delegations store", () => {
  it("counts a use against every block of the chain, all or nothing, and refuses a block used up", async () => {
    const s = store();
    const parent = { id: id("a"), counter: id("1"), max_uses: 2 };
    const child = { id: id("b"), counter: id("2"), max_uses: 1 };
    expect(await s.use(use([parent, child]), T0)).toEqual({ granted: true });
    expect(await s.use(use([parent, child]), T0)).toEqual({
      granted: false,
      id: id("b"),
      reason: "used_up",
      max_uses: 1,
    });
    // The refusal counted nothing: the parent has one use left, for a sibling.
    const sibling = { id: id("c"), counter: id("3") };
    expect(await s.use(use([parent, sibling]), T0)).toEqual({ granted: true });
    expect((await s.use(use([parent, sibling]), T0)).granted).toBe(false);
  });

  it("a peek counts nothing; a revoked block refuses every chain holding it", async () => {
    const s = store();
    const block = { id: id("d"), counter: id("4"), max_uses: 1 };
    for (let i = 0; i < 3; i++) expect(await s.use(use([block], "peek"), T0)).toEqual({ granted: true });
    expect(await s.revoke(id("d"), T0)).toEqual({ already: false });
    expect(await s.revoke(id("d"), T0)).toEqual({ already: true });
    expect(await s.use(use([block, { id: id("e"), counter: id("5") }]), T0)).toEqual({
      granted: false,
      id: id("d"),
      reason: "revoked",
    });
  });

  it("forgets a block's uses only a day after its own expiry: a descendant's short expiry does not reset its ancestor", async () => {
    const s = store();
    const parent = { id: id("f"), counter: id("6"), max_uses: 1 };
    // A descendant run first, naming a short expiry for itself only (the parent's own has none).
    expect(await s.use(use([parent, { id: id("9"), counter: id("7"), expires_at: S0 + 1 }]), T0)).toEqual({
      granted: true,
    });
    // Two days later, another use anywhere prunes what has expired: the parent's count stays.
    expect(await s.use(use([{ id: id("8"), counter: id("8") }]), T0 + 2 * 86_400_000)).toEqual({ granted: true });
    expect((await s.use(use([parent]), T0 + 2 * 86_400_000)).granted).toBe(false);
    // Its own expiry passed (and a day), a block's uses are forgotten: no chain holding it runs by then.
    const brief = { id: id("0"), counter: id("0"), max_uses: 1, expires_at: S0 + 1 };
    expect(await s.use(use([brief]), T0)).toEqual({ granted: true });
    await s.use(use([{ id: id("8"), counter: id("8") }]), T0 + 3 * 86_400_000);
    expect(await s.use(use([brief], "peek"), T0 + 3 * 86_400_000)).toEqual({ granted: true });
  });
});
