// The signature endpoints through the edge in workerd, against the real chain and enclave: each of
// docs/design/api.md's checks, in its order, for each endpoint, with EOA signers and with a deployed ERC-1271
// contract wallet (test/fixtures/Erc1271Wallet.sol, compiled by test/workers/fixtures/build.ts).
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createPublicClient, createWalletClient, getAddress, http, type Abi, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { beforeAll, describe, expect, it } from "vitest";
import {
  buildTypedData,
  signableTypedData,
  typedDataDigest,
  type SigilPrimaryType,
  type SigilTypedData,
} from "../../shared/eip712.ts";
import { apiKeyHash, toHash32, walletLookupHash } from "../../shared/hashing.ts";
import type { Env } from "../../workers/env.ts";
import erc1271Wallet from "./fixtures/erc1271Wallet.json";

const BASE = "http://edge/core/v1";
const CHAIN_ID = 31337;

type Reply<T> = { status: number; body: T; headers: Headers };
type ErrorBody = { error: { code: string; message: string; request_id: string } };

async function post<T = Record<string, unknown>>(path: string, body: unknown, key?: string): Promise<Reply<T>> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["x-api-key"] = key;
  const res = await SELF.fetch(`${BASE}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T, headers: res.headers };
}

function expectError(r: Reply<unknown>, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect((r.body as ErrorBody).error.code).toBe(code);
  expect((r.body as ErrorBody).error.request_id).toBe(r.headers.get("x-request-id"));
}

const now = () => Math.floor(Date.now() / 1000);

/** Typed data for `primaryType` naming `address`, signed by `signer` (by default the address's own key). */
async function signed(
  primaryType: SigilPrimaryType,
  signer: PrivateKeyAccount,
  options: { address?: Address; issuedAt?: number; chainId?: number } = {},
): Promise<{ typed_data: SigilTypedData; signature: Hex }> {
  const typedData = buildTypedData({
    primaryType,
    address: options.address ?? signer.address,
    chainId: options.chainId ?? CHAIN_ID,
    issuedAt: options.issuedAt ?? now(),
  });
  return { typed_data: typedData, signature: await signer.signTypedData(signableTypedData(typedData)) };
}

async function newAccount(): Promise<string> {
  const r = await post<{ api_key: string }>("/new_account", { account_name: "to convert" });
  if (r.status !== 200) throw new Error(`new_account answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.api_key;
}

type Endpoint = {
  path: string;
  primaryType: SigilPrimaryType;
  /** The request for a signed envelope (conversion adds the new admin and sends `key`, by default the shared account's). */
  send(
    envelope: { typed_data: unknown; signature: string },
    admin: Address,
    key?: string,
  ): Promise<Reply<Record<string, unknown>>>;
  /** Checks a 200 answer. */
  expectOk(body: Record<string, unknown>): void;
};

let conversionKey: string;

