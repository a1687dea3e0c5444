// The SDK checks every run's receipt by default (sdk/src/verifiedRuns.ts; issue 34), against the real
// local stack with a fetch between the client and the service that changes what it is told to: a
// receipt with any field changed, a receipt presented with another instance's attestation, an
// attestation whose quote does not bind its key, a compose hash not on the allow list, and a
// simulated attestation where the client does not accept one each throw SigilReceiptError naming the
// check; toSigilAccount gives no signature whose receipt fails; verifyReceipts: false returns the
// answer unchecked; an honest answer passes, its attestation fetched once per instance.
import type { Address } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import {
  createSigilClient,
  grantSigner,
  SigilReceiptError,
  toSigilAccount,
  topUp,
  type SigilClient,
  type SigilClientOptions,
} from "../../sdk/src/index.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const CODE = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "checked" }) }`;

let stack: SharedLocalStack;
let apiKey: string;
let wallet: Address;

/** What the tampering fetch changes: the run's answer, the receipt key's answer. */
type Tamper = { run?: (answer: Record<string, any>) => void; key?: (answer: Record<string, any>) => void };

/** A client whose fetch hands each answer to `tamper` first, counting the receipt-key fetches. */
function clientWith(tamper: Tamper, options: Partial<SigilClientOptions> = {}) {
  const seen = { keyFetches: 0 };
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const res = await globalThis.fetch(input, init);
    const url = String(input instanceof Request ? input.url : input);
    const which = url.includes("/attestation/receipt-key") ? "key" : url.includes("/sigil_action") ? "run" : undefined;
    if (which === "key") seen.keyFetches++;
    const change = which ? tamper[which] : undefined;
    if (!change || !res.ok) return res;
    const body = (await res.json()) as Record<string, unknown>;
    change(body);
    return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
  };
  return { client: createSigilClient({ baseUrl: stack.origin, apiKey, fetch, ...options }), seen };
}

async function failure(call: Promise<unknown>): Promise<SigilReceiptError> {
  try {
    await call;
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(SigilReceiptError);
    return err as SigilReceiptError;
  }
  throw new Error("the answer was returned");
}

const run = (client: SigilClient) => client.sigilAction({ code: CODE, js_params: { wallet } });

beforeAll(async () => {
  stack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  apiKey = (await anon.newAccount({ account_name: "verified runs" })).api_key;
  const owner = anon.with({ apiKey });
  await topUp(owner, { amountCents: 500 });
  wallet = (await owner.createWallet({ name: "checked" })).wallet_address as Address;
  const cid = await owner.getSigilActionIpfsId(CODE);
  await owner.addGroup({
    group_name: "g",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  await grantSigner(owner, { wallet });
}, 120_000);

describe("the SDK verifies every run's receipt by default", () => {
  it("returns an honest answer, the instance's attestation fetched once", async () => {
    const { client, seen } = clientWith({});
    for (let i = 0; i < 3; i++) expect((await run(client)).has_error).toBe(false);
    expect(seen.keyFetches).toBeLessThanOrEqual(1);
  });

  it.each([
    ["response_sha256", (r: Record<string, any>) => (r.response_sha256 = `0x${"ab".repeat(32)}`)],
    ["duration_ms", (r: Record<string, any>) => (r.duration_ms += 1)],
    ["charged_cents", (r: Record<string, any>) => (r.charged_cents += 1)],
    ["wallets", (r: Record<string, any>) => (r.wallets = [])],
    ["batch proof", (r: Record<string, any>) => (r.batch.index += 1)],
  ])("refuses a receipt with %s changed", async (_field, change) => {
    const { client } = clientWith({ run: (a) => change(a.receipt) });
    const err = await failure(run(client));
    expect(["batch", "signature", "shape"]).toContain(err.check);
  });

  it("refuses an answer whose response is not the receipt's", async () => {
    const { client } = clientWith({ run: (a) => (a.response = "0x00") });
    expect((await failure(run(client))).check).toBe("response");
  });

  it("refuses a receipt presented with another instance's attestation, and a quote that does not bind the key", async () => {
    const other = clientWith({ key: (k) => (k.instance_id = `${k.instance_id}-other`) });
    expect((await failure(run(other.client))).check).toBe("instance");
    const unbound = clientWith({
      key: (k) => {
        // The quote's report_data (bytes 568–632 of a v4 quote) no longer names this key.
        const at = 2 * 568;
        k.quote = `${k.quote.slice(0, at)}${"00".repeat(64)}${k.quote.slice(at + 128)}`;
      },
    });
    expect((await failure(run(unbound.client))).check).toBe("report_data");
    const otherKey = clientWith({ key: (k) => (k.address = "0x000000000000000000000000000000000000dEaD") });
    expect(["key", "signature"]).toContain((await failure(run(otherKey.client))).check);
  });

  it("refuses a compose hash not on the allow list, and a simulated attestation the client does not accept", async () => {
    const listed = clientWith({}, { verifyReceipts: { allowedComposeHashes: [`0x${"12".repeat(32)}`] } });
    expect((await failure(run(listed.client))).check).toBe("compose_hash");
    const strict = clientWith({}, { verifyReceipts: { allowSimulated: false } });
    expect((await failure(run(strict.client))).check).toBe("simulated");
  });

  it("toSigilAccount gives no signature whose receipt fails; verifyReceipts: false returns the answer unchecked", async () => {
    const { client } = clientWith({ run: (a) => (a.receipt.duration_ms += 1) });
    const account = toSigilAccount({ client, wallet });
    await expect(account.signMessage({ message: "hello" })).rejects.toBeInstanceOf(SigilReceiptError);
    const unchecked = clientWith({ run: (a) => (a.receipt.duration_ms += 1) }, { verifyReceipts: false });
    expect((await run(unchecked.client)).has_error).toBe(false);
  });
});
