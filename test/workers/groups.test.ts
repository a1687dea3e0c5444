// Groups and actions through the edge in workerd, against the real chain and enclave: the typical
// workflow of docs/design/api.md (Groups and actions), what a usage key without each scope gets, what a key
// that may only create groups may put in one, and the 404s for a group, wallet or action the
// caller does not have. A group lists only registered actions: a raw CID given to add_group,
// update_group or add_action_to_group is registered (without a name) in the same transaction.
import { SELF } from "cloudflare:test";
import { CID } from "multiformats/cid";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import { edgeClient, NO_PERMISSIONS, type Reply } from "./stack.ts";

const BASE = "http://edge/core/v1";
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

type Group = {
  id: string;
  group_name: string;
  group_description: string;
  pkp_ids_permitted: string[];
  cid_hashes_permitted: string[];
};
type Action = { hashed_cid: string; action_ipfs_cid?: string; name: string; description: string };

const { edge, expectError } = edgeClient(SELF);

function call<T = Record<string, unknown>>(
  method: "GET" | "POST",
  path: string,
  key?: string,
  body?: unknown,
): Promise<Reply<T>> {
  return edge<T>(path.slice(1), {
    method,
    ...(key === undefined ? {} : { key }),
    ...(body === undefined ? {} : { body }),
  });
}

/** Calls and insists on 200, showing the error body otherwise. */
async function ok<T = Record<string, unknown>>(
  method: "GET" | "POST",
  path: string,
  key: string | undefined,
  body?: unknown,
): Promise<Reply<T>> {
  const r = await call<T>(method, path, key, body);
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r;
}

async function newAccount(name: string): Promise<{ api_key: string; wallet_address: string }> {
  return (
    await ok<{ api_key: string; wallet_address: string }>("POST", "/new_account", undefined, { account_name: name })
  ).body;
}

async function newWallet(key: string): Promise<{ wallet_address: string; wallet_id: string }> {
  return (
    await ok<{ wallet_address: string; wallet_id: string }>("POST", "/create_wallet", key, {
      name: "w",
      description: "",
    })
  ).body;
}

async function listGroups(key: string, query = ""): Promise<Reply<Group[]>> {
  return ok<Group[]>("GET", `/list_groups${query}`, key);
}

async function groupById(key: string, id: string): Promise<Group | undefined> {
  const r = await listGroups(key, "?page_size=100");
  return r.body.find((g) => g.id === id);
}

const hashOf = (cid: string) => toHash32(cidHash(cid));