const endpoints: Endpoint[] = [
  {
    path: "/create_wallet_with_signature",
    primaryType: "CreateWallet",
    send: (envelope) => post("/create_wallet_with_signature", envelope),
    expectOk(body) {
      expect(body.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
      expect(body.derivation_path).toMatch(/^0x[0-9a-f]{64}$/);
    },
  },
  {
    path: "/add_usage_api_key_with_signature",
    primaryType: "AddUsageApiKey",
    send: (envelope) => post("/add_usage_api_key_with_signature", envelope),
    expectOk(body) {
      expect(body.usage_api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      expect(body.usage_api_key_hash).toBe(toHash32(apiKeyHash(body.usage_api_key as string)));
      // The usage key's wallet is the PKP whose derivation is the key's hash.
      expect(body.derivation_path).toBe(body.usage_api_key_hash);
      expect(body.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    },
  },
  {
    path: "/convert_to_chain_secured_account",
    primaryType: "ConvertAccount",
    send: (envelope, admin, key) =>
      post("/convert_to_chain_secured_account", { new_admin_wallet_address: admin, ...envelope }, key ?? conversionKey),
    expectOk(body) {
      expect(body.success).toBe(true);
      expect(body.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    },
  },
];

beforeAll(async () => {
  // Failing requests never convert it; the successful conversion uses an account of its own.
  conversionKey = await newAccount();
});

describe.each(endpoints)("POST $path", (endpoint) => {
  const { primaryType } = endpoint;
  const alice = privateKeyToAccount(generatePrivateKey());
  const mallory = privateKeyToAccount(generatePrivateKey());

  it("accepts an EOA's signature of its own address", async () => {
    // A conversion happens once per account: this one gets an account of its own.
    const key = primaryType === "ConvertAccount" ? await newAccount() : undefined;
    const r = await endpoint.send(await signed(primaryType, alice), alice.address, key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    endpoint.expectOk(r.body);
  });

  it("a signature by another wallet than message.address is 401 invalid_signature", async () => {
    expectError(
      await endpoint.send(await signed(primaryType, mallory, { address: alice.address }), alice.address),
      401,
      "invalid_signature",
    );
  });

  it("a signature that is not hex or not 65 bytes is 401 invalid_signature", async () => {
    const { typed_data } = await signed(primaryType, alice);
    expectError(await endpoint.send({ typed_data, signature: "0x1234" }, alice.address), 401, "invalid_signature");
    expectError(await endpoint.send({ typed_data, signature: "not hex" }, alice.address), 401, "invalid_signature");
  });

  it("issuedAt more than 300 s in the past or the future is 401 signature_expired", async () => {
    expectError(
      await endpoint.send(await signed(primaryType, alice, { issuedAt: now() - 360 }), alice.address),
      401,
      "signature_expired",
    );
    expectError(
      await endpoint.send(await signed(primaryType, alice, { issuedAt: now() + 360 }), alice.address),
      401,
      "signature_expired",
    );
  });

  it("issuedAt within the window, past or future, is accepted by the checks", async () => {
    // A wrong signer shows the window check passed: the next check (the signature) is what fails.
    expectError(
      await endpoint.send(
        await signed(primaryType, mallory, { address: alice.address, issuedAt: now() - 240 }),
        alice.address,
      ),
      401,
      "invalid_signature",
    );
    expectError(
      await endpoint.send(
        await signed(primaryType, mallory, { address: alice.address, issuedAt: now() + 240 }),
        alice.address,
      ),
      401,
      "invalid_signature",
    );
  });

  it("another flow's typed data is 400 wrong_primary_type", async () => {
    const other = primaryType === "CreateWallet" ? "AddUsageApiKey" : "CreateWallet";
    expectError(await endpoint.send(await signed(other, alice), alice.address), 400, "wrong_primary_type");
  });

  it("the message fields in another order are 400 invalid_typed_data", async () => {
    const envelope = await signed(primaryType, alice);
    const types = envelope.typed_data.types as unknown as Record<string, Array<{ name: string; type: string }>>;
    const typed_data = {
      ...envelope.typed_data,
      types: { ...types, [primaryType]: [...(types[primaryType] ?? [])].reverse() },
    };
    expectError(
      await endpoint.send({ typed_data, signature: envelope.signature }, alice.address),
      400,
      "invalid_typed_data",
    );
  });

  it("an extra type or a wrong domain name is 400 invalid_typed_data", async () => {
    const envelope = await signed(primaryType, alice);
    const extraType = { ...envelope.typed_data, types: { ...envelope.typed_data.types, Extra: [] } };
    expectError(
      await endpoint.send({ typed_data: extraType, signature: envelope.signature }, alice.address),
      400,
      "invalid_typed_data",
    );
    const wrongDomain = { ...envelope.typed_data, domain: { ...envelope.typed_data.domain, name: "Someone Else" } };
    expectError(
      await endpoint.send({ typed_data: wrongDomain, signature: envelope.signature }, alice.address),
      400,
      "invalid_typed_data",
    );
  });

  it("another chain's id is 400 wrong_chain_id", async () => {
    expectError(
      await endpoint.send(await signed(primaryType, alice, { chainId: 1 }), alice.address),
      400,
      "wrong_chain_id",
    );
  });

  it("typed data over 4 KiB is 413 payload_too_large, before any other check", async () => {
    const envelope = await signed("BillingAuth", mallory, { chainId: 1, issuedAt: 0 });
    const typed_data = { ...envelope.typed_data, padding: "x".repeat(5 << 10) };
    expectError(
      await endpoint.send({ typed_data, signature: envelope.signature }, alice.address),
      413,
      "payload_too_large",
    );
  });

  it("a signature over 4 KiB is 413 payload_too_large", async () => {
    const { typed_data } = await signed(primaryType, alice);
    expectError(
      await endpoint.send({ typed_data, signature: `0x${"ab".repeat(5 << 10)}` }, alice.address),
      413,
      "payload_too_large",
    );
  });

  it("a body with an unknown field, or without typed_data, is 400 invalid_request", async () => {
    const envelope = await signed(primaryType, alice);
    const admin = primaryType === "ConvertAccount" ? { new_admin_wallet_address: alice.address } : {};
    expectError(
      await post(endpoint.path, { ...envelope, ...admin, extra: true }, conversionKey),
      400,
      "invalid_request",
    );
    const missing = await post<ErrorBody>(endpoint.path, { signature: envelope.signature, ...admin }, conversionKey);
    expectError(missing, 400, "invalid_request");
    expect(JSON.stringify(missing.body)).toContain("typed_data");
  });
});

describe("POST /convert_to_chain_secured_account", () => {
  const admin = privateKeyToAccount(generatePrivateKey());

  it("message.address other than new_admin_wallet_address is 400 invalid_typed_data", async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    const envelope = await signed("ConvertAccount", other);
    expectError(
      await post(
        "/convert_to_chain_secured_account",
        { new_admin_wallet_address: admin.address, ...envelope },
        conversionKey,
      ),
      400,
      "invalid_typed_data",
    );
  });

  it("needs the account's key: none is 401 missing_api_key; a usage key is 403 account_key_required", async () => {
    const envelope = await signed("ConvertAccount", admin);
    expectError(
      await post("/convert_to_chain_secured_account", { new_admin_wallet_address: admin.address, ...envelope }),
      401,
      "missing_api_key",
    );
    const usage = await post<{ usage_api_key: string }>(
      "/add_usage_api_key",
      {
        name: "u",
        description: "",
        can_create_groups: true,
        can_delete_groups: true,
        can_create_pkps: true,
        manage_ipfs_ids_in_groups: [0],
        add_pkp_to_groups: [0],
        remove_pkp_from_groups: [0],
        execute_in_groups: [0],
      },
      conversionKey,
    );
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    expectError(
      await post(
        "/convert_to_chain_secured_account",
        { new_admin_wallet_address: admin.address, ...envelope },
        usage.body.usage_api_key,
      ),
      403,
      "account_key_required",
    );
  });

  it("after a conversion the old master key may read but not write (403 chain_secured_account), and a second conversion is refused", async () => {
    const key = await newAccount();
    const converted = await post(
      "/convert_to_chain_secured_account",
      { new_admin_wallet_address: admin.address, ...(await signed("ConvertAccount", admin)) },
      key,
    );
    expect(converted.status, JSON.stringify(converted.body)).toBe(200);
    const list = await SELF.fetch(`${BASE}/list_groups`, { headers: { "x-api-key": key } });
    expect(list.status).toBe(200);
    expectError(
      await post(
        "/add_group",
        { group_name: "g", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
        key,
      ),
      403,
      "chain_secured_account",
    );
    const again = privateKeyToAccount(generatePrivateKey());
    const second = await post(
      "/convert_to_chain_secured_account",
      { new_admin_wallet_address: again.address, ...(await signed("ConvertAccount", again)) },
      key,
    );
    expect(second.status).toBe(403);
  });
});

describe("a contract wallet (ERC-1271)", () => {
  const owner = privateKeyToAccount(generatePrivateKey());
  const stranger = privateKeyToAccount(generatePrivateKey());
  let wallet: Address;
  let refusing: Address;

  beforeAll(async () => {
    const rpcUrl = (env as unknown as Env).SIGIL_RPC_URL;
    if (!rpcUrl) throw new Error("the edge has no SIGIL_RPC_URL binding");
    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ chain: foundry, transport, pollingInterval: 50 });
    const walletClient = createWalletClient({ chain: foundry, transport });
    const [deployer] = await walletClient.getAddresses();
    if (!deployer) throw new Error("anvil unlocked no account");
    const deploy = async (refuses: boolean): Promise<Address> => {
      const hash = await walletClient.deployContract({
        abi: erc1271Wallet.abi as Abi,
        bytecode: erc1271Wallet.bytecode as Hex,
        args: [owner.address, refuses],
        account: deployer,
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (!receipt.contractAddress) throw new Error("the wallet was not deployed");
      return getAddress(receipt.contractAddress);
    };
    wallet = await deploy(false);
    refusing = await deploy(true);
  });

  /** The wallet's typed data, signed by `signer` as the contract checks it: raw ECDSA over the EIP-712 digest. */
  async function signedFor(
    address: Address,
    signer: PrivateKeyAccount,
    primaryType: SigilPrimaryType = "CreateWallet",
  ) {
    const issuedAt = now();
    const typed_data = buildTypedData({ primaryType, address, chainId: CHAIN_ID, issuedAt });
    const digest = typedDataDigest({ primaryType, chainId: CHAIN_ID, address, issuedAt: BigInt(issuedAt) });
    return { typed_data, signature: await signer.sign({ hash: digest }) };
  }

  it("create_wallet_with_signature accepts the owner's signature for the contract wallet", async () => {
    const r = await post<{
      wallet_address: string;
      derivation_path: string;
      master_wallet_address: string;
      account_id: string;
    }>("/create_wallet_with_signature", await signedFor(wallet, owner));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(r.body.derivation_path).toMatch(/^0x[0-9a-f]{64}$/);
    // The wallet has no account yet: the one newChainSecuredAccount(name, description, master_wallet_address) will make.
    expect(r.body.account_id).toBe(toHash32(walletLookupHash(wallet)));
    expect(r.body.master_wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(r.body.master_wallet_address).not.toBe(r.body.wallet_address);
  });

  it("add_usage_api_key_with_signature accepts it too", async () => {
    const r = await post<{ usage_api_key: string }>(
      "/add_usage_api_key_with_signature",
      await signedFor(wallet, owner, "AddUsageApiKey"),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.usage_api_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  });

  it("a stranger's signature for the contract wallet is 401 invalid_signature", async () => {
    expectError(
      await post("/create_wallet_with_signature", await signedFor(wallet, stranger)),
      401,
      "invalid_signature",
    );
  });

  it("a contract wallet whose check reverts is 401 invalid_signature", async () => {
    expectError(
      await post("/create_wallet_with_signature", await signedFor(refusing, owner)),
      401,
      "invalid_signature",
    );
  });
});
