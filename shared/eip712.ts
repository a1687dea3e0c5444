// The EIP-712 envelope of the signature flows and of `X-Wallet-Auth` (spec, Authentication 7-9):
// the domain, the four primary types, a builder, the digest, and a pure validator that applies
// every rule of docs/design/api.md in its order and returns a typed error for each rejection. Signature
// recovery and ERC-1271 need a chain client and live with the edge.
import { getAddress, hashTypedData, isAddress, type Address, type Hex, type TypedDataDefinition } from "viem";
import { SigilError } from "./errors.ts";

export const EIP712_DOMAIN_NAME = "Sigil ChainSecured";
export const EIP712_DOMAIN_VERSION = "1";
export const MAX_TYPED_DATA_BYTES = 4096;
export const MAX_SIGNATURE_BYTES = 4096;
export const ISSUED_AT_WINDOW_SECONDS = 300;

export const sigilPrimaryTypes = ["CreateWallet", "ConvertAccount", "AddUsageApiKey", "BillingAuth"] as const;
export type SigilPrimaryType = (typeof sigilPrimaryTypes)[number];

/** Field order is part of the type hash: these lists are compared in order, field by field. */
export const eip712DomainFields = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
] as const;
export const sigilMessageFields = [
  { name: "address", type: "address" },
  { name: "issuedAt", type: "uint256" },
] as const;

export type SigilDomain = { name: typeof EIP712_DOMAIN_NAME; version: typeof EIP712_DOMAIN_VERSION; chainId: bigint };

/** Typed data on the wire (JSON): `issuedAt` is Unix seconds as a decimal string. */
export type SigilTypedData<P extends SigilPrimaryType = SigilPrimaryType> = {
  types: { EIP712Domain: typeof eip712DomainFields } & { [K in P]: typeof sigilMessageFields };
  primaryType: P;
  domain: { name: string; version: string; chainId: number | bigint | string };
  message: { address: Address; issuedAt: string };
};

/** What a valid envelope says, normalized. */
export type VerifiedTypedData<P extends SigilPrimaryType = SigilPrimaryType> = {
  primaryType: P;
  domain: SigilDomain;
  address: Address;
  issuedAt: bigint;
  digest: Hex;
};

export type TypedDataErrorCode =
  | "payload_too_large"
  | "wrong_primary_type"
  | "invalid_typed_data"
  | "wrong_chain_id"
  | "signature_expired";

export type TypedDataError = SigilError & { code: TypedDataErrorCode };

export function sigilDomain(chainId: number | bigint): SigilDomain {
  return { name: EIP712_DOMAIN_NAME, version: EIP712_DOMAIN_VERSION, chainId: BigInt(chainId) };
}

/** The typed data a client sends for `primaryType` (JSON-ready); sign it through `signableTypedData`. */
export function buildTypedData<P extends SigilPrimaryType>(args: {
  primaryType: P;
  address: Address;
  chainId: number | bigint;
  issuedAt: number | bigint;
}): SigilTypedData<P> {
  return {
    types: { EIP712Domain: eip712DomainFields, [args.primaryType]: sigilMessageFields } as SigilTypedData<P>["types"],
    primaryType: args.primaryType,
    domain: { name: EIP712_DOMAIN_NAME, version: EIP712_DOMAIN_VERSION, chainId: Number(args.chainId) },
    message: { address: args.address, issuedAt: BigInt(args.issuedAt).toString() },
  };
}

/**
 * The same typed data in the form viem's `signTypedData` / `hashTypedData` take: integers as
 * bigints, and `EIP712Domain` left for viem to derive from the domain (it derives the same fields).
 */
export function signableTypedData<P extends SigilPrimaryType>(
  typedData: SigilTypedData<P>,
): TypedDataDefinition<{ [K in P]: typeof sigilMessageFields }, P> {
  return {
    domain: sigilDomain(BigInt(typedData.domain.chainId)),
    types: { [typedData.primaryType]: sigilMessageFields } as { [K in P]: typeof sigilMessageFields },
    primaryType: typedData.primaryType,
    message: { address: typedData.message.address, issuedAt: BigInt(typedData.message.issuedAt) },
  } as TypedDataDefinition<{ [K in P]: typeof sigilMessageFields }, P>;
}

