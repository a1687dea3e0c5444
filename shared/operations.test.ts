// The operation table and its schemas: every operation a client's request becomes is in the table
// with its kind and body limit; strict bodies, group ids as numbers or decimal strings within u64,
// the API key format (a public hash is never a key), and sigil_action's code/ipfs_id rule.
import { describe, expect, it } from "vitest";
import { NO_PERMISSIONS } from "../test/harness/permissions.ts";
import { generateApiKey } from "./apiKey.ts";
import { apiKeyHash, toHash32 } from "./hashing.ts";
import { CID } from "multiformats/cid";
import {
  acts,
  DEFAULT_BODY_LIMIT,
  enclaveOperations,
  groupIdField,
  isOperation,
  operations,
  requestSchemas,
  responseSchemas,
  SCRIPT_BODY_LIMIT,
  sigilActionRequestSchema,
  TYPED_DATA_BODY_LIMIT,
  type EnclaveOperation,
} from "./operations.ts";
import { errorStatus } from "./errors.ts";

const KEY = generateApiKey();
const HASH = toHash32(apiKeyHash(KEY));
const ADDRESS = `0x${"ab".repeat(20)}`;
const perms = {
  name: "n",
  description: "d",
  ...NO_PERMISSIONS,
};
const envelope = { typed_data: { domain: {} }, signature: "0x1234" };

