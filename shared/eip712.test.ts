// The EIP-712 envelope (the service specification, Authentication 7-9; docs/design/api.md, Signature endpoints): the
// builder, the digest (against viem and against a hand computation), and every rule of the
// validator with its error code, status and order.
import {
  concat,
  encodeAbiParameters,
  getAddress,
  hashTypedData,
  keccak256,
  recoverAddress,
  stringToHex,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  buildTypedData,
  sigilPrimaryTypes,
  typedDataDigest,
  validateTypedData,
  type SigilPrimaryType,
  type ValidateTypedDataOptions,
  type ValidateTypedDataResult,
  signableTypedData,
} from "./eip712.ts";
import { SigilError } from "./errors.ts";

const CHAIN_ID = 31337;
const NOW = 1_750_000_000;
// The EIP-55 example address.
const ADDRESS: Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
const OTHER_ADDRESS: Address = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359";
const PRIMARY_TYPES: readonly SigilPrimaryType[] = ["CreateWallet", "ConvertAccount", "AddUsageApiKey", "BillingAuth"];

type Field = { name: string; type: string };
/** A typed-data envelope as plain, freely editable JSON. */
type Envelope = {
  types: Record<string, Field[]>;
  primaryType?: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
  [key: string]: unknown;
};

/** A fresh, valid envelope as a client would send it (JSON round trip, so edits never leak). */
function envelope(primaryType: SigilPrimaryType = "CreateWallet", issuedAt: number = NOW): Envelope {
  return JSON.parse(
    JSON.stringify(buildTypedData({ primaryType, address: ADDRESS, chainId: CHAIN_ID, issuedAt })),
  ) as Envelope;
}

function validate<P extends SigilPrimaryType>(
  typedData: unknown,
  options: Partial<ValidateTypedDataOptions<P>> & { primaryType?: P } = {},
): ValidateTypedDataResult<P> {
  return validateTypedData(typedData, { primaryType: "CreateWallet" as P, chainId: CHAIN_ID, now: NOW, ...options });
}

function expectRejected(result: ValidateTypedDataResult<SigilPrimaryType>, code: string, status: number): void {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.error).toBeInstanceOf(SigilError);
  expect({ code: result.error.code, status: result.error.status }).toEqual({ code, status });
  expect(result.error.message.length).toBeGreaterThan(0);
}

function expectAccepted(result: ValidateTypedDataResult<SigilPrimaryType>): void {
  if (!result.ok) expect.fail(`rejected: ${result.error.code}: ${result.error.message}`);
  expect(result.ok).toBe(true);
}

/** The EIP-712 digest computed from the standard's definitions, without hashTypedData. */
function handDigest(primaryType: string, chainId: bigint, address: Address, issuedAt: bigint): Hex {
  const bytes32 = { type: "bytes32" } as const;
  const domainTypeHash = keccak256(stringToHex("EIP712Domain(string name,string version,uint256 chainId)"));
  const domainSeparator = keccak256(
    encodeAbiParameters(
      [bytes32, bytes32, bytes32, { type: "uint256" }],
      [domainTypeHash, keccak256(stringToHex("Sigil ChainSecured")), keccak256(stringToHex("1")), chainId],
    ),
  );
  const structTypeHash = keccak256(stringToHex(`${primaryType}(address address,uint256 issuedAt)`));
  const structHash = keccak256(
    encodeAbiParameters([bytes32, { type: "address" }, { type: "uint256" }], [structTypeHash, address, issuedAt]),
  );
  return keccak256(concat(["0x1901", domainSeparator, structHash]));
}

describe("sigilPrimaryTypes", () => {
  it("are exactly the four flows", () => {
    expect([...sigilPrimaryTypes].sort()).toEqual([...PRIMARY_TYPES].sort());
  });
});