/** The EIP-712 digest (`\x19\x01 ‖ domainSeparator ‖ hashStruct(message)`) that is signed. */
export function typedDataDigest(args: {
  primaryType: SigilPrimaryType;
  chainId: number | bigint;
  address: Address;
  issuedAt: bigint;
}): Hex {
  return hashTypedData({
    domain: sigilDomain(args.chainId),
    types: { [args.primaryType]: sigilMessageFields },
    primaryType: args.primaryType,
    message: { address: args.address, issuedAt: args.issuedAt },
  });
}

export type ValidateTypedDataOptions<P extends SigilPrimaryType> = {
  /** The endpoint's primary type. */
  primaryType: P;
  /** The node's chain id. */
  chainId: number | bigint;
  /** Server time, Unix seconds. */
  now: number | bigint;
  /** The signature as sent, when the caller has one: its size is checked with the typed data's. */
  signature?: string;
  /** The address `message.address` must equal (conversion: the new admin wallet). */
  expectedAddress?: Address;
};

export type ValidateTypedDataResult<P extends SigilPrimaryType> =
  | { ok: true; value: VerifiedTypedData<P> }
  | { ok: false; error: TypedDataError };

/**
 * Checks a typed-data envelope in docs/design/api.md's order: size (413), primaryType (400
 * `wrong_primary_type`), types and message shape (400 `invalid_typed_data`), domain name and
 * version (400 `invalid_typed_data`), chainId (400 `wrong_chain_id`), `issuedAt` within ±300 s of
 * `now` (401 `signature_expired`). `typedData` may be the parsed object or its JSON text.
 */