/** A minimal valid body for every operation. */
const VALID: Record<EnclaveOperation, Record<string, unknown>> = {
  new_account: { account_name: "acct" },
  create_wallet: { api_key: KEY },
  add_usage_api_key: { api_key: KEY, ...perms },
  update_usage_api_key: { api_key: KEY, usage_api_key: HASH, ...perms },
  update_usage_api_key_metadata: { api_key: KEY, usage_api_key: KEY, name: "n", description: "d" },
  remove_usage_api_key: { api_key: KEY, usage_api_key: HASH },
  add_group: { api_key: KEY, group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
  remove_group: { api_key: KEY, group_id: 1 },
  update_group: {
    api_key: KEY,
    group_id: "1",
    name: "g",
    description: "",
    pkp_ids_permitted: [ADDRESS],
    cid_hashes_permitted: [0],
  },
  add_action_to_group: { api_key: KEY, group_id: 1, action_ipfs_cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG" },
  remove_action_from_group: { api_key: KEY, group_id: 1, hashed_cid: HASH },
  add_pkp_to_group: { api_key: KEY, group_id: 1, pkp_id: ADDRESS },
  remove_pkp_from_group: { api_key: KEY, group_id: 1, pkp_id: "3" },
  add_action: {
    api_key: KEY,
    action_ipfs_cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    name: "a",
    description: "",
  },
  delete_action: { api_key: KEY, hashed_cid: HASH },
  update_action_metadata: { api_key: KEY, hashed_cid: HASH, name: "a", description: "" },
  set_wallet_guardrail: { api_key: KEY, wallet_address: ADDRESS, guardrail: { version: 1, messages: {} } },
  set_usage_key_guardrail: { api_key: KEY, usage_api_key: `0x${"ab".repeat(32)}`, guardrail: null },
  convert_to_chain_secured_account: { api_key: KEY, new_admin_wallet_address: ADDRESS, ...envelope },
  create_wallet_with_signature: envelope,
  add_usage_api_key_with_signature: envelope,
  sigil_action: { api_key: KEY, code: "return 1" },
  delegate_key: { api_key: KEY, caveats: { max_uses: 1 } },
};

const parse = (op: EnclaveOperation, body: unknown) => requestSchemas[op].safeParse(body);

describe("request schemas", () => {
  it("cover every operation", () => {
    expect(Object.keys(requestSchemas).sort()).toEqual([...enclaveOperations].sort());
  });

  it.each(enclaveOperations)("%s accepts a minimal valid body", (op) => {
    const result = parse(op, VALID[op]);
    expect(result.error?.issues).toBeUndefined();
    expect(result.success).toBe(true);
  });

  it.each(enclaveOperations)("%s rejects an unknown field", (op) => {
    const result = parse(op, { ...VALID[op], unexpected: true });
    expect(result.success).toBe(false);
    expect(result.error?.issues.some((i) => i.code === "unrecognized_keys")).toBe(true);
  });

  it.each(enclaveOperations.filter((op) => "api_key" in VALID[op]))("%s requires api_key", (op) => {
    const { api_key: _omitted, ...body } = VALID[op];
    const result = parse(op, body);
    expect(result.success).toBe(false);
    expect(result.error?.issues.some((i) => i.path[0] === "api_key")).toBe(true);
  });

  it("rejects a misspelled field rather than ignoring it", () => {
    expect(parse("remove_group", { api_key: KEY, groupId: 1 }).success).toBe(false);
  });
});

describe("group ids", () => {
  const U64_MAX = (1n << 64n) - 1n;

  it.each([
    [0, 0n],
    [7, 7n],
    ["7", 7n],
    ["007", 7n],
    [Number.MAX_SAFE_INTEGER, BigInt(Number.MAX_SAFE_INTEGER)],
    ["9007199254740993", 9007199254740993n], // above 2^53: exact as a string
    [U64_MAX.toString(), U64_MAX],
  ])("accepts %j as %s", (input, expected) => {
    expect(groupIdField.parse(input)).toBe(expected);
  });

  it.each([
    ["2^64 as a string", (1n << 64n).toString()],
    ["a 21-digit string", "1".repeat(21)],
    ["a negative number", -1],
    ["a negative string", "-1"],
    ["a fraction", 1.5],
    ["a decimal-point string", "1.0"],
    ["hex", "0x10"],
    ["an empty string", ""],
    ["a padded string", " 5"],
    ["a number above 2^53 (inexact)", 2 ** 53],
    ["a bigint", 5n],
    ["null", null],
  ])("rejects %s", (_label, input) => {
    expect(groupIdField.safeParse(input).success).toBe(false);
  });

  it("parses group ids inside a request to bigints", () => {
    const result = requestSchemas.update_group.parse({ ...VALID.update_group, group_id: "18446744073709551615" });
    expect(result.group_id).toBe((1n << 64n) - 1n);
  });

  it("rejects a group id above u64 inside a request", () => {
    expect(parse("remove_group", { api_key: KEY, group_id: "18446744073709551616" }).success).toBe(false);
  });

  it("applies the same rule to group id lists of usage key permissions", () => {
    const ok = requestSchemas.add_usage_api_key.parse({ ...VALID.add_usage_api_key, execute_in_groups: [1, "2", "0"] });
    expect(ok.execute_in_groups).toEqual([1n, 2n, 0n]);
    expect(
      parse("add_usage_api_key", { ...VALID.add_usage_api_key, execute_in_groups: ["18446744073709551616"] }).success,
    ).toBe(false);
    expect(parse("add_usage_api_key", { ...VALID.add_usage_api_key, add_pkp_to_groups: [-1] }).success).toBe(false);
  });
});

describe("api_key", () => {
  it("accepts a generated key and trims surrounding whitespace", () => {
    const result = requestSchemas.create_wallet.parse({ api_key: `  ${KEY}\n` });
    expect(result.api_key).toBe(KEY);
  });

  it.each([
    ["the key's 64-hex hash", HASH.slice(2)],
    ["the key's 0x hash", HASH],
    ["a 43-character key", KEY.slice(0, 43)],
    ["a key without padding", `${KEY.slice(0, 43)}A`],
    ["url-safe base64", `${"-".repeat(43)}=`],
    ["a non-canonical key (padding bits set)", `${"A".repeat(42)}B=`],
    ["an empty string", ""],
  ])("rejects %s", (_label, value) => {
    const result = parse("create_wallet", { api_key: value });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(["api_key"]);
  });

  it("rejects a non-string key", () => {
    expect(parse("create_wallet", { api_key: 123 }).success).toBe(false);
  });

  it("accepts a usage key reference as the key itself or its 0x hash, but not a bare hash", () => {
    expect(parse("remove_usage_api_key", { api_key: KEY, usage_api_key: KEY }).success).toBe(true);
    expect(parse("remove_usage_api_key", { api_key: KEY, usage_api_key: HASH }).success).toBe(true);
    expect(parse("remove_usage_api_key", { api_key: KEY, usage_api_key: HASH.slice(2) }).success).toBe(false);
  });
});

describe("sigil_action", () => {
  it("accepts code alone", () => {
    expect(parse("sigil_action", { api_key: KEY, code: "return 1" }).success).toBe(true);
  });

  it("accepts ipfs_id alone", () => {
    expect(
      parse("sigil_action", { api_key: KEY, ipfs_id: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG" }).success,
    ).toBe(true);
  });

  it("rejects both code and ipfs_id", () => {
    const result = parse("sigil_action", {
      api_key: KEY,
      code: "return 1",
      ipfs_id: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/exactly one of code and ipfs_id/);
  });

  it("rejects neither code nor ipfs_id", () => {
    const result = parse("sigil_action", { api_key: KEY, js_params: { a: 1 } });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/exactly one of code and ipfs_id/);
  });

  it("passes js_params through and accepts a positive integer timeout", () => {
    const result = requestSchemas.sigil_action.parse({
      api_key: KEY,
      code: "x",
      js_params: { n: [1, 2] },
      timeout_ms: 5_000,
    });
    expect(result.js_params).toEqual({ n: [1, 2] });
    expect(result.timeout_ms).toBe(5_000);
  });

  it.each([0, -1, 1.5, "1000"])("rejects timeout_ms %j", (timeout) => {
    expect(parse("sigil_action", { api_key: KEY, code: "x", timeout_ms: timeout }).success).toBe(false);
  });

  it("rejects an empty ipfs_id", () => {
    expect(parse("sigil_action", { api_key: KEY, ipfs_id: "" }).success).toBe(false);
  });
});

describe("CIDs", () => {
  const QM = "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG";
  const BAFY = CID.parse(QM).toV1().toString();
  const RAW = CID.createV1(0x55, CID.parse(QM).multihash).toString();

  it("turn a script's CIDv1 into its CIDv0 in every field that takes one", () => {
    expect(
      requestSchemas.add_action.parse({ api_key: KEY, action_ipfs_cid: BAFY, name: "a", description: "" })
        .action_ipfs_cid,
    ).toBe(QM);
    expect(
      requestSchemas.add_action_to_group.parse({ api_key: KEY, group_id: 1, action_ipfs_cid: BAFY }).action_ipfs_cid,
    ).toBe(QM);
    expect(requestSchemas.sigil_action.parse({ api_key: KEY, ipfs_id: BAFY }).ipfs_id).toBe(QM);
    const group = {
      api_key: KEY,
      group_name: "g",
      group_description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: [BAFY, QM, "0", 0, HASH],
    };
    expect(requestSchemas.add_group.parse(group).cid_hashes_permitted).toEqual([QM, QM, "0", 0, HASH]);
  });

  it("refuse a CID with no CIDv0 form, with the field's path and a message that says why", () => {
    const result = parse("update_group", {
      api_key: KEY,
      group_id: 1,
      name: "g",
      description: "",
      pkp_ids_permitted: [],
      cid_hashes_permitted: ["0", RAW],
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join("."))).toEqual(["cid_hashes_permitted.1"]);
    expect(result.error?.issues[0]?.message).toMatch(/cannot name a script/);
    expect(parse("add_action", { api_key: KEY, action_ipfs_cid: RAW, name: "a", description: "" }).success).toBe(false);
    expect(parse("sigil_action", { api_key: KEY, ipfs_id: RAW }).success).toBe(false);
  });
});

describe("sigil_action's public body", () => {
  it.each([[[1, 2]], ["text"], [7], [false]])(
    "rejects js_params %j: an object or null only, named in the issue",
    (js_params) => {
      const result = sigilActionRequestSchema.safeParse({ code: "x", js_params });
      expect(result.success).toBe(false);
      expect(result.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
        ["js_params", "must be a JSON object or null"],
      ]);
    },
  );

  it("takes js_params as an object, null, or none at all", () => {
    expect(sigilActionRequestSchema.parse({ code: "x", js_params: { n: [1] } }).js_params).toEqual({ n: [1] });
    expect(sigilActionRequestSchema.parse({ code: "x", js_params: null }).js_params).toBeNull();
    expect(sigilActionRequestSchema.safeParse({ code: "x" }).success).toBe(true);
  });

  it("keeps js_params exactly as sent, a `__proto__` key included", () => {
    const js_params = JSON.parse('{"__proto__": {"a": 1}, "b": 2}') as unknown;
    expect(JSON.stringify(sigilActionRequestSchema.parse({ code: "x", js_params }).js_params)).toBe(
      '{"__proto__":{"a":1},"b":2}',
    );
  });
});

describe("the operation table", () => {
  it("holds every operation a client's request becomes, with that operation's schemas, and the enclave's own reads (health, attestation, the lists' Solana addresses, a delegated key's check)", () => {
    expect(Object.keys(operations).sort()).toEqual(
      [...enclaveOperations, "health", "attestation", "solana_addresses", "check_delegated_key"].sort(),
    );
    for (const op of enclaveOperations) {
      expect(operations[op].input, op).toBe(requestSchemas[op]);
      expect(operations[op].output, op).toBe(responseSchemas[op]);
    }
    expect(isOperation("add_group")).toBe(true);
    expect(isOperation("toString")).toBe(false);
    expect(isOperation("client_config")).toBe(false);
  });

  it("says which operations act (never sent to a second enclave once delivered): the writes and the run, not the derivations, minting delegated keys or the reads", () => {
    const acting = Object.keys(operations).filter((op) => acts(op as keyof typeof operations));
    expect(acting).not.toContain("delegate_key");
    expect(acting).not.toContain("create_wallet_with_signature");
    expect(acting).not.toContain("add_usage_api_key_with_signature");
    expect(acting).not.toContain("health");
    expect(acting).not.toContain("attestation");
    expect(acting).toContain("new_account");
    expect(acting).toContain("convert_to_chain_secured_account");
    expect(operations.sigil_action.kind).toBe("run");
    expect(acting).toHaveLength(enclaveOperations.length - 3);
  });

  it("gives each operation its body limit: a script's 6 MiB, signed typed data 64 KiB, the rest 256 KiB", () => {
    expect(operations.sigil_action.bodyLimit).toBe(SCRIPT_BODY_LIMIT);
    expect(SCRIPT_BODY_LIMIT).toBe(6 << 20);
    for (const op of [
      "convert_to_chain_secured_account",
      "create_wallet_with_signature",
      "add_usage_api_key_with_signature",
    ] as const)
      expect(operations[op].bodyLimit, op).toBe(TYPED_DATA_BODY_LIMIT);
    for (const op of ["new_account", "add_group", "create_wallet", "health"] as const)
      expect(operations[op].bodyLimit, op).toBe(DEFAULT_BODY_LIMIT);
  });

  it("lists error codes that exist, with invalid_request and internal_error for every operation", () => {
    for (const [op, spec] of Object.entries(operations)) {
      for (const code of spec.errors) expect(errorStatus, `${op}: ${code}`).toHaveProperty(code);
      expect(spec.errors, op).toContain("invalid_request");
      expect(spec.errors, op).toContain("internal_error");
    }
  });
});
