// Which answers say what they cost (docs/design/api.md, Metering): every managed write the service submits and
// every execution carries X-Sigil-Charged-Cents (0 until billing lands); reads and the free
// endpoints do not.
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "./stack.ts";

const { edge, ok200 } = edgeClient(SELF);
const CODE = "async function main() { return 1 }";
let key: string;
let groupId: string;

beforeAll(async () => {
  key = (await ok200<{ api_key: string }>("new_account", { body: { account_name: "metering" } })).api_key;
  groupId = (
    await ok200<{ group_id: string }>("add_group", {
      key,
      body: {
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [await computeCid(CODE)],
      },
    })
  ).group_id;
});

function charged(r: Reply<unknown>): string | null {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.headers.get("x-sigil-charged-cents");
}

describe("X-Sigil-Charged-Cents", () => {
  it("is on every kind of managed write and on sigil_action", async () => {
    expect(charged(await edge("create_wallet", { key, method: "POST" }))).toBe("0");
    expect(charged(await edge("create_wallet", { key }))).toBe("0");
    expect(
      charged(await edge("add_usage_api_key", { key, body: { name: "u", description: "", ...NO_PERMISSIONS } })),
    ).toBe("0");
    expect(
      charged(
        await edge("add_group", {
          key,
          body: { group_name: "h", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
        }),
      ),
    ).toBe("0");
    expect(
      charged(
        await edge("add_action", {
          key,
          body: { action_ipfs_cid: await computeCid(CODE), name: "a", description: "" },
        }),
      ),
    ).toBe("0");
    expect(charged(await edge("sigil_action", { key, body: { code: CODE } }))).toBe("0");
  });

  it("is absent from reads and from the free endpoints", async () => {
    expect(charged(await edge("list_groups", { key }))).toBeNull();
    expect(charged(await edge(`list_wallets_in_group?group_id=${groupId}`, { key }))).toBeNull();
    expect(charged(await edge("new_account", { body: { account_name: "free" } }))).toBeNull();
  });
});
