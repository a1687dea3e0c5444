// One canonical form for every CID (shared/cid.ts canonicalCid): a script's CIDv1 (bafy…) is the
// same script as its CIDv0 (Qm…), so a grant, an ipfs_id or an action identity given in that form
// acts exactly as the Qm form does; a CID with no CIDv0 form names no script and is refused.
import { CID } from "multiformats/cid";
import { sha512 } from "multiformats/hashes/sha2";
import { createPublicClient, http } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { hexToBytes } from "viem";
import { Keyring } from "../../enclave/keys/derive.ts";
import { computeCid } from "../../shared/cid.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, cidHash, toHash32 } from "../../shared/hashing.ts";
import { callEnclave, ok, run } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

const RAW_CODEC = 0x55;
const DAG_PB = 0x70;

/** The CIDv1 (base32, `bafy…`) of the same dag-pb node as the CIDv0 `qm`. */
const v1 = (qm: string) => CID.parse(qm).toV1().toString();

const script = (name: string) => `async function main() { return ${JSON.stringify(name)} }`;

const chain = () => createPublicClient({ transport: http(inject("rpcUrl")) });

let apiKey: string;
let master: bigint;

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "cid forms" })).api_key;
  master = apiKeyHash(apiKey);
});

function expectRan(r: Awaited<ReturnType<typeof run>>, name: string, cid: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
  expect(r.body.response).toBe(name);
  expect(r.body.cid).toBe(cid);
}

describe("grants given as a script's CIDv1 (bafy…)", () => {
  it("add_group: the bafy grant authorizes runs of the code whose Qm CID it encodes, and the group holds the Qm's hash", async () => {
    const cid = await computeCid(script("add_group"));
    expect((await run(apiKey, script("add_group"))).status).toBe(403);
    const { group_id } = await ok<{ group_id: string }>("add_group", {
      api_key: apiKey,
      group_name: "bafy",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [v1(cid)],
    });
    expectRan(await run(apiKey, script("add_group")), "add_group", cid);
    const group = await chain().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "getGroup",
      args: [master, BigInt(group_id)],
    });
    expect(JSON.stringify(group, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))).toContain(
      cidHash(cid).toString(),
    );
  });

  it("add_action_to_group and update_group take the bafy form the same way; add_action_to_group answers the Qm's hash", async () => {
    const [a, b] = [await computeCid(script("add_action_to_group")), await computeCid(script("update_group"))];
    const { group_id } = await ok<{ group_id: string }>("add_group", {
      api_key: apiKey,
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [],
    });
    const added = await ok<{ hashed_cid: string }>("add_action_to_group", {
      api_key: apiKey,
      group_id,
      action_ipfs_cid: v1(a),
    });
    expect(added.hashed_cid).toBe(toHash32(cidHash(a)));
    expectRan(await run(apiKey, script("add_action_to_group")), "add_action_to_group", a);
    expect((await run(apiKey, script("update_group"))).status).toBe(403);
    await ok("update_group", {
      api_key: apiKey,
      group_id,
      name: "g",
      description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [v1(a), v1(b)],
    });
    expectRan(await run(apiKey, script("update_group")), "update_group", b);
  });

  it("add_action registers the canonical Qm CID and its hash: the contract's list holds the Qm form, never the bafy one", async () => {
    const cid = await computeCid(script("add_action"));
    const added = await ok<{ hashed_cid: string }>("add_action", {
      api_key: apiKey,
      action_ipfs_cid: v1(cid),
      name: "a",
      description: "",
    });
    expect(added.hashed_cid).toBe(toHash32(cidHash(cid)));
    const [items] = await chain().readContract({
      address: inject("contract"),
      abi: accountConfigAbi,
      functionName: "listActions",
      args: [master, 0n, 100n],
    });
    const listed = items.find((i) => i.cidHash === cidHash(cid));
    expect(listed?.cid).toBe(cid);
    expect(items.some((i) => i.cid === v1(cid))).toBe(false);
  });
});