export function validateTypedData<P extends SigilPrimaryType>(
  typedData: unknown,
  options: ValidateTypedDataOptions<P>,
): ValidateTypedDataResult<P> {
  const fail = (code: TypedDataErrorCode, message: string): ValidateTypedDataResult<P> => ({
    ok: false,
    error: new SigilError(code, message) as TypedDataError,
  });

  // Requests arrive as parsed JSON; a bigint can only come from a programmatic caller and is sized
  // as its decimal text, so measuring never throws.
  const serialized =
    typeof typedData === "string"
      ? typedData
      : JSON.stringify(typedData ?? null, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  if (new TextEncoder().encode(serialized).length > MAX_TYPED_DATA_BYTES) {
    return fail("payload_too_large", `typed_data must be at most ${MAX_TYPED_DATA_BYTES} bytes when serialized`);
  }
  if (options.signature !== undefined && signatureBytes(options.signature) > MAX_SIGNATURE_BYTES) {
    return fail("payload_too_large", `signature must be at most ${MAX_SIGNATURE_BYTES} bytes`);
  }

  let td: unknown = typedData;
  if (typeof typedData === "string") {
    try {
      td = JSON.parse(typedData);
    } catch {
      return fail("invalid_typed_data", "typed_data is not valid JSON");
    }
  }
  if (!isRecord(td)) return fail("invalid_typed_data", "typed_data must be an object");

  if (td.primaryType !== options.primaryType) {
    return fail("wrong_primary_type", `primaryType must be ${options.primaryType} for this endpoint`);
  }
  if (!hasExactKeys(td, ["types", "primaryType", "domain", "message"])) {
    return fail("invalid_typed_data", "typed_data must have exactly types, primaryType, domain and message");
  }
  if (!isRecord(td.types) || !hasExactKeys(td.types, ["EIP712Domain", options.primaryType])) {
    return fail("invalid_typed_data", `types must declare exactly EIP712Domain and ${options.primaryType}`);
  }
  if (!sameFields(td.types.EIP712Domain, eip712DomainFields)) {
    return fail(
      "invalid_typed_data",
      "types.EIP712Domain must be name string, version string, chainId uint256, in that order",
    );
  }
  if (!sameFields(td.types[options.primaryType], sigilMessageFields)) {
    return fail(
      "invalid_typed_data",
      `types.${options.primaryType} must be address address, issuedAt uint256, in that order`,
    );
  }

  const message = td.message;
  if (!isRecord(message) || !hasExactKeys(message, ["address", "issuedAt"])) {
    return fail("invalid_typed_data", "message must have exactly address and issuedAt");
  }
  if (typeof message.address !== "string" || !isWalletAddress(message.address)) {
    return fail(
      "invalid_typed_data",
      "message.address must be a 0x-prefixed 20-byte address (with a valid checksum if mixed-case)",
    );
  }
  const issuedAt = parseUint(message.issuedAt);
  if (issuedAt === undefined)
    return fail("invalid_typed_data", "message.issuedAt must be Unix seconds as a decimal string");
  if (
    options.expectedAddress !== undefined &&
    message.address.toLowerCase() !== options.expectedAddress.toLowerCase()
  ) {
    return fail("invalid_typed_data", "message.address must be the wallet named in the request");
  }

  const domain = td.domain;
  if (!isRecord(domain) || !hasExactKeys(domain, ["name", "version", "chainId"])) {
    return fail("invalid_typed_data", "domain must have exactly name, version and chainId");
  }
  if (domain.name !== EIP712_DOMAIN_NAME || domain.version !== EIP712_DOMAIN_VERSION) {
    return fail(
      "invalid_typed_data",
      `domain must be name "${EIP712_DOMAIN_NAME}", version "${EIP712_DOMAIN_VERSION}"`,
    );
  }
  const chainId = parseUint(domain.chainId);
  if (chainId === undefined) return fail("invalid_typed_data", "domain.chainId must be an integer");
  if (chainId !== BigInt(options.chainId)) {
    return fail("wrong_chain_id", `domain.chainId must be ${BigInt(options.chainId)}, this node's chain id`);
  }

  const now = BigInt(options.now);
  const skew = issuedAt > now ? issuedAt - now : now - issuedAt;
  if (skew > BigInt(ISSUED_AT_WINDOW_SECONDS)) {
    return fail(
      "signature_expired",
      `issuedAt must be within ${ISSUED_AT_WINDOW_SECONDS} seconds of the server's time`,
    );
  }

  const address = getAddress(message.address);
  return {
    ok: true,
    value: {
      primaryType: options.primaryType,
      domain: sigilDomain(chainId),
      address,
      issuedAt,
      digest: typedDataDigest({ primaryType: options.primaryType, chainId, address, issuedAt }),
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasExactKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const actual = Object.keys(value);
  return actual.length === keys.length && keys.every((k) => Object.hasOwn(value, k));
}

function sameFields(value: unknown, expected: readonly { name: string; type: string }[]): boolean {
  return (
    Array.isArray(value) &&
    value.length === expected.length &&
    value.every(
      (f, i) =>
        isRecord(f) &&
        hasExactKeys(f, ["name", "type"]) &&
        f.name === expected[i]!.name &&
        f.type === expected[i]!.type,
    )
  );
}

const MAX_UINT256 = 2n ** 256n - 1n;

/** A uint256 given as a safe non-negative JSON number, a bigint, or a decimal string. */
function parseUint(value: unknown): bigint | undefined {
  let n: bigint | undefined;
  if (typeof value === "number") n = Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  else if (typeof value === "bigint") n = value >= 0n ? value : undefined;
  else if (typeof value === "string" && /^(0|[1-9][0-9]{0,77})$/.test(value)) n = BigInt(value);
  return n !== undefined && n <= MAX_UINT256 ? n : undefined;
}

/** EIP-55: all-lowercase and all-uppercase hex carry no checksum; mixed case must carry a valid one. */
function isWalletAddress(value: string): boolean {
  if (/^0x([0-9a-f]{40}|[0-9A-F]{40})$/.test(value)) return true;
  return isAddress(value, { strict: true });
}

/** Decoded size of a hex signature (its raw length when it is not hex: that also bounds the work). */
function signatureBytes(signature: string): number {
  return /^0x[0-9a-fA-F]*$/.test(signature) ? (signature.length - 2) / 2 : signature.length;
}