describe("buildTypedData", () => {
  it.each(PRIMARY_TYPES)("builds the %s envelope of the spec", (primaryType) => {
    const td = buildTypedData({ primaryType, address: ADDRESS, chainId: CHAIN_ID, issuedAt: NOW });
    expect(JSON.parse(JSON.stringify(td))).toStrictEqual({
      types: {
        EIP712Domain: [
          { name: "name", type: "string" },
          { name: "version", type: "string" },
          { name: "chainId", type: "uint256" },
        ],
        [primaryType]: [
          { name: "address", type: "address" },
          { name: "issuedAt", type: "uint256" },
        ],
      },
      primaryType,
      domain: { name: "Sigil ChainSecured", version: "1", chainId: CHAIN_ID },
      message: { address: ADDRESS, issuedAt: String(NOW) },
    });
    expect(Object.keys(td.types)).toEqual(["EIP712Domain", primaryType]);
  });

  it("gives issuedAt as a decimal string, from a number or a bigint", () => {
    expect(
      buildTypedData({ primaryType: "BillingAuth", address: ADDRESS, chainId: 1, issuedAt: 1_700_000_000 }).message
        .issuedAt,
    ).toBe("1700000000");
    expect(
      buildTypedData({ primaryType: "BillingAuth", address: ADDRESS, chainId: 1n, issuedAt: 1_700_000_001n }).message
        .issuedAt,
    ).toBe("1700000001");
  });

  it.each(PRIMARY_TYPES)("builds a %s envelope that validateTypedData accepts", (primaryType) => {
    expectAccepted(
      validate(buildTypedData({ primaryType, address: ADDRESS, chainId: CHAIN_ID, issuedAt: NOW }), { primaryType }),
    );
  });
});

describe("typedDataDigest", () => {
  it.each(PRIMARY_TYPES)("matches viem's hashTypedData on the built %s typed data", (primaryType) => {
    const td = buildTypedData({ primaryType, address: ADDRESS, chainId: CHAIN_ID, issuedAt: NOW });
    expect(typedDataDigest({ primaryType, chainId: CHAIN_ID, address: ADDRESS, issuedAt: BigInt(NOW) })).toBe(
      hashTypedData(signableTypedData(td)),
    );
  });

  it.each(PRIMARY_TYPES)(
    "matches keccak256(0x1901 ‖ domainSeparator ‖ structHash) computed by hand for %s",
    (primaryType) => {
      for (const [chainId, issuedAt] of [
        [31337n, BigInt(NOW)],
        [1n, 0n],
        [8453n, 4_102_444_800n],
      ] as const) {
        expect(typedDataDigest({ primaryType, chainId, address: ADDRESS, issuedAt })).toBe(
          handDigest(primaryType, chainId, ADDRESS, issuedAt),
        );
      }
    },
  );

  it("differs between primary types, chains, addresses and times", () => {
    const base = { primaryType: "CreateWallet", chainId: CHAIN_ID, address: ADDRESS, issuedAt: BigInt(NOW) } as const;
    const digests = new Set([
      ...PRIMARY_TYPES.map((primaryType) => typedDataDigest({ ...base, primaryType })),
      typedDataDigest({ ...base, chainId: 1 }),
      typedDataDigest({ ...base, address: OTHER_ADDRESS }),
      typedDataDigest({ ...base, issuedAt: base.issuedAt + 1n }),
    ]);
    expect(digests.size).toBe(PRIMARY_TYPES.length + 3);
  });

  it("does not depend on the address's letter case", () => {
    const base = { primaryType: "ConvertAccount", chainId: CHAIN_ID, issuedAt: BigInt(NOW) } as const;
    expect(typedDataDigest({ ...base, address: ADDRESS.toLowerCase() as Address })).toBe(
      typedDataDigest({ ...base, address: ADDRESS }),
    );
  });
});

describe("a signature made with viem", () => {
  it.each(PRIMARY_TYPES)(
    "over a %s envelope recovers to its signer with validateTypedData's digest",
    async (primaryType) => {
      const signer = privateKeyToAccount(generatePrivateKey());
      const td = buildTypedData({ primaryType, address: signer.address, chainId: CHAIN_ID, issuedAt: NOW });
      const signature = await signer.signTypedData(signableTypedData(td));

      const result = validateTypedData(td, {
        primaryType,
        chainId: CHAIN_ID,
        now: NOW,
        signature,
        expectedAddress: signer.address,
      });
      if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
      expect(await recoverAddress({ hash: result.value.digest, signature })).toBe(signer.address);
    },
  );

  it("does not recover to its signer under another primary type's digest", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const signature = await signer.signTypedData(
      signableTypedData(
        buildTypedData({ primaryType: "CreateWallet", address: signer.address, chainId: CHAIN_ID, issuedAt: NOW }),
      ),
    );
    const other = typedDataDigest({
      primaryType: "AddUsageApiKey",
      chainId: CHAIN_ID,
      address: signer.address,
      issuedAt: BigInt(NOW),
    });
    expect(await recoverAddress({ hash: other, signature })).not.toBe(signer.address);
  });
});