describe("ipfs_id given as a CIDv1", () => {
  it("fetches, verifies and runs the code, and reports its canonical Qm CID", async () => {
    const code = script("by bafy");
    const cid = (
      (await (await fetch(`${inject("gatewayUrl")}/add`, { method: "POST", body: code })).json()) as { cid: string }
    ).cid;
    await ok("add_group", {
      api_key: apiKey,
      group_name: "ipfs",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [cid],
    });
    const r = await callEnclave<Awaited<ReturnType<typeof run>>["body"]>("sigil_action", {
      api_key: apiKey,
      ipfs_id: v1(cid),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ response: "by bafy", cid, has_error: false });
  });
});

describe("the action identity of a CID in either form", () => {
  it("getActionWalletAddress and getActionPublicKey of the running code's bafy CID are its own identity", async () => {
    const code = `async function main({ bafy }) {
      const A = Sigil.Actions;
      return {
        own: await A.getActionWalletAddress(),
        named: await A.getActionWalletAddress({ cid: bafy }),
        ownKey: await A.getActionPublicKey(),
        namedKey: await A.getActionPublicKey({ cid: bafy }),
      };
    }`;
    const cid = await computeCid(code);
    await ok("add_group", {
      api_key: apiKey,
      group_name: "identity",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [cid],
    });
    const r = await run(apiKey, code, { bafy: v1(cid) });
    expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
    const out = r.body.response as { own: string; named: string; ownKey: string; namedKey: string };
    expect(out.own).toBe(new Keyring(hexToBytes(TEST_ROOT_KEY)).actionKey(cid).address.toLowerCase());
    expect(out.named).toBe(out.own);
    expect(out.namedKey).toBe(out.ownKey);
  });

  it("a CID with no CIDv0 form has no action identity: the script gets a catchable error naming it", async () => {
    const code = `async function main({ raw }) {
      try { return await Sigil.Actions.getActionWalletAddress({ cid: raw }); }
      catch (e) { return { code: e.code, message: e.message }; }
    }`;
    const cid = await computeCid(code);
    await ok("add_group", {
      api_key: apiKey,
      group_name: "raw identity",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [cid],
    });
    const raw = CID.createV1(RAW_CODEC, CID.parse(cid).multihash).toString();
    const r = await run(apiKey, code, { raw });
    expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
    expect(r.body.response).toMatchObject({ code: "script_error" });
    expect((r.body.response as { message: string }).message).toContain(raw);
  });
});

describe("CIDs that can name no script", () => {
  let raw: string;
  let otherHash: string;

  beforeAll(async () => {
    const cid = await computeCid(script("unnameable"));
    // The same bytes' raw-codec CID (bafkrei…), and a dag-pb CID with another hash function.
    raw = CID.createV1(RAW_CODEC, CID.parse(cid).multihash).toString();
    otherHash = CID.createV1(DAG_PB, await sha512.digest(new TextEncoder().encode(script("unnameable")))).toString();
    expect(raw).toMatch(/^bafkrei/);
  });

  it("are refused (400 invalid_request, naming the field) by every grant and as ipfs_id, so no grant silently authorizes nothing", async () => {
    const { group_id } = await ok<{ group_id: string }>("add_group", {
      api_key: apiKey,
      group_name: "refusals",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [],
    });
    for (const bad of [raw, otherHash]) {
      const attempts: Array<[string, Record<string, unknown>, string]> = [
        [
          "add_group",
          { group_name: "x", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [bad] },
          "cid_hashes_permitted.0",
        ],
        [
          "update_group",
          { group_id, name: "x", description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0", bad] },
          "cid_hashes_permitted.1",
        ],
        ["add_action_to_group", { group_id, action_ipfs_cid: bad }, "action_ipfs_cid"],
        ["add_action", { action_ipfs_cid: bad, name: "x", description: "" }, "action_ipfs_cid"],
        ["sigil_action", { ipfs_id: bad }, "ipfs_id"],
      ];
      for (const [op, body, path] of attempts) {
        const r = await callEnclave<{ error: { code: string; details: Array<{ path: string; message: string }> } }>(
          op,
          { api_key: apiKey, ...body },
        );
        expect(r.status, `${op} ${bad}: ${JSON.stringify(r.body)}`).toBe(400);
        expect(r.body.error.code).toBe("invalid_request");
        expect(r.body.error.details.map((d) => d.path)).toContain(path);
      }
    }
  });
});