describe("the groups and actions workflow", () => {
  let key: string;
  let wallet: { wallet_address: string; wallet_id: string };
  let second: { wallet_address: string; wallet_id: string };
  let cidA: string;
  let cidB: string;
  let groupId: string;

  beforeAll(async () => {
    key = (await newAccount("groups workflow")).api_key;
    wallet = await newWallet(key);
    second = await newWallet(key);
    cidA = await computeCid("async function main() { return 'a' }");
    cidB = await computeCid("async function main() { return 'b' }");
  });

  it("add_group takes a raw CID and a wallet and answers the new group id with the transaction", async () => {
    const r = await ok<{ success: boolean; group_id: string; transaction_hash: string }>("POST", "/add_group", key, {
      group_name: "signers",
      group_description: "may sign",
      pkp_ids_permitted: [wallet.wallet_address.toUpperCase().replace("0X", "0x")],
      cid_hashes_permitted: [cidA],
    });
    expect(r.body.success).toBe(true);
    expect(r.body.group_id).toMatch(/^[1-9]\d*$/);
    expect(r.body.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(r.headers.get("x-sigil-charged-cents")).toBe("0");
    groupId = r.body.group_id;
  });

  it("list_groups shows the group: lowercase wallet addresses and 0x hashes of the CIDs", async () => {
    const r = await listGroups(key);
    expect(r.headers.get("x-total-count")).toBe("1");
    expect(r.body).toEqual([
      {
        id: groupId,
        group_name: "signers",
        group_description: "may sign",
        pkp_ids_permitted: [wallet.wallet_address.toLowerCase()],
        cid_hashes_permitted: [hashOf(cidA)],
      },
    ]);
  });

  it('list_groups pages: page_number and page_size, the total in X-Total-Count; the wildcards read as the zero address and "0"', async () => {
    const any = await ok<{ group_id: string }>("POST", "/add_group", key, {
      group_name: "any",
      group_description: "",
      pkp_ids_permitted: [ZERO_ADDRESS],
      cid_hashes_permitted: ["0"],
    });
    // A 0x hash of an action the account registered (the first group registered cidA).
    const third = await ok<{ group_id: string }>("POST", "/add_group", key, {
      group_name: "third",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [hashOf(cidA)],
    });
    const first = await listGroups(key, "?page_number=0&page_size=2");
    const next = await listGroups(key, "?page_number=1&page_size=2");
    const beyond = await listGroups(key, "?page_number=5&page_size=2");
    expect(first.headers.get("x-total-count")).toBe("3");
    expect(next.headers.get("x-total-count")).toBe("3");
    expect(first.body.map((g) => g.id)).toEqual([groupId, any.body.group_id]);
    expect(next.body.map((g) => g.id)).toEqual([third.body.group_id]);
    expect(beyond.body).toEqual([]);
    expect(first.body[1]).toMatchObject({
      group_name: "any",
      pkp_ids_permitted: [ZERO_ADDRESS],
      cid_hashes_permitted: ["0"],
    });
    expect(next.body[0]?.cid_hashes_permitted).toEqual([hashOf(cidA)]);
    // Defaults: page 0 of 10.
    expect((await listGroups(key)).body).toHaveLength(3);
  });

  it("page_size above 100 or not a number is 400 invalid_request", async () => {
    expectError(await call("GET", "/list_groups?page_size=101", key), 400, "invalid_request");
    expectError(await call("GET", "/list_groups?page_number=x", key), 400, "invalid_request");
  });

  it("add_action_to_group answers the hashed_cid, and remove_action_from_group takes it back out", async () => {
    const added = await ok<{ hashed_cid: string }>("POST", "/add_action_to_group", key, {
      group_id: groupId,
      action_ipfs_cid: cidB,
    });
    expect(added.body.hashed_cid).toBe(hashOf(cidB));
    expect((await groupById(key, groupId))?.cid_hashes_permitted).toEqual([hashOf(cidA), hashOf(cidB)]);
    await ok("POST", "/remove_action_from_group", key, {
      group_id: Number(groupId),
      hashed_cid: added.body.hashed_cid,
    });
    expect((await groupById(key, groupId))?.cid_hashes_permitted).toEqual([hashOf(cidA)]);
  });

  it("add_pkp_to_group takes a wallet id, remove_pkp_from_group an address", async () => {
    await ok("POST", "/add_pkp_to_group", key, { group_id: groupId, pkp_id: second.wallet_id });
    expect((await groupById(key, groupId))?.pkp_ids_permitted).toEqual(
      [wallet.wallet_address, second.wallet_address].map((a) => a.toLowerCase()),
    );
    await ok("POST", "/remove_pkp_from_group", key, { group_id: groupId, pkp_id: second.wallet_address });
    expect((await groupById(key, groupId))?.pkp_ids_permitted).toEqual([wallet.wallet_address.toLowerCase()]);
  });

  it("update_group replaces the name, description, wallets and actions", async () => {
    await ok("POST", "/update_group", key, {
      group_id: groupId,
      name: "renamed",
      description: "new text",
      pkp_ids_permitted: [second.wallet_address],
      cid_hashes_permitted: [cidB, "0"],
    });
    expect(await groupById(key, groupId)).toEqual({
      id: groupId,
      group_name: "renamed",
      group_description: "new text",
      pkp_ids_permitted: [second.wallet_address.toLowerCase()],
      cid_hashes_permitted: [hashOf(cidB), "0"],
    });
  });

  it("add_action gives a CID its metadata; list_actions shows it, of the account and of a group", async () => {
    const added = await ok<{ hashed_cid: string; transaction_hash: string }>("POST", "/add_action", key, {
      action_ipfs_cid: cidB,
      name: "b",
      description: "returns b",
    });
    expect(added.body.hashed_cid).toBe(hashOf(cidB));
    expect(added.headers.get("x-sigil-charged-cents")).toBe("0");
    const all = await ok<Action[]>("GET", "/list_actions", key);
    // cidA and cidB were registered, without names, by the group writes that named them raw.
    expect(all.headers.get("x-total-count")).toBe("2");
    expect(all.body).toEqual([
      { hashed_cid: hashOf(cidA), action_ipfs_cid: cidA, name: "", description: "" },
      { hashed_cid: hashOf(cidB), action_ipfs_cid: cidB, name: "b", description: "returns b" },
    ]);
    // The group lists cidB (registered: with its CID and metadata) and the any-action entry.
    const inGroup = await ok<Action[]>("GET", `/list_actions?group_id=${groupId}`, key);
    expect(inGroup.headers.get("x-total-count")).toBe("2");
    expect(inGroup.body).toEqual([
      { hashed_cid: hashOf(cidB), action_ipfs_cid: cidB, name: "b", description: "returns b" },
      { hashed_cid: "0", name: "", description: "" },
    ]);
  });

  it("add_action_to_group registers a raw CID the account did not have, with its CID and no name, and keeps a registered one's name", async () => {
    const cidC = await computeCid("async function main() { return 'c' }");
    await ok("POST", "/add_action_to_group", key, { group_id: groupId, action_ipfs_cid: cidC });
    await ok("POST", "/add_action_to_group", key, { group_id: groupId, action_ipfs_cid: cidB });
    const inGroup = await ok<Action[]>("GET", `/list_actions?group_id=${groupId}&page_size=100`, key);
    expect(inGroup.body).toContainEqual({ hashed_cid: hashOf(cidC), action_ipfs_cid: cidC, name: "", description: "" });
    expect(inGroup.body).toContainEqual({
      hashed_cid: hashOf(cidB),
      action_ipfs_cid: cidB,
      name: "b",
      description: "returns b",
    });
  });

  it("a 0x hash of an action the account never registered is 404 action_not_found, in add_group and update_group", async () => {
    const unregistered = hashOf(await computeCid("async function main() { return 'never registered' }"));
    const body = { pkp_ids_permitted: [], cid_hashes_permitted: [unregistered] };
    expectError(
      await call("POST", "/add_group", key, { group_name: "x", group_description: "", ...body }),
      404,
      "action_not_found",
    );
    expectError(
      await call("POST", "/update_group", key, { group_id: groupId, name: "x", description: "", ...body }),
      404,
      "action_not_found",
    );
    expect((await groupById(key, groupId))?.cid_hashes_permitted).not.toContain(unregistered);
  });

  it("update_action_metadata renames an action; delete_action removes it from the account and from every group", async () => {
    await ok("POST", "/update_action_metadata", key, { hashed_cid: hashOf(cidB), name: "bee", description: "still b" });
    expect((await ok<Action[]>("GET", "/list_actions", key)).body).toContainEqual({
      hashed_cid: hashOf(cidB),
      action_ipfs_cid: cidB,
      name: "bee",
      description: "still b",
    });
    await ok("POST", "/delete_action", key, { hashed_cid: hashOf(cidB) });
    const all = await ok<Action[]>("GET", "/list_actions", key);
    expect(all.body.map((a) => a.hashed_cid)).not.toContain(hashOf(cidB));
    expect(all.headers.get("x-total-count")).toBe("2"); // cidA and cidC
    expect((await groupById(key, groupId))?.cid_hashes_permitted).not.toContain(hashOf(cidB));
  });

  it("remove_group deletes the group", async () => {
    await ok("POST", "/remove_group", key, { group_id: groupId });
    const r = await listGroups(key);
    expect(r.headers.get("x-total-count")).toBe("2");
    expect(r.body.map((g) => g.id)).not.toContain(groupId);
  });

  it("a body with an unknown field is 400 invalid_request naming it; a missing key is 401", async () => {
    const error = expectError(
      await call("POST", "/add_group", key, {
        group_name: "x",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [],
        owner: "me",
      }),
      400,
      "invalid_request",
    );
    expect(JSON.stringify(error.details)).toContain("owner");
    expectError(
      await call("POST", "/add_group", undefined, {
        group_name: "x",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [],
      }),
      401,
      "missing_api_key",
    );
    expectError(await call("GET", "/list_groups", undefined), 401, "missing_api_key");
    expectError(await call("GET", "/list_actions", "not a key"), 401, "invalid_api_key");
  });

  it("every route is in the OpenAPI document", async () => {
    const doc = (await (await SELF.fetch(`${BASE}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    for (const path of [
      "add_group",
      "list_groups",
      "remove_group",
      "update_group",
      "add_action_to_group",
      "remove_action_from_group",
      "add_pkp_to_group",
      "remove_pkp_from_group",
      "add_action",
      "delete_action",
      "update_action_metadata",
      "list_actions",
    ]) {
      expect(doc.paths).toHaveProperty([`/core/v1/${path}`]);
    }
  });
});

describe("a usage key lacking a scope gets 403 permission_denied", () => {
  let owner: string;
  let limited: string;
  let groupId: string;
  let wallet: string;
  const cid = "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG";

  beforeAll(async () => {
    owner = (await newAccount("scopes")).api_key;
    wallet = (await newWallet(owner)).wallet_address;
    groupId = (
      await ok<{ group_id: string }>("POST", "/add_group", owner, {
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [wallet],
        cid_hashes_permitted: [cid],
      })
    ).body.group_id;
    await ok("POST", "/add_action", owner, { action_ipfs_cid: cid, name: "n", description: "d" });
    // Every scope but execute, which no group write needs.
    limited = (
      await ok<{ usage_api_key: string }>("POST", "/add_usage_api_key", owner, {
        name: "limited",
        description: "",
        ...NO_PERMISSIONS,
        execute_in_groups: [0],
      })
    ).body.usage_api_key;
  });

  const cases: Array<[string, string, () => Record<string, unknown>]> = [
    [
      "group:create",
      "/add_group",
      () => ({ group_name: "x", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] }),
    ],
    ["group:delete", "/remove_group", () => ({ group_id: groupId })],
    ["group:manageActions", "/add_action_to_group", () => ({ group_id: groupId, action_ipfs_cid: cid })],
    ["group:manageActions", "/remove_action_from_group", () => ({ group_id: groupId, hashed_cid: hashOf(cid) })],
    ["group:addPkp", "/add_pkp_to_group", () => ({ group_id: groupId, pkp_id: wallet })],
    ["group:removePkp", "/remove_pkp_from_group", () => ({ group_id: groupId, pkp_id: wallet })],
    [
      "group:manageActions",
      "/update_group",
      () => ({
        group_id: groupId,
        name: "x",
        description: "",
        pkp_ids_permitted: [wallet],
        cid_hashes_permitted: [cid],
      }),
    ],
    ["group:manageActions", "/add_action", () => ({ action_ipfs_cid: cid, name: "x", description: "" })],
    ["group:manageActions", "/update_action_metadata", () => ({ hashed_cid: hashOf(cid), name: "x", description: "" })],
    ["group:manageActions", "/delete_action", () => ({ hashed_cid: hashOf(cid) })],
  ];

  it.each(cases)("without %s: POST %s", async (scope, path, body) => {
    const error = expectError(await call("POST", path, limited, body()), 403, "permission_denied");
    expect((error.details as unknown as { scope: string }).scope).toBe(scope);
  });

  it("the refused writes changed nothing, and the usage key may still read", async () => {
    const groups = await ok<Group[]>("GET", "/list_groups", limited);
    expect(groups.body).toEqual([
      {
        id: groupId,
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [wallet.toLowerCase()],
        cid_hashes_permitted: [hashOf(cid)],
      },
    ]);
    expect((await ok<Action[]>("GET", "/list_actions", limited)).body).toEqual([
      { hashed_cid: hashOf(cid), action_ipfs_cid: cid, name: "n", description: "d" },
    ]);
  });

  it("a key with a scope for one group only is refused in another", async () => {
    const other = (
      await ok<{ group_id: string }>("POST", "/add_group", owner, {
        group_name: "other",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [],
      })
    ).body.group_id;
    const scoped = (
      await ok<{ usage_api_key: string }>("POST", "/add_usage_api_key", owner, {
        name: "one group",
        description: "",
        ...NO_PERMISSIONS,
        manage_ipfs_ids_in_groups: [Number(groupId)],
      })
    ).body.usage_api_key;
    const cid2 = await computeCid("async function main() { return 2 }");
    await ok("POST", "/add_action_to_group", scoped, { group_id: groupId, action_ipfs_cid: cid2 });
    const error = expectError(
      await call("POST", "/add_action_to_group", scoped, { group_id: other, action_ipfs_cid: cid2 }),
      403,
      "permission_denied",
    );
    expect(error.details).toEqual({ scope: "group:manageActions", group_id: other });
  });
});

// Issue 11, point 7: a key that may only create groups, and run in every group, used to create
// {any action, any wallet} and then run its own code with the account's master wallet.
describe("what a usage key may put in a group it creates", () => {
  let owner: { api_key: string; wallet_address: string };
  let cid: string;

  beforeAll(async () => {
    owner = await newAccount("group contents");
    cid = await computeCid("async function main() { return 'mine' }");
  });

  const key = async (perms: Record<string, unknown>) =>
    (
      await ok<{ usage_api_key: string }>("POST", "/add_usage_api_key", owner.api_key, {
        name: "k",
        description: "",
        ...NO_PERMISSIONS,
        ...perms,
      })
    ).body.usage_api_key;

  it("with group:create alone: an empty group, but no action (403 group:manageActions) and no wallet (403 group:addPkp), wildcards or not", async () => {
    const createOnly = await key({ can_create_groups: true, execute_in_groups: [0] });
    expect(
      (
        await ok<{ group_id: string }>("POST", "/add_group", createOnly, {
          group_name: "empty",
          group_description: "",
          pkp_ids_permitted: [],
          cid_hashes_permitted: [],
        })
      ).body.group_id,
    ).toMatch(/^\d+$/);
    for (const [cids, wallets, scope] of [
      [["0"], [ZERO_ADDRESS], "group:manageActions"],
      [[cid], [], "group:manageActions"],
      [[], [ZERO_ADDRESS], "group:addPkp"],
      [[], ["0"], "group:addPkp"], // wallet id 0: the account's master wallet
    ] as const) {
      const error = expectError(
        await call("POST", "/add_group", createOnly, {
          group_name: "x",
          group_description: "",
          pkp_ids_permitted: wallets,
          cid_hashes_permitted: cids,
        }),
        403,
        "permission_denied",
      );
      expect(error.details).toEqual({ scope, group_id: "0" });
    }
  });

  it("with group:create, group:manageActions [0] and group:addPkp [0]: any content, raw CIDs registered", async () => {
    const filler = await key({ can_create_groups: true, manage_ipfs_ids_in_groups: [0], add_pkp_to_groups: [0] });
    const r = await ok<{ group_id: string }>("POST", "/add_group", filler, {
      group_name: "full",
      group_description: "",
      pkp_ids_permitted: ["0", ZERO_ADDRESS],
      cid_hashes_permitted: [cid, "0"],
    });
    expect(await groupById(owner.api_key, r.body.group_id)).toMatchObject({
      pkp_ids_permitted: [owner.wallet_address.toLowerCase(), ZERO_ADDRESS],
      cid_hashes_permitted: [hashOf(cid), "0"],
    });
  });
});

describe("what the caller does not have is 404", () => {
  let key: string;
  let groupId: string;
  let foreignWallet: string;

  beforeAll(async () => {
    key = (await newAccount("mine")).api_key;
    groupId = (
      await ok<{ group_id: string }>("POST", "/add_group", key, {
        group_name: "g",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [],
      })
    ).body.group_id;
    const other = await newAccount("theirs");
    foreignWallet = (await newWallet(other.api_key)).wallet_address;
  });

  it("a group that does not exist is 404 group_not_found, for writes and for list_actions", async () => {
    const missing = "987654321";
    expectError(await call("POST", "/remove_group", key, { group_id: missing }), 404, "group_not_found");
    expectError(
      await call("POST", "/add_pkp_to_group", key, { group_id: missing, pkp_id: "0" }),
      404,
      "group_not_found",
    );
    expectError(
      await call("POST", "/add_action_to_group", key, {
        group_id: missing,
        action_ipfs_cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
      }),
      404,
      "group_not_found",
    );
    expectError(await call("GET", `/list_actions?group_id=${missing}`, key), 404, "group_not_found");
  });

  it("another account's wallet is 404 wallet_not_found, in add_pkp_to_group and in add_group", async () => {
    expectError(
      await call("POST", "/add_pkp_to_group", key, { group_id: groupId, pkp_id: foreignWallet }),
      404,
      "wallet_not_found",
    );
    expectError(
      await call("POST", "/add_group", key, {
        group_name: "x",
        group_description: "",
        pkp_ids_permitted: [foreignWallet],
        cid_hashes_permitted: [],
      }),
      404,
      "wallet_not_found",
    );
    expect((await groupById(key, groupId))?.pkp_ids_permitted).toEqual([]);
  });

  it("a wallet id the account does not have is 404 wallet_not_found", async () => {
    expectError(
      await call("POST", "/add_pkp_to_group", key, { group_id: groupId, pkp_id: "77" }),
      404,
      "wallet_not_found",
    );
  });
});

describe("CIDs given as a script's CIDv1 (bafy…)", () => {
  let key: string;
  let cid: string;
  let bafy: string;

  beforeAll(async () => {
    key = (await newAccount("bafy grants")).api_key;
    cid = await computeCid("async function main() { return 'v1' }");
    bafy = CID.parse(cid).toV1().toString();
  });

  it("add_action and add_group hash the canonical Qm form: list_actions shows the Qm CID and list_groups its hash", async () => {
    expect(
      (
        await ok<{ hashed_cid: string }>("POST", "/add_action", key, {
          action_ipfs_cid: bafy,
          name: "v1",
          description: "",
        })
      ).body.hashed_cid,
    ).toBe(hashOf(cid));
    expect((await ok<Action[]>("GET", "/list_actions", key)).body).toEqual([
      { hashed_cid: hashOf(cid), action_ipfs_cid: cid, name: "v1", description: "" },
    ]);
    const { group_id } = (
      await ok<{ group_id: string }>("POST", "/add_group", key, {
        group_name: "v1",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: [bafy],
      })
    ).body;
    expect((await groupById(key, group_id))?.cid_hashes_permitted).toEqual([hashOf(cid)]);
  });

  it("a CID with no CIDv0 form (raw codec, bafkrei…) is 400 invalid_request at the edge, with the field's path", async () => {
    const raw = CID.createV1(0x55, CID.parse(cid).multihash).toString();
    const group = expectError(
      await call("POST", "/add_group", key, {
        group_name: "raw",
        group_description: "",
        pkp_ids_permitted: [],
        cid_hashes_permitted: ["0", raw],
      }),
      400,
      "invalid_request",
    );
    expect(group.details).toEqual([
      { path: "cid_hashes_permitted.1", message: expect.stringMatching(/cannot name a script/) },
    ]);
    const action = expectError(
      await call("POST", "/add_action", key, { action_ipfs_cid: raw, name: "raw", description: "" }),
      400,
      "invalid_request",
    );
    expect(action.details).toEqual([
      { path: "action_ipfs_cid", message: expect.stringMatching(/cannot name a script/) },
    ]);
  });
});