describe("validateTypedData accepts", () => {
  it("a valid envelope and returns what it says, normalized, with its digest", () => {
    const result = validate(envelope("AddUsageApiKey"), { primaryType: "AddUsageApiKey" });
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value).toStrictEqual({
      primaryType: "AddUsageApiKey",
      domain: { name: "Sigil ChainSecured", version: "1", chainId: BigInt(CHAIN_ID) },
      address: ADDRESS,
      issuedAt: BigInt(NOW),
      digest: handDigest("AddUsageApiKey", BigInt(CHAIN_ID), ADDRESS, BigInt(NOW)),
    });
  });

  it("issuedAt as a JSON number", () => {
    const td = envelope();
    td.message.issuedAt = NOW;
    const result = validate(td);
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value.issuedAt).toBe(BigInt(NOW));
  });

  it("chainId as a decimal string", () => {
    const td = envelope();
    td.domain.chainId = String(CHAIN_ID);
    const result = validate(td);
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value.domain.chainId).toBe(BigInt(CHAIN_ID));
  });

  it("the node's chain id given as a bigint", () => {
    expectAccepted(validate(envelope(), { chainId: BigInt(CHAIN_ID) }));
  });

  it("typed data passed as its JSON text", () => {
    const result = validate(JSON.stringify(envelope("BillingAuth")), { primaryType: "BillingAuth" });
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value.digest).toBe(handDigest("BillingAuth", BigInt(CHAIN_ID), ADDRESS, BigInt(NOW)));
  });

  it("a lowercase message.address", () => {
    const td = envelope();
    td.message.address = ADDRESS.toLowerCase();
    expectAccepted(validate(td));
  });

  it("expectedAddress in any letter case", () => {
    const td = envelope("ConvertAccount");
    expectAccepted(validate(td, { primaryType: "ConvertAccount", expectedAddress: ADDRESS }));
    expectAccepted(validate(td, { primaryType: "ConvertAccount", expectedAddress: ADDRESS.toLowerCase() as Address }));
    const lower = envelope("ConvertAccount");
    lower.message.address = ADDRESS.toLowerCase();
    expectAccepted(validate(lower, { primaryType: "ConvertAccount", expectedAddress: getAddress(ADDRESS) }));
  });

  it("issuedAt exactly 300 s in the past or in the future (the window's edges)", () => {
    expectAccepted(validate(envelope("CreateWallet", NOW - 300)));
    expectAccepted(validate(envelope("CreateWallet", NOW + 300)));
    expectAccepted(validate(envelope("CreateWallet", NOW - 300), { now: BigInt(NOW) }));
  });

  it("serialized typed data of exactly 4096 bytes", () => {
    const json = JSON.stringify(envelope());
    const padded = json + " ".repeat(4096 - json.length);
    expect(new TextEncoder().encode(padded)).toHaveLength(4096);
    expectAccepted(validate(padded));
  });

  it("a signature of exactly 4096 bytes (its hex, 0x-prefixed)", () => {
    expectAccepted(validate(envelope(), { signature: `0x${"ab".repeat(4096)}` }));
  });
});

describe("validateTypedData rejects with payload_too_large (413)", () => {
  it("serialized typed data over 4096 bytes (a huge domain name, checked before the name)", () => {
    const td = envelope();
    td.domain.name = "x".repeat(5000);
    expectRejected(validate(td), "payload_too_large", 413);
  });

  it("JSON text of 4097 bytes", () => {
    const json = JSON.stringify(envelope());
    expectRejected(validate(json + " ".repeat(4097 - json.length)), "payload_too_large", 413);
  });

  it("typed data over 4096 bytes in UTF-8 though under 4096 characters", () => {
    const td = envelope();
    td.domain.name = "é".repeat(2100);
    expect(JSON.stringify(td).length).toBeLessThan(4096);
    expectRejected(validate(td), "payload_too_large", 413);
  });

  it("oversized text that is not even JSON", () => {
    expectRejected(validate(`{${"x".repeat(5000)}`), "payload_too_large", 413);
  });

  it("a signature over 4096 bytes (hex of 4097 bytes)", () => {
    expectRejected(validate(envelope(), { signature: `0x${"ab".repeat(4097)}` }), "payload_too_large", 413);
  });

  it("a non-hex signature over 4096 characters", () => {
    expectRejected(validate(envelope(), { signature: "z".repeat(4097) }), "payload_too_large", 413);
  });
});

describe("validateTypedData rejects with wrong_primary_type (400)", () => {
  it("a CreateWallet envelope sent to the ConvertAccount check", () => {
    expectRejected(validate(envelope("CreateWallet"), { primaryType: "ConvertAccount" }), "wrong_primary_type", 400);
  });

  const pairs = PRIMARY_TYPES.flatMap((signed) =>
    PRIMARY_TYPES.filter((p) => p !== signed).map((expected) => [signed, expected] as const),
  );
  it.each(pairs)("a %s envelope at the %s check", (signed, expected) => {
    expectRejected(validate(envelope(signed), { primaryType: expected }), "wrong_primary_type", 400);
  });

  it("a missing primaryType", () => {
    const td = envelope();
    delete td.primaryType;
    expectRejected(validate(td), "wrong_primary_type", 400);
  });

  it("a primaryType in another letter case or not a string", () => {
    const lower = envelope();
    lower.primaryType = "createwallet";
    expectRejected(validate(lower), "wrong_primary_type", 400);
    const notString = envelope();
    (notString as Record<string, unknown>).primaryType = ["CreateWallet"];
    expectRejected(validate(notString), "wrong_primary_type", 400);
  });
});

describe("validateTypedData rejects with invalid_typed_data (400)", () => {
  const cases: [string, (td: Envelope) => unknown][] = [
    ["message type fields in another order (issuedAt before address)", (td) => td.types.CreateWallet!.reverse()],
    ["an extra field in the message type", (td) => td.types.CreateWallet!.push({ name: "nonce", type: "uint256" })],
    ["a missing field in the message type", (td) => td.types.CreateWallet!.pop()],
    ["a message field's type changed (uint256 → uint64)", (td) => (td.types.CreateWallet![1]!.type = "uint64")],
    ["a message field renamed", (td) => (td.types.CreateWallet![0]!.name = "wallet")],
    ["a message field with an extra key", (td) => Object.assign(td.types.CreateWallet![0]!, { extra: true })],
    [
      "EIP712Domain with an extra verifyingContract field",
      (td) => td.types.EIP712Domain!.push({ name: "verifyingContract", type: "address" }),
    ],
    ["EIP712Domain fields in another order", (td) => td.types.EIP712Domain!.reverse()],
    ["EIP712Domain's chainId typed uint64", (td) => (td.types.EIP712Domain![2]!.type = "uint64")],
    ["EIP712Domain missing from types", (td) => delete td.types.EIP712Domain],
    ["an extra top-level key in types", (td) => (td.types.Other = [{ name: "x", type: "uint256" }])],
    ["types not an object", (td) => (td.types = [] as unknown as Envelope["types"])],
    ["the message type not a list", (td) => ((td.types as Record<string, unknown>).CreateWallet = {})],
    ["an extra top-level key in the typed data", (td) => (td.extra = 1)],
    ["a wrong domain name", (td) => (td.domain.name = "Sigil")],
    ["a domain name in another letter case", (td) => (td.domain.name = "sigil chainsecured")],
    ["domain version 2", (td) => (td.domain.version = "2")],
    ["domain version as the number 1", (td) => (td.domain.version = 1)],
    ["an extra domain key", (td) => (td.domain.verifyingContract = OTHER_ADDRESS)],
    ["a missing domain chainId", (td) => delete td.domain.chainId],
    ["a non-integer domain chainId", (td) => (td.domain.chainId = "0x7a69")],
    ["domain not an object", (td) => (td.domain = null as unknown as Envelope["domain"])],
    ["a message with an extra key", (td) => (td.message.nonce = "1")],
    ["a message missing issuedAt", (td) => delete td.message.issuedAt],
    ["message not an object", (td) => (td.message = "x" as unknown as Envelope["message"])],
    ["a message.address that is too short", (td) => (td.message.address = "0x1234")],
    ["a message.address that is not hex", (td) => (td.message.address = `0x${"g".repeat(40)}`)],
    ["a message.address without 0x", (td) => (td.message.address = ADDRESS.slice(2))],
    [
      "a mixed-case message.address with a bad checksum",
      (td) => (td.message.address = `0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed`),
    ],
    ["a message.address that is a number", (td) => (td.message.address = 5)],
    ['issuedAt "12.5"', (td) => (td.message.issuedAt = "12.5")],
    ['issuedAt "-1"', (td) => (td.message.issuedAt = "-1")],
    ['issuedAt "abc"', (td) => (td.message.issuedAt = "abc")],
    ["issuedAt the empty string", (td) => (td.message.issuedAt = "")],
    ["issuedAt in hex", (td) => (td.message.issuedAt = "0x10")],
    ["issuedAt with surrounding spaces", (td) => (td.message.issuedAt = ` ${NOW} `)],
    ["issuedAt the JSON number 12.5", (td) => (td.message.issuedAt = 12.5)],
    ["issuedAt the JSON number -1", (td) => (td.message.issuedAt = -1)],
    ["issuedAt null", (td) => (td.message.issuedAt = null)],
  ];
  it.each(cases)("%s", (_, edit) => {
    const td = envelope();
    edit(td);
    expectRejected(validate(td), "invalid_typed_data", 400);
  });

  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a number", 42],
    ["a boolean", true],
    ["an array", [envelope()]],
  ])("non-object input: %s", (_, input) => {
    expectRejected(validate(input), "invalid_typed_data", 400);
  });

  it("JSON text that is not an object", () => {
    expectRejected(validate("42"), "invalid_typed_data", 400);
    expectRejected(validate("null"), "invalid_typed_data", 400);
    expectRejected(validate(JSON.stringify([envelope()])), "invalid_typed_data", 400);
  });

  it("an invalid JSON string", () => {
    expectRejected(validate("{not json"), "invalid_typed_data", 400);
    expectRejected(validate(JSON.stringify(envelope()).slice(0, -1)), "invalid_typed_data", 400);
    expectRejected(validate(""), "invalid_typed_data", 400);
  });

  it("message.address other than expectedAddress", () => {
    expectRejected(
      validate(envelope("ConvertAccount"), { primaryType: "ConvertAccount", expectedAddress: OTHER_ADDRESS }),
      "invalid_typed_data",
      400,
    );
  });
});

describe("validateTypedData rejects with wrong_chain_id (400)", () => {
  it("another chainId", () => {
    const td = envelope();
    td.domain.chainId = 1;
    expectRejected(validate(td), "wrong_chain_id", 400);
  });

  it("another chainId as a decimal string", () => {
    const td = envelope();
    td.domain.chainId = String(CHAIN_ID + 1);
    expectRejected(validate(td), "wrong_chain_id", 400);
  });

  it("the envelope's chainId when the node is on another chain", () => {
    expectRejected(validate(envelope(), { chainId: 8453 }), "wrong_chain_id", 400);
  });
});

describe("validateTypedData rejects with signature_expired (401)", () => {
  it("issuedAt 301 s in the past", () => {
    expectRejected(validate(envelope("CreateWallet", NOW - 301)), "signature_expired", 401);
  });

  it("issuedAt 301 s in the future", () => {
    expectRejected(validate(envelope("CreateWallet", NOW + 301)), "signature_expired", 401);
  });

  it("issuedAt 0 and a far-future issuedAt", () => {
    expectRejected(validate(envelope("CreateWallet", 0)), "signature_expired", 401);
    const td = envelope();
    td.message.issuedAt = "9".repeat(30);
    expectRejected(validate(td), "signature_expired", 401);
  });
});

describe("validateTypedData checks in api.md's order", () => {
  it("oversized and a wrong primaryType → payload_too_large", () => {
    const td = envelope("CreateWallet");
    td.domain.name = "x".repeat(5000);
    expectRejected(validate(td, { primaryType: "ConvertAccount" }), "payload_too_large", 413);
  });

  it("an oversized signature and a wrong primaryType → payload_too_large", () => {
    expectRejected(
      validate(envelope("CreateWallet"), { primaryType: "BillingAuth", signature: `0x${"00".repeat(4097)}` }),
      "payload_too_large",
      413,
    );
  });

  it("a wrong primaryType and bad types → wrong_primary_type", () => {
    const td = envelope("CreateWallet");
    td.types.CreateWallet!.reverse();
    td.types.Other = [];
    expectRejected(validate(td, { primaryType: "ConvertAccount" }), "wrong_primary_type", 400);
  });

  it("a wrong primaryType and a bad message, domain, chainId and issuedAt → wrong_primary_type", () => {
    const td = envelope("CreateWallet", NOW - 10_000);
    td.message.address = "nope";
    td.domain.name = "Other";
    td.domain.chainId = 1;
    expectRejected(validate(td, { primaryType: "AddUsageApiKey" }), "wrong_primary_type", 400);
  });

  it("bad types and a wrong chainId → invalid_typed_data", () => {
    const td = envelope();
    td.types.CreateWallet![1]!.type = "uint64";
    td.domain.chainId = 1;
    expectRejected(validate(td), "invalid_typed_data", 400);
  });

  it("a wrong domain name and a wrong chainId → invalid_typed_data", () => {
    const td = envelope();
    td.domain.name = "Other";
    td.domain.chainId = 1;
    expectRejected(validate(td), "invalid_typed_data", 400);
  });

  it("an expectedAddress mismatch and a wrong chainId → invalid_typed_data", () => {
    const td = envelope("ConvertAccount");
    td.domain.chainId = 1;
    expectRejected(
      validate(td, { primaryType: "ConvertAccount", expectedAddress: OTHER_ADDRESS }),
      "invalid_typed_data",
      400,
    );
  });

  it("bad types and an expired issuedAt → invalid_typed_data", () => {
    const td = envelope("CreateWallet", NOW - 10_000);
    td.types.EIP712Domain!.push({ name: "salt", type: "bytes32" });
    expectRejected(validate(td), "invalid_typed_data", 400);
  });

  it("a wrong chainId and an expired issuedAt → wrong_chain_id", () => {
    const td = envelope("CreateWallet", NOW - 10_000);
    td.domain.chainId = 1;
    expectRejected(validate(td), "wrong_chain_id", 400);
  });
});

describe("validateTypedData edge forms", () => {
  it("accepts an all-uppercase address (EIP-55: no checksum) and returns it checksummed", () => {
    const td = envelope();
    (td.message as { address: string }).address = `0x${ADDRESS.slice(2).toUpperCase()}`;
    const result = validate(td);
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value.address).toBe(ADDRESS);
  });

  it("accepts an all-lowercase address and returns it checksummed", () => {
    const td = envelope();
    (td.message as { address: string }).address = ADDRESS.toLowerCase();
    const result = validate(td);
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(result.value.address).toBe(ADDRESS);
  });

  it("rejects a mixed-case address with a wrong checksum", () => {
    const td = envelope();
    (td.message as { address: string }).address = ADDRESS.replace("5aAeb", "5aaeb"); // still mixed case
    expectRejected(validate(td), "invalid_typed_data", 400);
  });

  it("returns an error, never throws, for an object holding bigints", () => {
    const td = envelope() as unknown as { domain: { chainId: unknown } };
    td.domain.chainId = BigInt(CHAIN_ID);
    expectAccepted(validate(td as unknown as Envelope));
  });

  it("rejects integers beyond uint256 as malformed, not as a wrong chain or an expired signature", () => {
    const tooBig = (2n ** 256n).toString();
    const a = envelope() as unknown as { domain: { chainId: unknown } };
    a.domain.chainId = tooBig;
    expectRejected(validate(a as unknown as Envelope), "invalid_typed_data", 400);
    const b = envelope() as unknown as { message: { issuedAt: unknown } };
    b.message.issuedAt = tooBig;
    expectRejected(validate(b as unknown as Envelope), "invalid_typed_data", 400);
  });
});

describe("signableTypedData", () => {
  it("gives viem the same digest the validator computes, with no cast", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const td = buildTypedData({
      primaryType: "BillingAuth",
      address: signer.address,
      chainId: CHAIN_ID,
      issuedAt: NOW,
    });
    const signable = signableTypedData(td);
    const signature = await signer.signTypedData(signable);
    const result = validate(td, { primaryType: "BillingAuth" });
    if (!result.ok) expect.fail(`rejected: ${result.error.code}`);
    expect(hashTypedData(signable)).toBe(result.value.digest);
    expect(await recoverAddress({ hash: result.value.digest, signature })).toBe(signer.address);
  });
});
